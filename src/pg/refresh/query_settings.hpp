// The settings a defining query's values may depend on (TimeZone for
// timestamptz::text, DateStyle, lc_numeric for to_char, ...), recorded
// when the query is defined and pinned wherever its rows are computed.
// Invariant: every path that evaluates the query or its delta (FULL,
// DIFFERENTIAL, IMMEDIATE, reinitialisation) pins them, so what is stored
// never depends on who wrote or refreshed, or with which session settings.
#pragma once

#include <string>
#include <vector>

namespace pgt::pg {

// name=value of each such setting in this session now.
std::vector<std::string> current_query_settings();

// Sets each recorded name=value inside the current pinned scope (undone
// with it); call only within with_pinned_search_path.
void pin_query_settings(const std::vector<std::string>& settings);

}  // namespace pgt::pg
