// Alert payload rendering: a fixed head of fields, then the message, which is
// the only part that is shortened to stay under the NOTIFY limit.
// Invariant: a shortened message is a prefix of the full one ending on a
// UTF-8 character boundary, so the payload stays valid JSON and valid UTF-8.
#include "core/sched/alert.hpp"

#include "core/error.hpp"
#include "core/notify/payload.hpp"
#include "core/sql/json.hpp"

#include <cstddef>

namespace pgt::sched {

namespace {

using notify::kPayloadLimit;
using sql::append_json_string;

constexpr std::string_view kTruncated = ",\"truncated\":true";

void add_key(std::string& out, std::string_view key) {
    out += out.size() == 1 ? "\"" : ",\"";
    out += key;
    out += "\":";
}

void add_string(std::string& out, std::string_view key, std::string_view value) {
    add_key(out, key);
    append_json_string(out, value);
}

void add_int(std::string& out, std::string_view key, std::int64_t value) {
    add_key(out, key);
    out += std::to_string(value);
}

std::string head_of(AlertEvent event) {
    std::string out = "{";
    add_string(out, "event", event_name(event));
    return out;
}

bool is_continuation(char c) {
    return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

// Bytes of JSON escaping for one input byte (matches append_json_string).
std::size_t escaped_size(char c) {
    if (c == '"' || c == '\\') {
        return 2;
    }
    return static_cast<unsigned char>(c) < 0x20 ? 6 : 1;
}

// The longest prefix of s whose escaped form takes at most `budget` bytes and
// that does not end inside a UTF-8 sequence.
std::string_view fitting_prefix(std::string_view s, std::size_t budget) {
    std::size_t used = 0;
    std::size_t end = 0;
    while (end < s.size() && used + escaped_size(s[end]) <= budget) {
        used += escaped_size(s[end++]);
    }
    if (end < s.size()) {
        while (end > 0 && is_continuation(s[end])) {
            --end;
        }
    }
    return s.substr(0, end);
}

// head + "message" (+ the truncation marker when `marked` or when the message
// had to be shortened) + closing brace.
std::string finish(std::string head, std::string_view message, bool marked = false) {
    // Everything but the message text: the head, ,"message":"" and the brace.
    const std::size_t fixed = head.size() + std::string_view(",\"message\":\"\"}").size();
    std::string full = head;
    add_string(full, "message", message);
    full += marked ? kTruncated : std::string_view();
    full += '}';
    if (full.size() < kPayloadLimit) {
        return full;
    }
    if (fixed + kTruncated.size() >= kPayloadLimit) {
        throw Error(sqlstate::kProgramLimitExceeded, "alert payload exceeds the notification limit",
                    "The names in the alert alone take " + std::to_string(head.size()) + " bytes.");
    }
    const std::size_t budget = kPayloadLimit - 1 - fixed - kTruncated.size();
    add_string(head, "message", fitting_prefix(message, budget));
    head += kTruncated;
    head += '}';
    return head;
}

// Appends "group":[...] with as many names as fit in half the limit; returns
// false when some were dropped.
bool add_group(std::string& out, const std::vector<std::string>& group) {
    add_key(out, "group");
    out += '[';
    bool complete = true;
    for (std::size_t i = 0; i < group.size(); ++i) {
        std::string name;
        append_json_string(name, group[i]);
        if (out.size() + name.size() + 2 > kPayloadLimit / 2) {
            complete = false;
            break;
        }
        out += (i == 0 ? "" : ",");
        out += name;
    }
    out += ']';
    return complete;
}

}  // namespace

std::string_view event_name(AlertEvent event) {
    switch (event) {
        case AlertEvent::FallingBehind:
            return "scheduler_falling_behind";
        case AlertEvent::AutoSuspended:
            return "auto_suspended";
        case AlertEvent::RefreshFailed:
            return "refresh_failed";
        case AlertEvent::DiamondGroupPartialFailure:
            return "diamond_group_partial_failure";
    }
    throw Error(sqlstate::kInternalError, "invalid alert event");
}

std::string falling_behind_alert(std::string_view stream_table, std::int64_t duration_ms,
                                 std::int64_t interval_ms, int cycles) {
    std::string out = head_of(AlertEvent::FallingBehind);
    add_string(out, "stream_table", stream_table);
    add_int(out, "duration_ms", duration_ms);
    add_int(out, "interval_ms", interval_ms);
    add_int(out, "cycles", cycles);
    out += '}';
    if (out.size() >= kPayloadLimit) {
        throw Error(
            sqlstate::kProgramLimitExceeded, "alert payload exceeds the notification limit",
            "The stream table name takes " + std::to_string(stream_table.size()) + " bytes.");
    }
    return out;
}

std::string auto_suspended_alert(std::string_view stream_table, std::string_view sqlstate,
                                 int consecutive_errors, std::string_view message) {
    std::string out = head_of(AlertEvent::AutoSuspended);
    add_string(out, "stream_table", stream_table);
    add_string(out, "sqlstate", sqlstate);
    add_int(out, "consecutive_errors", consecutive_errors);
    return finish(std::move(out), message);
}

std::string refresh_failed_alert(std::string_view stream_table, std::string_view sqlstate,
                                 bool retryable, int consecutive_errors, std::string_view message) {
    std::string out = head_of(AlertEvent::RefreshFailed);
    add_string(out, "stream_table", stream_table);
    add_string(out, "sqlstate", sqlstate);
    add_key(out, "retryable");
    out += retryable ? "true" : "false";
    add_int(out, "consecutive_errors", consecutive_errors);
    return finish(std::move(out), message);
}

std::string diamond_partial_failure_alert(const std::vector<std::string>& group,
                                          std::string_view failed, std::string_view sqlstate,
                                          std::string_view message) {
    std::string out = head_of(AlertEvent::DiamondGroupPartialFailure);
    const bool complete = add_group(out, group);
    add_int(out, "group_size", static_cast<std::int64_t>(group.size()));
    add_string(out, "failed", failed);
    add_string(out, "sqlstate", sqlstate);
    return finish(std::move(out), message, !complete);
}

}  // namespace pgt::sched
