// IMMEDIATE maintenance (see immediate.hpp for the picture).
// Invariant: a statement's change is applied exactly once, by the program
// of its event, or folded into one recompute; nothing is written to the
// catalog on the per-statement path.
#include "pg/refresh/immediate.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/diff/program.hpp"
#include "core/diff/scan_delta.hpp"
#include "pg/boundary/as_role.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"
#include "pg/catalog/catalog_schema.hpp"
#include "pg/cdc/change_buffer.hpp"
#include "pg/common/quote.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/guard/storage_guard.hpp"
#include "pg/refresh/full_refresh.hpp"
#include "pg/refresh/programs.hpp"

extern "C" {
#include "postgres.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(pgt_immediate_before);
PG_FUNCTION_INFO_V1(pgt_immediate_after);
PG_FUNCTION_INFO_V1(pgt_immediate_counters);
Datum pgt_immediate_before(PG_FUNCTION_ARGS);
Datum pgt_immediate_after(PG_FUNCTION_ARGS);
Datum pgt_immediate_counters(PG_FUNCTION_ARGS);
}

namespace pgt::pg {

namespace {

const std::string kPrograms = std::string(pgt::catalog::kSchema) + "." + pgt::catalog::kImmediate;

std::string trigger_prefix(int64_t pgt_id) {
    return "pgt_immediate_" + std::to_string(pgt_id) + "_";
}

// ---- what a backend keeps between statements ------------------------------

// One trigger's program, loaded on its first firing in this backend.
struct Program {
    int64_t pgt_id = 0;
    Oid st_relid = InvalidOid;
    Oid source_relid = InvalidOid;
    std::string main;        // "" for TRUNCATE: always a recompute
    bool shared = false;     // writers may apply concurrently (shared lock)
    bool recompute = false;  // the stream table awaits reinitialisation
};
std::unordered_map<Oid, Program> g_programs;  // by trigger OID

// A statement on a source whose AFTER trigger has not fired yet.
struct Pending {
    int64_t pgt_id;
    CommandId cid;  // the statement's command: events of one statement share it
    int nest;       // transaction nesting level (a subtransaction abort drops it)
};
std::vector<Pending> g_pending;
std::unordered_set<int64_t> g_dirty;  // skipped while nested: recompute at the end

struct Counters {
    int64_t incremental = 0;
    int64_t recomputed = 0;
};
std::unordered_map<int64_t, Counters> g_counters;

void on_xact(XactEvent event, void*) {
    if (event == XACT_EVENT_ABORT || event == XACT_EVENT_COMMIT ||
        event == XACT_EVENT_PARALLEL_ABORT || event == XACT_EVENT_PREPARE) {
        g_pending.clear();
        g_dirty.clear();
    }
}

void on_subxact(SubXactEvent event, SubTransactionId, SubTransactionId, void*) {
    if (event != SUBXACT_EVENT_ABORT_SUB) {
        return;
    }
    const int level = GetCurrentTransactionNestLevel();
    std::erase_if(g_pending, [&](const Pending& p) { return p.nest >= level; });
    std::erase_if(g_dirty, [&](int64_t id) {
        return std::none_of(g_pending.begin(), g_pending.end(),
                            [&](const Pending& p) { return p.pgt_id == id; });
    });
}

// DDL on a source or a stream table (and ALTER ... of the catalog) sends
// a relcache invalidation: programs are read again, with reinit_reason.
void on_relcache(Datum, Oid relid) {
    if (!OidIsValid(relid)) {
        g_programs.clear();
        return;
    }
    std::erase_if(g_programs, [&](const auto& e) {
        return e.second.source_relid == relid || e.second.st_relid == relid;
    });
}

void register_callbacks() {
    static bool done = false;
    if (!done) {
        pg_call([] {
            RegisterXactCallback(on_xact, nullptr);
            RegisterSubXactCallback(on_subxact, nullptr);
            CacheRegisterRelcacheCallback(on_relcache, 0);
        });
        done = true;
    }
}

// ---- installing ------------------------------------------------------------

char event_code(int which) {
    return which == 0 ? 'I' : which == 1 ? 'U' : 'D';
}

void create_triggers(Spi& spi, int64_t pgt_id, Oid source_relid) {
    const std::string src = quoted_relation_name(source_relid);
    const std::string args = "(" + sql_literal(std::to_string(pgt_id)) + ", " +
                             sql_literal(catalog::instance(spi)) + ")";
    const std::string prefix = trigger_prefix(pgt_id);
    const std::string old_t = std::string("OLD TABLE AS ") + diff::kTransitionOld;
    const std::string new_t = std::string("NEW TABLE AS ") + diff::kTransitionNew;
    struct T {
        std::string suffix, timing;
    };
    const std::vector<T> triggers{
        {"before", "BEFORE INSERT OR UPDATE OR DELETE"},
        {"ins", "AFTER INSERT ON " + src + " REFERENCING " + new_t},
        {"upd", "AFTER UPDATE ON " + src + " REFERENCING " + old_t + " " + new_t},
        {"del", "AFTER DELETE ON " + src + " REFERENCING " + old_t},
        {"trunc", "AFTER TRUNCATE"},
    };
    for (const T& t : triggers) {
        const bool has_on = t.timing.find(" ON ") != std::string::npos;
        const char* fn = t.suffix == "before" ? "_immediate_before" : "_immediate_after";
        catalog::exec_as_owner(spi, "CREATE TRIGGER " + quote_ident(prefix + t.suffix) + " " +
                                        t.timing + (has_on ? "" : " ON " + src) +
                                        " FOR EACH STATEMENT EXECUTE FUNCTION pgtrickle." + fn +
                                        args);
        // Also for changes a logical replication apply worker writes.
        catalog::exec_as_owner(
            spi, "ALTER TABLE " + src + " ENABLE ALWAYS TRIGGER " + quote_ident(prefix + t.suffix));
    }
}

}  // namespace

std::string immediate_blocker(const AnalyzedQuery& q) {
    if (!q.differential_blocker.empty()) {
        return q.differential_blocker;
    }
    if (q.region.present || q.join.present) {
        return "a query over more than one table";
    }
    const char kind = get_rel_relkind(q.scan.source_relid);
    if (kind == RELKIND_PARTITIONED_TABLE || has_subclass(q.scan.source_relid)) {
        return "a query over a table with partitions or inheritance children (" +
               relation_display_name(q.scan.source_relid) +
               "): their own statements would not reach it";
    }
    return "";
}

void drop_immediate(Spi& spi, int64_t pgt_id) {
    SpiRows triggers = spi.query(
        "SELECT pg_catalog.quote_ident(t.tgname), t.tgrelid, t.tgname::pg_catalog.text "
        "FROM pg_catalog.pg_trigger t WHERE t.tgname OPERATOR(pg_catalog.~~) $1",
        {text_param(trigger_prefix(pgt_id) + "%")});
    // Programs first: the sql_drop trigger refuses to drop the trigger of
    // a stream table that still has them, and drops the others of one
    // that has none (so each is looked for first).
    catalog::exec_as_owner(spi,
                           "DELETE FROM " + kPrograms + " WHERE pgt_id OPERATOR(pg_catalog.=) $1",
                           {int8_param(pgt_id)});
    for (const auto& row : triggers.rows) {
        const bool there =
            spi.scalar(
                   "SELECT 1 FROM pg_catalog.pg_trigger t WHERE t.tgname "
                   "OPERATOR(pg_catalog.=) $1 AND t.tgrelid OPERATOR(pg_catalog.=) $2",
                   {text_param(*row.at(2)), oid_param(std::stoul(*row.at(1)))})
                .has_value();
        if (there) {
            catalog::exec_as_owner(
                spi, "DROP TRIGGER " + *row.at(0) + " ON " +
                         quoted_relation_name(static_cast<Oid>(std::stoul(*row.at(1)))));
        }
    }
}

void prepare_immediate(Spi& spi, catalog::StreamTableRow& st, const AnalyzedQuery& q) {
    drop_immediate(spi, st.pgt_id);
    const Oid relid = q.scan.source_relid;
    ir::ScanFilterProject scan = scan_ir(spi, q, relid, "");
    scan.windowed = false;
    const std::vector<std::string> types = buffer_column_types(relid, q.scan.referenced_attnums);
    for (int which = 0; which < 3; which++) {
        scan.buffer = diff::transition_rows(scan, types, which != 0, which != 2);
        const std::string program = one_table_program(spi, st, q, scan);
        catalog::exec_as_owner(
            spi,
            "INSERT INTO " + kPrograms +
                " (pgt_id, source_relid, event, program) VALUES ($1, $2, $3, $4)",
            {int8_param(st.pgt_id), oid_param(relid), text_param(std::string(1, event_code(which))),
             text_param(program)});
        if (which == 1) {
            st.delta_sql = program;
        }
    }
    create_triggers(spi, st.pgt_id, relid);
}

namespace {

// ---- firing ----------------------------------------------------------------

TriggerData* immediate_trigger(FunctionCallInfo fcinfo) {
    if (!CALLED_AS_TRIGGER(fcinfo)) {
        throw pgt::Error("39P01", "IMMEDIATE maintenance function called outside a trigger");
    }
    TriggerData* td = reinterpret_cast<TriggerData*>(fcinfo->context);
    if (TRIGGER_FIRED_FOR_ROW(td->tg_event) || td->tg_trigger->tgnargs != 2) {
        throw pgt::Error("39P01", "IMMEDIATE trigger defined with the wrong level or arguments", "",
                         "pg_trickle installs its IMMEDIATE triggers itself.");
    }
    return td;
}

// The trigger's program: kept, or read now (nullptr: the trigger belongs to
// no stream table of this database, e.g. restored from another one).
const Program* program_of(TriggerData* td) {
    const Oid tgoid = td->tg_trigger->tgoid;
    auto found = g_programs.find(tgoid);
    if (found != g_programs.end()) {
        return &found->second;
    }
    const int64_t pgt_id = std::stoll(td->tg_trigger->tgargs[0]);
    Spi spi = Spi::connect();
    std::optional<std::string> here = spi.scalar("SELECT id FROM pgtrickle.pgt_instance");
    std::optional<catalog::StreamTableRow> st;
    if (here && *here == td->tg_trigger->tgargs[1]) {
        st = catalog::find_by_id(spi, pgt_id);
    }
    if (!st || st->refresh_mode != RefreshMode::kImmediate) {
        spi.close();
        return nullptr;
    }
    Program p;
    p.pgt_id = pgt_id;
    p.st_relid = st->relid;
    p.source_relid = RelationGetRelid(td->tg_relation);
    p.recompute = st->reinit_reason.has_value();
    p.shared =
        st->delta_strategy.value_or("") == "scan" && st->identity_domain == rowid::Domain::kScanKey;
    char event = TRIGGER_FIRED_BY_INSERT(td->tg_event)   ? 'I'
                 : TRIGGER_FIRED_BY_UPDATE(td->tg_event) ? 'U'
                 : TRIGGER_FIRED_BY_DELETE(td->tg_event) ? 'D'
                                                         : 'T';
    if (event != 'T') {
        SpiRows r = catalog::query_as_owner(
            spi,
            "SELECT program, source_relid FROM " + kPrograms +
                " WHERE pgt_id OPERATOR(pg_catalog.=) $1 AND event OPERATOR(pg_catalog.=) $2",
            {int8_param(pgt_id), text_param(std::string(1, event))});
        if (r.rows.empty() || static_cast<Oid>(std::stoul(*r.rows[0].at(1))) != p.source_relid) {
            spi.close();
            throw pgt::Error("XX000",
                             "IMMEDIATE program of stream table " +
                                 relation_display_name(p.st_relid) + " missing",
                             "", "Run pgtrickle.repair_stream_table on it.");
        }
        p.main = diff::decode_program(*r.rows[0].at(0)).main;
    }
    spi.close();
    return &g_programs.emplace(tgoid, std::move(p)).first->second;
}

void lock_for(Spi& spi, const Program& p, bool exclusive) {
    spi.exec(std::string("SELECT pg_catalog.") +
                 (exclusive ? "pg_advisory_xact_lock" : "pg_advisory_xact_lock_shared") +
                 "($1::pg_catalog.int4, $2::pg_catalog.int4)",
             {int8_param(kImmediateLockClass), int8_param(p.pgt_id)});
}

// The stream table recomputed in place (history: IMMEDIATE, why).
void recompute_now(const Program& p, const std::string& why) {
    Spi spi = Spi::connect();
    std::optional<catalog::StreamTableRow> st = catalog::find_by_id(spi, p.pgt_id);
    if (st) {
        full_refresh(spi, *st, "IMMEDIATE", why);  // (under both locks, in their order)
        g_counters[p.pgt_id].recomputed++;
    }
    spi.close();
}

// The statement's change, applied by the event's program over its
// transition tables, as the stream table's owner.
void apply_change(TriggerData* td, const Program& p) {
    Spi spi = Spi::connect();
    as_role_restricted(relation_owner(p.st_relid), [&] {
        lock_for(spi, p, !p.shared);
        pin_setting("jit", "off");
        spi.register_trigger_data(td);
        RefreshWriteScope writing(p.st_relid);
        (void)spi.query_kept(p.main);
    });
    spi.close();
    g_counters[p.pgt_id].incremental++;
}

Datum immediate_before(FunctionCallInfo fcinfo) {
    TriggerData* td = immediate_trigger(fcinfo);
    register_callbacks();
    g_pending.push_back({std::stoll(td->tg_trigger->tgargs[0]), GetCurrentCommandId(false),
                         GetCurrentTransactionNestLevel()});
    return PointerGetDatum(nullptr);
}

Datum immediate_after(FunctionCallInfo fcinfo) {
    TriggerData* td = immediate_trigger(fcinfo);
    register_callbacks();
    const int64_t pgt_id = std::stoll(td->tg_trigger->tgargs[0]);
    const bool truncate = TRIGGER_FIRED_BY_TRUNCATE(td->tg_event);
    // This statement's pending entry (the latest for the stream table: an
    // inner statement ends before the statement whose trigger started it).
    bool nested = false;
    if (!truncate) {
        auto last = std::find_if(g_pending.rbegin(), g_pending.rend(),
                                 [&](const Pending& e) { return e.pgt_id == pgt_id; });
        if (last != g_pending.rend()) {
            const CommandId cid = last->cid;
            g_pending.erase(std::next(last).base());
            // Another statement on the source is still running (its rows
            // are written, its change not applied): a delta now would be
            // taken against a state no program expects. Events of this same
            // statement (ON CONFLICT's INSERT and UPDATE) touch other rows.
            nested = std::any_of(g_pending.begin(), g_pending.end(), [&](const Pending& e) {
                return e.pgt_id == pgt_id && e.cid != cid;
            });
        }
    } else {
        nested = std::any_of(g_pending.begin(), g_pending.end(),
                             [&](const Pending& e) { return e.pgt_id == pgt_id; });
    }
    const Program* p = program_of(td);
    if (p == nullptr) {
        return PointerGetDatum(nullptr);
    }
    if (nested) {
        g_dirty.insert(pgt_id);
        return PointerGetDatum(nullptr);
    }
    const bool still_pending = std::any_of(g_pending.begin(), g_pending.end(),
                                           [&](const Pending& e) { return e.pgt_id == pgt_id; });
    if (g_dirty.count(pgt_id) != 0 && !still_pending) {
        g_dirty.erase(pgt_id);
        recompute_now(*p, "a statement on " + relation_display_name(p->source_relid) +
                              " ran inside another one: recomputed");
    } else if (truncate) {
        recompute_now(
            *p, "source " + relation_display_name(p->source_relid) + " was truncated: recomputed");
    } else if (p->recompute) {
        recompute_now(*p, "awaiting reinitialisation: recomputed");
    } else {
        apply_change(td, *p);
    }
    return PointerGetDatum(nullptr);
}

Datum immediate_counters(FunctionCallInfo fcinfo) {
    const std::string name = text_to_cstring(PG_GETARG_TEXT_PP(0));
    Spi spi = Spi::connect();
    std::optional<std::string> id =
        spi.scalar("SELECT pgtrickle._stream_table_id($1)", {text_param(name)});
    spi.close();
    const Counters c = g_counters[std::stoll(id.value())];
    TupleDesc desc = nullptr;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE) {
        throw pgt::Error("XX000", "_immediate_counters must return a row");
    }
    Datum values[2] = {Int64GetDatum(c.incremental), Int64GetDatum(c.recomputed)};
    bool nulls[2] = {false, false};
    return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls));
}

}  // namespace
}  // namespace pgt::pg

Datum pgt_immediate_before(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::immediate_before(fcinfo); });
}

Datum pgt_immediate_after(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::immediate_after(fcinfo); });
}

Datum pgt_immediate_counters(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::immediate_counters(fcinfo); });
}
