// The differentiation rule each operator of a defining query gets under
// the strategy its stream table's delta program was made by, in words, for
// explain_st's operator tree.
//
//   Project (grp, total)    algebraic_group (apply: replace the touched rows)
//     Aggregate by (grp)    algebraic: stored value, hidden state, images
//       Scan public.t       delta: change images (before -1, after +1)
//
// Invariant: a rule is given only to the operators the strategy treats on
// their own; the others (a Filter the branches copy as written, a Project
// under a join region) are left as they are.
#pragma once
#include "core/core.hpp"

#include <optional>

#include "core/diff/strategy.hpp"
#include "core/ir/tree.hpp"

namespace pgt::diff {

// Sets Node::rule of t's operators for strategy (none: the root is
// recomputed by FULL). Scans get the Δ rule; the root's rule starts with
// the strategy's name.
void describe_rules(ir::Tree& t, std::optional<Strategy> strategy);

}  // namespace pgt::diff
