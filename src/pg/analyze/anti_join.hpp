// Anti-joins written as outer joins, lowered to the NOT EXISTS they are:
//
//   SELECT ... FROM a LEFT JOIN r ON <cond> WHERE r.k IS NULL [AND ...]
//   =>  SELECT ... FROM a WHERE NOT EXISTS (SELECT FROM r WHERE <cond>) [AND ...]
//
// Invariant: only when the two are equal for every database state: r is a
// table joined on the right of a LEFT JOIN, r.k cannot be NULL in a
// joined row (a NOT NULL column, or an argument of a strict operator
// among the ON conditions), nothing else reads r (so its columns, NULL in
// every row kept, are needed nowhere), and the ON condition has no
// subquery and no volatile function.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace pgt::pg {

// Rewrites every such anti-join at q's top level in place; true when it
// did. The result still holds the right tables' range table entries,
// unused: deparse it and analyse the text again before using it.
bool lower_anti_joins(Query* q);

}  // namespace pgt::pg
