// Records and pins the settings a query's values depend on (see the header).
// Invariant: the list names settings any role may set (PGC_USERSET), so
// pinning them never needs a privilege the stream table's owner lacks.
#include "pg/refresh/query_settings.hpp"

#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"

extern "C" {
#include "postgres.h"
#include "utils/guc.h"
}

namespace pgt::pg {

namespace {

// Settings that change the value of a built-in expression without any
// source row changing: date/time zone and styles (casts of timestamptz,
// date_trunc, to_char), float and bytea output, the locale's number, money
// and time formats, and the text search configuration of to_tsvector(text).
constexpr const char* kQuerySettings[] = {
    "TimeZone",    "DateStyle",  "IntervalStyle", "extra_float_digits",         "bytea_output",
    "lc_monetary", "lc_numeric", "lc_time",       "default_text_search_config",
};

}  // namespace

std::vector<std::string> current_query_settings() {
    std::vector<std::string> out;
    for (const char* name : kQuerySettings) {
        const char* value = pg_call([&] { return GetConfigOption(name, false, false); });
        out.push_back(std::string(name) + "=" + (value != nullptr ? value : ""));
    }
    return out;
}

void pin_query_settings(const std::vector<std::string>& settings) {
    for (const std::string& s : settings) {
        const std::size_t eq = s.find('=');
        if (eq == std::string::npos) {
            continue;
        }
        const std::string name = s.substr(0, eq), value = s.substr(eq + 1);
        // Most statements run with the settings recorded: setting one
        // again (a time zone looked up, a locale checked with setlocale)
        // would cost each IMMEDIATE statement more than comparing.
        const char* now = pg_call([&] { return GetConfigOption(name.c_str(), true, false); });
        if (now != nullptr && value == now) {
            continue;
        }
        pin_setting(name.c_str(), value.c_str());
    }
}

}  // namespace pgt::pg
