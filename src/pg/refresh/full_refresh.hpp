// FULL refresh: recompute a stream table from its defining query.
// Invariant: readers are never blocked (no ACCESS EXCLUSIVE lock; old rows
// stay visible until commit) and one writer per stream table holds the
// refresh lock for the rest of the transaction.
#pragma once

#include <cstdint>
#include <string>

#include "pg/boundary/spi.hpp"
#include "pg/catalog/catalog.hpp"
#include "pg/catalog/relation_names.hpp"

namespace pgt::pg {

struct RefreshResult {
    int64_t rows_inserted = 0;
    int64_t rows_deleted = 0;
};

// Takes the per-stream-table refresh lock (transaction-scoped advisory
// lock); waits for a concurrent refresh of the same table to finish.
void lock_stream_table_for_refresh(Spi& spi, int64_t pgt_id);

// Recomputes st, records history (initiated_by: CREATE | MANUAL | ALTER |
// SCHEDULER) and marks the stream table refreshed.
RefreshResult full_refresh(Spi& spi, const catalog::StreamTableRow& st,
                           const std::string& initiated_by, const std::string& reason);

}  // namespace pgt::pg
