// Δ of a one-table level's aggregation (γ), as the group strategies render
// it: the touched groups recomputed from their rows (group_rescan), or the
// aggregates kept algebraically from the stored row, hidden state and the
// change's images (algebraic_group, rendered by core/diff/algebraic).
// Invariant: built from the operator tree alone: the level's Δ below the
// aggregate (linear.hpp), the root's identity, and the Aggregate node's
// algebraic form as lowering found it.
#pragma once
#include "core/core.hpp"

#include <optional>
#include <string>
#include <vector>

#include "core/diff/linear.hpp"
#include "core/ir/scan.hpp"
#include "core/ir/tree.hpp"

namespace pgt::diff {

// The groups a change touches, recomputed: scan (the level's Δ with the
// root projection's outputs), the source table, the identity's key
// outputs, and HAVING over the images ("" none).
ir::GroupRescan group_rescan(const ir::Tree& t, const OneTableLevel& level,
                             ir::ScanFilterProject scan, std::string source_table);

// The level's Aggregate node when it has an algebraic form, else nullptr.
const ir::Node* algebraic_aggregate(const ir::Tree& t);

// The aggregates kept algebraically over g; nullopt when the level's
// aggregate has no algebraic form.
std::optional<ir::AlgebraicGroup> algebraic_group(const ir::Tree& t, ir::GroupRescan g);

// GROUPING SETS over one table: every set's touched groups recomputed
// (g's scan and source, the arms and keys of the level's GroupingSets
// node); nullopt when the level has no such node with arms.
std::optional<ir::GroupingSetsRescan> grouping_sets_rescan(const ir::Tree& t,
                                                           const ir::GroupRescan& g);

// Per key column of the root's identity: equal values always look the
// same (false for a column without that fact, such as the set column).
std::vector<bool> keys_alike(const ir::Tree& t);

}  // namespace pgt::diff
