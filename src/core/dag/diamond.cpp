// Diamond detection over the topologically indexed graph, union-find merging,
// and ordering of the merged units.
// Invariant: node indices here are positions in topological_order, so every
// upstream has a smaller index than its downstreams.
#include "core/dag/diamond.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <utility>

namespace pgt::dag {

namespace {

// The graph re-indexed by topological position.
struct Indexed {
    std::vector<NodeId> ids;                     // index -> id (topological order)
    std::vector<std::vector<std::size_t>> up;    // index -> upstream indices, ascending
    std::vector<std::vector<std::size_t>> down;  // index -> downstream indices, ascending

    explicit Indexed(const Graph& graph) : ids(topological_order(graph)) {
        std::map<NodeId, std::size_t> index;
        for (std::size_t i = 0; i < ids.size(); ++i) {
            index[ids[i]] = i;
        }
        up.resize(ids.size());
        down.resize(ids.size());
        for (std::size_t i = 0; i < ids.size(); ++i) {
            for (const NodeId u : graph.upstreams(ids[i])) {
                up[i].push_back(index[u]);
                down[index[u]].push_back(i);
            }
            std::sort(up[i].begin(), up[i].end());
        }
    }
    std::size_t size() const { return ids.size(); }
};

class UnionFind {
public:
    explicit UnionFind(std::size_t n) : parent_(n) {
        std::iota(parent_.begin(), parent_.end(), std::size_t{0});
    }
    std::size_t find(std::size_t x) {
        while (parent_[x] != x) {
            parent_[x] = parent_[parent_[x]];
            x = parent_[x];
        }
        return x;
    }
    // The smaller index becomes the root, so a root is its set's first member.
    void unite(std::size_t a, std::size_t b) {
        a = find(a);
        b = find(b);
        if (a != b) {
            parent_[std::max(a, b)] = std::min(a, b);
        }
    }

private:
    std::vector<std::size_t> parent_;
};

// anc(x): x and all its ancestors, as a membership vector.
std::vector<char> ancestry(const Indexed& g, std::size_t x) {
    std::vector<char> in(g.size(), 0);
    std::vector<std::size_t> stack{x};
    in[x] = 1;
    while (!stack.empty()) {
        const std::size_t at = stack.back();
        stack.pop_back();
        for (const std::size_t u : g.up[at]) {
            if (!in[u]) {
                in[u] = 1;
                stack.push_back(u);
            }
        }
    }
    return in;
}

// Unites d with the intermediate nodes of the paths converging at d through
// its upstreams whose ancestries are ap and aq (see diamond.hpp).
void unite_diamond(const Indexed& g, std::size_t d, const std::vector<char>& ap,
                   const std::vector<char>& aq, UnionFind& sets) {
    std::vector<char> from_shared(g.size(), 0);  // descends from a shared ancestor
    for (std::size_t x = 0; x < d; ++x) {        // topological: upstreams first
        if (ap[x] == aq[x]) {
            continue;  // shared (both) or unrelated (neither)
        }
        for (const std::size_t u : g.up[x]) {
            if ((ap[u] && aq[u]) || from_shared[u]) {
                from_shared[x] = 1;
                sets.unite(x, d);
                break;
            }
        }
    }
}

// Union of all diamonds, before the ordering fix-up.
UnionFind raw_diamonds(const Indexed& g) {
    UnionFind sets(g.size());
    for (std::size_t d = 0; d < g.size(); ++d) {
        const std::vector<std::size_t>& ups = g.up[d];
        if (ups.size() < 2) {
            continue;
        }
        std::vector<std::vector<char>> anc;
        for (const std::size_t p : ups) {
            anc.push_back(ancestry(g, p));
        }
        for (std::size_t i = 0; i < ups.size(); ++i) {
            for (std::size_t j = i + 1; j < ups.size(); ++j) {
                unite_diamond(g, d, anc[i], anc[j], sets);
            }
        }
    }
    return sets;
}

// Unit-level edges (root -> root), sorted and unique per root.
std::vector<std::vector<std::size_t>> unit_edges(const Indexed& g, UnionFind& sets, bool reversed) {
    std::vector<std::vector<std::size_t>> edges(g.size());
    for (std::size_t x = 0; x < g.size(); ++x) {
        for (const std::size_t y : g.down[x]) {
            const std::size_t rx = sets.find(x);
            const std::size_t ry = sets.find(y);
            if (rx != ry) {
                edges[reversed ? ry : rx].push_back(reversed ? rx : ry);
            }
        }
    }
    for (auto& list : edges) {
        std::sort(list.begin(), list.end());
        list.erase(std::unique(list.begin(), list.end()), list.end());
    }
    return edges;
}

// Post-order (finish order) of an iterative DFS over `edges` from `roots`.
void post_order(const std::vector<std::vector<std::size_t>>& edges, std::size_t root,
                std::vector<char>& seen, std::vector<std::size_t>& out) {
    std::vector<std::pair<std::size_t, std::size_t>> stack{{root, 0}};
    seen[root] = 1;
    while (!stack.empty()) {
        auto& [at, next] = stack.back();
        if (next == edges[at].size()) {
            out.push_back(at);
            stack.pop_back();
            continue;
        }
        const std::size_t to = edges[at][next++];
        if (!seen[to]) {
            seen[to] = 1;
            stack.emplace_back(to, 0);
        }
    }
}

// Merges units that reach each other through the unit graph (its strongly
// connected components, Kosaraju), making the unit graph acyclic.
void merge_unit_cycles(const Indexed& g, UnionFind& sets) {
    const auto forward = unit_edges(g, sets, false);
    const auto backward = unit_edges(g, sets, true);
    std::vector<char> seen(g.size(), 0);
    std::vector<std::size_t> finish;
    for (std::size_t r = 0; r < g.size(); ++r) {
        if (sets.find(r) == r && !seen[r]) {
            post_order(forward, r, seen, finish);
        }
    }
    std::fill(seen.begin(), seen.end(), 0);
    for (auto it = finish.rbegin(); it != finish.rend(); ++it) {
        if (seen[*it]) {
            continue;
        }
        std::vector<std::size_t> component;
        post_order(backward, *it, seen, component);
        for (const std::size_t member : component) {
            sets.unite(member, *it);
        }
    }
}

// Kahn's algorithm over the (acyclic) unit graph; ties by root index, which
// is the unit's first member in topological order.
std::vector<RefreshUnit> order_units(const Indexed& g, UnionFind& sets) {
    std::vector<std::vector<std::size_t>> members(g.size());
    for (std::size_t x = 0; x < g.size(); ++x) {
        members[sets.find(x)].push_back(x);
    }
    const auto edges = unit_edges(g, sets, false);
    std::vector<std::size_t> waiting(g.size(), 0);
    for (const auto& list : edges) {
        for (const std::size_t to : list) {
            ++waiting[to];
        }
    }
    std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
    for (std::size_t r = 0; r < g.size(); ++r) {
        if (sets.find(r) == r && waiting[r] == 0) {
            ready.push(r);
        }
    }
    std::vector<RefreshUnit> plan;
    while (!ready.empty()) {
        const std::size_t r = ready.top();
        ready.pop();
        RefreshUnit unit;
        for (const std::size_t x : members[r]) {
            unit.members.push_back(g.ids[x]);
        }
        unit.atomic = unit.members.size() >= 2;
        plan.push_back(std::move(unit));
        for (const std::size_t to : edges[r]) {
            if (--waiting[to] == 0) {
                ready.push(to);
            }
        }
    }
    return plan;
}

}  // namespace

std::vector<RefreshUnit> refresh_plan(const Graph& graph) {
    const Indexed g(graph);
    UnionFind sets = raw_diamonds(g);
    merge_unit_cycles(g, sets);
    return order_units(g, sets);
}

std::vector<std::vector<NodeId>> diamond_groups(const Graph& graph) {
    std::vector<std::vector<NodeId>> groups;
    for (RefreshUnit& unit : refresh_plan(graph)) {
        if (unit.atomic) {
            groups.push_back(std::move(unit.members));
        }
    }
    return groups;
}

std::vector<RefreshUnit> select_due(const std::vector<RefreshUnit>& plan,
                                    const std::set<NodeId>& due,
                                    const std::set<NodeId>& suspended) {
    std::vector<RefreshUnit> out;
    for (const RefreshUnit& unit : plan) {
        const auto in = [](const std::set<NodeId>& set) {
            return [&set](NodeId id) { return set.count(id) != 0; };
        };
        const auto& m = unit.members;
        if (std::any_of(m.begin(), m.end(), in(due)) &&
            std::none_of(m.begin(), m.end(), in(suspended))) {
            out.push_back(unit);
        }
    }
    return out;
}

}  // namespace pgt::dag
