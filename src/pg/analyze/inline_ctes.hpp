// Non-recursive WITH queries lowered to the derived tables they stand for,
// as PostgreSQL's planner inlines them: each reference becomes a subquery
// in FROM holding a copy of the WITH query, so the rules for derived
// tables maintain it.
// Invariant: a query is changed only when every WITH query in it, at any
// level, can be inlined without changing its result (a SELECT, not
// recursive, no volatile function); otherwise it is left as it was.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace pgt::pg {

// Replaces every reference to a WITH query of q (at any level) by a
// subquery and drops the WITH lists; true when it did. False, and q
// untouched, when it has none or some WITH query cannot be inlined.
bool inline_with_queries(Query* q);

}  // namespace pgt::pg
