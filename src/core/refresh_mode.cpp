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
                "to one table read only in its ON, the select list and the ON of lookups "
                "it pads, a FULL JOIN of two "
                "tables), also with GROUPING SETS, CUBE or ROLLUP, with [NOT] EXISTS or [NOT] "
                "IN subqueries in WHERE and with scalar subqueries, joined to VALUES lists of "
                "constants, written directly or through views and non-recursive WITH queries; "
                "aggregates over one grouped derived table, also by its aggregates. "
                "Other queries are recomputed by FULL refresh.",
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
    if (up == "PAUSED") {
        up = "SUSPENDED";  // dbt-pgtrickle's word for it
    }
    if (up == "ACTIVE" || up == "SUSPENDED") {
        return sched::status_named(up);
    }
    throw Error(sqlstate::kInvalidParameterValue, "invalid status \"" + std::string(text) + "\"",
                "", "Valid values are 'ACTIVE' and 'SUSPENDED' ('PAUSED' is 'SUSPENDED').");
}

}  // namespace pgt
