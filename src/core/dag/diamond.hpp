// Diamond groups (stream tables that must refresh atomically together) and
// the per-tick refresh plan built from them. Invariant: in a plan every unit
// comes after every unit holding one of its members' upstreams, and every
// node of the graph is in exactly one unit.
//
//        A            A fans out to B and C, whose paths converge at D.
//       / \           D must never see B and C at different versions of A,
//      B   C          so {B, C, D} refresh in one transaction. A itself is
//       \ /           refreshed before the group, as an ordinary upstream.
//        D
#pragma once
#include "core/core.hpp"

#include "core/dag/graph.hpp"

#include <set>
#include <vector>

namespace pgt::dag {

// One step of a refresh plan: a single node, or an atomic diamond group whose
// members (listed in topological order) refresh in one transaction: if any
// member fails, none of the group's refreshes is kept.
struct RefreshUnit {
    std::vector<NodeId> members;
    bool atomic = false;  // true exactly when members.size() >= 2

    bool operator==(const RefreshUnit&) const = default;
};

// Diamond groups, in plan order, each listed in topological order.
//
// Definition. For a node D and two distinct direct upstreams P and Q of D,
// let anc(X) be X with all its ancestors and S = anc(P) ∩ anc(Q) the shared
// ancestry. When S is not empty, two paths leaving S converge at D; the
// diamond is D plus every node of anc(P) ∪ anc(Q) outside S that descends
// from a node of S (the intermediate nodes of the converging paths). The
// shared ancestors are not in it: they are refreshed before the group.
//   A->B->D, A->C->D gives {B, C, D};  A->B->D, A->D gives {B, D}.
// Diamonds that share a node are merged. Groups that could only be ordered
// by running each before the other are merged as well (the strongly
// connected units of the graph with groups contracted): with E reading A, C,
// D and F reading B, C, D, the diamonds {C, E} (A->C->E, A->E) and {D, F}
// (B->D->F, B->F) need D before E and C before F, so {C, D, E, F} is one
// group. A node on a path between two members of a group is pulled in the
// same way. Throws pgt::Error 3F000 when the graph has a cycle.
std::vector<std::vector<NodeId>> diamond_groups(const Graph& graph);

// The units of one full tick: every node once, single nodes and diamond
// groups, each unit after all units holding its upstreams; among units
// ready together, the one whose first member comes first in
// topological_order goes first. Throws pgt::Error 3F000 on a cycle.
std::vector<RefreshUnit> refresh_plan(const Graph& graph);

// The units of `plan` to run this tick, in plan order: a single node when it
// is in `due` and not in `suspended`; an atomic group when any member is in
// `due` (all members then refresh; those without changes record NO_DATA)
// and no member is in `suspended` (a group with a suspended member is
// skipped whole: refreshing the rest would expose the split versions the
// group exists to prevent).
std::vector<RefreshUnit> select_due(const std::vector<RefreshUnit>& plan,
                                    const std::set<NodeId>& due, const std::set<NodeId>& suspended);

}  // namespace pgt::dag
