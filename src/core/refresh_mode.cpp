// Refresh-mode resolution: what a requested mode becomes for one query.
// Invariant: this is the single place that decides between FULL and
// DIFFERENTIAL; an unsupported request is an error, never a quiet downgrade.
#include "core/refresh_mode.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <optional>
#include <utility>

#include "core/error.hpp"

namespace pgt {

std::string upper_trimmed_mode(std::string_view text) {
    size_t b = text.find_first_not_of(" \t\n");
    size_t e = text.find_last_not_of(" \t\n");
    std::string s(b == std::string_view::npos ? std::string_view{} : text.substr(b, e - b + 1));
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return s;
}

namespace {

[[noreturn]] void not_differential(std::string_view blocker) {
    throw Error(sqlstate::kFeatureNotSupported,
                "DIFFERENTIAL refresh cannot maintain " + std::string(blocker),
                "This version maintains differentially: SELECT, SELECT DISTINCT, GROUP BY "
                "[HAVING] and aggregates without GROUP BY over one table or a join of up to 8 "
                "tables (inner joins, derived tables that are plain joins, LEFT or RIGHT joins "
                "to one table read only in its ON and the select list, a FULL JOIN of two "
                "tables), also with GROUPING SETS, CUBE or ROLLUP, with [NOT] EXISTS or [NOT] "
                "IN subqueries in WHERE and with scalar subqueries. Other queries are "
                "recomputed by FULL refresh.",
                "Use refresh_mode => 'FULL', or 'AUTO' to let pg_trickle choose.");
}

}  // namespace

ResolvedMode resolve_refresh_mode(std::string_view text, std::string_view differential_blocker,
                                  std::string_view auto_full_reason, bool blocker_is_limit,
                                  std::string_view immediate_blocker) {
    std::string up = upper_trimmed_mode(text);
    using M = RefreshMode;
    if (up == "FULL") {
        return {M::kFull, M::kFull, ""};
    }
    if (up == "DIFFERENTIAL") {
        if (blocker_is_limit) {
            throw Error(sqlstate::kProgramLimitExceeded,
                        "DIFFERENTIAL refresh cannot maintain " + std::string(differential_blocker),
                        "Each grouping set is recomputed as its own branch of the refresh.",
                        "Raise pg_trickle.max_grouping_set_branches (at most 65536), list the "
                        "sets needed with GROUPING SETS (...), or use refresh_mode => 'FULL'.");
        }
        if (!differential_blocker.empty()) {
            not_differential(differential_blocker);
        }
        return {M::kDifferential, M::kDifferential, ""};
    }
    if (up == "AUTO") {
        if (differential_blocker.empty() && auto_full_reason.empty()) {
            return {M::kAuto, M::kDifferential, ""};
        }
        if (differential_blocker.empty()) {
            return {M::kAuto, M::kFull,
                    "refresh_mode AUTO resolved to FULL: DIFFERENTIAL would recompute " +
                        std::string(auto_full_reason) + " on every change"};
        }
        return {M::kAuto, M::kFull,
                "refresh_mode AUTO resolved to FULL: DIFFERENTIAL cannot maintain " +
                    std::string(differential_blocker)};
    }
    if (up == "IMMEDIATE") {
        if (!immediate_blocker.empty()) {
            throw Error(sqlstate::kFeatureNotSupported,
                        "IMMEDIATE refresh cannot maintain " + std::string(immediate_blocker),
                        "IMMEDIATE maintains, inside the writing statement, the queries "
                        "DIFFERENTIAL maintains over tables without partitions or inheritance "
                        "children.",
                        "Use refresh_mode => 'AUTO' or 'FULL'.");
        }
        return {M::kImmediate, M::kImmediate, ""};
    }
    throw Error(sqlstate::kInvalidParameterValue,
                "invalid refresh_mode \"" + std::string(text) + "\"", "",
                "Valid values are 'AUTO', 'FULL', 'DIFFERENTIAL' and 'IMMEDIATE'.");
}

const char* action_name(RefreshAction action) noexcept {
    switch (action) {
        case RefreshAction::kFull:
            return "FULL";
        case RefreshAction::kDifferential:
            return "DIFFERENTIAL";
        case RefreshAction::kNoData:
            return "NO_DATA";
    }
    return "";
}

const char* mode_name(RefreshMode mode) noexcept {
    switch (mode) {
        case RefreshMode::kAuto:
            return "AUTO";
        case RefreshMode::kFull:
            return "FULL";
        case RefreshMode::kDifferential:
            return "DIFFERENTIAL";
        case RefreshMode::kImmediate:
            return "IMMEDIATE";
    }
    return "";
}

std::optional<RefreshMode> mode_named(std::string_view spelling) noexcept {
    for (RefreshMode m : {RefreshMode::kAuto, RefreshMode::kFull, RefreshMode::kDifferential,
                          RefreshMode::kImmediate}) {
        if (spelling == mode_name(m)) {
            return m;
        }
    }
    return std::nullopt;
}

sched::Status parse_status(std::string_view text) {
    std::string up = upper_trimmed_mode(text);
    if (up == "ACTIVE" || up == "SUSPENDED") {
        return sched::status_named(up);
    }
    throw Error(sqlstate::kInvalidParameterValue, "invalid status \"" + std::string(text) + "\"",
                "", "Valid values are 'ACTIVE' and 'SUSPENDED'.");
}

namespace {

std::string ms_text(double ms) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f ms", ms);
    return buf;
}

}  // namespace

namespace {

bool measured(const AutoInputs& in) {
    return in.diff_ms >= 0 && in.diff_changes > 0 && in.full_ms >= 0;
}

// Fixed and per-change cost from two DIFFERENTIAL refreshes, when one
// applied at least twice as many changes as the other and cost more.
// Closer counts say nothing about the slope: refresh times vary by tens
// of percent, and two refreshes of 270,762 and 270,864 changes that took
// 408 and 472 ms made 0.63 ms per change, 120 times the measured rate.
std::optional<std::pair<double, double>> two_point_fit(const AutoInputs& in) {
    if (in.prev_diff_ms < 0 || in.prev_diff_changes <= 0 ||
        std::max(in.prev_diff_changes, in.diff_changes) <
            2 * std::min(in.prev_diff_changes, in.diff_changes)) {
        return std::nullopt;
    }
    double per_change = (in.diff_ms - in.prev_diff_ms) /
                        static_cast<double>(in.diff_changes - in.prev_diff_changes);
    if (!(per_change > 0)) {
        return std::nullopt;
    }
    double fixed = std::max(0.0, in.diff_ms - per_change * static_cast<double>(in.diff_changes));
    return std::pair{fixed, per_change};
}

}  // namespace

int64_t auto_change_limit(const AutoInputs& in) {
    if (measured(in)) {
        auto fit = two_point_fit(in);
        if (fit && fit->first < in.full_ms) {
            return static_cast<int64_t>((in.full_ms - fit->first) / fit->second);
        }
        if (fit && in.since_diff < kAutoReprobe) {
            return 0;  // the fixed part alone costs more than FULL
        }
        if (in.diff_ms <= 0) {
            return -1;
        }
        return static_cast<int64_t>(in.full_ms * static_cast<double>(in.diff_changes) / in.diff_ms);
    }
    if (in.source_rows > 0) {
        return static_cast<int64_t>(in.source_rows / 4);
    }
    return -1;
}

AutoChoice choose_auto(const AutoInputs& in) {
    if (measured(in) && in.changes > 0 && in.full_samples < kAutoFullSamples &&
        in.diff_ms > in.full_ms / 2) {
        return {true, "AUTO: FULL measured again (the best of " + std::to_string(in.full_samples) +
                          " FULL refresh" + (in.full_samples == 1 ? "" : "es") + " took " +
                          ms_text(in.full_ms) + ", the last DIFFERENTIAL refresh " +
                          ms_text(in.diff_ms) + ")"};
    }
    int64_t limit = auto_change_limit(in);
    if (limit < 0 || in.changes <= limit) {
        return {};
    }
    const std::string more =
        in.changes_estimated
            ? "AUTO: " + std::to_string(in.changes) +
                  " change rows captured since the last refresh (by the capture sequence, not "
                  "counted), more than " +
                  std::to_string(limit)
            : "AUTO: more than " + std::to_string(limit) + " changes";
    if (measured(in) && two_point_fit(in) && limit == 0) {
        return {true,
                "AUTO: a DIFFERENTIAL refresh costs more than FULL at any size (the last two "
                "cost about " +
                    ms_text(two_point_fit(in)->first) + " fixed, FULL took " + ms_text(in.full_ms) +
                    " at best): recomputed"};
    }
    if (measured(in) && two_point_fit(in)) {
        auto [fixed, per_change] = *two_point_fit(in);
        char per[48];
        std::snprintf(per, sizeof per, "%.1f", per_change * 1000.0);
        return {true, more + " (the last two DIFFERENTIAL refreshes cost about " + ms_text(fixed) +
                          " + " + per + " µs per change, FULL took " + ms_text(in.full_ms) +
                          " at best): recomputed"};
    }
    if (measured(in)) {
        return {true, more + " (the last DIFFERENTIAL refresh applied " +
                          std::to_string(in.diff_changes) + " in " + ms_text(in.diff_ms) +
                          ", FULL took " + ms_text(in.full_ms) + " at best): recomputed"};
    }
    return {true, more + " (a quarter of about " +
                      std::to_string(static_cast<int64_t>(in.source_rows)) +
                      " source rows): recomputed"};
}

}  // namespace pgt
