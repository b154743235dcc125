// The extension's own triggers among those a command drops, recognised by
// what they are, never by name: the sql_drop event trigger sees a dropped
// trigger only as a name, after its pg_trigger row (function, table,
// parent) is gone. An object-access hook reads that row just before the
// deletion and keeps, for the transaction, each dropped trigger that calls
// a function of the extension's schema; pgtrickle._dropped_triggers()
// returns them for _on_sql_drop to join with
// pg_event_trigger_dropped_objects() by OID.
// Invariant: the hook runs inside PostgreSQL's deletion, so its body holds
// no C++ object with a destructor (a PostgreSQL error may unwind it), and
// what it keeps lives in TopTransactionContext only.
#include "pg/catalog/dropped_triggers.hpp"

extern "C" {
#include "postgres.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_trigger.h"
#include "commands/event_trigger.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(pgt_dropped_triggers);
PG_FUNCTION_INFO_V1(pgt_on_ddl_start);
PGDLLEXPORT Datum pgt_dropped_triggers(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum pgt_on_ddl_start(PG_FUNCTION_ARGS);
}

namespace pgt::pg {

namespace {

struct DroppedTrigger {
    Oid trigger;
    Oid relid;
    Oid func;
    Oid root_relid;   // the table of the trigger it was cloned from, at the top
    char* first_arg;  // nullptr when it has none
};

DroppedTrigger* g_dropped = nullptr;
int g_count = 0;
int g_capacity = 0;
object_access_hook_type g_prev_hook = nullptr;

void forget_dropped(void*) {
    g_dropped = nullptr;
    g_count = 0;
    g_capacity = 0;
}

// The pg_trigger row of trigger `oid` (a copy), or nullptr.
HeapTuple trigger_row(Relation rel, Oid oid) {
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_trigger_oid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(oid));
    SysScanDesc scan = systable_beginscan(rel, TriggerOidIndexId, true, nullptr, 1, &key);
    HeapTuple tup = systable_getnext(scan);
    HeapTuple copy = HeapTupleIsValid(tup) ? heap_copytuple(tup) : nullptr;
    systable_endscan(scan);
    return copy;
}

// The table of the topmost trigger `parent` was cloned from (partitions
// get clones of their partitioned table's row triggers, level by level).
Oid root_relid_of(Relation rel, Oid parent) {
    Oid relid = InvalidOid;
    for (int depth = 0; OidIsValid(parent) && depth < 1000; depth++) {
        HeapTuple tup = trigger_row(rel, parent);
        if (tup == nullptr) {
            break;
        }
        const auto* t = reinterpret_cast<Form_pg_trigger>(GETSTRUCT(tup));
        relid = t->tgrelid;
        parent = t->tgparentid;
        heap_freetuple(tup);
    }
    return relid;
}

char* first_argument(Relation rel, HeapTuple tup, MemoryContext into) {
    const auto* t = reinterpret_cast<Form_pg_trigger>(GETSTRUCT(tup));
    if (t->tgnargs < 1) {
        return nullptr;
    }
    bool isnull = true;
    Datum args = heap_getattr(tup, Anum_pg_trigger_tgargs, RelationGetDescr(rel), &isnull);
    if (isnull) {
        return nullptr;
    }
    bytea* bytes = DatumGetByteaPP(args);
    // The arguments are NUL-terminated strings, one after the other.
    return MemoryContextStrdup(into, VARDATA_ANY(bytes));
}

void keep(const DroppedTrigger& d) {
    if (g_dropped == nullptr) {
        auto* cb = static_cast<MemoryContextCallback*>(
            MemoryContextAllocZero(TopTransactionContext, sizeof(MemoryContextCallback)));
        cb->func = forget_dropped;
        MemoryContextRegisterResetCallback(TopTransactionContext, cb);
        g_capacity = 8;
        g_dropped = static_cast<DroppedTrigger*>(
            MemoryContextAlloc(TopTransactionContext, sizeof(DroppedTrigger) * g_capacity));
    } else if (g_count == g_capacity) {
        g_capacity *= 2;
        g_dropped =
            static_cast<DroppedTrigger*>(repalloc(g_dropped, sizeof(DroppedTrigger) * g_capacity));
    }
    g_dropped[g_count++] = d;
}

void note_dropped_trigger(Oid oid) {
    const Oid ours = get_namespace_oid("pgtrickle", true);
    if (!OidIsValid(ours)) {
        return;
    }
    Relation rel = table_open(TriggerRelationId, AccessShareLock);
    HeapTuple tup = trigger_row(rel, oid);
    if (tup != nullptr) {
        const auto* t = reinterpret_cast<Form_pg_trigger>(GETSTRUCT(tup));
        if (get_func_namespace(t->tgfoid) == ours) {
            DroppedTrigger d{oid, t->tgrelid, t->tgfoid, root_relid_of(rel, t->tgparentid),
                             first_argument(rel, tup, TopTransactionContext)};
            if (!OidIsValid(d.root_relid)) {
                d.root_relid = t->tgrelid;
            }
            keep(d);
        }
        heap_freetuple(tup);
    }
    table_close(rel, AccessShareLock);
}

void on_object_access(ObjectAccessType access, Oid class_id, Oid object_id, int sub_id, void* arg) {
    if (g_prev_hook != nullptr) {
        g_prev_hook(access, class_id, object_id, sub_id, arg);
    }
    if (access == OAT_DROP && class_id == TriggerRelationId) {
        note_dropped_trigger(object_id);
    }
}

}  // namespace

void install_dropped_triggers_hook() {
    g_prev_hook = object_access_hook;
    object_access_hook = on_object_access;
}

}  // namespace pgt::pg

// pgtrickle._dropped_triggers(): the extension's triggers dropped so far
// in this transaction (trigger_oid, relid, func, root_relid, first_arg).
Datum pgt_dropped_triggers(PG_FUNCTION_ARGS) {
    InitMaterializedSRF(fcinfo, 0);
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    for (int i = 0; i < pgt::pg::g_count; i++) {
        const pgt::pg::DroppedTrigger& d = pgt::pg::g_dropped[i];
        Datum values[5] = {ObjectIdGetDatum(d.trigger), ObjectIdGetDatum(d.relid),
                           ObjectIdGetDatum(d.func), ObjectIdGetDatum(d.root_relid),
                           d.first_arg != nullptr ? CStringGetTextDatum(d.first_arg) : (Datum)0};
        bool nulls[5] = {false, false, false, false, d.first_arg == nullptr};
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    return (Datum)0;
}

// ddl_command_start: does nothing. Being a function of this library, it
// loads the library (and so the hook above) before any DDL command runs,
// in every session, so no drop of one of our triggers goes unseen.
Datum pgt_on_ddl_start(PG_FUNCTION_ARGS) {
    if (!CALLED_AS_EVENT_TRIGGER(fcinfo)) {
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("pgtrickle._on_ddl_start must be called as an event trigger")));
    }
    PG_RETURN_NULL();
}
