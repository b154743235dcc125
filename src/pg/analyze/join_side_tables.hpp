// A plain derived table of one table on a side of a join (a staging view
// joined with LEFT JOIN, once expanded) read as that table:
//
//   a LEFT JOIN (SELECT id AS k, amt / 100.0 AS amount FROM p
//                WHERE NOT deleted) s ON s.k = a.k
//   =>  a LEFT JOIN p s ON p.id = a.k AND NOT p.deleted
//
// Invariant: only when the two are equal. The derived table reads one
// table, and each of its columns is NULL when that table's row is (a column
// or an expression of the row's columns with no non-strict part), so a
// NULL-padded row pads alike. Its WHERE filters the rows the join sees: it
// joins the ON of an inner join or of the outer join whose nullable side
// it is, and the query's WHERE for a preserved side that no outer join
// above pads; elsewhere (a FULL JOIN's sides, a preserved side inside a
// nullable one) only a derived table without WHERE is read so.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace pgt::pg {

// Converts every such derived table on a join side of q's level in place
// (the entry keeps its index; the joins' column lists are rebuilt); whether
// one was. The result is to be deparsed and analysed again.
bool collapse_join_side_tables(Query* q);

}  // namespace pgt::pg
