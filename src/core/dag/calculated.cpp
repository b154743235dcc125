// 'calculated' schedule inheritance: consumers are resolved before their
// upstreams by walking the topological order backwards.
// Invariant: every Interval this module produces is >= min_seconds.
#include "core/dag/calculated.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <optional>
#include <string>

namespace pgt::dag {

namespace {

using sched::EffectiveSchedule;
using sched::Timing;
using std::chrono::milliseconds;
using std::chrono::seconds;

EffectiveSchedule interval_of(milliseconds s, seconds floor) {
    return {Timing::Interval, std::max(s, milliseconds{floor}), {}};
}

// A calculated node, given its consumers' resolved schedules.
EffectiveSchedule inherit(const Graph& graph, NodeId id,
                          const std::map<NodeId, EffectiveSchedule>& resolved,
                          seconds default_seconds, seconds min_seconds) {
    const std::vector<NodeId>& consumers = graph.downstreams(id);
    if (consumers.empty()) {
        return interval_of(default_seconds, min_seconds);
    }
    std::optional<milliseconds> tightest;
    for (const NodeId c : consumers) {
        const EffectiveSchedule& e = resolved.at(c);
        if (e.timing == Timing::Interval && (!tightest || e.interval < *tightest)) {
            tightest = e.interval;
        }
    }
    if (!tightest) {
        return {Timing::FollowConsumers, seconds{0}, {}};
    }
    return interval_of(*tightest, min_seconds);
}

void check_params(seconds default_seconds, seconds min_seconds) {
    if (default_seconds < seconds{1} || min_seconds < seconds{0}) {
        throw Error(sqlstate::kInvalidParameterValue, "invalid calculated schedule parameters",
                    "The default interval is " + std::to_string(default_seconds.count()) +
                        " seconds and the minimum " + std::to_string(min_seconds.count()) +
                        " seconds.",
                    "The default must be at least 1 second and the minimum at least 0 seconds.");
    }
}

}  // namespace

std::map<NodeId, EffectiveSchedule> effective_schedules(
    const Graph& graph, const std::map<NodeId, sched::Schedule>& schedules, seconds default_seconds,
    seconds min_seconds) {
    check_params(default_seconds, min_seconds);
    const std::vector<NodeId> order = topological_order(graph);
    std::map<NodeId, EffectiveSchedule> resolved;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const auto found = schedules.find(*it);
        if (found == schedules.end()) {
            throw Error(sqlstate::kInternalError,
                        "no schedule for stream table id " + std::to_string(*it));
        }
        const sched::Schedule& s = found->second;
        switch (s.kind) {
            case sched::Kind::Duration:
                resolved[*it] = interval_of(s.interval, min_seconds);
                break;
            case sched::Kind::Cron:
                resolved[*it] = {Timing::Cron, seconds{0}, s.cron};
                break;
            case sched::Kind::Calculated:
                resolved[*it] = inherit(graph, *it, resolved, default_seconds, min_seconds);
                break;
        }
    }
    return resolved;
}

}  // namespace pgt::dag
