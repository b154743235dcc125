// Whether a write is the only statement of its transaction: what lets an
// IMMEDIATE join's key-table writer share the stream table's lock without
// risking to wait for it alone later in the same transaction.
// Invariant: a false "sole" is never answered; doubt (an executor that
// ended in an error, a statement inside another) answers "not sole".
#pragma once

struct RelationData;

namespace pgt::pg {

// The statement whose trigger on `fired` fires is one INSERT, UPDATE,
// DELETE or MERGE (no modifying WITH) that a client sent outside a
// transaction block (not a function's, a trigger's, a DO block's or a
// procedure's), on a table without triggers but pg_trickle's and
// immediate foreign-key checks: nothing after it in the transaction can
// write.
bool sole_statement(RelationData* fired);

// _PG_init: the executor hooks and transaction callback that count the
// executors running in this transaction.
void install_sole_statement_hooks();

}  // namespace pgt::pg
