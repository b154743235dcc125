// Scheduler policy for one stream table: when it is due, how its status
// moves on success and failure, how long to back off, and when it is falling
// behind. Invariant: nothing here reads a clock or a random source; every
// instant (microseconds since the Unix epoch) and random value comes from the
// caller, so the same inputs always give the same decision.
#pragma once
#include "core/core.hpp"

#include "core/sched/schedule.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pgt::sched {

inline constexpr std::int64_t kMicrosPerSecond = 1'000'000;

// How a stream table's refreshes are timed once 'calculated' is resolved
// (pgt::dag::effective_schedules).
enum class Timing {
    Interval,         // refresh when `interval` has passed and changes are pending
    Cron,             // refresh at each fire time of `cron`
    FollowConsumers,  // refresh in the tick in which a direct consumer is due
};

struct EffectiveSchedule {
    Timing timing = Timing::Interval;
    // Timing::Interval only; 0: due as soon as a change is pending.
    std::chrono::milliseconds interval{0};
    CronSpec cron;  // Timing::Cron only

    bool operator==(const EffectiveSchedule&) const = default;
};

// Catalog status (pgt_stream_tables.status).
enum class Status { Active, Suspended, Error };

// "ACTIVE", "SUSPENDED", "ERROR".
std::string_view status_name(Status status);
// The status a catalog value spells (exactly); anything else is ACTIVE.
Status status_named(std::string_view spelling) noexcept;

// What the scheduler knows about one stream table at one tick.
struct DueInput {
    Status status = Status::Active;
    std::int64_t now_us = 0;
    // Start of the last completed refresh (NO_DATA included); nullopt when the
    // table has never been refreshed (created with initialize => false).
    std::optional<std::int64_t> last_refresh_us;
    std::int64_t created_us = 0;       // stands in for last_refresh_us before the first refresh
    bool has_pending_changes = false;  // change buffers hold rows past its frontier
    bool consumer_due = false;         // FollowConsumers: a direct consumer is due this tick
    // After a failure: no scheduled attempt before this instant (0: none).
    std::int64_t retry_not_before_us = 0;
};

// The due rule. Never due when SUSPENDED or before retry_not_before_us.
// With reference = last_refresh_us, else created_us, and "pending" =
// has_pending_changes or never refreshed:
//  - Interval: now - reference >= interval and pending.
//  - Cron: next_fire_after(reference) <= now, pending or not (a fire with
//    nothing pending records a cheap NO_DATA refresh, which moves the
//    reference past the fire; missed fires coalesce into one refresh).
//  - FollowConsumers: consumer_due and pending. Evaluate consumers first
//    (reverse topological order) to know consumer_due.
// Instants are converted to whole seconds (floor) for cron.
bool is_due(const EffectiveSchedule& schedule, const DueInput& in);

// When the scheduler must look at the table again without being told of a
// write: the earliest instant at which is_due can turn true with
// has_pending_changes (Interval: reference + interval; Cron: the next fire
// after the reference), no earlier than retry_not_before_us. nullopt when
// time alone never makes it due (SUSPENDED; FollowConsumers, which follows
// its consumers' instants). May be at or before now_us: due already.
std::optional<std::int64_t> next_due_us(const EffectiveSchedule& schedule, const DueInput& in);

// ---- status machine ---------------------------------------------------------

// Retryable failures are transient: serialization failure 40001, deadlock
// 40P01, lock not available 55P03, query canceled 57014 (statement or lock
// timeout), class 53 (insufficient resources) and class 08 (connection).
// Anything else, including a malformed SQLSTATE, is not retryable.
bool is_retryable(std::string_view sqlstate);

struct Health {
    Status status = Status::Active;
    // Catalog column: non-retryable failures since the last success.
    int consecutive_errors = 0;
    // Failures of any kind since the last success; drives the back-off. Kept
    // by the scheduler in memory (losing it on restart only shortens a delay).
    int failed_attempts = 0;

    bool operator==(const Health&) const = default;
};

inline constexpr int kDefaultMaxConsecutiveErrors = 3;

// A success clears both counters; ACTIVE and ERROR become ACTIVE. SUSPENDED
// stays SUSPENDED (only the user resumes a table, with alter_stream_table).
Health on_success(Health health);

struct FailureOutcome {
    Health health;                // the state to store
    bool retryable = false;       // is_retryable(sqlstate)
    bool auto_suspended = false;  // entered SUSPENDED now: send the auto_suspended alert
};

// A failed refresh. failed_attempts always grows. A retryable failure leaves
// status and consecutive_errors alone (it never suspends). A non-retryable
// one increments consecutive_errors and sets ERROR, or SUSPENDED (with
// auto_suspended) once consecutive_errors reaches max_consecutive_errors.
// max_consecutive_errors < 1 is treated as 1.
FailureOutcome on_failure(Health health, std::string_view sqlstate,
                          int max_consecutive_errors = kDefaultMaxConsecutiveErrors);

// ---- back-off -----------------------------------------------------------------

struct Backoff {
    std::int64_t base_us = 1 * kMicrosPerSecond;
    std::int64_t cap_us = 300 * kMicrosPerSecond;
};

// Delay before the next attempt after `attempt` consecutive failures (1 for
// the first), exponential with "equal jitter":
//   ceiling = min(cap, base * 2^(attempt - 1))
//   half    = ceiling / 2                      (integer division)
//   delay   = half + floor(random01 * (ceiling - half))
// so half <= delay < ceiling (delay == half when random01 == 0). attempt < 1
// counts as 1; random01 is clamped to [0, 1); base and cap below 1 count as
// 1, a cap below base counts as base; the doubling saturates at the cap.
std::int64_t retry_delay_us(const Backoff& backoff, int attempt, double random01);

// ---- falling behind ---------------------------------------------------------

struct LagParams {
    int threshold_percent = 80;  // a refresh is slow when duration > this % of the interval
    int cycles = 3;              // consecutive slow refreshes before alerting
};

struct LagTracker {
    int slow_streak = 0;  // consecutive slow refreshes (not counted further once alerted)
    std::int64_t streak_total_us = 0;  // their summed durations
    bool alerted = false;              // alert sent for the current streak
};

struct LagVerdict {
    bool alert = false;                 // send scheduler_falling_behind now
    std::int64_t mean_duration_us = 0;  // mean over the streak, when alert
};

// Records one completed refresh (NO_DATA included) of a table with a
// positive interval (for cron, the gap between the fire served and the next;
// tables without an interval are not observed). Slow: duration * 100 >
// interval * threshold_percent. The alert fires once, on the refresh that
// completes `cycles` slow ones in a row; it re-arms after the first refresh
// that is not slow, which also resets the streak.
LagVerdict observe_refresh(LagTracker& tracker, std::int64_t duration_us, std::int64_t interval_us,
                           const LagParams& params = {});

}  // namespace pgt::sched
