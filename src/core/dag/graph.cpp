// Dependency graph storage, deterministic topological order and cycle search.
// Invariant: adjacency lists stay sorted and unique, so every traversal that
// walks them in order is reproducible from the set of edges alone.
#include "core/dag/graph.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <queue>
#include <set>
#include <utility>

namespace pgt::dag {

namespace {

// The project's SQLSTATE for a dependency cycle (CONVENTIONS.md).
constexpr const char* kCycleSqlstate = "3F000";

void insert_sorted(std::vector<NodeId>& list, NodeId id) {
    const auto it = std::lower_bound(list.begin(), list.end(), id);
    if (it == list.end() || *it != id) {
        list.insert(it, id);
    }
}

const std::vector<NodeId>& empty_list() {
    static const std::vector<NodeId> kEmpty;
    return kEmpty;
}

std::string id_text(NodeId id) {
    return std::to_string(id);
}

// Closes a path that ends just before `start` again: [start, ..., last, start].
std::vector<NodeId> closed(std::vector<NodeId> path) {
    path.push_back(path.front());
    return path;
}

}  // namespace

void Graph::add_node(NodeId id) {
    adjacency_.try_emplace(id);
}

void Graph::add_edge(NodeId upstream, NodeId downstream) {
    insert_sorted(adjacency_[upstream].down, downstream);
    insert_sorted(adjacency_[downstream].up, upstream);
}

std::vector<NodeId> Graph::nodes() const {
    std::vector<NodeId> out;
    out.reserve(adjacency_.size());
    for (const auto& entry : adjacency_) {
        out.push_back(entry.first);
    }
    return out;
}

const std::vector<NodeId>& Graph::upstreams(NodeId id) const {
    const auto it = adjacency_.find(id);
    return it == adjacency_.end() ? empty_list() : it->second.up;
}

const std::vector<NodeId>& Graph::downstreams(NodeId id) const {
    const auto it = adjacency_.find(id);
    return it == adjacency_.end() ? empty_list() : it->second.down;
}

std::vector<NodeId> topological_order(const Graph& graph) {
    std::map<NodeId, std::size_t> waiting;  // id -> upstreams not yet emitted
    std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> ready;
    for (const NodeId id : graph.nodes()) {
        waiting[id] = graph.upstreams(id).size();
        if (waiting[id] == 0) {
            ready.push(id);
        }
    }
    std::vector<NodeId> order;
    order.reserve(graph.size());
    while (!ready.empty()) {
        const NodeId id = ready.top();
        ready.pop();
        order.push_back(id);
        for (const NodeId down : graph.downstreams(id)) {
            if (--waiting[down] == 0) {
                ready.push(down);
            }
        }
    }
    if (order.size() != graph.size()) {
        throw Error(kCycleSqlstate, "stream table cycle detected",
                    "The stream tables with ids " + format_path(find_cycle(graph), id_text) +
                        " depend on each other.");
    }
    return order;
}

std::vector<NodeId> find_cycle(const Graph& graph) {
    enum class Mark { kNew, kOnPath, kDone };
    std::map<NodeId, Mark> mark;
    for (const NodeId root : graph.nodes()) {
        if (mark[root] != Mark::kNew) {
            continue;
        }
        // Iterative DFS: the stack is the current path with, per node, the
        // index of the next downstream to visit.
        std::vector<std::pair<NodeId, std::size_t>> stack{{root, 0}};
        mark[root] = Mark::kOnPath;
        while (!stack.empty()) {
            auto& [id, next] = stack.back();
            const std::vector<NodeId>& downs = graph.downstreams(id);
            if (next == downs.size()) {
                mark[id] = Mark::kDone;
                stack.pop_back();
                continue;
            }
            const NodeId down = downs[next++];
            if (mark[down] == Mark::kOnPath) {
                std::vector<NodeId> path;
                auto it = std::find_if(stack.begin(), stack.end(),
                                       [down](const auto& e) { return e.first == down; });
                for (; it != stack.end(); ++it) {
                    path.push_back(it->first);
                }
                return closed(std::move(path));
            }
            if (mark[down] == Mark::kNew) {
                mark[down] = Mark::kOnPath;
                stack.emplace_back(down, 0);
            }
        }
    }
    return {};
}

std::vector<NodeId> cycle_if_added(const Graph& graph, NodeId node,
                                   const std::vector<NodeId>& upstreams) {
    const std::set<NodeId> targets(upstreams.begin(), upstreams.end());
    if (targets.count(node) != 0) {
        return {node, node};
    }
    // Breadth-first search downstream from node for the nearest target.
    std::map<NodeId, NodeId> parent{{node, node}};
    std::deque<NodeId> queue{node};
    while (!queue.empty()) {
        const NodeId id = queue.front();
        queue.pop_front();
        if (targets.count(id) != 0) {
            std::vector<NodeId> path;
            for (NodeId at = id; at != node; at = parent[at]) {
                path.push_back(at);
            }
            path.push_back(node);
            std::reverse(path.begin(), path.end());
            return closed(std::move(path));
        }
        for (const NodeId down : graph.downstreams(id)) {
            if (parent.try_emplace(down, id).second) {
                queue.push_back(down);
            }
        }
    }
    return {};
}

void check_no_cycle(const Graph& graph, NodeId node, const std::vector<NodeId>& upstreams,
                    const NameOf& name_of) {
    const std::vector<NodeId> path = cycle_if_added(graph, node, upstreams);
    if (path.empty()) {
        return;
    }
    throw Error(kCycleSqlstate, "stream table cycle detected",
                "The dependencies would form the cycle " + format_path(path, name_of) + ".",
                "A stream table cannot read from itself, directly or through other stream "
                "tables; remove one of the dependencies in the cycle.");
}

std::string format_path(const std::vector<NodeId>& path, const NameOf& name_of) {
    std::string out;
    for (std::size_t i = 0; i < path.size(); ++i) {
        out += (i == 0 ? "" : " -> ");
        out += name_of(path[i]);
    }
    return out;
}

}  // namespace pgt::dag
