// Runs a piece of work with settings pinned (search_path above all), the
// way generated SQL must run. Invariant: the previous values come back on
// success and on a C++ exception; a PostgreSQL error aborts the
// transaction, which restores them as well.
#pragma once

#include <type_traits>
#include <utility>

#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "utils/guc.h"
}

namespace pgt::pg {

// search_path under which generated SQL runs and deparsing happens: every
// object outside pg_catalog is then named with its schema.
inline constexpr const char* kPinnedSearchPath = "pg_catalog, pg_temp";

int pin_search_path();                 // returns the GUC nest level to restore
bool search_path_is_pinned();          // whether search_path is kPinnedSearchPath now
void restore_settings(int nestlevel);  // undoes pin_search_path()
// Sets a setting inside the current pin (undone with it); call only within
// with_pinned_search_path.
void pin_setting(const char* name, const char* value);

// Runs fn, then undoes every setting made since nest level `level`, on
// success and on a C++ exception alike.
template <typename F>
auto restoring_settings(int level, F&& fn) -> decltype(fn()) {
    try {
        if constexpr (std::is_void_v<decltype(fn())>) {
            fn();
            restore_settings(level);
        } else {
            auto result = fn();
            restore_settings(level);
            return result;
        }
    } catch (...) {
        restore_settings(level);
        throw;
    }
}

// Runs fn at a GUC nest level of its own without touching search_path:
// settings pinned inside are undone when it returns, even where an
// enclosing scope had pinned the path already (or the session's path
// happens to be kPinnedSearchPath).
int new_settings_level();
template <typename F>
auto with_settings_level(F&& fn) -> decltype(fn()) {
    return restoring_settings(new_settings_level(), std::forward<F>(fn));
}

template <typename F>
auto with_pinned_search_path(F&& fn) -> decltype(fn()) {
    return restoring_settings(pin_search_path(), std::forward<F>(fn));
}

}  // namespace pgt::pg
