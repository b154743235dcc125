// Buffer rows staged by the row capture trigger and written together.
//
// PostgreSQL fires a statement's AFTER ROW triggers one after the other when
// the statement ends, so the capture trigger stages each buffer row (formed,
// its sequence number taken) and the rows go into the buffer in batches
// with heap_multi_insert: one WAL record and one page lock per page instead
// of per row. A statement that captured one row writes it with heap_insert,
// as before.
//
// Invariant: no staged row outlives the point where anything could read
// the buffer or the rows' (sub)transaction could end. They are written when
// the statement's executor finishes, before any other executor starts, when
// a batch is full, when a subtransaction starts or commits and before the
// transaction commits or prepares (COPY fires its triggers outside the
// executor); they are discarded when their (sub)transaction aborts. So
// staged rows always belong to the current subtransaction, and a reader in
// this backend sees them in the buffer as it would have without staging.
#pragma once

extern "C" {
#include "postgres.h"
#include "access/tupdesc.h"
}

namespace pgt::pg {

// Stages one row of change buffer `buffer`, formed with `desc` (the
// buffer's layout). Rows staged for another buffer are written first, so
// the buffer rows of a backend go in in the order they were staged. Raises
// PostgreSQL errors (call under pg_call).
void stage_buffer_row(Oid buffer, TupleDesc desc, const Datum* values, const bool* nulls);

// _PG_init: the executor hooks that write staged rows.
void install_staged_rows_hooks();

}  // namespace pgt::pg
