// pgtrickle._pending_changes(pgt_id, source_id, max_rows): the change rows
// of one source a stream table has not consumed yet, for the monitoring
// functions (change_buffer_sizes, get_staleness, pgt_status).
// Invariant: a count is given only to a caller who may read the source
// (SELECT on it, or pg_read_all_stats); the buffer itself is read as the
// extension's owner, in a security-restricted operation, and nothing the
// caller chose (search_path, functions) is reached from here.
#include <optional>
#include <string>

#include "core/diff/scan_delta.hpp"
#include "pg/api/args.hpp"
#include "pg/api/names.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/spi.hpp"
#include "pg/catalog/catalog.hpp"

extern "C" {
#include "postgres.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"

PG_FUNCTION_INFO_V1(pgt_pending_changes);
Datum pgt_pending_changes(PG_FUNCTION_ARGS);
PG_FUNCTION_INFO_V1(pgt_stream_table_id);
PG_FUNCTION_INFO_V1(pgt_relation_named);
Datum pgt_stream_table_id(PG_FUNCTION_ARGS);
Datum pgt_relation_named(PG_FUNCTION_ARGS);
}

namespace pgt::pg {
namespace {

bool caller_may_read(Oid caller, Oid relid) {
    return pg_call([&] {
        return pg_class_aclcheck(relid, caller, ACL_SELECT) == ACLCHECK_OK ||
               has_privs_of_role(caller, ROLE_PG_READ_ALL_STATS);
    });
}

// The window of diff::window_predicate as of now: rows committed after the
// frontier (or written by the caller's own transaction), minus the rows of
// the refreshing transaction the frontier already applied.
std::optional<int64_t> pending_changes(int64_t pgt_id, int64_t source_id,
                                       std::optional<int64_t> max_rows) {
    const Oid caller = pg_call([] { return GetUserId(); });
    Spi spi = Spi::connect();
    SpiRows f = catalog::query_as_owner(
        spi,
        "SELECT s.source_relid::pg_catalog.oid::pg_catalog.int8, s.buffer_name, "
        "f.frontier::pg_catalog.text, f.own_xid::pg_catalog.text, f.own_seq, "
        "pg_catalog.pg_current_snapshot()::pg_catalog.text, "
        "pg_catalog.pg_current_xact_id_if_assigned()::pg_catalog.text "
        "FROM pgtrickle.pgt_frontiers f JOIN pgtrickle.pgt_sources s "
        "ON s.source_id OPERATOR(pg_catalog.=) f.source_id "
        "WHERE f.pgt_id OPERATOR(pg_catalog.=) $1 AND f.source_id OPERATOR(pg_catalog.=) $2 "
        "AND pg_catalog.to_regclass(s.buffer_name) IS NOT NULL",
        {int8_param(pgt_id), int8_param(source_id)});
    if (f.rows.empty() || !caller_may_read(caller, static_cast<Oid>(std::stoul(*f.rows[0][0])))) {
        spi.close();
        return std::nullopt;
    }
    const auto& r = f.rows[0];
    const std::string limit =
        max_rows ? " LIMIT " + std::to_string(std::max<int64_t>(*max_rows, 0)) : std::string();
    SpiRows n = catalog::query_as_owner(
        spi,
        "SELECT pg_catalog.count(*) FROM (SELECT 1 FROM " + *r[1] + " b WHERE " +
            diff::window_predicate("b") + limit + ") x",
        {typed_param(PG_SNAPSHOTOID, r[5]), typed_param(PG_SNAPSHOTOID, r[2]),
         typed_param(XID8OID, r[6]), typed_param(XID8OID, r[3]), int8_param(std::stoll(*r[4]))});
    spi.close();
    return std::stoll(*n.rows.at(0).at(0));
}

}  // namespace
}  // namespace pgt::pg

Datum pgt_pending_changes(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&]() -> Datum {
        if (PG_ARGISNULL(0) || PG_ARGISNULL(1)) {
            PG_RETURN_NULL();
        }
        std::optional<int64_t> max_rows;
        if (!PG_ARGISNULL(2)) {
            max_rows = PG_GETARG_INT64(2);
        }
        std::optional<int64_t> n =
            pgt::pg::pending_changes(PG_GETARG_INT64(0), PG_GETARG_INT64(1), max_rows);
        if (!n) {
            PG_RETURN_NULL();
        }
        PG_RETURN_INT64(*n);
    });
}

// The pgt_id of the stream table `name` names (42P01 when no relation has
// that name, 42809 when it is not a stream table), for the SQL functions
// of the API; in C so an error names the function the user called, not
// this helper.
Datum pgt_stream_table_id(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&]() -> Datum {
        const std::string name = pgt::pg::Args(fcinfo).required_text(0, "name");
        pgt::pg::Spi spi = pgt::pg::Spi::connect();
        const int64_t id = pgt::pg::resolve_stream_table(spi, name, false).pgt_id;
        spi.close();
        PG_RETURN_INT64(id);
    });
}

// The relation `name` resolves to, NULL when none (the create_* functions
// written in SQL): names are read as every API function reads them.
Datum pgt_relation_named(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&]() -> Datum {
        const std::string name = pgt::pg::Args(fcinfo).required_text(0, "name");
        const Oid relid = pgt::pg::relation_named(name);
        if (!OidIsValid(relid)) {
            PG_RETURN_NULL();
        }
        PG_RETURN_OID(relid);
    });
}
