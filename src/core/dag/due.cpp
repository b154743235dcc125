// The due set and the scheduler's wait (see due.hpp).
#include "core/dag/due.hpp"

#include <algorithm>
#include <vector>

namespace pgt::dag {

std::set<NodeId> due_set(const Graph& graph, const Schedules& schedules, const DueInputs& inputs) {
    std::set<NodeId> due;
    const std::vector<NodeId> order = topological_order(graph);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {  // consumers first
        sched::DueInput in = inputs.at(*it);
        in.consumer_due = false;
        for (NodeId d : graph.downstreams(*it)) {
            in.consumer_due = in.consumer_due || due.count(d) != 0;
        }
        if (sched::is_due(schedules.at(*it), in)) {
            due.insert(*it);
        }
    }
    return due;
}

Wait plan_wait(const Graph& graph, const Schedules& schedules, const DueInputs& inputs) {
    DueInputs changed = inputs;
    for (auto& [id, in] : changed) {
        in.has_pending_changes = true;
    }
    const std::set<NodeId> due_if_changed = due_set(graph, schedules, changed);
    Wait w;
    for (const auto& [id, in] : inputs) {
        if (due_if_changed.count(id) != 0) {
            // Pending and due but not refreshed (held back by its group,
            // or skipped): the worker's longest wait brings it back.
            if (!in.has_pending_changes) {
                w.due_on_change.insert(id);
            }
            continue;
        }
        if (std::optional<std::int64_t> at = sched::next_due_us(schedules.at(id), in)) {
            w.until_us = w.until_us ? std::min(*w.until_us, *at) : *at;
        }
    }
    return w;
}

}  // namespace pgt::dag
