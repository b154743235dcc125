// The order in which one tick runs its refresh units: earliest due first,
// so a table that waited while a slow one refreshed goes before that one
// runs again; a unit never goes before one that refreshes an upstream of
// it (of any of its members, however far up).
// Invariant: a permutation of the units given; among units due at the same
// instant, their order in the plan.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/dag/diamond.hpp"
#include "core/dag/graph.hpp"

namespace pgt::dag {

// due_at: when each table became due (a unit: its earliest member; a table
// not listed counts as due at 0, the earliest instant).
std::vector<RefreshUnit> order_by_due(const Graph& graph, const std::vector<RefreshUnit>& units,
                                      const std::map<NodeId, std::int64_t>& due_at);

}  // namespace pgt::dag
