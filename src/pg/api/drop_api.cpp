// pgtrickle.drop_stream_table(name, cascade): the stream table, its
// capture, kept copies, IMMEDIATE triggers and catalog rows; with cascade,
// the stream tables reading it first.
// Invariant: as the owner only; nothing of it is left after a success, and
// nothing is dropped after an error (one transaction).
#include <string>
#include <vector>

#include "core/error.hpp"
#include "pg/api/args.hpp"
#include "pg/api/lifecycle.hpp"
#include "pg/api/names.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/spi.hpp"
#include "pg/catalog/catalog.hpp"
#include "pg/cdc/change_notes.hpp"
#include "pg/cdc/frontier.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/refresh/full_refresh.hpp"
#include "pg/refresh/immediate.hpp"

extern "C" {
#include "postgres.h"
#include "fmgr.h"

PG_FUNCTION_INFO_V1(pgt_drop_stream_table);
}

namespace pgt::pg {
namespace {

void drop_one(Spi& spi, const catalog::StreamTableRow& row, bool cascade) {
    std::vector<catalog::StreamTableRow> dependents = catalog::dependents_of(spi, row.relid);
    if (!dependents.empty() && !cascade) {
        std::string list;
        for (const auto& d : dependents) {
            list += (list.empty() ? "" : ", ") + quoted_relation_name(d.relid);
        }
        throw pgt::Error("2BP01",
                         "cannot drop stream table " + relation_display_name(row.relid) +
                             " because other stream tables depend on it",
                         "Stream tables reading it: " + list + ".",
                         "Drop those first, or use cascade => true to drop them too.");
    }
    for (const auto& d : dependents) {
        drop_one(spi, d, cascade);
    }
    detach_frontiers(spi, row.pgt_id);
    drop_kept_copies(spi, row.pgt_id);
    drop_immediate(spi, row.pgt_id);
    drop_change_notes(spi, row.pgt_id);
    // Its publication (stream_table_to_publication), when it publishes
    // nothing else and the caller may drop it.
    SpiRows pub = spi.query(
        "SELECT pg_catalog.quote_ident(p.pubname) FROM pg_catalog.pg_publication p WHERE "
        "p.pubname OPERATOR(pg_catalog.=) ('pgt_pub_' OPERATOR(pg_catalog.||) $2) AND "
        "pg_catalog.pg_has_role(p.pubowner, 'USAGE') AND NOT p.puballtables AND NOT EXISTS "
        "(SELECT 1 FROM pg_catalog.pg_publication_rel r WHERE r.prpubid OPERATOR(pg_catalog.=) "
        "p.oid AND r.prrelid OPERATOR(pg_catalog.<>) $1) AND NOT EXISTS (SELECT 1 FROM "
        "pg_catalog.pg_publication_namespace n WHERE n.pnpubid OPERATOR(pg_catalog.=) p.oid)",
        {oid_param(row.relid), text_param(row.name)});
    if (!pub.rows.empty()) {
        spi.exec("DROP PUBLICATION " + *pub.rows[0][0]);
    }
    spi.exec("DROP TABLE " + quoted_relation_name(row.relid) + (cascade ? " CASCADE" : ""));
    catalog::delete_stream_table(spi, row.pgt_id);
}

void drop_stream_table(const Args& a) {
    std::string name = a.required_text(0, "name");
    bool cascade = a.bool_or(1, false);
    Spi spi = Spi::connect();
    open_stream_tables(spi);
    drop_one(spi, resolve_stream_table(spi, name, /*must_own=*/true), cascade);
    spi.close();
}

}  // namespace
}  // namespace pgt::pg

Datum pgt_drop_stream_table(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] {
        pgt::pg::drop_stream_table(pgt::pg::Args(fcinfo));
        PG_RETURN_VOID();
    });
}
