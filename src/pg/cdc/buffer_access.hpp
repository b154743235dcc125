// Change buffers hold rows of many owners' tables (every captured column,
// old and new values), so no role is granted SELECT on them. The
// extension's own statements still read them while running as a stream
// table's owner: when such a statement is parsed, its references to
// relations in pgtrickle_changes are checked with the relation owner's
// rights (RangeTblEntry.checkAsUser, the way a view's own references are).
// Invariant: a statement text is internal only while the Spi wrapper
// prepares or runs it, or when it is the text of a plan the wrapper keeps;
// code a refresh calls (a user's function) cannot make its own statements
// internal.
#pragma once

extern "C" {
#include "postgres.h"
#include "executor/spi.h"
}

namespace pgt::pg {

// While alive, statements parsed from exactly this text (the pointer,
// not a copy) are internal. Nests. A C++ object only: no PostgreSQL call.
class InternalStatement {
public:
    explicit InternalStatement(const char* sql);
    ~InternalStatement();
    InternalStatement(const InternalStatement&) = delete;
    InternalStatement& operator=(const InternalStatement&) = delete;
};

// The texts of plan's sources are internal for as long as the plan lives
// (PostgreSQL parses them again after an invalidation); forget before
// freeing it. Both run inside PostgreSQL frames and never throw.
void remember_internal_plan(SPIPlanPtr plan);
void forget_internal_plan(SPIPlanPtr plan);

// Installs the post-parse-analysis hook (from _PG_init).
void install_buffer_access_hook();

}  // namespace pgt::pg
