// Which built-in STABLE functions a maintained query may call: those whose
// value depends on nothing but the settings pinned for the stream table
// (TimeZone, DateStyle, IntervalStyle, extra_float_digits, bytea_output,
// lc_monetary, lc_numeric, lc_time, default_text_search_config).
// Invariant: a function listed here never reads the clock, the catalog,
// statistics, the session or any table; one that may is left out, and a
// query calling it is recomputed by FULL refresh only.
#pragma once
#include "core/core.hpp"

#include <string_view>

namespace pgt::policy {

// How a pg_catalog function is known, as regprocedure prints it under a
// search_path of pg_catalog: "date_trunc(text,timestamp with time zone)".
enum class StableUse {
    kUnknown,          // not a settings-only function: refused
    kSettingsOnly,     // depends on the pinned settings alone
    kArgumentOutputs,  // renders its arguments as text (concat, to_json, ...):
                       // as stable as their types' output functions
};

StableUse stable_use(std::string_view signature);

}  // namespace pgt::policy
