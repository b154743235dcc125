// pgtrickle.notify_changes(channel, key column [, ...]): a row-level AFTER
// trigger that sends one NOTIFY per row event with the seed-004 payload built
// by src/core/notify (table, op, seq, key, old_key, changed columns).
// Invariant: an UPDATE that changed no stored datum returns before any JSON is
// built, and every payload sent is < 8000 bytes, so a write never fails for size.
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "core/notify/payload.hpp"
#include "core/sql/names.hpp"
#include "pg/notify/stream_notify.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/common/settings.hpp"
#include "pg/boundary/datum_equal.hpp"

extern "C" {
#include "postgres.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "commands/trigger.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

PG_FUNCTION_INFO_V1(pgt_notify_changes);
}

namespace pgt::pg {
namespace {

struct KeyColumn {
    AttrNumber attnum = InvalidAttrNumber;
    std::string name;
    FmgrInfo to_json{};  // the server's to_json, told the column's type
};

// What one trigger (on one table or partition) needs per row; rebuilt after
// any relcache or schema invalidation (renames, dropped or retyped columns).
struct NotifyPlan {
    bool valid = false;
    MemoryContext mcxt = nullptr;  // holds the to_json call expressions
    std::string channel;
    std::string schema_q, table_q;  // quote_identifier'd
    std::vector<KeyColumn> keys;
};

std::unordered_map<Oid, NotifyPlan> g_plans;  // by trigger OID
uint64 g_seq = 0;                             // per backend, every notification sent
bool g_callbacks = false;

void invalidate_all(Datum, Oid) {
    for (auto& entry : g_plans) {
        entry.second.valid = false;
    }
}
void invalidate_all_sys(Datum arg, int, uint32) {
    invalidate_all(arg, InvalidOid);
}

std::string trigger_hint(TriggerData* td) {
    std::string table = "my_table", name = "my_trigger";
    if (td != nullptr) {
        pg_call([&] {
            table = quote_qualified_identifier(
                get_namespace_name(RelationGetNamespace(td->tg_relation)),
                RelationGetRelationName(td->tg_relation));
            name = quote_identifier(td->tg_trigger->tgname);
        });
    }
    return "Create it as: CREATE TRIGGER " + name + " AFTER INSERT OR UPDATE OR DELETE ON " +
           table +
           " FOR EACH ROW EXECUTE FUNCTION pgtrickle.notify_changes('channel', 'key_column');";
}

TriggerData* check_protocol(FunctionCallInfo fcinfo) {
    if (!CALLED_AS_TRIGGER(fcinfo)) {
        throw pgt::Error("39P01", "notify_changes() was called outside a trigger", "",
                         trigger_hint(nullptr));
    }
    TriggerData* td = reinterpret_cast<TriggerData*>(fcinfo->context);
    if (!TRIGGER_FIRED_AFTER(td->tg_event) || !TRIGGER_FIRED_FOR_ROW(td->tg_event)) {
        throw pgt::Error("39P01", "notify_changes() must be fired AFTER a row change, FOR EACH ROW",
                         std::string("Trigger \"") + td->tg_trigger->tgname + "\" is not.",
                         trigger_hint(td));
    }
    return td;
}

void check_arguments(TriggerData* td) {
    const Trigger* tg = td->tg_trigger;
    if (tg->tgnargs < 2) {
        throw pgt::Error("22023", "notify_changes() needs a channel and at least one key column",
                         std::string("Trigger \"") + tg->tgname + "\" has " +
                             std::to_string(tg->tgnargs) + " argument(s).",
                         trigger_hint(td));
    }
    size_t len = std::strlen(tg->tgargs[0]);
    if (len == 0 || len >= NAMEDATALEN) {
        throw pgt::Error("22023", "notify_changes() channel must have 1 to 63 bytes",
                         "The channel of trigger \"" + std::string(tg->tgname) + "\" has " +
                             std::to_string(len) + " bytes.",
                         trigger_hint(td));
    }
}

KeyColumn resolve_key(TriggerData* td, const char* name, MemoryContext mcxt) {
    TupleDesc desc = RelationGetDescr(td->tg_relation);
    KeyColumn k;
    k.name = name;
    for (int i = 0; i < desc->natts; i++) {
        Form_pg_attribute att = TupleDescAttr(desc, i);
        if (!att->attisdropped && k.name == NameStr(att->attname)) {
            k.attnum = att->attnum;
            FmgrInfo* f = &k.to_json;
            pg_call([&] {
                MemoryContext old = MemoryContextSwitchTo(mcxt);
                fmgr_info_cxt(F_TO_JSON, f, mcxt);
                Node* arg = reinterpret_cast<Node*>(
                    makeNullConst(att->atttypid, att->atttypmod, att->attcollation));
                f->fn_expr = reinterpret_cast<Node*>(
                    makeFuncExpr(F_TO_JSON, JSONOID, list_make1(arg), InvalidOid, InvalidOid,
                                 COERCE_EXPLICIT_CALL));
                MemoryContextSwitchTo(old);
            });
            return k;
        }
    }
    std::string table;
    pg_call([&] {
        table =
            quote_qualified_identifier(get_namespace_name(RelationGetNamespace(td->tg_relation)),
                                       RelationGetRelationName(td->tg_relation));
    });
    throw pgt::Error(
        "42703",
        "key column \"" + k.name + "\" of notify_changes() does not exist in table " + table, "",
        trigger_hint(td));
}

void build_plan(TriggerData* td, NotifyPlan& plan) {
    check_arguments(td);
    const Trigger* tg = td->tg_trigger;
    pg_call([&] {
        if (plan.mcxt == nullptr) {
            plan.mcxt = AllocSetContextCreate(CacheMemoryContext, "pg_trickle notify plan",
                                              ALLOCSET_SMALL_SIZES);
        } else {
            MemoryContextReset(plan.mcxt);
        }
    });
    plan.keys.clear();
    plan.channel = tg->tgargs[0];
    for (int i = 1; i < tg->tgnargs; i++) {
        for (int j = 1; j < i; j++) {
            if (std::strcmp(tg->tgargs[i], tg->tgargs[j]) == 0) {
                throw pgt::Error("22023",
                                 std::string("key column \"") + tg->tgargs[i] +
                                     "\" is listed twice in notify_changes()",
                                 "", trigger_hint(td));
            }
        }
        plan.keys.push_back(resolve_key(td, tg->tgargs[i], plan.mcxt));
    }
    pg_call([&] {
        plan.schema_q = quote_identifier(get_namespace_name(RelationGetNamespace(td->tg_relation)));
        plan.table_q = quote_identifier(RelationGetRelationName(td->tg_relation));
    });
    plan.valid = true;
}

NotifyPlan& plan_for(TriggerData* td) {
    if (!g_callbacks) {
        pg_call([] {
            CacheRegisterRelcacheCallback(invalidate_all, (Datum)0);
            CacheRegisterSyscacheCallback(NAMESPACEOID, invalidate_all_sys, (Datum)0);
        });
        g_callbacks = true;
    }
    NotifyPlan& plan = g_plans[td->tg_trigger->tgoid];
    if (!plan.valid) {
        build_plan(td, plan);
    }
    return plan;
}

bool same_datum(TupleTableSlot* a, TupleTableSlot* b, int i, Form_pg_attribute att) {
    if (a->tts_isnull[i] || b->tts_isnull[i]) {
        return a->tts_isnull[i] == b->tts_isnull[i];
    }
    // Compares the stored bytes (an unchanged TOAST pointer compares equal
    // without being fetched); equal values stored differently count as changed.
    return stored_datums_equal(a->tts_values[i], b->tts_values[i], att->attbyval, att->attlen);
}

// Names of the columns whose stored datums differ; key_changed is set when a
// key column is among them.
std::vector<std::string_view> changed_columns(TriggerData* td, const NotifyPlan& plan,
                                              bool& key_changed) {
    TupleTableSlot* o = td->tg_trigslot;
    TupleTableSlot* n = td->tg_newslot;
    TupleDesc desc = RelationGetDescr(td->tg_relation);
    pg_call([&] {
        slot_getallattrs(o);
        slot_getallattrs(n);
    });
    std::vector<std::string_view> changed;
    for (int i = 0; i < desc->natts; i++) {
        Form_pg_attribute att = TupleDescAttr(desc, i);
        // A stream table's hidden state (__pgt_count, ...) is not listed.
        if (!att->attisdropped &&
            std::strncmp(NameStr(att->attname), sql::kReservedPrefix,
                         std::strlen(sql::kReservedPrefix)) != 0 &&
            !same_datum(o, n, i, att)) {
            changed.emplace_back(NameStr(att->attname));
        }
    }
    key_changed = false;
    for (const KeyColumn& k : plan.keys) {
        key_changed =
            key_changed || !same_datum(o, n, k.attnum - 1, TupleDescAttr(desc, k.attnum - 1));
    }
    return changed;
}

// Renders every key value of slot with to_json; texts are appended to store
// (reserved beforehand so the views stay valid).
void render_key(const NotifyPlan& plan, TupleTableSlot* slot, std::vector<std::string>& store,
                std::vector<std::optional<std::string_view>>& out) {
    for (const KeyColumn& k : plan.keys) {
        bool isnull = false;
        Datum v = slot_getattr(slot, k.attnum, &isnull);
        if (isnull) {
            out.emplace_back(std::nullopt);
            continue;
        }
        text* json =
            DatumGetTextPP(FunctionCall1Coll(const_cast<FmgrInfo*>(&k.to_json), InvalidOid, v));
        store.emplace_back(VARDATA_ANY(json), VARSIZE_ANY_EXHDR(json));
        out.emplace_back(store.back());
    }
}

Datum notify_changes(FunctionCallInfo fcinfo) {
    TriggerData* td = check_protocol(fcinfo);
    NotifyPlan& plan = plan_for(td);
    notify::ChangeEvent ev;
    std::vector<std::string_view> changed;
    if (TRIGGER_FIRED_BY_UPDATE(td->tg_event)) {
        changed = changed_columns(td, plan, ev.key_changed);
        if (changed.empty() && !ev.key_changed) {
            return PointerGetDatum(nullptr);  // nothing shown changed: no JSON, no NOTIFY
        }
        ev.op = notify::Op::kUpdate;
    } else {
        ev.op = TRIGGER_FIRED_BY_INSERT(td->tg_event) ? notify::Op::kInsert : notify::Op::kDelete;
    }
    // INSERT: the new row; DELETE: the old row (both in tg_trigslot).
    TupleTableSlot* keyed = ev.op == notify::Op::kUpdate ? td->tg_newslot : td->tg_trigslot;
    std::vector<std::string> texts;
    texts.reserve(2 * plan.keys.size());
    ev.minimal = g_notify_minimal;
    if (!ev.minimal) {
        pg_call([&] {
            render_key(plan, keyed, texts, ev.key_json);
            if (ev.key_changed) {
                render_key(plan, td->tg_trigslot, texts, ev.old_key_json);
            }
        });
    }
    ev.schema = plan.schema_q;
    ev.table = plan.table_q;
    ev.names_quoted = true;
    ev.seq = next_notify_seq();
    if (!ev.minimal) {
        for (const KeyColumn& k : plan.keys) {
            ev.key_names.emplace_back(k.name);
        }
        ev.changed_columns = std::move(changed);
    }
    std::string payload = notify::build_payload(ev);
    pg_call([&] { Async_Notify(plan.channel.c_str(), payload.c_str()); });
    return PointerGetDatum(nullptr);
}

}  // namespace

uint64_t next_notify_seq() {
    return ++g_seq;
}

}  // namespace pgt::pg

Datum pgt_notify_changes(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::notify_changes(fcinfo); });
}
