// The arguments create_stream_table, create_stream_table_if_not_exists,
// create_or_replace_stream_table and alter_stream_table take so that tools
// written for the Rust pg_trickle's API (dbt-pgtrickle) call them unchanged:
// its names, order and defaults. One takes effect (cdc_mode); every other
// is accepted at its default only and otherwise fails with 0A000 naming it,
// before anything is changed: never silently ignored.
#pragma once

#include <optional>
#include <string>

#include "pg/api/args.hpp"

namespace pgt::pg {

struct CompatArgs {
    // cdc_mode, lower-cased: 'auto' or 'trigger' (both capture by row
    // triggers); none when NULL (alter: unchanged).
    std::optional<std::string> cdc_mode;
};

// Checks the compatibility arguments the called function has (found by
// name) and returns those that take effect.
CompatArgs compat_args(const Args& a);

// The value of the called function's argument called name as text; none
// when it is NULL or the function has no such argument.
std::optional<std::string> named_text(const Args& a, const char* name);

}  // namespace pgt::pg
