// Time limits of scheduled refreshes (see refresh_limit.hpp).
// Invariant: the settings are read from pg_db_role_setting with fixed,
// qualified SQL; nothing of the owner's runs here.
#include "pg/scheduler/refresh_limit.hpp"

#include <optional>

#include "pg/boundary/boundary.hpp"
#include "pg/common/settings.hpp"

extern "C" {
#include "postgres.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
}

namespace pgt::pg {

namespace {

// The owner's statement_timeout in this database, most specific setting
// first as PostgreSQL applies them at login; nullopt when none is set.
std::optional<RefreshLimit> owner_setting(Spi& spi, Oid owner) {
    SpiRows r = spi.query(
        "SELECT CASE WHEN s.setrole OPERATOR(pg_catalog.=) 0 THEN 'statement_timeout of this "
        "database' WHEN s.setdatabase OPERATOR(pg_catalog.=) 0 THEN 'statement_timeout of role "
        "' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(a.rolname) ELSE 'statement_timeout of "
        "role ' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(a.rolname) "
        "OPERATOR(pg_catalog.||) ' in this database' END, pg_catalog.substr(c, 19) FROM "
        "pg_catalog.pg_db_role_setting s CROSS JOIN pg_catalog.unnest(s.setconfig) c LEFT JOIN "
        "pg_catalog.pg_roles a ON a.oid OPERATOR(pg_catalog.=) s.setrole WHERE s.setdatabase "
        "OPERATOR(pg_catalog.=) ANY (ARRAY[0, $1]::pg_catalog.oid[]) AND s.setrole "
        "OPERATOR(pg_catalog.=) ANY (ARRAY[0, $2]::pg_catalog.oid[]) AND NOT (s.setdatabase "
        "OPERATOR(pg_catalog.=) 0 AND s.setrole OPERATOR(pg_catalog.=) 0) AND "
        "pg_catalog.starts_with(c, 'statement_timeout=') ORDER BY s.setrole "
        "OPERATOR(pg_catalog.<>) 0 DESC, s.setdatabase OPERATOR(pg_catalog.<>) 0 DESC LIMIT 1",
        {oid_param(MyDatabaseId), oid_param(owner)});
    if (r.rows.empty()) {
        return std::nullopt;
    }
    int ms = 0;
    const std::string value = r.rows[0][1].value_or("");
    // ALTER ROLE/DATABASE ... SET checked the value; one that no longer
    // parses is ignored as PostgreSQL would at login (with a warning).
    if (!pg_call([&] { return parse_int(value.c_str(), &ms, GUC_UNIT_MS, nullptr); })) {
        return std::nullopt;
    }
    return RefreshLimit{ms, r.rows[0][0].value_or("")};
}

}  // namespace

RefreshLimit refresh_limit(Spi& spi, Oid owner) {
    // Without a role or database setting, the server's (the worker's own
    // value comes from the configuration files).
    RefreshLimit owners =
        owner_setting(spi, owner).value_or(RefreshLimit{StatementTimeout, "statement_timeout"});
    RefreshLimit ours{g_refresh_timeout_ms, "pg_trickle.refresh_timeout"};
    if (owners.ms <= 0) {
        return ours;
    }
    return ours.ms <= 0 || owners.ms < ours.ms ? owners : ours;
}

void RefreshTimer::arm() {
    if (limit_.ms <= 0) {
        return;
    }
    pg_call([&] {
        armed_at_ = GetCurrentTimestamp();
        enable_timeout_after(STATEMENT_TIMEOUT, limit_.ms);
    });
}

void RefreshTimer::disarm() {
    if (limit_.ms <= 0) {
        return;
    }
    pg_call([] {
        disable_timeout(STATEMENT_TIMEOUT, false);
        // Fired as the refresh ended, before anything looked at it: the
        // cancel it asked for is not for what runs next.
        if (get_timeout_indicator(STATEMENT_TIMEOUT, true)) {
            QueryCancelPending = false;
        }
    });
}

bool RefreshTimer::expired() const {
    return limit_.ms > 0 && armed_at_ != 0 &&
           TimestampDifferenceExceeds(armed_at_, GetCurrentTimestamp(), limit_.ms);
}

}  // namespace pgt::pg
