// Resolves 'calculated' schedules over the dependency graph into effective
// schedules (pgt::sched::EffectiveSchedule) for the due rule.
// Invariant: a node's effective schedule depends only on its own schedule
// and on the effective schedules of its downstream consumers, never on its
// upstreams.
#pragma once
#include "core/core.hpp"

#include "core/dag/graph.hpp"
#include "core/sched/policy.hpp"
#include "core/sched/schedule.hpp"

#include <chrono>
#include <map>

namespace pgt::dag {

// Effective schedule of every node:
//  - Duration d: Interval max(d, min_seconds).
//  - Cron: Cron, unchanged (no floor: a cron fire time is not an interval).
//  - Calculated: the smallest Interval among the effective schedules of its
//    direct consumers (so, transitively, through calculated consumers),
//    floored at min_seconds. Consumers timed by Cron or FollowConsumers give
//    no interval: when no consumer gives one but some consumer exists, the
//    result is FollowConsumers (refresh in the tick in which a consumer is
//    due, just before it); with no consumer at all, Interval
//    max(default_seconds, min_seconds). Interval consumers win over cron
//    ones: a calculated table with both follows the tightest interval only.
// Throws pgt::Error XX000 when a node has no entry in `schedules`, 22023
// when default_seconds < 1 or min_seconds < 0, 3F000 on a cycle.
std::map<NodeId, sched::EffectiveSchedule> effective_schedules(
    const Graph& graph, const std::map<NodeId, sched::Schedule>& schedules,
    std::chrono::seconds default_seconds, std::chrono::seconds min_seconds);

}  // namespace pgt::dag
