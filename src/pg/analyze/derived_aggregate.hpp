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

}  // namespace pgt::pg
