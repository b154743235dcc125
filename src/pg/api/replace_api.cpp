// pgtrickle.create_stream_table_if_not_exists and
// pgtrickle.create_or_replace_stream_table: create_stream_table, or what
// an existing stream table of that name needs (nothing, or
// alter_stream_table with what differs), as dbt-style tools call them.
// Invariant: the caller's query is analysed for the comparison as the
// existing stream table's owner, restricted (names resolved in the caller's
// search_path), never with the caller's rights; C, so no operator or type
// is looked up in the caller's search_path.
#include <optional>
#include <string>

#include "core/refresh_mode.hpp"
#include "core/sched/schedule.hpp"
#include "pg/analyze/defining_query.hpp"
#include "pg/api/args.hpp"
#include "pg/api/compat_args.hpp"
#include "pg/api/lifecycle.hpp"
#include "pg/api/names.hpp"
#include "pg/boundary/as_role.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"
#include "pg/boundary/spi.hpp"
#include "pg/catalog/catalog.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/notify/stream_notify.hpp"

extern "C" {
#include "postgres.h"
#include "fmgr.h"

PG_FUNCTION_INFO_V1(pgt_create_stream_table_if_not_exists);
PG_FUNCTION_INFO_V1(pgt_create_or_replace_stream_table);
}

namespace pgt::pg {
namespace {

// The stream table an existing relation called name is; none when no
// relation has the name or it is not a stream table (create_stream_table
// then creates, or refuses the name with 42P07).
std::optional<catalog::StreamTableRow> existing_stream_table(Spi& spi, const std::string& name) {
    const Oid relid = relation_named(name);
    if (!OidIsValid(relid)) {
        return std::nullopt;
    }
    return catalog::find_by_relid(spi, relid);
}

// query as creating a stream table of it would store it (analysed,
// schema-qualified), analysed as row's owner with the caller's names.
std::string stored_form(const catalog::StreamTableRow& row, const std::string& query) {
    const std::string path = caller_search_path();
    return as_role_restricted(relation_owner(row.relid), [&] {
        return with_settings_level([&] {
            pin_setting("search_path", path.c_str());
            return analyze_defining_query(query).effective;
        });
    });
}

void create_if_not_exists(const Args& a) {
    const std::string name = a.required_text(0, "name");
    (void)compat_args(a);  // refused whether or not the stream table exists
    Spi spi = Spi::connect();
    open_stream_tables(spi);
    const bool exists = existing_stream_table(spi, name).has_value();
    spi.close();
    if (exists) {
        notice("stream table \"" + name + "\" already exists, skipping");
        return;
    }
    create_stream_table(a);
}

void create_or_replace(const Args& a) {
    AlterRequest r;
    r.name = a.required_text(0, "name");
    const std::string query = a.required_text(1, "query");
    const std::string schedule = a.text_or(2, "calculated");
    const std::string mode = a.text_or(3, "AUTO");
    const CompatArgs compat = compat_args(a);
    const std::optional<std::string> notify = named_text(a, "notify");
    Spi spi = Spi::connect();
    open_stream_tables(spi);
    if (!existing_stream_table(spi, r.name)) {
        spi.close();
        create_stream_table(a);
        return;
    }
    const catalog::StreamTableRow row = resolve_stream_table(spi, r.name, /*must_own=*/true);
    spi.close();
    if (notify) {
        check_notify_channel(*notify);
    }
    if (stored_form(row, query) != row.effective_query) {
        r.query = query;
    }
    if (sched::parse_schedule(schedule).canonical != row.schedule) {
        r.schedule = schedule;
    }
    if (upper_trimmed_mode(mode) != mode_name(row.requested_mode)) {
        r.mode = mode;
    }
    r.notify_given = notify != row.notify_channel;
    r.notify = notify;
    if (compat.cdc_mode != row.requested_cdc_mode) {
        r.cdc_mode = compat.cdc_mode;
    }
    if (!r.query && !r.schedule && !r.mode && !r.notify_given && !r.cdc_mode) {
        notice("stream table \"" + r.name + "\" is unchanged");
        return;
    }
    alter_stream_table(r);
}

}  // namespace
}  // namespace pgt::pg

Datum pgt_create_stream_table_if_not_exists(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] {
        pgt::pg::create_if_not_exists(pgt::pg::Args(fcinfo));
        PG_RETURN_VOID();
    });
}

Datum pgt_create_or_replace_stream_table(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] {
        pgt::pg::create_or_replace(pgt::pg::Args(fcinfo));
        PG_RETURN_VOID();
    });
}
