// pgtrickle._ddl_effect(pg_ddl_command): what a DDL command PostgreSQL
// permits does to the results of the stream tables built on what it
// touched. pgtrickle._on_ddl_end (ddl_command_end) marks those stream
// tables, and the ones reading them, for reinitialisation.
// Invariant: only commands that change what a query computes, or the names
// its stored text uses, have an effect; the others (ADD COLUMN, SET
// DEFAULT, indexes, ADD VALUE to an enum, ...) return NULL, so routine DDL
// costs a stream table nothing.
#include <string>
#include <vector>

#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/parsenodes.h"
#include "tcop/deparse_utility.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(pgt_ddl_effect);
}

namespace pgt::pg {
namespace {

struct Effect {
    std::string reason;  // "" when the command changes no stream table's results
    Oid classid = InvalidOid;
    std::vector<Oid> objects;  // whose dependent stream tables it affects
};

std::string describe(Oid classid, Oid objid) {
    ObjectAddress a{classid, objid, 0};
    char* d = pg_call([&] { return getObjectDescription(&a, true); });
    return d != nullptr ? d : "an object";
}

// Whether an ENABLE/DISABLE TRIGGER of `name` (nullptr: ALL or USER) on
// relid reaches a trigger of ours: one calling a function of the
// extension's schema (recognised by what it runs, not by its name). Not
// IMMEDIATE's replication row trigger (_immediate_replicated): it
// maintains nothing, so no write is lost while it does not fire, and
// IMMEDIATE installs it with ENABLE REPLICA (health_check reports it
// enabled otherwise).
bool toggles_our_trigger(Oid relid, const char* name) {
    return pg_call([&] {
        const Oid ours = get_namespace_oid("pgtrickle", true);
        bool found = false;
        ScanKeyData key;
        ScanKeyInit(&key, Anum_pg_trigger_tgrelid, BTEqualStrategyNumber, F_OIDEQ,
                    ObjectIdGetDatum(relid));
        Relation rel = table_open(TriggerRelationId, AccessShareLock);
        SysScanDesc scan = systable_beginscan(rel, TriggerRelidNameIndexId, true, nullptr, 1, &key);
        for (HeapTuple tup; !found && HeapTupleIsValid(tup = systable_getnext(scan));) {
            const auto* t = reinterpret_cast<Form_pg_trigger>(GETSTRUCT(tup));
            found = (name == nullptr || strcmp(NameStr(t->tgname), name) == 0) &&
                    OidIsValid(ours) && get_func_namespace(t->tgfoid) == ours &&
                    strcmp(get_func_name(t->tgfoid), "_immediate_replicated") != 0;
        }
        systable_endscan(scan);
        table_close(rel, AccessShareLock);
        return found;
    });
}

// ALTER TABLE's subcommands carry the object each affected (the event
// trigger runs with a pinned search_path, so names are not looked up again).
Effect of_alter_table(const CollectedCommand* cmd) {
    Effect e;
    const Oid target = cmd->d.alterTable.objectId;
    if (cmd->d.alterTable.classId != RelationRelationId) {
        return e;
    }
    ListCell* lc;
    foreach (lc, cmd->d.alterTable.subcmds) {
        const auto* collected = static_cast<const CollectedATSubcmd*>(lfirst(lc));
        const auto* sub = reinterpret_cast<const AlterTableCmd*>(collected->parsetree);
        if (sub == nullptr || !IsA(sub, AlterTableCmd)) {
            continue;
        }
        const Oid other = collected->address.classId == RelationRelationId
                              ? collected->address.objectId
                              : InvalidOid;
        switch (sub->subtype) {
            case AT_AttachPartition:
            case AT_DetachPartition:
            case AT_DetachPartitionFinalize:
                // The partition's rows join or leave the partitioned table
                // without a row-level change anyone could capture.
                {
                    const auto* pc = reinterpret_cast<const PartitionCmd*>(sub->def);
                    e.reason =
                        "partition " +
                        (pc != nullptr && pc->name != nullptr ? std::string(pc->name->relname)
                                                              : std::string("?")) +
                        (sub->subtype == AT_AttachPartition ? " attached to " : " detached from ") +
                        describe(RelationRelationId, target);
                    e.classid = RelationRelationId;
                    e.objects = {target};
                    return e;
                }
                e.classid = RelationRelationId;
                e.objects = {target};
                return e;
            case AT_EnableTrig:
            case AT_EnableReplicaTrig:
            case AT_DisableTrig:
            case AT_EnableTrigAll:
            case AT_DisableTrigAll:
            case AT_EnableTrigUser:
            case AT_DisableTrigUser:
                // Our capture, maintenance or write-note trigger no longer
                // fires for every write (ENABLE ALWAYS is how we install
                // them): writes made meanwhile reach no stream table, even
                // once it fires again, so its readers are rebuilt.
                if (!toggles_our_trigger(target, sub->name)) {
                    break;
                }
                e.reason =
                    "change capture of " + describe(RelationRelationId, target) + " was disabled";
                e.classid = RelationRelationId;
                e.objects = {target};
                return e;
            case AT_AddInherit:
            case AT_DropInherit:
                // The child's rows join or leave what a scan of the parent
                // reads (the address is the parent's).
                if (!OidIsValid(other)) {
                    break;
                }
                e.reason = describe(RelationRelationId, target) +
                           (sub->subtype == AT_AddInherit ? " now inherits from "
                                                          : " no longer inherits from ") +
                           describe(RelationRelationId, other);
                e.classid = RelationRelationId;
                e.objects = {other};
                return e;
            default:
                break;
        }
    }
    return e;
}

Effect of_simple(const CollectedCommand* cmd) {
    Effect e;
    const Node* tree = cmd->parsetree;
    const ObjectAddress& a = cmd->d.simple.address;
    if (tree == nullptr) {
        return e;
    }
    auto on = [&](const std::string& reason) {
        e.reason = reason;
        e.classid = a.classId;
        e.objects = {a.objectId};
    };
    switch (nodeTag(tree)) {
        case T_CreateFunctionStmt:
            if (reinterpret_cast<const CreateFunctionStmt*>(tree)->replace) {
                on(describe(a.classId, a.objectId) + " replaced");
            }
            break;
        case T_DefineStmt:  // CREATE OR REPLACE AGGREGATE
            if (reinterpret_cast<const DefineStmt*>(tree)->replace) {
                on(describe(a.classId, a.objectId) + " replaced");
            }
            break;
        case T_AlterFunctionStmt:  // volatility, strictness, SET ...
            on(describe(a.classId, a.objectId) + " altered");
            break;
        case T_ViewStmt:
            if (reinterpret_cast<const ViewStmt*>(tree)->replace) {
                on(describe(a.classId, a.objectId) + " replaced");
            }
            break;
        case T_AlterEnumStmt: {
            // Row identities encode enums by label: renamed, stored rows
            // would no longer match the values they came from.
            const auto* s = reinterpret_cast<const AlterEnumStmt*>(tree);
            if (s->oldVal != nullptr) {
                on("value " + std::string(s->oldVal) + " of " + describe(a.classId, a.objectId) +
                   " renamed to " + s->newVal);
            }
            break;
        }
        case T_RenameStmt: {
            const auto* s = reinterpret_cast<const RenameStmt*>(tree);
            if (s->renameType == OBJECT_TRIGGER || s->renameType == OBJECT_POLICY ||
                s->renameType == OBJECT_INDEX || s->renameType == OBJECT_TABCONSTRAINT ||
                s->renameType == OBJECT_DOMCONSTRAINT) {
                break;  // names no query uses
            }
            // The stored query text names it: deparsed again at reinit.
            if (s->renameType == OBJECT_COLUMN) {
                on("column " + std::string(s->subname) + " of " + describe(a.classId, a.objectId) +
                   " renamed to " + s->newname);
            } else if (s->relation != nullptr) {
                on(std::string(s->relation->relname) + " renamed to " +
                   describe(a.classId, a.objectId));
            } else {
                on(describe(a.classId, a.objectId) + " (renamed)");
            }
            break;
        }
        case T_AlterObjectSchemaStmt: {
            const auto* s = reinterpret_cast<const AlterObjectSchemaStmt*>(tree);
            on(describe(a.classId, a.objectId) + " moved to schema " + s->newschema);
            break;
        }
        case T_CreateStmt: {
            // A new inheritance child (not a partition: those get the
            // parent's row triggers) is read with its parent, uncaptured;
            // _mark_for_reinit finds the parents from the child.
            const auto* s = reinterpret_cast<const CreateStmt*>(tree);
            if (s->partbound == nullptr && s->inhRelations != NIL) {
                on(describe(a.classId, a.objectId) + " created as an inheritance child");
            }
            break;
        }
        default:
            break;
    }
    return e;
}

}  // namespace
}  // namespace pgt::pg

// (reason text, classid oid, objids oid[]), all NULL when the command
// changes no stream table's results.
Datum pgt_ddl_effect(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&]() -> Datum {
        auto* cmd = reinterpret_cast<CollectedCommand*>(PG_GETARG_POINTER(0));
        pgt::pg::Effect e;
        if (cmd->type == SCT_AlterTable) {
            e = pgt::pg::of_alter_table(cmd);
        } else if (cmd->type == SCT_Simple) {
            e = pgt::pg::of_simple(cmd);
        }
        return pgt::pg::pg_call([&] {
            TupleDesc desc;
            if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE) {
                elog(ERROR, "pgtrickle._ddl_effect must return a record");
            }
            desc = BlessTupleDesc(desc);
            Datum values[3] = {0, 0, 0};
            bool nulls[3] = {true, true, true};
            if (!e.reason.empty()) {
                std::vector<Datum> objs;
                for (Oid o : e.objects) {
                    objs.push_back(ObjectIdGetDatum(o));
                }
                values[0] = CStringGetTextDatum(e.reason.c_str());
                values[1] = ObjectIdGetDatum(e.classid);
                values[2] =
                    PointerGetDatum(construct_array(objs.data(), static_cast<int>(objs.size()),
                                                    OIDOID, sizeof(Oid), true, TYPALIGN_INT));
                nulls[0] = nulls[1] = nulls[2] = false;
            }
            return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
        });
    });
}
