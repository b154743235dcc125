// The dependency graph of stream tables: nodes are stream table ids, an edge
// upstream -> downstream means "downstream's query reads upstream". Plain
// source tables are not nodes. Invariant: every order this module returns is
// deterministic: ties are always broken by ascending id, never by insertion.
#pragma once
#include "core/core.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace pgt::dag {

using NodeId = std::int64_t;

// Display name of a node for messages, e.g. "public.orders_daily" (already
// quoted by the caller as it wants users to read it).
using NameOf = std::function<std::string(NodeId)>;

class Graph {
public:
    // Adds a node without edges; adding an existing node is a no-op.
    void add_node(NodeId id);
    // Adds the edge upstream -> downstream and both nodes. A duplicate edge
    // is ignored; a self-loop is kept (find_cycle reports it).
    void add_edge(NodeId upstream, NodeId downstream);

    bool contains(NodeId id) const { return adjacency_.count(id) != 0; }
    std::size_t size() const { return adjacency_.size(); }
    // All nodes, ascending.
    std::vector<NodeId> nodes() const;
    // Direct neighbours, ascending; empty for an unknown id.
    const std::vector<NodeId>& upstreams(NodeId id) const;
    const std::vector<NodeId>& downstreams(NodeId id) const;

private:
    struct Adjacency {
        std::vector<NodeId> up;    // sorted, unique
        std::vector<NodeId> down;  // sorted, unique
    };
    std::map<NodeId, Adjacency> adjacency_;
};

// Every node once, each after all of its upstreams; among nodes that are
// ready together the smallest id comes first (Kahn's algorithm with a
// min-heap). Throws pgt::Error 3F000 when the graph has a cycle.
std::vector<NodeId> topological_order(const Graph& graph);

// A cycle of the graph as a closed path [v, ..., v] following edge direction
// (v's downstream first), or empty when the graph is acyclic. The cycle found
// is the first one met by a depth-first search in ascending id order.
std::vector<NodeId> find_cycle(const Graph& graph);

// The cycle that giving `node` exactly the upstreams `upstreams` would create
// (its current upstream edges are replaced; `node` need not be in the graph
// yet): the shortest closed path [node, d1, ..., u, node] where u is one of
// `upstreams` and node -> d1 -> ... -> u runs along existing edges. [node,
// node] when node is its own upstream; empty when no cycle would form.
std::vector<NodeId> cycle_if_added(const Graph& graph, NodeId node,
                                   const std::vector<NodeId>& upstreams);

// Throws pgt::Error 3F000 "stream table cycle detected" whose detail names
// the path of cycle_if_added, e.g. "a -> b -> c -> a"; returns normally when
// no cycle would form. Use before creating or altering a stream table.
void check_no_cycle(const Graph& graph, NodeId node, const std::vector<NodeId>& upstreams,
                    const NameOf& name_of);

// "a -> b -> c -> a" for a path of ids.
std::string format_path(const std::vector<NodeId>& path, const NameOf& name_of);

}  // namespace pgt::dag
