// Installs pgtrickle.notify_changes() on stream-table storage. Key columns:
// the stream table's unique key (the output columns its row identity
// encodes, for scan_key / group_key identities), else __pgt_row_id.
// Invariant: identifiers and literals are quoted; the trigger name is fixed
// (pgt_notify), so re-syncing never leaves a second trigger behind.
#include "pg/notify/stream_notify.hpp"

#include "core/error.hpp"
#include "core/notify/payload.hpp"
#include "pg/api/args.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/common/quote.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/refresh/storage.hpp"

extern "C" {
#include "postgres.h"
#include "commands/async.h"
#include "fmgr.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(pgt_notify_resync);
}

namespace pgt::pg {

namespace {

constexpr const char* kTrigger = "pgt_notify";

std::string key_arguments(const catalog::StreamTableRow& row) {
    bool keyed = row.identity_domain == rowid::Domain::kScanKey ||
                 row.identity_domain == rowid::Domain::kGroupKey;
    if (!keyed || row.identity_columns.empty()) {
        return ", " + sql_literal(kRowIdColumn);
    }
    std::string args;
    for (const std::string& c : row.identity_columns) {
        args += ", " + sql_literal(c);
    }
    return args;
}

}  // namespace

void check_notify_channel(const std::string& channel) {
    if (channel.empty() || channel.size() >= 64) {
        throw pgt::Error("22023", "notify channel must have 1 to 63 bytes",
                         "The channel given has " + std::to_string(channel.size()) + " bytes.",
                         "Pass a short channel name, or notify => NULL to stop notifications.");
    }
}

void sync_notify_trigger(Spi& spi, const catalog::StreamTableRow& row) {
    std::string table = quoted_relation_name(row.relid);
    // Looked up first: DROP TRIGGER IF EXISTS would print a NOTICE.
    bool exists = !spi.query(
                          "SELECT 1 FROM pg_catalog.pg_trigger WHERE tgrelid "
                          "OPERATOR(pg_catalog.=) $1 AND tgname OPERATOR(pg_catalog.=) $2",
                          {oid_param(row.relid), text_param(std::string(kTrigger))})
                       .rows.empty();
    if (exists) {
        spi.exec(std::string("DROP TRIGGER ") + kTrigger + " ON " + table);
    }
    if (!row.notify_channel) {
        return;
    }
    spi.exec(std::string("CREATE TRIGGER ") + kTrigger + " AFTER INSERT OR UPDATE OR DELETE ON " +
             table + " FOR EACH ROW EXECUTE FUNCTION pgtrickle.notify_changes(" +
             sql_literal(*row.notify_channel) + key_arguments(row) + ")");
}

void notify_resync(const std::string& channel, const std::string& schema, const std::string& name,
                   const std::string& reason) {
    notify::ChangeEvent ev;
    ev.schema = schema;  // quoted by the payload builder, as quote_ident does
    ev.table = name;
    ev.op = notify::Op::kResync;
    ev.seq = next_notify_seq();
    ev.reason = reason;
    const std::string payload = notify::build_payload(ev);
    pg_call([&] { Async_Notify(channel.c_str(), payload.c_str()); });
}

void notify_resync(const catalog::StreamTableRow& row, const std::string& reason) {
    if (row.notify_channel) {
        notify_resync(*row.notify_channel, row.schema, row.name, reason);
    }
}

}  // namespace pgt::pg

// pgtrickle._notify_resync(channel, schema, name, reason): for the sql_drop
// event trigger, when a stream table's storage is dropped (by
// drop_stream_table or DROP TABLE).
Datum pgt_notify_resync(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] {
        pgt::pg::Args a(fcinfo);
        pgt::pg::notify_resync(a.required_text(0, "channel"), a.required_text(1, "schema"),
                               a.required_text(2, "name"), a.required_text(3, "reason"));
        PG_RETURN_VOID();
    });
}
