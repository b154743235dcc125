// Differentiation of the linear operators, one rule each, composed by
// recursion over the operator tree:
//
//   Δ(Scan R)    = the images of R's changed rows, from its Δ input   (scan.cpp)
//   Δ(σ_p E)     = σ_p Δ(E)                                         (filter.cpp)
//   Δ(π_e E)     = π_e Δ(E)                                         (project.cpp)
//
// The result is the typed delta of a one-table level: ir::ScanFilterProject,
// which scan_delta (netting, the apply) and the group strategies turn into SQL.
// Every expression is the node's image text (ir::Column::image,
// ir::Node::image_condition): deparsed over ir::kImageAlias, so it is
// evaluated on netted change images, never on a state that was not committed.
// Invariant: a rule refuses (nullopt) rather than guess: a node without
// image texts, a filter or projection over a projection, anything else.
#pragma once
#include "core/core.hpp"

#include <optional>

#include "core/ir/scan.hpp"
#include "core/ir/tree.hpp"

namespace pgt::diff {

// Δ(Scan R): R's change images as delta gives them, with the columns the
// level reads. nullopt when the scan has no image texts (Node::images).
std::optional<ir::ScanFilterProject> delta_scan(const ir::Node& scan, const ir::DeltaInput& delta);

// Δ(σ_p E) = σ_p Δ(E): the predicate is evaluated on netted images, and
// its conjuncts that cannot raise (Node::prefilter) also drop images before
// netting. False (d unchanged) when the filter cannot be applied here: no
// image text, or d already projected.
bool delta_filter(const ir::Node& filter, ir::ScanFilterProject& d);

// Δ(π_e E) = π_e Δ(E): one output per column, its image expression under
// its quoted name. False (d unchanged) when a column has no image text or
// d is already projected.
bool delta_project(const ir::Node& project, ir::ScanFilterProject& d);

// The rules composed from node down to its Scan through Filters and
// Projects.
std::optional<ir::ScanFilterProject> differentiate_linear(const ir::Tree& t, int node,
                                                          const ir::DeltaInput& delta);

// The operators of a level that reads one table, from the root down:
//   [Distinct] Project [Filter (HAVING)] [Aggregate|GroupingSets] [Filter (WHERE)] Scan
// (-1 where absent). nullopt for any other tree.
struct OneTableLevel {
    int project = -1, having = -1, aggregate = -1, where = -1, scan = -1;
};
std::optional<OneTableLevel> one_table_level(const ir::Tree& t);

// Δ of a one-table level as the one-table strategies read it: the rows
// under the aggregate (or the projection) differentiated, with the root
// projection's outputs (aggregates as written, for the group strategies).
std::optional<ir::ScanFilterProject> differentiate_one_table(const ir::Tree& t,
                                                             const OneTableLevel& level,
                                                             const ir::DeltaInput& delta);

}  // namespace pgt::diff
