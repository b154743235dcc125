#include "core/policy/auto_mode.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

namespace pgt {

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
    // The last DIFFERENTIAL refresh's cost scaled to this change: a
    // trickle after a large change measures nothing again.
    const double predicted = measured(in) ? in.diff_ms * static_cast<double>(in.changes) /
                                                static_cast<double>(in.diff_changes)
                                          : 0;
    if (measured(in) && in.changes > 0 && in.full_samples < kAutoFullMeasured &&
        predicted > in.full_ms / 2) {
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
