// Refresh modes and stream-table statuses as users spell them, and what a
// requested mode resolves to in this version.
// Invariant: a mode this version cannot maintain correctly is rejected
// (0A000), never mapped to something approximate.
#pragma once
#include "core/core.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/sched/policy.hpp"

namespace pgt {

enum class RefreshMode : char { kAuto, kFull, kDifferential, kImmediate };

// As users and the catalog spell it: "AUTO", "FULL", "DIFFERENTIAL",
// "IMMEDIATE".
const char* mode_name(RefreshMode mode) noexcept;

// The mode a catalog value spells (exactly), or nullopt.
std::optional<RefreshMode> mode_named(std::string_view spelling) noexcept;

// What one refresh did, as its history row records it: recomputed the
// query (FULL), applied the change (DIFFERENTIAL), or found none (NO_DATA).
enum class RefreshAction : char { kFull, kDifferential, kNoData };
const char* action_name(RefreshAction action) noexcept;

struct ResolvedMode {
    RefreshMode requested = RefreshMode::kAuto;
    RefreshMode effective = RefreshMode::kFull;  // what refreshes will do
    std::string notice;                          // non-empty: tell the user why (AUTO's choice)
};

// Case-insensitive. differential_blocker names what keeps DIFFERENTIAL from
// maintaining the query ("" when it can). AUTO picks DIFFERENTIAL when it
// can, else FULL with a notice; DIFFERENTIAL that cannot → 0A000; unknown
// → 22023; IMMEDIATE that immediate_blocker names ("" when it can
// maintain the query) → 0A000.
// auto_full_reason (when DIFFERENTIAL can maintain the query but would
// recompute all of it on every change, e.g. an aggregate without GROUP BY)
// makes AUTO pick FULL, with a notice naming it. blocker_is_limit: the
// blocker is a configured limit (DIFFERENTIAL → 54000 instead of 0A000).
ResolvedMode resolve_refresh_mode(std::string_view text, std::string_view differential_blocker,
                                  std::string_view auto_full_reason = {},
                                  bool blocker_is_limit = false,
                                  std::string_view immediate_blocker = "this query");

// A mode or status as written, trimmed and upper-cased (how it is compared).
std::string upper_trimmed_mode(std::string_view text);

// ACTIVE | SUSPENDED (case-insensitive); throws pgt::Error 22023 otherwise.
sched::Status parse_status(std::string_view text);

}  // namespace pgt
