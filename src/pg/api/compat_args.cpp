// Compatibility arguments of the lifecycle API (compat_args.hpp).
// Invariant: a refusal happens before the function changes anything, and
// names the argument, what it asks for and the value that is accepted.
#include "pg/api/compat_args.hpp"

#include "core/error.hpp"
#include "core/refresh_mode.hpp"

extern "C" {
#include "postgres.h"
#include "catalog/pg_type.h"
}

namespace pgt::pg {
namespace {

struct Unprovided {
    const char* name;
    const char* asks;      // what the argument asks the Rust pg_trickle for
    const char* accepted;  // a text value that is the default behaviour here, or nullptr
    const char* hint;      // nullptr: "Omit <name>."
};

// Every argument of the Rust pg_trickle's lifecycle API that pg_trickle
// does not act on. A boolean is accepted when false.
constexpr Unprovided kUnprovided[] = {
    {"diamond_consistency", "a diamond consistency for this stream table", nullptr,
     "Set pg_trickle.diamond_consistency, which applies to every diamond group."},
    {"diamond_schedule_policy", "a schedule policy for its diamond group", nullptr, nullptr},
    {"append_only", "refreshes that skip deletes for insert-only sources", nullptr, nullptr},
    {"pooler_compatibility_mode", "refreshes without prepared statements or NOTIFY", nullptr,
     nullptr},
    {"partition_by", "a partitioned storage table", nullptr, nullptr},
    {"max_differential_joins", "a limit on the joins DIFFERENTIAL maintains", nullptr, nullptr},
    {"max_delta_fraction", "a change fraction above which AUTO refreshes FULL", nullptr, nullptr},
    {"output_distribution_column", "a Citus-distributed storage table", nullptr, nullptr},
    {"temporal", "temporal maintenance", nullptr, nullptr},
    {"storage_backend", "another storage backend than heap", "heap", nullptr},
    {"sink", "a DuckLake sink", nullptr, nullptr},
    {"ducklake_sink_path", "a DuckLake sink", nullptr, nullptr},
    {"ducklake_sink_table_id", "a DuckLake sink", nullptr, nullptr},
    {"tier", "a scheduling tier", nullptr, nullptr},
    {"fuse", "a fuse that suspends refreshes after large changes", "off", nullptr},
    {"fuse_ceiling", "a fuse that suspends refreshes after large changes", nullptr, nullptr},
    {"fuse_sensitivity", "a fuse that suspends refreshes after large changes", nullptr, nullptr},
    {"post_refresh_action", "an action after each refresh", nullptr, nullptr},
    {"reindex_drift_threshold", "reindexing after a refresh", nullptr, nullptr},
};

void refuse(const Args& a, const Unprovided& u, bool boolean) {
    const std::string name = u.name;
    std::string hint = u.hint != nullptr ? u.hint : "Omit " + name + ".";
    if (u.accepted != nullptr) {
        hint = "Omit " + name + ", or pass '" + u.accepted + "'.";
    } else if (boolean) {
        hint = "Omit " + name + ", or pass false.";
    }
    throw pgt::Error(sqlstate::kFeatureNotSupported,
                     "pg_trickle does not provide " + name + " (" + u.asks + ")",
                     a.function_name() + " takes " + name +
                         " for compatibility with the Rust pg_trickle's API; " +
                         "pg_trickle accepts only its default.",
                     hint);
}

std::optional<std::string> cdc_mode_of(const Args& a) {
    std::optional<std::string> given = named_text(a, "cdc_mode");
    if (!given) {
        return std::nullopt;
    }
    const std::string mode = upper_trimmed_mode(*given);
    if (mode == "AUTO" || mode == "TRIGGER") {
        return mode == "AUTO" ? "auto" : "trigger";
    }
    if (mode == "WAL") {
        throw pgt::Error(sqlstate::kFeatureNotSupported,
                         "pg_trickle does not provide change capture from the WAL (cdc_mode "
                         "'wal')",
                         "Changes are captured by row triggers on the sources.",
                         "Pass cdc_mode => 'trigger' or 'auto', or omit it.");
    }
    throw pgt::Error(sqlstate::kInvalidParameterValue, "invalid cdc_mode \"" + *given + "\"", "",
                     "Valid values are 'auto', 'trigger' and 'wal'.");
}

}  // namespace

std::optional<std::string> named_text(const Args& a, const char* name) {
    const int n = a.position(name);
    return a.is_null(n) ? std::nullopt : a.optional_text(n);
}

CompatArgs compat_args(const Args& a) {
    for (const Unprovided& u : kUnprovided) {
        const int n = a.position(u.name);
        if (a.is_null(n)) {
            continue;
        }
        const Oid type = a.type_of(n);
        if (type == BOOLOID) {
            if (a.bool_or(n, false)) {
                refuse(a, u, true);
            }
            continue;
        }
        if (type == TEXTOID && u.accepted != nullptr &&
            upper_trimmed_mode(*a.optional_text(n)) == upper_trimmed_mode(u.accepted)) {
            continue;
        }
        refuse(a, u, false);
    }
    CompatArgs c;
    c.cdc_mode = cdc_mode_of(a);
    return c;
}

}  // namespace pgt::pg
