// Outer joins written with USING, NATURAL or an alias, lowered to the ON
// joins they are:
//
//   SELECT k, x, y FROM a FULL JOIN b USING (k)
//   =>  SELECT COALESCE(a.k, b.k) AS k, x, y FROM a FULL JOIN b ON a.k = b.k
//
// Invariant: every reference to a join's own columns (a merged USING
// column, an alias's column) is replaced by the expression PostgreSQL
// gives it (flatten_join_alias_vars), so the result means what the query
// meant; the parser already turned USING into the equality ON condition.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace pgt::pg {

// Rewrites q's top level in place when one of its outer joins has USING,
// NATURAL or an alias; true when it did. The result keeps the joins'
// range table entries with their merged columns: deparse it and analyse
// the text again before using it.
bool lower_join_using(Query* q);

}  // namespace pgt::pg
