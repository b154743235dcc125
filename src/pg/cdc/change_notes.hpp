// Change notes: what lets the scheduler skip a FULL stream table whose
// sources were not written. Each plain table the query reads carries a
// statement-level trigger of the stream table's own (pgt_note_<pgt_id>,
// AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE, ENABLE ALWAYS) that only
// notes the write for the scheduler (mark_source_written); no change row
// is kept.
// Invariant: notes are installed only when they stand for every change
// the query can see: its result depends on nothing but the rows of plain
// tables without partitions, inheritance children or row-level security
// (no function that is not IMMUTABLE, no CURRENT_TIMESTAMP and the like,
// no nextval, no TABLESAMPLE), and the owner may put triggers on them (as
// DIFFERENTIAL capture needs). Otherwise the table has none, and is
// recomputed at every due time.
#pragma once

#include <cstdint>
#include <string>

#include "pg/analyze/defining_query.hpp"
#include "pg/boundary/spi.hpp"
#include "pg/catalog/catalog.hpp"

namespace pgt::pg {

// The name of stream table pgt_id's note triggers.
std::string note_trigger_name(int64_t pgt_id);

// Why st's sources get no notes ("" when they can).
std::string change_notes_blocker(const AnalyzedQuery& q, Oid owner);

// Drops st's notes, then installs them when change_notes_blocker allows.
void install_change_notes(Spi& spi, const catalog::StreamTableRow& st, const AnalyzedQuery& q);

// Drops stream table pgt_id's note triggers, wherever they are.
void drop_change_notes(Spi& spi, int64_t pgt_id);

}  // namespace pgt::pg
