// Unit tests for src/core/sched/policy: the due rule, retryable SQLSTATEs,
// the status machine, back-off bounds and the falling-behind detector.
// Invariant: every instant is built from kJan1 (2026-01-01T00:00:00Z, checked
// with `date -u -d 2026-01-01 +%s`) plus literal offsets, in microseconds.
#include "core/sched/policy.hpp"

#include "core/sched/schedule.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace {

using pgt::sched::Backoff;
using pgt::sched::DueInput;
using pgt::sched::EffectiveSchedule;
using pgt::sched::Health;
using pgt::sched::LagParams;
using pgt::sched::LagTracker;
using pgt::sched::Status;
using pgt::sched::Timing;
using std::chrono::seconds;

constexpr std::int64_t kSec = 1'000'000;
constexpr std::int64_t kJan1 = 1767225600 * kSec;  // 2026-01-01T00:00:00Z

EffectiveSchedule every(std::int64_t s) {
    return {Timing::Interval, seconds{s}, {}};
}
EffectiveSchedule cron(const char* text) {
    return {Timing::Cron, seconds{0}, pgt::sched::parse_schedule(text).cron};
}
const EffectiveSchedule kFollow{Timing::FollowConsumers, seconds{0}, {}};

// Refreshed at kJan1, checked `after_s` seconds later.
DueInput at(std::int64_t after_s, bool pending) {
    DueInput in;
    in.now_us = kJan1 + after_s * kSec;
    in.last_refresh_us = kJan1;
    in.created_us = kJan1 - 3600 * kSec;
    in.has_pending_changes = pending;
    return in;
}

// ---- due rule -----------------------------------------------------------------

TEST(SchedDue, interval_due_once_elapsed_with_pending_changes) {
    EXPECT_FALSE(is_due(every(60), at(59, true)));
    EXPECT_TRUE(is_due(every(60), at(60, true)));
    EXPECT_TRUE(is_due(every(60), at(600, true)));
}

TEST(SchedDue, interval_not_due_without_pending_changes) {
    EXPECT_FALSE(is_due(every(60), at(600, false)));
}

TEST(SchedDue, never_refreshed_counts_from_creation_and_as_pending) {
    DueInput in = at(0, false);
    in.last_refresh_us.reset();
    in.now_us = in.created_us + 59 * kSec;
    EXPECT_FALSE(is_due(every(60), in));
    in.now_us = in.created_us + 60 * kSec;
    EXPECT_TRUE(is_due(every(60), in));
}

TEST(SchedDue, cron_due_at_the_next_fire_even_without_changes) {
    const EffectiveSchedule five = cron("*/5 * * * *");
    EXPECT_FALSE(is_due(five, at(299, false)));
    EXPECT_TRUE(is_due(five, at(300, false)));
    EXPECT_TRUE(is_due(five, at(300, true)));
}

TEST(SchedDue, cron_missed_fires_coalesce_into_one_due) {
    const EffectiveSchedule five = cron("*/5 * * * *");
    EXPECT_TRUE(is_due(five, at(3600, false)));
    // The refresh at +3600.5 s moves the reference past every missed fire.
    DueInput in = at(3601, false);
    in.last_refresh_us = kJan1 + 3600 * kSec + kSec / 2;
    EXPECT_FALSE(is_due(five, in));
}

TEST(SchedDue, cron_refresh_just_after_a_fire_waits_for_the_next_one) {
    DueInput in = at(300, false);
    in.last_refresh_us = kJan1 + 300 * kSec + 400'000;  // 00:05:00.4
    EXPECT_FALSE(is_due(cron("*/5 * * * *"), in));
    in.now_us = kJan1 + 600 * kSec;
    EXPECT_TRUE(is_due(cron("*/5 * * * *"), in));
}

TEST(SchedDue, cron_before_first_refresh_counts_from_creation) {
    DueInput in = at(0, false);
    in.last_refresh_us.reset();
    in.created_us = kJan1 + 10 * kSec;  // 00:00:10
    in.now_us = kJan1 + 59 * kSec;
    EXPECT_FALSE(is_due(cron("* * * * *"), in));
    in.now_us = kJan1 + 60 * kSec;
    EXPECT_TRUE(is_due(cron("* * * * *"), in));
}

TEST(SchedDue, follow_consumers_due_with_a_due_consumer_and_changes) {
    DueInput in = at(1, true);
    EXPECT_FALSE(is_due(kFollow, in));
    in.consumer_due = true;
    EXPECT_TRUE(is_due(kFollow, in));
    in.has_pending_changes = false;
    EXPECT_FALSE(is_due(kFollow, in));
}

TEST(SchedDue, suspended_is_never_due) {
    DueInput in = at(600, true);
    in.status = Status::Suspended;
    EXPECT_FALSE(is_due(every(60), in));
    EXPECT_FALSE(is_due(cron("* * * * *"), in));
    in.status = Status::Error;
    EXPECT_TRUE(is_due(every(60), in));
}

TEST(SchedDue, back_off_window_delays_the_due) {
    DueInput in = at(600, true);
    in.retry_not_before_us = in.now_us + 1;
    EXPECT_FALSE(is_due(every(60), in));
    in.retry_not_before_us = in.now_us;
    EXPECT_TRUE(is_due(every(60), in));
}

// next_due_us is the instant is_due turns true with changes pending: a
// worker that sleeps until then wakes when the table is due, not later.
TEST(SchedNextDue, interval_and_cron_give_the_instant_is_due_turns_true) {
    const EffectiveSchedule sixty = every(60);
    ASSERT_EQ(next_due_us(sixty, at(10, false)), kJan1 + 60 * kSec);
    EXPECT_FALSE(is_due(sixty, at(59, true)));
    EXPECT_TRUE(is_due(sixty, at(60, true)));
    DueInput in = at(10, false);
    in.last_refresh_us = kJan1 + 300 * kSec + 400'000;  // 00:05:00.4
    const EffectiveSchedule five = cron("*/5 * * * *");
    ASSERT_EQ(next_due_us(five, in), kJan1 + 600 * kSec);
    in.now_us = kJan1 + 600 * kSec - 1;
    EXPECT_FALSE(is_due(five, in));
    in.now_us = kJan1 + 600 * kSec;
    EXPECT_TRUE(is_due(five, in));
}

TEST(SchedNextDue, counts_from_creation_and_waits_out_a_back_off) {
    DueInput in = at(0, false);
    in.last_refresh_us.reset();
    EXPECT_EQ(next_due_us(every(60), in), kJan1 - 3600 * kSec + 60 * kSec);
    in = at(600, true);
    in.retry_not_before_us = kJan1 + 700 * kSec;
    EXPECT_EQ(next_due_us(every(60), in), kJan1 + 700 * kSec);
}

TEST(SchedNextDue, suspended_and_follow_consumers_have_no_instant_of_their_own) {
    DueInput in = at(600, true);
    EXPECT_FALSE(next_due_us(kFollow, in).has_value());
    in.status = Status::Suspended;
    EXPECT_FALSE(next_due_us(every(60), in).has_value());
    EXPECT_FALSE(next_due_us(cron("* * * * *"), in).has_value());
}

// ---- retryable classification -------------------------------------------------

TEST(SchedRetry, transient_sqlstates_are_retryable) {
    for (const char* code : {"40001", "40P01", "55P03", "57014", "53000", "53100", "53200", "53300",
                             "08000", "08006", "08P01"}) {
        EXPECT_TRUE(pgt::sched::is_retryable(code)) << code;
    }
}

TEST(SchedRetry, other_sqlstates_are_not_retryable) {
    for (const char* code : {"42P01", "22012", "23505", "40002", "55000", "57P01", "XX000", "0A000",
                             "", "4000", "400011", "40p01", "5", "08"}) {
        EXPECT_FALSE(pgt::sched::is_retryable(code)) << code;
    }
}

// ---- status machine -------------------------------------------------------------

TEST(SchedStatus, non_retryable_failures_go_error_then_suspended_at_the_limit) {
    Health h;
    auto out = on_failure(h, "42P01");
    EXPECT_EQ(out.health, (Health{Status::Error, 1, 1}));
    EXPECT_FALSE(out.retryable);
    EXPECT_FALSE(out.auto_suspended);
    out = on_failure(out.health, "42P01");
    EXPECT_EQ(out.health, (Health{Status::Error, 2, 2}));
    EXPECT_FALSE(out.auto_suspended);
    out = on_failure(out.health, "22012");
    EXPECT_EQ(out.health, (Health{Status::Suspended, 3, 3}));
    EXPECT_TRUE(out.auto_suspended);
}

TEST(SchedStatus, auto_suspended_is_reported_only_once) {
    auto out = on_failure(Health{Status::Suspended, 3, 3}, "42P01");
    EXPECT_EQ(out.health.status, Status::Suspended);
    EXPECT_EQ(out.health.consecutive_errors, 4);
    EXPECT_FALSE(out.auto_suspended);
}

TEST(SchedStatus, custom_limit_and_limit_below_one) {
    EXPECT_TRUE(on_failure(Health{}, "42P01", 1).auto_suspended);
    EXPECT_TRUE(on_failure(Health{}, "42P01", 0).auto_suspended);
    EXPECT_FALSE(on_failure(Health{Status::Error, 3, 3}, "42P01", 5).auto_suspended);
    EXPECT_TRUE(on_failure(Health{Status::Error, 4, 4}, "42P01", 5).auto_suspended);
}

TEST(SchedStatus, retryable_failures_never_suspend_but_count_attempts) {
    Health h{Status::Active, 0, 0};
    for (int i = 1; i <= 10; ++i) {
        const auto out = on_failure(h, "40P01");
        EXPECT_TRUE(out.retryable);
        EXPECT_FALSE(out.auto_suspended);
        h = out.health;
        EXPECT_EQ(h, (Health{Status::Active, 0, i}));
    }
}

TEST(SchedStatus, retryable_failure_keeps_error_status_and_count) {
    const auto out = on_failure(Health{Status::Error, 2, 2}, "55P03");
    EXPECT_EQ(out.health, (Health{Status::Error, 2, 3}));
}

TEST(SchedStatus, success_resets_counters_and_clears_error) {
    EXPECT_EQ(on_success(Health{Status::Error, 2, 5}), (Health{Status::Active, 0, 0}));
    EXPECT_EQ(on_success(Health{Status::Active, 0, 3}), (Health{Status::Active, 0, 0}));
}

TEST(SchedStatus, success_does_not_resume_a_suspended_table) {
    EXPECT_EQ(on_success(Health{Status::Suspended, 3, 3}), (Health{Status::Suspended, 0, 0}));
}

TEST(SchedStatus, status_names_match_the_catalog) {
    EXPECT_EQ(status_name(Status::Active), "ACTIVE");
    EXPECT_EQ(status_name(Status::Suspended), "SUSPENDED");
    EXPECT_EQ(status_name(Status::Error), "ERROR");
}

// ---- back-off -------------------------------------------------------------------

TEST(SchedBackoff, doubles_per_attempt_within_half_and_full_ceiling) {
    const Backoff b{1 * kSec, 300 * kSec};
    std::int64_t ceiling = kSec;
    for (int attempt = 1; attempt <= 8; ++attempt, ceiling *= 2) {
        for (const double r : {0.0, 0.25, 0.5, 0.999999}) {
            const std::int64_t d = retry_delay_us(b, attempt, r);
            EXPECT_GE(d, ceiling / 2) << attempt << " " << r;
            EXPECT_LT(d, ceiling) << attempt << " " << r;
        }
        EXPECT_EQ(retry_delay_us(b, attempt, 0.0), ceiling / 2);
    }
}

TEST(SchedBackoff, exact_values_follow_the_formula) {
    const Backoff b{1 * kSec, 300 * kSec};
    EXPECT_EQ(retry_delay_us(b, 1, 0.5), 750'000);      // 0.5 s + 0.5 * 0.5 s
    EXPECT_EQ(retry_delay_us(b, 3, 0.25), 2'500'000);   // 2 s + 0.25 * 2 s
    EXPECT_EQ(retry_delay_us(b, 20, 0.0), 150 * kSec);  // capped at 300 s
    EXPECT_EQ(retry_delay_us(b, 20, 0.5), 225 * kSec);
}

TEST(SchedBackoff, cap_bounds_huge_attempts_without_overflow) {
    const Backoff b{1 * kSec, 300 * kSec};
    const int huge = std::numeric_limits<int>::max();
    EXPECT_GE(retry_delay_us(b, huge, 0.0), 150 * kSec);
    EXPECT_LT(retry_delay_us(b, huge, 0.999999999), 300 * kSec);
    const Backoff wide{kSec, std::numeric_limits<std::int64_t>::max()};
    EXPECT_GT(retry_delay_us(wide, huge, 0.5), 0);
    EXPECT_LT(retry_delay_us(wide, huge, std::nextafter(1.0, 0.0)),
              std::numeric_limits<std::int64_t>::max());
}

TEST(SchedBackoff, out_of_range_inputs_are_clamped) {
    const Backoff b{1 * kSec, 300 * kSec};
    EXPECT_EQ(retry_delay_us(b, 0, 0.0), retry_delay_us(b, 1, 0.0));
    EXPECT_EQ(retry_delay_us(b, -5, 0.0), retry_delay_us(b, 1, 0.0));
    EXPECT_EQ(retry_delay_us(b, 1, -1.0), kSec / 2);
    EXPECT_EQ(retry_delay_us(b, 1, std::nan("")), kSec / 2);
    EXPECT_EQ(retry_delay_us(b, 1, 1.0), kSec - 1);
    EXPECT_EQ(retry_delay_us(b, 1, 7.0), kSec - 1);
    EXPECT_EQ(retry_delay_us(Backoff{0, 0}, 3, 0.0), 0);  // base and cap count as 1 us
    EXPECT_EQ(retry_delay_us(Backoff{10 * kSec, kSec}, 4, 0.0), 5 * kSec);  // cap < base
}

// ---- falling behind ---------------------------------------------------------------

TEST(SchedLag, alerts_once_after_three_slow_cycles) {
    LagTracker t;
    EXPECT_FALSE(observe_refresh(t, 810'000, kSec).alert);
    EXPECT_FALSE(observe_refresh(t, 900'000, kSec).alert);
    const auto v = observe_refresh(t, 990'000, kSec);
    EXPECT_TRUE(v.alert);
    EXPECT_EQ(v.mean_duration_us, 900'000);
    EXPECT_FALSE(observe_refresh(t, 2 * kSec, kSec).alert);
    EXPECT_FALSE(observe_refresh(t, 2 * kSec, kSec).alert);
}

TEST(SchedLag, exactly_eighty_percent_is_not_slow) {
    LagTracker t;
    for (int i = 0; i < 5; ++i) {
        EXPECT_FALSE(observe_refresh(t, 800'000, kSec).alert);
    }
    EXPECT_EQ(t.slow_streak, 0);
    EXPECT_FALSE(observe_refresh(t, 800'001, kSec).alert);
    EXPECT_EQ(t.slow_streak, 1);
}

TEST(SchedLag, a_fast_cycle_resets_the_streak) {
    LagTracker t;
    observe_refresh(t, 900'000, kSec);
    observe_refresh(t, 900'000, kSec);
    EXPECT_FALSE(observe_refresh(t, 100'000, kSec).alert);
    EXPECT_FALSE(observe_refresh(t, 900'000, kSec).alert);
    EXPECT_FALSE(observe_refresh(t, 900'000, kSec).alert);
    EXPECT_TRUE(observe_refresh(t, 900'000, kSec).alert);
}

TEST(SchedLag, re_arms_after_recovery) {
    LagTracker t;
    for (int i = 0; i < 3; ++i) {
        observe_refresh(t, 900'000, kSec);
    }
    EXPECT_TRUE(t.alerted);
    EXPECT_FALSE(observe_refresh(t, 10'000, kSec).alert);
    EXPECT_FALSE(t.alerted);
    EXPECT_FALSE(observe_refresh(t, 950'000, kSec).alert);
    EXPECT_FALSE(observe_refresh(t, 950'000, kSec).alert);
    EXPECT_TRUE(observe_refresh(t, 950'000, kSec).alert);
}

TEST(SchedLag, custom_threshold_and_cycles) {
    LagTracker t;
    const LagParams p{50, 1};
    EXPECT_FALSE(observe_refresh(t, 500'000, kSec, p).alert);
    EXPECT_TRUE(observe_refresh(t, 500'001, kSec, p).alert);
}

TEST(SchedLag, no_interval_is_not_observed) {
    LagTracker t;
    for (int i = 0; i < 5; ++i) {
        EXPECT_FALSE(observe_refresh(t, kSec, 0).alert);
    }
    EXPECT_EQ(t.slow_streak, 0);
}

TEST(SchedLag, huge_values_do_not_overflow) {
    LagTracker t;
    const std::int64_t big = std::numeric_limits<std::int64_t>::max() / 2;
    EXPECT_FALSE(observe_refresh(t, big, big).alert);
    EXPECT_EQ(t.slow_streak, 1);
}

}  // namespace
