// Refresh-mode resolution table for this version (FULL only).
// Invariant: the table below is the single place that says which modes
// exist; the SQL API and the docs follow it.
#include "core/refresh_mode.hpp"

#include <algorithm>
#include <cctype>

#include "core/error.hpp"

namespace pgt {

namespace {

std::string upper_trimmed(std::string_view text) {
    size_t b = text.find_first_not_of(" \t\n");
    size_t e = text.find_last_not_of(" \t\n");
    std::string s(b == std::string_view::npos ? std::string_view{} : text.substr(b, e - b + 1));
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return s;
}

struct ModeRule {
    const char* requested;
    const char* effective;  // nullptr: not available in this version
    const char* notice;
};

constexpr ModeRule kModes[] = {
    {"FULL", "FULL", ""},
    {"AUTO", "FULL",
     "refresh_mode AUTO resolved to FULL: differential maintenance is not available in this "
     "version of pg_trickle"},
    {"DIFFERENTIAL", nullptr, ""},
    {"IMMEDIATE", nullptr, ""},
};

}  // namespace

ResolvedMode resolve_refresh_mode(std::string_view text) {
    std::string up = upper_trimmed(text);
    for (const ModeRule& m : kModes) {
        if (up != m.requested) {
            continue;
        }
        if (m.effective == nullptr) {
            throw Error(sqlstate::kFeatureNotSupported,
                        "refresh_mode " + up + " is not supported yet",
                        "This version of pg_trickle maintains stream tables by FULL refresh only.",
                        "Use refresh_mode => 'FULL' or 'AUTO'.");
        }
        return {m.requested, m.effective, m.notice};
    }
    throw Error(sqlstate::kInvalidParameterValue,
                "invalid refresh_mode \"" + std::string(text) + "\"", "",
                "Valid values are 'AUTO', 'FULL', 'DIFFERENTIAL' and 'IMMEDIATE'.");
}

std::string parse_status(std::string_view text) {
    std::string up = upper_trimmed(text);
    if (up == "ACTIVE" || up == "SUSPENDED") {
        return up;
    }
    throw Error(sqlstate::kInvalidParameterValue, "invalid status \"" + std::string(text) + "\"",
                "", "Valid values are 'ACTIVE' and 'SUSPENDED'.");
}

}  // namespace pgt
