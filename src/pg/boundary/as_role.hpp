// Runs a piece of work as another role inside a security-restricted
// operation, with search_path pinned: how every statement the extension
// runs on someone's behalf (refreshes as the stream table's owner,
// catalog and capture work as the extension's owner) must run.
// Invariant: the previous user, security context and settings come back
// on success and on a C++ exception; a PostgreSQL error aborts the
// (sub)transaction, which restores them as well.
#pragma once

#include <type_traits>

#include "pg/boundary/guc.hpp"

extern "C" {
#include "postgres.h"
#include "miscadmin.h"
}

namespace pgt::pg {

// As REFRESH MATERIALIZED VIEW does: the role's rights only, no SET ROLE,
// no temporary objects, no session state changes from code it runs, and
// functions and operators found only in pg_catalog (generated SQL names
// everything else with its schema).
template <typename F>
auto as_role_restricted(Oid role, F&& fn) -> decltype(fn()) {
    Oid saved_user = InvalidOid;
    int saved_ctx = 0;
    GetUserIdAndSecContext(&saved_user, &saved_ctx);
    SetUserIdAndSecContext(
        role, saved_ctx | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
    // Nested inside another pinned scope (catalog writes of a refresh), the
    // path is pinned already: setting it again costs a GUC level and a
    // search-path recomputation per statement.
    auto run = [&]() -> decltype(fn()) {
        if (search_path_is_pinned()) {
            return fn();
        }
        return with_pinned_search_path(fn);
    };
    try {
        if constexpr (std::is_void_v<decltype(fn())>) {
            run();
            SetUserIdAndSecContext(saved_user, saved_ctx);
        } else {
            auto result = run();
            SetUserIdAndSecContext(saved_user, saved_ctx);
            return result;
        }
    } catch (...) {
        SetUserIdAndSecContext(saved_user, saved_ctx);
        throw;
    }
}

}  // namespace pgt::pg
