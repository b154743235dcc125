// Outer joins that WHERE makes inner, reduced as PostgreSQL's planner
// reduces them:
//
//   SELECT ... FROM o LEFT JOIN c ON c.id = o.cust WHERE c.active
//   =>  SELECT ... FROM o JOIN c ON c.id = o.cust WHERE c.active
//
// Invariant: a join is reduced only where a condition above it that is
// strict in a table of its nullable side (find_nonnullable_rels: never
// true when that table's columns are NULL) removes every row it pads: the
// query's WHERE, the ON of an inner join above it, or the ON of an outer
// join on the nullable side's own inner joins. A FULL JOIN becomes the
// LEFT or RIGHT join whose padded side is removed, or an inner join. The
// two queries are equal in every state.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace pgt::pg {

// Reduces every such outer join of q's FROM, and of the derived tables in
// it, in place; true when it did. Deparse the result and analyse the text
// again before using it.
bool reduce_outer_joins(Query* q);

}  // namespace pgt::pg
