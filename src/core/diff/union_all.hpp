// Δ of UNION ALL, the sum of its arms' Δ:
//
//   Δ(A UNION ALL B) = Δ(A) UNION ALL Δ(B)
//
// Each arm, a level that reads one table (Project [Filter] Scan), is
// differentiated by the linear rules (linear.hpp) over its table's Δ and
// evaluated on its netted images: rows of the union's output, each with
// the sign of its image. A union of rows proves no key, so the stream
// table is counted: each row's net count adds or removes copies of it.
// Two arms reading one table read its one Δ, each through its own WHERE
// and select list.
// Invariant: the arms keep their order, so the union of their signed rows
// resolves each column's type over the arms as the defining query does.
#pragma once
#include "core/core.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/scan.hpp"
#include "core/ir/tree.hpp"

namespace pgt::diff {

// The arms of t's root when it is UNION ALL (nested UNION ALLs included)
// over levels the linear rules differentiate: their roots, left to right;
// nullopt otherwise.
std::optional<std::vector<int>> union_all_arms(const ir::Tree& t);

// An arm differentiated: its Δ with its outputs named as the stream
// table's columns, and its source's window block (parameters
// $(base+1)..$(base+5); unused over transition tables).
struct UnionArm {
    ir::ScanFilterProject scan;
    int base = 0;
};

// Where an arm's table's Δ comes from: its input and window block.
struct UnionInput {
    ir::DeltaInput delta;
    int base = 0;
};

// t's arms (union_all_arms) differentiated, each over input(relid of its
// table), its outputs named `names` (quoted, the stream table's columns);
// nullopt when t is no such union.
std::optional<std::vector<UnionArm>> differentiate_union_all(
    const ir::Tree& t, const std::function<UnionInput(uint32_t)>& input,
    const std::vector<std::string>& names);

// The statement: every arm's netted images evaluated through its WHERE
// and select list, their signed rows summed per identity and image, and
// as many copies added or removed. Throws kInternalError for a keyed
// target or no arms.
std::string union_all_sql(const std::vector<UnionArm>& arms, const ir::IdentityTarget& target);

}  // namespace pgt::diff
