// Change buffers: one table per captured source in pgtrickle_changes, fed by
// the capture triggers and shared by every DIFFERENTIAL consumer.
//
//   pgtrickle_changes.changes_<source_id>
//     seq     bigint identity   capture order (per key: commit order)
//     xid     xid8              writing transaction (frontier visibility)
//     action  "char"            I U D, or T (TRUNCATE marker)
//     o<attnum>, n<attnum>      old / new value of each captured source column
//                               (the union of what the consumers read)
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
    Oid buffer_relid = InvalidOid;
};

// The source's capture of at least the given columns (attnums), created on
// first use (buffer, triggers, catalog row) and widened when a consumer
// needs more columns than are captured; either needs the calling role's
// right to create a trigger on the source (42501 otherwise).
CaptureSource ensure_capture(Spi& spi, Oid source_relid, const std::vector<int>& attnums);

// ALTER TABLE ... ENABLE ALWAYS TRIGGER: a trigger of ours on a source fires
// whatever session_replication_role says (trigger: its unquoted name).
void enable_always(Spi& spi, const std::string& quoted_source, const std::string& trigger);

// Whether ensure_capture(source_relid, attnums) would install a capture or
// add columns to one (what needs the right to create a trigger on it).
bool capture_would_change(Spi& spi, Oid source_relid, const std::vector<int>& attnums);

// The sources stream table pgt_id reads whose capture triggers are not
// both there and ENABLE ALWAYS (ALTER TABLE ... DISABLE TRIGGER, or ENABLE
// TRIGGER after it): changes made meanwhile were not captured. Each one
// found is repaired: its triggers enabled ALWAYS again and every other
// stream table reading it marked for reinitialisation.
// Returns the repaired sources' names ("" when none); a missing trigger is
// 55000 (recreate the stream tables).
std::string repair_disabled_capture(Spi& spi, int64_t pgt_id);

// The sources stream table pgt_id consumes whose capture is broken: buffer
// or a trigger missing, a trigger not ENABLE ALWAYS.
struct CaptureProblem {
    CaptureSource source;               // buffer left empty
    std::vector<std::string> problems;  // what is wrong, for a person
};
std::vector<CaptureProblem> capture_problems(Spi& spi, int64_t pgt_id);

// Removes a source's capture altogether (what is left of its triggers and
// buffer), marking every stream table that consumed it for
// reinitialisation (`why`): the next one to need it captures it anew.
void discard_capture(Spi& spi, int64_t source_id, const std::string& why);

// Removes a source's capture when no stream table consumes it any more.
void release_capture_if_unused(Spi& spi, int64_t source_id);

// Sources a stream table consumes (through its frontiers).
std::vector<CaptureSource> captured_sources_of(Spi& spi, int64_t pgt_id);

// Per given live column of a source (attnum order): its base type with
// modifier and its COLLATE clause, as its buffer columns are declared.
std::vector<std::string> buffer_column_types(Oid relid, const std::vector<int>& attnums);

}  // namespace pgt::pg
