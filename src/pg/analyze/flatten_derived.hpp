// Plain derived tables merged into the query that reads them, as
// PostgreSQL's planner does before planning (and what a WITH query without
// aggregates inlines to):
//
//   SELECT code, count(*) FROM (SELECT substring(phone, 1, 2) AS code
//                               FROM customer WHERE NOT EXISTS (...)) c
//   GROUP BY code
//   =>  SELECT substring(phone, 1, 2) AS code, count(*) FROM customer
//       WHERE NOT EXISTS (...) GROUP BY substring(phone, 1, 2)
//
// Invariant: only when the two are equal. The derived table is a plain
// SELECT (no aggregate, grouping, DISTINCT, LIMIT/OFFSET, window, set
// operation, WITH, FOR UPDATE, set-returning or volatile function in its
// select list), not LATERAL and not a security barrier, and it stands
// where none of its rows is ever padded with NULLs and no outer join is
// around it: in the FROM list or under inner joins reached from it (which
// become the FROM list and WHERE they equal). Its WHERE then filters the
// same rows in the outer WHERE, and its select-list expressions replace
// the outer references to its columns (ReplaceVarsFromTargetList, as the
// rewriter expands a view). A derived table read as a whole row (s.*, s
// as a value) stays, and so does one on either side of an outer join.
// Inner joins with a subquery in ON become the FROM list and WHERE they
// equal as well (a subquery in WHERE is what the engine follows).
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace pgt::pg {

// Merges every such derived table into the query level holding it, at
// every level, in place, and moves subqueries out of inner joins' ON;
// whether q changed. The result
// is to be deparsed and analysed again.
bool flatten_plain_derived_tables(Query* q);

// A plain SELECT in FROM as described above (not LATERAL, no aggregate,
// grouping, DISTINCT, LIMIT, window, set operation, WITH, row locks, SRF
// or volatile function in its select list).
bool plain_derived_table(const RangeTblEntry* rte);

// a AND b as one flat AND (either may be nullptr, or an AND itself).
Node* conjunction(Node* a, Node* b);

// References to q's join columns (at any level) replaced by what they
// stand for (a column of an input, COALESCE of a FULL JOIN's merged one):
// then nothing reads through a join's column list.
void resolve_join_references(Query* q);

// Inner joins of q's top level written as the FROM list and WHERE they
// equal (each inner join's entry left as an unreferenced placeholder), so
// that every item they join is a FROM-list item. References through join
// columns become what they stand for first.
void inner_joins_as_from_list(Query* q);

}  // namespace pgt::pg
