// Pinning of search_path for generated SQL and deparsing.
// Invariant: every pin is matched by exactly one restore at its nest level.
#include "pg/boundary/guc.hpp"

extern "C" {
#include "postgres.h"
#include "catalog/namespace.h"
#include "utils/guc.h"
}

namespace pgt::pg {

int pin_search_path() {
    return pg_call([] {
        int level = NewGUCNestLevel();
        (void)set_config_option("search_path", kPinnedSearchPath, PGC_USERSET, PGC_S_SESSION,
                                GUC_ACTION_SAVE, true, 0, false);
        return level;
    });
}

int new_settings_level() {
    return pg_call([] { return NewGUCNestLevel(); });
}

bool search_path_is_pinned() {
    return namespace_search_path != nullptr &&
           strcmp(namespace_search_path, kPinnedSearchPath) == 0;
}

void pin_setting(const char* name, const char* value) {
    pg_call([&] {
        (void)set_config_option(name, value, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
                                false);
    });
}

void restore_settings(int nestlevel) {
    pg_call([&] { AtEOXact_GUC(true, nestlevel); });
}

}  // namespace pgt::pg
