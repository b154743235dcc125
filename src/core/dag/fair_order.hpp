// The order in which one tick runs its refresh units: by a rank the
// scheduler gives each unit (smallest first: the owner served least
// recently, then the earliest due), so one owner's slow tables cannot keep
// another owner's waiting behind all of them; a unit never goes before
// one that refreshes an upstream of it (of any member, however far up).
// Invariant: a permutation of the units given; among equal ranks, their
// order in the plan.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/dag/diamond.hpp"
#include "core/dag/graph.hpp"

namespace pgt::dag {

using UnitRank = std::pair<std::int64_t, std::int64_t>;

// rank[i] ranks units[i] (same size).
std::vector<RefreshUnit> order_units(const Graph& graph, const std::vector<RefreshUnit>& units,
                                     const std::vector<UnitRank>& rank);

}  // namespace pgt::dag
