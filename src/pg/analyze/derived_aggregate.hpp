// An aggregate over one grouped derived table whose aggregated columns it
// reads (TPC-H q13: a count of customers per count of orders): the derived
// table's change as signed rows, composed by the aggregate over it
// (ir::DerivedAggregate, core/diff/derived).
// Invariant: recognised only where the derived table's sources each have a
// unique key and its own change can be found by branches (those of its
// join region with outer joins, one per table without).
#pragma once

#include "pg/analyze/defining_query.hpp"

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace pgt::pg {

// For a query another shape refused (out.differential_blocker set): when it
// is such an aggregate, fills out.region (RegionShape::derived) and clears
// the blocker; otherwise leaves out as it is.
void derive_derived_aggregate(Query* q, AnalyzedQuery& out);

// q's one FROM item when it is a derived table (not LATERAL, no security
// barrier) and q has nothing but a WHERE, grouping and aggregates over it
// (no HAVING, grouping sets, DISTINCT, window, subquery, LIMIT or WITH),
// keyed by its grouping keys (or one row); nullptr otherwise.
RangeTblEntry* aggregated_subquery(Query* q, const AnalyzedQuery& out);

// The algebraic form of q's aggregates over its one FROM item, a derived
// table read as sql::region_table(0): in region, the aggregates, output
// templates, keys' facts and derived_select, q's (grouping keys,
// arguments) over that relation with q's WHERE. False when q's outputs
// are not grouping keys and algebraic aggregates.
bool outer_algebraic_form(Query* q, const AnalyzedQuery& out, RegionShape& region);

}  // namespace pgt::pg
