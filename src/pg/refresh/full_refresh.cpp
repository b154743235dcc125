// FULL refresh by DELETE + INSERT in the caller's transaction.
// Invariant: the generated statements name every object schema-qualified
// and run under the pinned search_path, as the calling user.
#include "pg/refresh/full_refresh.hpp"

#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"
#include "pg/refresh/storage.hpp"

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

void lock_stream_table_for_refresh(Spi& spi, int64_t pgt_id) {
    spi.exec("SELECT pg_catalog.pg_advisory_xact_lock($1::pg_catalog.int4, $2::pg_catalog.int4)",
             {int8_param(kRefreshLockClass), int8_param(pgt_id)});
}

RefreshResult full_refresh(Spi& spi, const catalog::StreamTableRow& st,
                           const std::string& initiated_by, const std::string& reason) {
    check_identity_versions(st);
    lock_stream_table_for_refresh(spi, st.pgt_id);
    std::string start = catalog::clock_now(spi);
    std::string target = quoted_relation_name(st.relid);
    std::string cols = output_column_list(st.relid);
    RefreshResult r;
    with_pinned_search_path([&] {
        r.rows_deleted = static_cast<int64_t>(spi.exec("DELETE FROM " + target));
        r.rows_inserted = static_cast<int64_t>(
            spi.exec("INSERT INTO " + target + " (" + cols + (cols.empty() ? "" : ", ") +
                     kRowIdColumn + ") SELECT q.*, " + row_id_expression(st, "q") + " FROM (" +
                     st.effective_query + ") q"));
    });
    catalog::mark_refreshed(spi, st.pgt_id);
    catalog::record_history(spi, {st.pgt_id, "FULL", initiated_by, r.rows_inserted, r.rows_deleted,
                                  start, reason.empty() ? std::nullopt : std::optional(reason)});
    return r;
}

}  // namespace pgt::pg
