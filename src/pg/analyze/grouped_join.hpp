// A grouped derived table joined on its whole GROUP BY key, read as the
// correlated subqueries it equals (what dbt models write as a WITH query
// with GROUP BY joined back to its parent):
//
//   SELECT c.id, co.n FROM customers c
//   LEFT JOIN (SELECT customer_id, count(*) AS n FROM orders
//              GROUP BY customer_id) co ON co.customer_id = c.id
//   =>  SELECT c.id, (SELECT count(*) AS n FROM orders
//                     WHERE customer_id = c.id GROUP BY customer_id) AS n
//       FROM customers c
//
// Invariant: only when the two are equal. The derived table is grouped
// (GROUP BY, every key selected; no grouping sets, HAVING, DISTINCT,
// LIMIT/OFFSET, window, set operation, WITH, set-returning or volatile
// function), not LATERAL, not a security barrier, not read as a whole row,
// and it is joined by one equality per GROUP BY key, each with the key's
// own grouping equality, to an expression of the other tables: then each
// outer row meets at most one group, the one its expressions name.
//  - on the right of a LEFT JOIN (an item of the FROM list) whose ON is
//    exactly those equalities: the join goes, and each column the query
//    reads becomes a subquery of that group (no group: NULL, as the
//    padding was);
//  - in the FROM list or under inner joins, the equalities among the
//    top-level WHERE/ON conditions: those become EXISTS (the group) and
//    the columns subqueries of the group.
#pragma once

#include <string>
#include <vector>

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace pgt::pg {

// Lowers every such derived table of q's own level, in place; whether one
// was. The result is to be deparsed and analysed again.
bool lower_joined_groups(Query* q);

// q (before lower_joined_groups) with each such derived table, joined on a
// key by an output key column j (`key_columns[j]`, a select-list index),
// narrowed inside to the groups whose key is among that column's touched
// values (ir::key_slot(j)); "" when none is. A recompute of the touched
// keys then computes their groups only, in one pass: each touched row meets
// the group its key names, whole. Deparsed with the search_path pinned.
std::string narrowed_to_joined_groups(Query* q, const std::vector<int>& key_columns);

}  // namespace pgt::pg
