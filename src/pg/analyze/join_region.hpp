// Recognition of inner joins that a join region maintains
// (core/diff/join_region.hpp), and the deparsed branch queries it runs.
// Invariant: a branch is the defining query's own FROM/WHERE, changed only
// by reading some tables' change images instead of the tables, so it
// evaluates exactly the query's join and filter expressions.
#pragma once

#include "pg/analyze/defining_query.hpp"

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace pgt::pg {

// For a query with more than one FROM item: fills out.region, or sets
// out.differential_blocker naming what keeps it from a region. Returns
// false for outer joins (the blocker names the join; a two-table join's
// own reason, when there is one, says more).
bool derive_region_shape(Query* q, AnalyzedQuery& out);

// Whether every subquery in q's expressions is in WHERE, the select list
// or HAVING (which a region follows when the subquery is simple enough;
// derive_region_shape names what is not), none in a join condition.
bool subqueries_in_supported_places(Query* q);

}  // namespace pgt::pg
