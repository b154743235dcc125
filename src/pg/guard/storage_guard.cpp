// The storage guard trigger and the refresh's write permission.
// Invariant: the guard fires BEFORE each statement, so a refused write
// changes nothing; the permission stack is reset at transaction end.
#include "pg/guard/storage_guard.hpp"

#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/common/relation_names.hpp"

extern "C" {
#include "postgres.h"
#include "access/xact.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(pgt_guard_storage);
}

namespace pgt::pg {

namespace {

std::vector<Oid> g_writable;  // relations this backend's refresh is writing
bool g_callback_registered = false;

void reset_at_xact_end(XactEvent event, void*) {
    if (event == XACT_EVENT_ABORT || event == XACT_EVENT_COMMIT ||
        event == XACT_EVENT_PARALLEL_ABORT || event == XACT_EVENT_PREPARE) {
        g_writable.clear();
    }
}

const char* operation(TriggerEvent ev) {
    if (TRIGGER_FIRED_BY_INSERT(ev))
        return "INSERT";
    if (TRIGGER_FIRED_BY_UPDATE(ev))
        return "UPDATE";
    if (TRIGGER_FIRED_BY_DELETE(ev))
        return "DELETE";
    return "TRUNCATE";
}

Datum guard_storage(FunctionCallInfo fcinfo) {
    if (!CALLED_AS_TRIGGER(fcinfo)) {
        throw pgt::Error("39P01", "storage guard called outside a trigger");
    }
    TriggerData* td = reinterpret_cast<TriggerData*>(fcinfo->context);
    Oid relid = RelationGetRelid(td->tg_relation);
    if (std::find(g_writable.begin(), g_writable.end(), relid) != g_writable.end()) {
        return PointerGetDatum(nullptr);
    }
    throw pgt::Error("55000",
                     std::string("cannot ") + operation(td->tg_event) + " stream table " +
                         relation_display_name(relid) + " directly",
                     "A stream table's contents are defined by its query; only a refresh "
                     "writes them.",
                     "Change the source tables, then call pgtrickle.refresh_stream_table().");
}

}  // namespace

RefreshWriteScope::RefreshWriteScope(Oid relid) {
    if (!g_callback_registered) {
        pg_call([] { RegisterXactCallback(reset_at_xact_end, nullptr); });
        g_callback_registered = true;
    }
    g_writable.push_back(relid);
}

RefreshWriteScope::~RefreshWriteScope() {
    if (!g_writable.empty()) {
        g_writable.pop_back();
    }
}

std::string guard_trigger_sql(const std::string& quoted_table) {
    // ENABLE ALWAYS: the guard also fires under session_replication_role =
    // replica, which a superuser may set to skip ordinary triggers.
    return "CREATE TRIGGER pgt_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON " +
           quoted_table +
           " FOR EACH STATEMENT EXECUTE FUNCTION pgtrickle._guard_storage(); ALTER TABLE " +
           quoted_table + " ENABLE ALWAYS TRIGGER pgt_guard";
}

}  // namespace pgt::pg

Datum pgt_guard_storage(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::guard_storage(fcinfo); });
}
