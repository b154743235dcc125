// Change buffers: one table per captured source in pgtrickle_changes, fed by
// the capture triggers and shared by every DIFFERENTIAL consumer.
//
//   pgtrickle_changes.changes_<source_id>
//     seq     bigint identity   capture order (per key: commit order)
//     xid     xid8              writing transaction (frontier visibility)
//     action  "char"            I U D, or T (TRUNCATE marker)
//     o<attnum>, n<attnum>      old / new value of each source column
//
// Invariant: buffers and triggers are owned by the catalog owner, never
// readable by PUBLIC, and removed when their last consumer goes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/scan.hpp"
#include "pg/boundary/spi.hpp"

extern "C" {
#include "postgres.h"
}

namespace pgt::pg {

struct CaptureSource {
    int64_t source_id = 0;
    Oid relid = InvalidOid;
    std::string buffer;  // quoted, schema-qualified
};

// The source's capture, created on first use (buffer, triggers, catalog row).
CaptureSource ensure_capture(Spi& spi, Oid source_relid);

// Removes a source's capture when no stream table consumes it any more.
void release_capture_if_unused(Spi& spi, int64_t source_id);

// Sources a stream table consumes (through its frontiers).
std::vector<CaptureSource> captured_sources_of(Spi& spi, int64_t pgt_id);

// Every live column of a source, as the delta SQL names them.
std::vector<ir::SourceColumn> source_columns(Oid relid);

}  // namespace pgt::pg
