// JSON payloads for NOTIFY on the alert channel: falling behind, automatic
// suspension, failed refreshes and partial failures of diamond groups.
// Invariant: every payload is one valid JSON object (given valid UTF-8 from
// the caller) strictly shorter than pgt::notify::kPayloadLimit bytes.
#pragma once
#include "core/core.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pgt::sched {

// The NOTIFY channel the scheduler sends alerts on.
inline constexpr std::string_view kAlertChannel = "pg_trickle_alert";

enum class AlertEvent {
    FallingBehind,               // "scheduler_falling_behind"
    AutoSuspended,               // "auto_suspended"
    RefreshFailed,               // "refresh_failed"
    DiamondGroupPartialFailure,  // "diamond_group_partial_failure"
};

// The "event" value of the payload.
std::string_view event_name(AlertEvent event);

// Names are display names as users should read them, e.g. "public.orders"
// (quoted by the caller as it likes); they are JSON-escaped here. Fields
// appear in the order shown. Only "message" is ever shortened: when the
// payload would reach the limit, the message is cut at a UTF-8 character
// boundary and "truncated":true is appended. Diamond group names that do not
// fit in half the limit are dropped from "group" (also with "truncated":true;
// "group_size" keeps the full count). Throws pgt::Error 54000 only when the
// payload cannot fit even with an empty message (never for real names).

// {"event":"scheduler_falling_behind","stream_table":..,"duration_ms":..,
//  "interval_ms":..,"cycles":..}  duration_ms: mean over the slow cycles.
std::string falling_behind_alert(std::string_view stream_table, std::int64_t duration_ms,
                                 std::int64_t interval_ms, int cycles);

// {"event":"auto_suspended","stream_table":..,"sqlstate":..,
//  "consecutive_errors":..,"message":..}
std::string auto_suspended_alert(std::string_view stream_table, std::string_view sqlstate,
                                 int consecutive_errors, std::string_view message);

// {"event":"refresh_failed","stream_table":..,"sqlstate":..,"retryable":..,
//  "consecutive_errors":..,"message":..}
std::string refresh_failed_alert(std::string_view stream_table, std::string_view sqlstate,
                                 bool retryable, int consecutive_errors, std::string_view message);

// {"event":"diamond_group_partial_failure","group":[..],"group_size":..,
//  "failed":..,"sqlstate":..,"message":..}  group: members in plan order.
std::string diamond_partial_failure_alert(const std::vector<std::string>& group,
                                          std::string_view failed, std::string_view sqlstate,
                                          std::string_view message);

}  // namespace pgt::sched
