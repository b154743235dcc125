// The one snapshot a refresh runs under (DESIGN.md §5, exact frontier).
// Invariant: taken after the refresh lock, used by every statement that
// reads buffers or sources, released explicitly with close().
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pg/boundary/spi.hpp"

extern "C" {
#include "postgres.h"
#include "utils/snapshot.h"
}

namespace pgt::pg {

struct RefreshSnapshot {
    Snapshot snapshot = nullptr;         // registered; run statements with Spi::query_at
    std::string text;                    // the same snapshot as pg_snapshot text
    std::optional<std::string> own_xid;  // this transaction's xid8, if it has one

    // latest: the newest snapshot (GetLatestSnapshot) instead of the
    // transaction's, which under REPEATABLE READ is as old as the
    // transaction.
    static RefreshSnapshot take(Spi& spi, bool latest = false);
    void close();
};

// The transaction's current snapshot as a frontier, with its own id in
// progress as in RefreshSnapshot::text: a stream table's first frontier.
std::string current_frontier(Spi& spi);

}  // namespace pgt::pg
