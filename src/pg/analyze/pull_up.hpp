// A query that only selects from one grouped derived table, pulled up into
// it (what dbt models write as a WITH query with GROUP BY and a final
// SELECT):
//
//   SELECT c, n FROM (SELECT c, count(*) AS n FROM o GROUP BY c) x WHERE n > 5
//   =>  SELECT c, count(*) AS n FROM o GROUP BY c HAVING count(*) > 5
//
// Invariant: only when the two are equal: the outer query has nothing but
// a select list and a WHERE over the derived table's columns (no join, no
// aggregate, grouping, DISTINCT, ORDER BY, LIMIT, window, subquery or
// set-returning function of its own), and the derived table is grouped
// (GROUP BY or aggregates, no DISTINCT) or is a SELECT DISTINCT (not
// grouped) all of whose columns the outer query selects as they are (a
// DISTINCT ON one only without an outer WHERE, which would filter the rows
// DISTINCT ON chose, not choose among the rows it keeps), with
// no grouping sets, window function, LIMIT/OFFSET, set operation or
// set-returning function. Its outer WHERE becomes the HAVING of the groups,
// or the WHERE of the DISTINCT rows.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace pgt::pg {

// The pulled-up query, or nullptr when q is not such a query. The result
// is to be deparsed and analysed again before use.
Query* pull_up_grouped_derived_table(Query* q);

// A query that only selects from one UNION ALL (a view or WITH query of
// staging tables unioned, as dbt models write them), with its select list
// and WHERE pushed into every arm:
//
//   SELECT id, amt * 2 AS a2 FROM (SELECT id, amt FROM s UNION ALL
//     SELECT pid, cents FROM p) u WHERE amt > 0
//   =>  SELECT id, amt * 2 AS a2 FROM s WHERE amt > 0
//       UNION ALL SELECT pid, cents * 2 FROM p WHERE cents > 0
//
// Invariant: only when the two are equal: the outer query is as above
// (a select list and a WHERE, nothing else), every set operation inside
// is UNION ALL, and every arm is a plain SELECT (no aggregate, grouping,
// DISTINCT, ORDER BY, LIMIT, window or set-returning function), so its
// rows are filtered and projected one by one. An arm's column of another
// type than the union's is cast to it first, as the union casts it.
// nullptr when q is not such a query; the result is to be deparsed and
// analysed again before use.
Query* pull_up_union_all(Query* q);

}  // namespace pgt::pg
