// FULL refresh by DELETE + INSERT in the caller's transaction.
// Invariant: the generated statements name every object schema-qualified
// and run under the pinned search_path, as the calling user.
#include "pg/refresh/full_refresh.hpp"

#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"

extern "C" {
#include "postgres.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

namespace pgt::pg {

namespace {
// Advisory lock class key for stream tables ("PGTT"); the object key is pgt_id.
constexpr int32 kRefreshLockClass = 0x50475454;
}  // namespace

namespace {

std::string relation_name(Oid relid, bool quoted) {
    char* s = pg_call([&] {
        char* nsp = get_namespace_name(get_rel_namespace(relid));
        char* rel = get_rel_name(relid);
        if (nsp == nullptr || rel == nullptr) {
            elog(ERROR, "relation %u does not exist", relid);
        }
        return quoted ? quote_qualified_identifier(nsp, rel) : psprintf("\"%s.%s\"", nsp, rel);
    });
    return s;
}

}  // namespace

std::string quoted_relation_name(Oid relid) {
    return relation_name(relid, true);
}

std::string relation_display_name(Oid relid) {
    return relation_name(relid, false);
}

void lock_stream_table_for_refresh(Spi& spi, int64_t pgt_id) {
    spi.exec("SELECT pg_catalog.pg_advisory_xact_lock($1::pg_catalog.int4, $2::pg_catalog.int4)",
             {int8_param(kRefreshLockClass), int8_param(pgt_id)});
}

RefreshResult full_refresh(Spi& spi, const catalog::StreamTableRow& st,
                           const std::string& initiated_by, const std::string& reason) {
    lock_stream_table_for_refresh(spi, st.pgt_id);
    std::string start = catalog::clock_now(spi);
    std::string target = quoted_relation_name(st.relid);
    RefreshResult r;
    with_pinned_search_path([&] {
        r.rows_deleted = static_cast<int64_t>(spi.exec("DELETE FROM " + target));
        r.rows_inserted = static_cast<int64_t>(
            spi.exec("INSERT INTO " + target + " SELECT * FROM (" + st.effective_query + ") q"));
    });
    catalog::mark_refreshed(spi, st.pgt_id);
    catalog::record_history(spi, {st.pgt_id, "FULL", initiated_by, r.rows_inserted, r.rows_deleted,
                                  start, reason.empty() ? std::nullopt : std::optional(reason)});
    return r;
}

}  // namespace pgt::pg
