// The order of a tick's units (see fair_order.hpp).
#include "core/dag/fair_order.hpp"

#include <algorithm>
#include <set>

namespace pgt::dag {

namespace {

std::set<NodeId> ancestors_of(const Graph& graph, const RefreshUnit& unit) {
    std::set<NodeId> seen;
    std::vector<NodeId> stack(unit.members.begin(), unit.members.end());
    while (!stack.empty()) {
        const NodeId id = stack.back();
        stack.pop_back();
        for (const NodeId up : graph.upstreams(id)) {
            if (seen.insert(up).second) {
                stack.push_back(up);
            }
        }
    }
    return seen;
}

}  // namespace

std::vector<RefreshUnit> order_units(const Graph& graph, const std::vector<RefreshUnit>& units,
                                     const std::vector<UnitRank>& rank) {
    const std::size_t n = units.size();
    std::vector<std::set<NodeId>> above(n);
    for (std::size_t i = 0; i < n; ++i) {
        above[i] = ancestors_of(graph, units[i]);
    }
    std::vector<bool> done(n, false);
    std::vector<RefreshUnit> out;
    // A unit may run once no unit left to run refreshes one of its ancestors.
    auto ready = [&](std::size_t i) {
        for (std::size_t j = 0; j < n; ++j) {
            if (j == i || done[j]) {
                continue;
            }
            for (const NodeId m : units[j].members) {
                if (above[i].count(m) != 0) {
                    return false;
                }
            }
        }
        return true;
    };
    while (out.size() < n) {
        std::size_t pick = n;
        for (std::size_t i = 0; i < n; ++i) {
            if (!done[i] && ready(i) && (pick == n || rank.at(i) < rank.at(pick))) {
                pick = i;
            }
        }
        if (pick == n) {  // not reachable for units of an acyclic plan
            for (std::size_t i = 0; i < n; ++i) {
                if (!done[i]) {
                    pick = i;
                    break;
                }
            }
        }
        done[pick] = true;
        out.push_back(units[pick]);
    }
    return out;
}

}  // namespace pgt::dag
