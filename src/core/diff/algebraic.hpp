// DIFFERENTIAL refresh of aggregates kept algebraically: a group's new
// values come from its stored row (values and hidden auxiliary columns) and
// the netted change images, not from the group's source rows.
//
//   netted window images passing WHERE ─► d: (weight, keys, arguments)
//   d ─► dg: per touched group, Σ weight, Σ weight·x, counts of non-NULL,
//            MIN/MAX of inserted and of deleted arguments, display scales
//   dg ⟕ stored row (by identity) ─► new count, sums, scales ─► r
//   r: count 0 → delete; stored → update if its values differ; else insert
//   a group whose result the stored state cannot give (its MIN/MAX deleted,
//   NaN or ±Infinity in a numeric sum, the inputs of the largest display
//   scale gone, auxiliary columns not filled yet) is recomputed from its
//   source rows instead, in the same statement
//
// Auxiliary columns (per stream table; user columns come first):
//   __pgt_count  int8     rows in the group (a group with 0 rows is gone)
//   __pgt_n<i>   int8     non-NULL inputs of SUM/AVG number i
//   __pgt_s<i>   numeric  their exact sum
//   __pgt_sc<i>  int8     numeric inputs: largest display scale and how
//                         many inputs have it (core/diff/scale_state.hpp)
// COUNT and MIN/MAX need none: the output column is the state.
//
// Invariant: a group no change touched is neither read nor written, and a
// touched group's source rows are read only when it is recomputed.
#pragma once
#include "core/core.hpp"

#include <string>
#include <vector>

#include "core/diff/program.hpp"
#include "core/ir/scan.hpp"

namespace pgt::diff {

struct AuxColumn {
    std::string name;  // plain identifier, no quoting needed
    std::string type;  // schema-qualified SQL type
    std::string expr;  // the aggregate computing it over the scan alias
};

std::vector<AuxColumn> aux_columns(const ir::AlgebraicGroup& a);

// SELECT <outputs>, <auxiliary columns> FROM source [WHERE] [GROUP BY]:
// what a FULL refresh writes.
std::string algebraic_full_query(const ir::AlgebraicGroup& a);

// One statement; parameters as in window_predicate; returns one row
// (rows_inserted, rows_deleted, rows_updated).
// netted = false: over every captured image (window_source_ctes_unnetted),
// with the netted statement as fallback; MIN/MAX need rescans then.
// rescans = false: a group whose state says it must be recomputed (never,
// in a consistent stream table of linear aggregates) is left untouched,
// and a fourth column counts such groups: the caller recomputes then.
std::string algebraic_group_sql(const ir::AlgebraicGroup& a, const ir::IdentityTarget& target,
                                bool netted = true, bool rescans = true);

// True when every aggregate is a signed sum of per-row terms (COUNT, SUM,
// AVG; not MIN/MAX): images inserted and deleted again in the window cancel.
bool linear_aggregates(const ir::AlgebraicGroup& a);

// A join's delta program: images and signed branches (join_region's), the
// full query (row_query aggregated, with the auxiliary columns) and the
// main statement (d = the UNION ALL of the branches that can find rows).
DeltaProgram algebraic_join_program(const ir::AlgebraicJoin& aj, const ir::IdentityTarget& target);

// The columns of the signed rows d an algebraic main statement reads:
// (weight, grouping keys, arguments).
std::vector<std::string> algebraic_d_columns(const ir::AlgebraicGroup& a);

// p's full query (row_query aggregated, with the auxiliary columns) and
// main statement over signed rows: `WITH <ctes>, ...`, where ctes ends
// with d (algebraic_d_columns); a group the stored state cannot give is
// recomputed from the full query narrowed as `fresh` says (its key
// nullability and filters; its query is replaced).
void algebraic_signed_main(DeltaProgram& p, const ir::AlgebraicGroup& a,
                           const ir::IdentityTarget& t, const std::string& ctes,
                           const std::string& row_query, const ir::JoinRegion& fresh);

// SELECT <outputs>, <auxiliary columns> FROM (row_query) r (keys, args)
// GROUP BY keys: the aggregates over the join's rows.
std::string algebraic_row_query_aggregate(const ir::AlgebraicGroup& a,
                                          const std::string& row_query);

}  // namespace pgt::diff
