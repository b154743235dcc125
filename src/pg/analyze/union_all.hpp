// UNION ALL whose arms each read one table through a WHERE and a select
// list: maintained as the sum of its arms' Δ (core/diff/union_all). The
// operator tree shows the arms and their image texts; here is checked
// what it does not show: each arm's table is one capture follows, read
// as plain columns.
#pragma once

#include "pg/analyze/defining_query.hpp"

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace pgt::pg {

// For a query with set operations: clears nothing and sets
// out.differential_blocker unless it is such a UNION ALL.
void derive_union_all(Query* q, AnalyzedQuery& out);

// For a query another shape refused: when it aggregates one UNION ALL of
// such arms (its FROM that union alone, its outputs grouping keys and
// algebraic aggregates, a WHERE of its own), fills the outer aggregate's
// algebraic form (RegionShape::union_aggregate) and clears the blocker;
// otherwise leaves out as it is.
void derive_union_aggregate(Query* q, AnalyzedQuery& out);

}  // namespace pgt::pg
