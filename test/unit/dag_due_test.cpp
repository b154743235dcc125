// Unit tests for src/core/dag/due: the due set over the graph and the
// scheduler's wait (which tables a write should wake it for, and until
// when it may sleep otherwise).
// Invariant: every instant is kT0 plus literal offsets, in microseconds.
#include "core/dag/due.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <set>

namespace {

using pgt::dag::DueInputs;
using pgt::dag::Graph;
using pgt::dag::NodeId;
using pgt::dag::Schedules;
using pgt::sched::EffectiveSchedule;
using pgt::sched::Timing;

constexpr std::int64_t kSec = 1'000'000;
constexpr std::int64_t kT0 = 1767225600 * kSec;  // 2026-01-01T00:00:00Z

EffectiveSchedule every_ms(std::int64_t ms) {
    return {Timing::Interval, std::chrono::milliseconds{ms}, {}};
}
const EffectiveSchedule kFollow{Timing::FollowConsumers, std::chrono::milliseconds{0}, {}};

// Refreshed at kT0, looked at `after_ms` later.
pgt::sched::DueInput at(std::int64_t after_ms, bool pending) {
    pgt::sched::DueInput in;
    in.now_us = kT0 + after_ms * 1000;
    in.last_refresh_us = kT0;
    in.created_us = kT0 - 3600 * kSec;
    in.has_pending_changes = pending;
    return in;
}

TEST(DagDue, a_follow_consumers_table_is_due_with_its_due_consumer) {
    Graph g;
    g.add_node(1);
    g.add_node(2);
    g.add_edge(1, 2);  // 2 reads 1
    Schedules s{{1, kFollow}, {2, every_ms(1000)}};
    DueInputs in{{1, at(1500, true)}, {2, at(1500, true)}};
    EXPECT_EQ(pgt::dag::due_set(g, s, in), (std::set<NodeId>{1, 2}));
    in[2].has_pending_changes = false;
    EXPECT_EQ(pgt::dag::due_set(g, s, in), (std::set<NodeId>{}));
}

// A table whose interval has passed with nothing pending waits for a
// change; one not yet due by time sets the wait; with '0s' a table is due
// on change right after its refresh.
TEST(DagDue, the_wait_is_for_a_change_or_for_the_next_table_due_by_time) {
    Graph g;
    for (NodeId n : {1, 2, 3}) {
        g.add_node(n);
    }
    Schedules s{{1, every_ms(1000)}, {2, every_ms(5000)}, {3, every_ms(0)}};
    DueInputs in{{1, at(1500, false)}, {2, at(1500, true)}, {3, at(1500, false)}};
    pgt::dag::Wait w = pgt::dag::plan_wait(g, s, in);
    EXPECT_EQ(w.due_on_change, (std::set<NodeId>{1, 3}));
    ASSERT_TRUE(w.until_us.has_value());
    EXPECT_EQ(*w.until_us, kT0 + 5 * kSec);
}

// Due and pending but not refreshed (held back): neither a wake source nor
// an instant; a suspended table and a follower have no instant either.
TEST(DagDue, held_back_suspended_and_following_tables_set_no_instant) {
    Graph g;
    for (NodeId n : {1, 2, 3}) {
        g.add_node(n);
    }
    Schedules s{{1, every_ms(1000)}, {2, every_ms(1000)}, {3, kFollow}};
    DueInputs in{{1, at(1500, true)}, {2, at(100, true)}, {3, at(100, false)}};
    in[2].status = pgt::sched::Status::Suspended;
    pgt::dag::Wait w = pgt::dag::plan_wait(g, s, in);
    EXPECT_TRUE(w.due_on_change.empty());
    EXPECT_FALSE(w.until_us.has_value());
}

}  // namespace
