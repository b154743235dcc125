// Refresh modes and stream-table statuses as users spell them, and what a
// requested mode resolves to in this version.
// Invariant: a mode this version cannot maintain correctly is rejected
// (0A000), never mapped to something approximate.
#pragma once
#include "core/core.hpp"

#include <string>
#include <string_view>

namespace pgt {

struct ResolvedMode {
    std::string requested;  // AUTO | FULL | DIFFERENTIAL | IMMEDIATE
    std::string effective;  // what refreshes will do
    std::string notice;     // non-empty: tell the user why (AUTO's choice)
};

// Case-insensitive. differential_blocker names what keeps DIFFERENTIAL from
// maintaining the query ("" when it can). AUTO picks DIFFERENTIAL when it
// can, else FULL with a notice; DIFFERENTIAL that cannot → 0A000; unknown
// → 22023; IMMEDIATE → 0A000 (not yet).
ResolvedMode resolve_refresh_mode(std::string_view text, std::string_view differential_blocker);

// ACTIVE | SUSPENDED (case-insensitive); throws pgt::Error 22023 otherwise.
std::string parse_status(std::string_view text);

}  // namespace pgt
