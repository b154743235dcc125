// Scheduler policy decisions: the due rule, the status machine, back-off and
// the falling-behind detector.
// Invariant: pure functions of their arguments (plus LagTracker's explicit
// state); no clock, no randomness, no global state.
#include "core/sched/policy.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <array>

namespace pgt::sched {

namespace {

// SQLSTATEs (or two-character classes) of transient failures.
struct RetryRule {
    std::string_view code;  // five characters: exact; two: the whole class
    std::string_view what;
};
constexpr std::array<RetryRule, 6> kRetryable{{
    {"40001", "serialization_failure"},
    {"40P01", "deadlock_detected"},
    {"55P03", "lock_not_available"},
    {"57014", "query_canceled"},
    {"53", "insufficient_resources"},
    {"08", "connection_exception"},
}};

bool well_formed(std::string_view sqlstate) {
    return sqlstate.size() == 5 && std::all_of(sqlstate.begin(), sqlstate.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z');
           });
}

std::int64_t floor_seconds(std::int64_t us) {
    const std::int64_t s = us / kMicrosPerSecond;
    return (us % kMicrosPerSecond < 0) ? s - 1 : s;
}

std::int64_t micros(std::chrono::milliseconds d) {
    return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

}  // namespace

std::string_view status_name(Status status) {
    switch (status) {
        case Status::Active:
            return "ACTIVE";
        case Status::Suspended:
            return "SUSPENDED";
        case Status::Error:
            return "ERROR";
    }
    throw Error(sqlstate::kInternalError, "invalid stream table status");
}

Status status_named(std::string_view spelling) noexcept {
    return spelling == "SUSPENDED" ? Status::Suspended
           : spelling == "ERROR"   ? Status::Error
                                   : Status::Active;
}

bool is_due(const EffectiveSchedule& schedule, const DueInput& in) {
    if (in.status == Status::Suspended || in.now_us < in.retry_not_before_us) {
        return false;
    }
    const std::int64_t reference = in.last_refresh_us.value_or(in.created_us);
    const bool pending = in.has_pending_changes || !in.last_refresh_us.has_value();
    switch (schedule.timing) {
        case Timing::Interval:
            return pending && in.now_us - reference >= micros(schedule.interval);
        case Timing::Cron:
            return next_fire_after(schedule.cron, floor_seconds(reference)) <=
                   floor_seconds(in.now_us);
        case Timing::FollowConsumers:
            return pending && in.consumer_due;
    }
    throw Error(sqlstate::kInternalError, "invalid schedule timing");
}

std::optional<std::int64_t> next_due_us(const EffectiveSchedule& schedule, const DueInput& in) {
    if (in.status == Status::Suspended) {
        return std::nullopt;
    }
    const std::int64_t reference = in.last_refresh_us.value_or(in.created_us);
    std::int64_t at = 0;
    switch (schedule.timing) {
        case Timing::Interval:
            at = reference + micros(schedule.interval);
            break;
        case Timing::Cron:
            at = next_fire_after(schedule.cron, floor_seconds(reference)) * kMicrosPerSecond;
            break;
        case Timing::FollowConsumers:
            return std::nullopt;
    }
    return std::max(at, in.retry_not_before_us);
}

bool is_retryable(std::string_view sqlstate) {
    if (!well_formed(sqlstate)) {
        return false;
    }
    return std::any_of(kRetryable.begin(), kRetryable.end(), [sqlstate](const RetryRule& rule) {
        return sqlstate.substr(0, rule.code.size()) == rule.code;
    });
}

Health on_success(Health health) {
    health.consecutive_errors = 0;
    health.failed_attempts = 0;
    if (health.status == Status::Error) {
        health.status = Status::Active;
    }
    return health;
}

FailureOutcome on_failure(Health health, std::string_view sqlstate, int max_consecutive_errors) {
    FailureOutcome out;
    out.retryable = is_retryable(sqlstate);
    ++health.failed_attempts;
    if (!out.retryable) {
        ++health.consecutive_errors;
        const bool limit = health.consecutive_errors >= std::max(1, max_consecutive_errors);
        out.auto_suspended = limit && health.status != Status::Suspended;
        health.status =
            limit || health.status == Status::Suspended ? Status::Suspended : Status::Error;
    }
    out.health = health;
    return out;
}

std::int64_t retry_delay_us(const Backoff& backoff, int attempt, double random01) {
    const std::int64_t base = std::max<std::int64_t>(1, backoff.base_us);
    const std::int64_t cap = std::max(base, backoff.cap_us);
    std::int64_t ceiling = base;
    for (int i = 1; i < attempt && ceiling < cap; ++i) {
        ceiling = ceiling > cap / 2 ? cap : ceiling * 2;
    }
    ceiling = std::min(ceiling, cap);
    if (!(random01 >= 0.0)) {  // also catches NaN
        random01 = 0.0;
    }
    const std::int64_t half = ceiling / 2;
    const std::int64_t span = ceiling - half;  // >= 1
    // min() keeps delay < ceiling where rounding lifts random01 * span to span.
    const auto jitter =
        static_cast<std::int64_t>(std::min(random01, 1.0) * static_cast<double>(span));
    return half + std::min(jitter, span - 1);
}

LagVerdict observe_refresh(LagTracker& tracker, std::int64_t duration_us, std::int64_t interval_us,
                           const LagParams& params) {
    if (interval_us <= 0) {
        return {};
    }
    const bool slow = static_cast<__int128>(duration_us) * 100 >
                      static_cast<__int128>(interval_us) * params.threshold_percent;
    if (!slow) {
        tracker = LagTracker{};
        return {};
    }
    if (tracker.alerted) {
        return {};  // already reported; wait for a refresh that is not slow
    }
    ++tracker.slow_streak;
    tracker.streak_total_us += duration_us;
    if (tracker.slow_streak < std::max(1, params.cycles)) {
        return {};
    }
    tracker.alerted = true;
    return {true, tracker.streak_total_us / tracker.slow_streak};
}

}  // namespace pgt::sched
