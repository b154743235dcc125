// Which stream tables are due at a tick, and how long the scheduler may
// wait before the next one: the due rule (sched::is_due) over the
// dependency graph, consumers first.
//
//   due_set:   is_due per table; a FollowConsumers table is due with a
//              due direct consumer
//   plan_wait: the tables due as soon as they have a change (a committed
//              write to one of their sources should wake the worker), and
//              the earliest instant another one is due by time alone
// Invariant: pure functions of their arguments.
#pragma once
#include "core/core.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>

#include "core/dag/graph.hpp"
#include "core/sched/policy.hpp"

namespace pgt::dag {

// Per table (every node of the graph): what the due rule reads.
// consumer_due is computed here and ignored in the input.
using DueInputs = std::map<NodeId, sched::DueInput>;
using Schedules = std::map<NodeId, sched::EffectiveSchedule>;

std::set<NodeId> due_set(const Graph& graph, const Schedules& schedules, const DueInputs& inputs);

struct Wait {
    // Not due now for want of a change, due once one is pending.
    std::set<NodeId> due_on_change;
    // The earliest sched::next_due_us of the other tables; nullopt when
    // none is due by time alone.
    std::optional<std::int64_t> until_us;
};

Wait plan_wait(const Graph& graph, const Schedules& schedules, const DueInputs& inputs);

}  // namespace pgt::dag
