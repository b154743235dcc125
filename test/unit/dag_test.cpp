// Unit tests for src/core/dag: topological order, cycles, diamond groups,
// refresh plans and 'calculated' schedule inheritance.
// Invariant: graphs are built from edge lists in scrambled insertion order,
// so every expected order is the module's own deterministic choice.
#include "core/dag/calculated.hpp"
#include "core/dag/diamond.hpp"
#include "core/dag/fair_order.hpp"
#include "core/dag/graph.hpp"

#include "core/error.hpp"
#include "core/sched/schedule.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

using pgt::dag::Graph;
using pgt::dag::NodeId;
using pgt::dag::RefreshUnit;
using pgt::sched::EffectiveSchedule;
using pgt::sched::Timing;
using std::chrono::seconds;
using Ids = std::vector<NodeId>;
using Edges = std::vector<std::pair<NodeId, NodeId>>;

Graph graph_of(const Edges& edges, const Ids& lone = {}) {
    Graph g;
    for (const NodeId id : lone) {
        g.add_node(id);
    }
    for (const auto& [up, down] : edges) {
        g.add_edge(up, down);
    }
    return g;
}

// Names 1..26 as a..z, anything else as its number.
std::string letter(NodeId id) {
    return id >= 1 && id <= 26 ? std::string(1, static_cast<char>('a' + id - 1))
                               : std::to_string(id);
}

RefreshUnit single(NodeId id) {
    return {{id}, false};
}
RefreshUnit group(Ids ids) {
    return {std::move(ids), true};
}

// Position of each node in a plan (unit index).
std::map<NodeId, std::size_t> unit_index(const std::vector<RefreshUnit>& plan) {
    std::map<NodeId, std::size_t> at;
    for (std::size_t i = 0; i < plan.size(); ++i) {
        for (const NodeId id : plan[i].members) {
            at[id] = i;
        }
    }
    return at;
}

// ---- graph and topological order ---------------------------------------------

TEST(DagGraph, adjacency_is_sorted_and_duplicate_edges_are_ignored) {
    const Graph g = graph_of({{1, 9}, {1, 3}, {1, 9}, {5, 3}});
    EXPECT_EQ(g.downstreams(1), (Ids{3, 9}));
    EXPECT_EQ(g.upstreams(3), (Ids{1, 5}));
    EXPECT_EQ(g.nodes(), (Ids{1, 3, 5, 9}));
    EXPECT_TRUE(g.upstreams(42).empty());
    EXPECT_FALSE(g.contains(42));
}

TEST(DagTopo, chain_is_ordered_upstream_first) {
    EXPECT_EQ(topological_order(graph_of({{3, 2}, {2, 1}})), (Ids{3, 2, 1}));
}

TEST(DagTopo, ties_are_broken_by_ascending_id_regardless_of_insertion) {
    const Graph a = graph_of({{10, 4}, {2, 4}, {7, 1}}, {30, 5});
    const Graph b = graph_of({{7, 1}, {2, 4}, {10, 4}}, {5, 30});
    const Ids expected{2, 5, 7, 1, 10, 4, 30};
    EXPECT_EQ(topological_order(a), expected);
    EXPECT_EQ(topological_order(b), expected);
}

TEST(DagTopo, empty_graph_has_empty_order) {
    EXPECT_TRUE(topological_order(Graph{}).empty());
}

TEST(DagTopo, cycle_throws_3F000_naming_the_ids) {
    try {
        topological_order(graph_of({{1, 2}, {2, 3}, {3, 2}}));
        FAIL() << "no error";
    } catch (const pgt::Error& e) {
        EXPECT_EQ(e.sqlstate(), "3F000");
        EXPECT_STREQ(e.message(), "stream table cycle detected");
        EXPECT_EQ(e.detail(), "The stream tables with ids 2 -> 3 -> 2 depend on each other.");
    }
}

// ---- cycles ------------------------------------------------------------------------

TEST(DagCycle, acyclic_graph_has_no_cycle) {
    EXPECT_TRUE(find_cycle(graph_of({{1, 2}, {1, 3}, {2, 4}, {3, 4}})).empty());
}

TEST(DagCycle, find_cycle_reports_self_loop_two_cycle_and_long_cycle) {
    EXPECT_EQ(find_cycle(graph_of({{4, 4}})), (Ids{4, 4}));
    EXPECT_EQ(find_cycle(graph_of({{5, 6}, {6, 5}})), (Ids{5, 6, 5}));
    EXPECT_EQ(find_cycle(graph_of({{1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 2}})), (Ids{2, 3, 4, 5, 2}));
}

TEST(DagCycle, proposed_self_dependency_is_a_self_loop) {
    EXPECT_EQ(cycle_if_added(graph_of({{1, 2}}), 2, {1, 2}), (Ids{2, 2}));
    EXPECT_EQ(cycle_if_added(Graph{}, 7, {7}), (Ids{7, 7}));
}

TEST(DagCycle, proposed_two_cycle_is_found) {
    // b reads a; altering a to read b closes a -> b -> a.
    EXPECT_EQ(cycle_if_added(graph_of({{1, 2}}), 1, {2}), (Ids{1, 2, 1}));
}

TEST(DagCycle, new_node_cannot_form_a_cycle) {
    EXPECT_TRUE(cycle_if_added(graph_of({{1, 2}, {2, 3}}), 99, {1, 2, 3}).empty());
}

TEST(DagCycle, replacing_upstreams_ignores_the_current_ones) {
    // a -> c today; c moving to read b only is fine.
    EXPECT_TRUE(cycle_if_added(graph_of({{1, 3}, {2, 4}}), 3, {2}).empty());
}

TEST(DagCycle, shortest_cycle_is_reported_when_several_would_form) {
    const Graph g = graph_of({{1, 2}, {2, 3}, {3, 4}, {1, 5}, {5, 4}});
    EXPECT_EQ(cycle_if_added(g, 1, {4, 3}), (Ids{1, 2, 3, 1}));
}

TEST(DagCycle, check_no_cycle_names_the_long_cycle_path) {
    const Graph g = graph_of({{1, 2}, {2, 3}, {3, 4}});
    try {
        check_no_cycle(g, 1, {4}, letter);
        FAIL() << "no error";
    } catch (const pgt::Error& e) {
        EXPECT_EQ(e.sqlstate(), "3F000");
        EXPECT_STREQ(e.message(), "stream table cycle detected");
        EXPECT_EQ(e.detail(), "The dependencies would form the cycle a -> b -> c -> d -> a.");
        EXPECT_FALSE(e.hint().empty());
        EXPECT_EQ(e.hint().back(), '.');
    }
    EXPECT_NO_THROW(check_no_cycle(g, 4, {1}, letter));
}

TEST(DagCycle, format_path_uses_caller_names) {
    const auto name = [](NodeId id) { return "public.st" + std::to_string(id); };
    EXPECT_EQ(pgt::dag::format_path({3, 8, 3}, name), "public.st3 -> public.st8 -> public.st3");
}

// ---- diamonds and refresh plans ---------------------------------------------------

TEST(DagDiamond, chain_has_no_group_and_plans_singles) {
    const Graph g = graph_of({{1, 2}, {2, 3}});
    EXPECT_TRUE(diamond_groups(g).empty());
    EXPECT_EQ(refresh_plan(g), (std::vector<RefreshUnit>{single(1), single(2), single(3)}));
}

TEST(DagDiamond, fan_in_from_unrelated_upstreams_is_not_a_diamond) {
    EXPECT_TRUE(diamond_groups(graph_of({{1, 3}, {2, 3}})).empty());
}

TEST(DagDiamond, simple_diamond_excludes_the_shared_ancestor) {
    // a -> b -> d, a -> c -> d
    const Graph g = graph_of({{1, 2}, {1, 3}, {2, 4}, {3, 4}});
    EXPECT_EQ(diamond_groups(g), (std::vector<Ids>{{2, 3, 4}}));
    EXPECT_EQ(refresh_plan(g), (std::vector<RefreshUnit>{single(1), group({2, 3, 4})}));
}

TEST(DagDiamond, shortcut_edge_makes_a_two_member_group) {
    // a -> b -> d and a -> d directly
    EXPECT_EQ(diamond_groups(graph_of({{1, 2}, {2, 4}, {1, 4}})), (std::vector<Ids>{{2, 4}}));
}

TEST(DagDiamond, ancestors_above_the_fork_stay_outside) {
    // s -> a, then the simple diamond under a
    const Graph g = graph_of({{5, 1}, {1, 2}, {1, 3}, {2, 4}, {3, 4}});
    EXPECT_EQ(refresh_plan(g), (std::vector<RefreshUnit>{single(5), single(1), group({2, 3, 4})}));
}

TEST(DagDiamond, unrelated_extra_upstream_of_a_branch_stays_outside) {
    // x -> b joins the diamond's branch b without sharing ancestry with c.
    const Graph g = graph_of({{1, 2}, {1, 3}, {2, 4}, {3, 4}, {9, 2}});
    // Members in topological order: b waits for x, so c comes first.
    EXPECT_EQ(topological_order(g), (Ids{1, 3, 9, 2, 4}));
    EXPECT_EQ(diamond_groups(g), (std::vector<Ids>{{3, 2, 4}}));
}

TEST(DagDiamond, convergence_above_a_node_does_not_pull_it_in) {
    // a -> b -> m, a -> c -> m, m -> d: d reads m only.
    const Graph g = graph_of({{1, 2}, {1, 3}, {2, 5}, {3, 5}, {5, 6}});
    EXPECT_EQ(refresh_plan(g), (std::vector<RefreshUnit>{single(1), group({2, 3, 5}), single(6)}));
}

TEST(DagDiamond, nested_diamond_is_one_group) {
    // outer: a -> b -> f, a -> e -> f; inner inside the b branch:
    // b -> c -> d, b -> x -> d, d -> f.
    const Graph g = graph_of({{1, 2}, {1, 5}, {2, 3}, {2, 24}, {3, 4}, {24, 4}, {4, 6}, {5, 6}});
    EXPECT_EQ(diamond_groups(g), (std::vector<Ids>{{2, 3, 5, 24, 4, 6}}));
}

TEST(DagDiamond, two_overlapping_diamonds_merge) {
    // a -> b -> d, a -> c -> d   and, sharing c,   x -> c -> g, x -> h -> g.
    const Graph g = graph_of({{1, 2}, {1, 3}, {2, 4}, {3, 4}, {3, 7}, {24, 3}, {24, 8}, {8, 7}});
    // Diamond 1: {b, c, d}; diamond 2 (fork x=24): {c, h, g} -> merged.
    EXPECT_EQ(diamond_groups(g), (std::vector<Ids>{{2, 3, 4, 8, 7}}));
    const auto plan = refresh_plan(g);
    EXPECT_EQ(plan, (std::vector<RefreshUnit>{single(1), single(24), group({2, 3, 4, 8, 7})}));
}

TEST(DagDiamond, crossed_diamonds_that_need_each_other_first_merge) {
    // e reads a, c, d (diamond a->c->e, a->e: {c, e}); f reads b, c, d
    // (diamond b->d->f, b->f: {d, f}). {c, e} needs d first (d -> e) and
    // {d, f} needs c first (c -> f), so neither can go first: one group.
    const Graph g = graph_of({{1, 3}, {2, 4}, {1, 5}, {3, 5}, {4, 5}, {2, 6}, {3, 6}, {4, 6}});
    EXPECT_EQ(refresh_plan(g),
              (std::vector<RefreshUnit>{single(1), single(2), group({3, 4, 5, 6})}));
}

TEST(DagDiamond, disjoint_diamonds_stay_separate_in_topological_order) {
    const Graph g =
        graph_of({{1, 2}, {1, 3}, {2, 4}, {3, 4}, {11, 12}, {11, 13}, {12, 14}, {13, 14}});
    EXPECT_EQ(diamond_groups(g), (std::vector<Ids>{{2, 3, 4}, {12, 13, 14}}));
}

TEST(DagDiamond, plan_puts_each_unit_after_its_upstream_units) {
    // A node between a group's branches' ancestor and a later consumer.
    const Graph g = graph_of({{1, 2}, {1, 3}, {2, 4}, {3, 4}, {4, 5}, {1, 6}, {6, 5}});
    const auto plan = refresh_plan(g);
    const auto at = unit_index(plan);
    for (const NodeId id : g.nodes()) {
        for (const NodeId up : g.upstreams(id)) {
            if (at.at(up) != at.at(id)) {
                EXPECT_LT(at.at(up), at.at(id)) << up << " -> " << id;
            }
        }
    }
}

TEST(DagDiamond, random_dags_give_valid_plans) {
    const unsigned seed = 20260105;
    std::mt19937 rng(seed);
    for (int round = 0; round < 500; ++round) {
        Graph g;
        const int n = 2 + static_cast<int>(rng() % 20);
        for (NodeId id = 1; id <= n; ++id) {
            g.add_node(id);
            for (NodeId up = 1; up < id; ++up) {
                if (rng() % (2 + round % 8) == 0) {
                    g.add_edge(up, id);
                }
            }
        }
        const auto plan = refresh_plan(g);
        const auto at = unit_index(plan);
        ASSERT_EQ(at.size(), g.size()) << "seed " << seed << " round " << round;
        std::size_t count = 0;
        for (const RefreshUnit& u : plan) {
            count += u.members.size();
            EXPECT_EQ(u.atomic, u.members.size() >= 2);
        }
        EXPECT_EQ(count, g.size()) << "seed " << seed << " round " << round;
        for (const NodeId id : g.nodes()) {
            for (const NodeId up : g.upstreams(id)) {
                EXPECT_LE(at.at(up), at.at(id)) << "seed " << seed << " round " << round;
            }
        }
    }
}

TEST(DagDiamond, cycle_in_graph_throws_3F000) {
    EXPECT_THROW(refresh_plan(graph_of({{1, 2}, {2, 1}})), pgt::Error);
}

TEST(DagDiamond, select_due_keeps_due_singles_and_whole_groups) {
    const std::vector<RefreshUnit> plan{single(1), group({2, 3, 4}), single(5)};
    EXPECT_EQ(select_due(plan, {1, 3}, {}),
              (std::vector<RefreshUnit>{single(1), group({2, 3, 4})}));
    EXPECT_EQ(select_due(plan, {5}, {}), (std::vector<RefreshUnit>{single(5)}));
    EXPECT_TRUE(select_due(plan, {}, {}).empty());
}

TEST(DagDiamond, select_due_skips_a_group_with_a_suspended_member) {
    const std::vector<RefreshUnit> plan{single(1), group({2, 3, 4})};
    EXPECT_EQ(select_due(plan, {1, 4}, {2}), (std::vector<RefreshUnit>{single(1)}));
    EXPECT_TRUE(select_due(plan, {1}, {1}).empty());
}

// ---- calculated schedules --------------------------------------------------------

using Schedules = std::map<NodeId, pgt::sched::Schedule>;

Schedules schedules_of(const std::map<NodeId, const char*>& texts) {
    Schedules out;
    for (const auto& [id, text] : texts) {
        out[id] = pgt::sched::parse_schedule(text);
    }
    return out;
}

EffectiveSchedule every(std::int64_t s) {
    return {Timing::Interval, seconds{s}, {}};
}
const EffectiveSchedule kFollow{Timing::FollowConsumers, seconds{0}, {}};

TEST(DagCalculated, duration_is_kept_and_floored) {
    const Graph g = graph_of({}, {1, 2});
    const auto e =
        effective_schedules(g, schedules_of({{1, "5m"}, {2, "1s"}}), seconds{60}, seconds{10});
    EXPECT_EQ(e.at(1), every(300));
    EXPECT_EQ(e.at(2), every(10));
}

TEST(DagCalculated, leaf_calculated_gets_the_default_floored) {
    const Graph g = graph_of({}, {1});
    EXPECT_EQ(
        effective_schedules(g, schedules_of({{1, "calculated"}}), seconds{60}, seconds{1}).at(1),
        every(60));
    EXPECT_EQ(
        effective_schedules(g, schedules_of({{1, "calculated"}}), seconds{5}, seconds{30}).at(1),
        every(30));
}

TEST(DagCalculated, inherits_tightest_consumer_interval) {
    // 1 is read by 2 (10m) and 3 (30s).
    const Graph g = graph_of({{1, 2}, {1, 3}});
    const auto e = effective_schedules(g, schedules_of({{1, "calculated"}, {2, "10m"}, {3, "30s"}}),
                                       seconds{60}, seconds{1});
    EXPECT_EQ(e.at(1), every(30));
}

TEST(DagCalculated, inherits_through_a_chain_of_calculated_tables) {
    // 1 -> 2 -> 3 -> 4; only 4 has a duration.
    const Graph g = graph_of({{1, 2}, {2, 3}, {3, 4}});
    const auto e = effective_schedules(
        g, schedules_of({{1, "calculated"}, {2, "calculated"}, {3, "calculated"}, {4, "45s"}}),
        seconds{600}, seconds{1});
    EXPECT_EQ(e.at(1), every(45));
    EXPECT_EQ(e.at(2), every(45));
    EXPECT_EQ(e.at(3), every(45));
}

TEST(DagCalculated, floor_applies_to_inherited_intervals) {
    const Graph g = graph_of({{1, 2}});
    const auto e = effective_schedules(g, schedules_of({{1, "calculated"}, {2, "2s"}}), seconds{60},
                                       seconds{15});
    EXPECT_EQ(e.at(2), every(15));
    EXPECT_EQ(e.at(1), every(15));
}

TEST(DagCalculated, own_duration_is_not_tightened_by_consumers) {
    const Graph g = graph_of({{1, 2}});
    const auto e =
        effective_schedules(g, schedules_of({{1, "1h"}, {2, "1m"}}), seconds{60}, seconds{1});
    EXPECT_EQ(e.at(1), every(3600));
}

TEST(DagCalculated, only_cron_consumers_means_follow_consumers) {
    const Graph g = graph_of({{1, 2}, {2, 3}});
    const auto e =
        effective_schedules(g, schedules_of({{1, "calculated"}, {2, "calculated"}, {3, "@hourly"}}),
                            seconds{60}, seconds{1});
    EXPECT_EQ(e.at(3).timing, Timing::Cron);
    EXPECT_EQ(e.at(3).cron, pgt::sched::parse_schedule("@hourly").cron);
    EXPECT_EQ(e.at(2), kFollow);
    EXPECT_EQ(e.at(1), kFollow);
}

TEST(DagCalculated, interval_consumer_wins_over_cron_consumer) {
    const Graph g = graph_of({{1, 2}, {1, 3}});
    const auto e =
        effective_schedules(g, schedules_of({{1, "calculated"}, {2, "*/5 * * * *"}, {3, "2h"}}),
                            seconds{60}, seconds{1});
    EXPECT_EQ(e.at(1), every(7200));
}

TEST(DagCalculated, calculated_consumer_with_default_counts_as_interval) {
    const Graph g = graph_of({{1, 2}});
    const auto e = effective_schedules(g, schedules_of({{1, "calculated"}, {2, "calculated"}}),
                                       seconds{90}, seconds{1});
    EXPECT_EQ(e.at(2), every(90));
    EXPECT_EQ(e.at(1), every(90));
}

TEST(DagCalculated, missing_schedule_is_an_internal_error) {
    try {
        effective_schedules(graph_of({{1, 2}}), schedules_of({{1, "1m"}}), seconds{60}, seconds{1});
        FAIL() << "no error";
    } catch (const pgt::Error& e) {
        EXPECT_EQ(e.sqlstate(), "XX000");
        EXPECT_STREQ(e.message(), "no schedule for stream table id 2");
    }
}

TEST(DagCalculated, invalid_parameters_are_rejected_with_22023) {
    const Graph g = graph_of({}, {1});
    const Schedules s = schedules_of({{1, "1m"}});
    for (const auto& [def, min] : std::vector<std::pair<int, int>>{{0, 1}, {60, -1}}) {
        try {
            effective_schedules(g, s, seconds{def}, seconds{min});
            FAIL() << def << " " << min;
        } catch (const pgt::Error& e) {
            EXPECT_EQ(e.sqlstate(), "22023");
            EXPECT_EQ(e.detail().back(), '.');
            EXPECT_EQ(e.hint().back(), '.');
        }
    }
}

}  // namespace

namespace {

using pgt::dag::order_units;

Ids members_in_order(const std::vector<RefreshUnit>& units) {
    Ids out;
    for (const RefreshUnit& u : units) {
        out.insert(out.end(), u.members.begin(), u.members.end());
    }
    return out;
}

// Smallest rank first (owner served least recently, then earliest due).
TEST(DagFairOrder, smallest_rank_first_among_independent_units) {
    const Graph g = graph_of({}, {1, 2, 3});
    const std::vector<RefreshUnit> plan{{{1}, false}, {{2}, false}, {{3}, false}};
    EXPECT_EQ(members_in_order(order_units(g, plan, {{9, 1}, {0, 500}, {9, 0}})), (Ids{2, 3, 1}));
    // Equal ranks: plan order.
    EXPECT_EQ(members_in_order(order_units(g, plan, {{5, 5}, {5, 5}, {5, 5}})), (Ids{1, 2, 3}));
}

// Never before a unit refreshing an upstream, even through a table that
// is not due (1 -> 2 -> 3, 2 not in this tick).
TEST(DagFairOrder, upstream_units_go_first_however_far_up) {
    const Graph g = graph_of({{1, 2}, {2, 3}}, {4});
    const std::vector<RefreshUnit> plan{{{1}, false}, {{3}, false}, {{4}, false}};
    EXPECT_EQ(members_in_order(order_units(g, plan, {{0, 900}, {0, 100}, {0, 500}})),
              (Ids{4, 1, 3}));
}

}  // namespace
