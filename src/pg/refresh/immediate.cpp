// IMMEDIATE maintenance as statements fire (see immediate.hpp for the
// picture; installing it is immediate_install.cpp).
// Invariant: a statement's change is applied exactly once, by the program
// of its event, or folded into one recompute; nothing is written to the
// catalog on the per-statement path.
#include "pg/refresh/immediate.hpp"
#include "pg/refresh/immediate_parts.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/sql/quote.hpp"

#include "core/diff/aggregate.hpp"
#include "core/diff/program.hpp"
#include "core/diff/scan_delta.hpp"
#include "core/ir/tree.hpp"
#include "pg/api/names.hpp"
#include "pg/boundary/as_role.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"
#include "pg/catalog/catalog_schema.hpp"
#include "pg/cdc/change_buffer.hpp"
#include "pg/common/quote.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/guard/storage_guard.hpp"
#include "pg/refresh/query_settings.hpp"
#include "pg/refresh/full_refresh.hpp"
#include "pg/refresh/locks.hpp"
#include "pg/refresh/sole_statement.hpp"
#include "pg/refresh/programs.hpp"
#include "pg/refresh/storage.hpp"
#include "pg/common/settings.hpp"
#include "pg/security/rights.hpp"

extern "C" {
#include "postgres.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/rel.h"
#include "utils/tuplestore.h"
#include "utils/datum.h"
#include "nodes/bitmapset.h"
#include "access/sysattr.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "replication/logicalworker.h"

PG_FUNCTION_INFO_V1(pgt_immediate_before);
PG_FUNCTION_INFO_V1(pgt_immediate_after);
PG_FUNCTION_INFO_V1(pgt_immediate_replicated);
PG_FUNCTION_INFO_V1(pgt_immediate_counters);
Datum pgt_immediate_before(PG_FUNCTION_ARGS);
Datum pgt_immediate_after(PG_FUNCTION_ARGS);
Datum pgt_immediate_replicated(PG_FUNCTION_ARGS);
Datum pgt_immediate_counters(PG_FUNCTION_ARGS);
}

namespace pgt::pg {

namespace {

using immediate::event_tables;
using immediate::kEvents;
using immediate::kPrograms;

// ---- what a backend keeps between statements ------------------------------

// A stream table's programs, loaded on a trigger's first firing in this
// backend.
struct Program {
    int64_t pgt_id = 0;
    Oid st_relid = InvalidOid;
    // The source the trigger's table stands for: that table, or the
    // partitioned table of the query it is a partition of.
    Oid source_relid = InvalidOid;
    Oid fired_relid = InvalidOid;  // the trigger's table
    // Several tables (a join): one program for every event, over each
    // source position's transition relations; the positions' tables.
    bool multi = false;
    std::vector<Oid> sources;
    catalog::StreamTableRow row;  // what apply_transition_program runs
    std::string main[4];          // per kEvents
    std::string lock_sql[4];
    char locking = 't';             // pgt_immediate.locking: 'r', 'i' (lock_sql), 't' or 'k'
    Oid shared_relid = InvalidOid;  // 'k': the table whose writers share the lock
    bool recompute = false;         // the stream table awaits reinitialisation
    std::vector<int> reads;         // the source's columns the query reads (0: the whole row)
    // A join whose identity is key_relid's key: the statement for a change
    // that wrote only that table (diff::DeltaProgram::key_rows; "" none).
    std::string key_rows;
    Oid key_relid = InvalidOid;
};
// By trigger OID. Shared: a relcache invalidation (an autoanalyze of the
// source, a DDL) can arrive while a statement's change is being applied,
// at any lock the apply takes, and drops the entry; the apply keeps its
// own reference to the program it started with.
std::unordered_map<Oid, std::shared_ptr<const Program>> g_programs;

// A statement on a source whose AFTER trigger has not fired yet.
//
// PostgreSQL fires one BEFORE and one AFTER STATEMENT trigger per table,
// event and query level whose transition tables are still open. A foreign
// key's action (ON UPDATE/DELETE CASCADE, SET NULL, SET DEFAULT) runs its
// statement from an AFTER ROW trigger of the statement that changed the
// keys, in that statement's query level: written to a table and event
// whose transition tables are open, its rows join them and it fires no
// statement trigger; otherwise it fires its own BEFORE trigger at once,
// and its AFTER trigger after the writing statement's.
//
//   UPDATE s SET a = a + 10          BEFORE UPDATE s   (pending: U s)
//     (2,1) -> (12,1)
//     RI action: UPDATE s SET b = 11 WHERE b = 1    no statement trigger
//     (12,1) -> (12,11)
//   AFTER UPDATE s: OLD (2,1) (12,1)   NEW (12,1) (12,11)
//
// Deleted or inserted rows so joined are still one net change (a row is
// deleted or inserted once); updated ones need not be: a row updated twice
// leaves its middle image in OLD TABLE and NEW TABLE, which no program
// takes as a change. An UPDATE that changes rows of a table while an
// UPDATE on it is pending since before it started (note_writes) marks that
// one rewritten: its stream tables are recomputed instead.
//
// A statement ending while another one on a source of its stream table is
// pending is nested when that one started first (it encloses this one: a
// user trigger's statement, or this is a foreign key action whose AFTER
// trigger a later action's rows moved behind) or, started later (an action
// of this statement on another table or event), has changed rows: its
// change waits for one recompute when the outermost statement ends. An
// action that changed nothing (ON DELETE SET NULL of a key nothing
// references) leaves this statement's change to be applied.
struct Pending {
    int64_t pgt_id;
    Oid relid;               // the table whose trigger fired
    char event;              // I U D
    CommandId cid;           // the statement's command: events of one statement share it
    int nest;                // transaction nesting level (a subtransaction abort drops it)
    uint64_t seq;            // order of the BEFORE triggers (g_pending_seq)
    bool wrote = false;      // a statement has changed rows of relid since
    bool rewritten = false;  // an UPDATE started after it changed rows of relid
};
uint64_t g_pending_seq = 0;
std::vector<Pending> g_pending;
// Stream tables whose change is not applied (a nested or rewritten
// statement): recomputed when the outermost statement on them ends, why.
std::unordered_map<int64_t, std::string> g_dirty;

// An event of a statement whose other events have not fired yet: its
// transition tables (alive until the statement's last AFTER trigger has
// fired) wait to be applied with theirs as one change. Applied one by one,
// an event would find the others' rows in the table already (a MIN that
// goes rescans its group, which then holds rows a later event adds again).
struct Stashed {
    int64_t pgt_id;
    CommandId cid;
    Oid relid;   // the table written
    char event;  // I U D
    Tuplestorestate* olds;
    Tuplestorestate* news;
    TupleDesc desc;
    int nest;  // transaction nesting level (a subtransaction abort drops it)
};
std::vector<Stashed> g_stash;

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
        g_stash.clear();
    }
}

void on_subxact(SubXactEvent event, SubTransactionId, SubTransactionId, void*) {
    if (event != SUBXACT_EVENT_ABORT_SUB) {
        return;
    }
    const int level = GetCurrentTransactionNestLevel();
    std::erase_if(g_pending, [&](const Pending& p) { return p.nest >= level; });
    std::erase_if(g_stash, [&](const Stashed& e) { return e.nest >= level; });
    std::erase_if(g_dirty, [&](const auto& dirty) {
        return std::none_of(g_pending.begin(), g_pending.end(),
                            [&](const Pending& p) { return p.pgt_id == dirty.first; });
    });
}

// A statement that ran while statements on sources were pending, as its
// executor run ends: `rows` changed, the BEFORE triggers up to `before`
// had fired when it started. Conservative (a statement of a user trigger's
// fires triggers of its own and nests anyway): a modifying WITH counts as
// changing rows. Runs inside the executor hook: nothing here can fail.
void note_writes(const QueryDesc* qd, uint64_t before, uint64 rows) {
    const PlannedStmt* stmt = qd->plannedstmt;
    if (g_pending.empty() || stmt == nullptr ||
        (stmt->commandType == CMD_SELECT && !stmt->hasModifyingCTE) ||
        (rows == 0 && !stmt->hasModifyingCTE)) {
        return;
    }
    const bool updates =
        stmt->commandType == CMD_UPDATE || stmt->commandType == CMD_MERGE || stmt->hasModifyingCTE;
    ListCell* lc;
    foreach (lc, stmt->resultRelations) {
        const Oid relid = rt_fetch(lfirst_int(lc), stmt->rtable)->relid;
        for (Pending& p : g_pending) {
            if (p.relid == relid) {
                p.wrote = true;
                p.rewritten = p.rewritten || (updates && p.event == 'U' && p.seq <= before);
            }
        }
    }
}

ExecutorRun_hook_type g_prev_executor_run = nullptr;

// Only trivially destructible locals: an error longjmps through here.
void immediate_executor_run(QueryDesc* qd, ScanDirection direction, uint64 count,
                            bool execute_once) {
    const uint64_t before = g_pending_seq;
    const uint64 processed = qd->estate != nullptr ? qd->estate->es_processed : 0;
    if (g_prev_executor_run != nullptr) {
        g_prev_executor_run(qd, direction, count, execute_once);
    } else {
        standard_ExecutorRun(qd, direction, count, execute_once);
    }
    if (qd->estate != nullptr) {
        note_writes(qd, before, qd->estate->es_processed - processed);
    }
}

// DDL on a source or a stream table (and ALTER ... of the catalog) sends
// a relcache invalidation: programs are read again, with reinit_reason.
void on_relcache(Datum, Oid relid) {
    if (!OidIsValid(relid)) {
        g_programs.clear();
        return;
    }
    std::erase_if(g_programs, [&](const auto& e) {
        const std::vector<Oid>& s = e.second->sources;
        return e.second->source_relid == relid || e.second->fired_relid == relid ||
               e.second->st_relid == relid || std::find(s.begin(), s.end(), relid) != s.end();
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

}  // namespace

namespace {

// ---- firing ----------------------------------------------------------------

// The firing trigger, checked to be one of ours as installed: a statement
// trigger, or (row) the replication row trigger.
TriggerData* immediate_trigger(FunctionCallInfo fcinfo, bool row = false) {
    if (!CALLED_AS_TRIGGER(fcinfo)) {
        throw pgt::Error("39P01", "IMMEDIATE maintenance function called outside a trigger");
    }
    TriggerData* td = reinterpret_cast<TriggerData*>(fcinfo->context);
    if ((TRIGGER_FIRED_FOR_ROW(td->tg_event) != 0) != row || td->tg_trigger->tgnargs != 2) {
        throw pgt::Error("39P01", "IMMEDIATE trigger defined with the wrong level or arguments", "",
                         "pg_trickle installs its IMMEDIATE triggers itself.");
    }
    return td;
}

// An oid[] column as text ({16384,16390}).
std::vector<Oid> oid_array(const std::string& text) {
    std::vector<Oid> out;
    for (std::size_t pos = 1; pos < text.size();) {
        const std::size_t end = text.find_first_of(",}", pos);
        out.push_back(static_cast<Oid>(std::stoul(text.substr(pos, end - pos))));
        pos = end + 1;
    }
    return out;
}

// The source of a stream table whose programs are `programs` (rows of
// pgtrickle.pgt_immediate: source_relid third, sources sixth) that a
// trigger on `fired` stands for: that table, or the nearest partitioned
// table above it that is one.
Oid source_fired_for(Oid fired, const SpiRows& programs) {
    std::vector<Oid> sources;
    for (const auto& row : programs.rows) {
        const Oid relid = static_cast<Oid>(std::stoul(*row.at(2)));
        if (OidIsValid(relid)) {
            sources.push_back(relid);
        } else if (row.at(5)) {
            const std::vector<Oid> listed = oid_array(*row.at(5));
            sources.insert(sources.end(), listed.begin(), listed.end());
        }
    }
    std::vector<Oid> lineage{fired};
    List* up = pg_call(
        [&] { return get_rel_relispartition(fired) ? get_partition_ancestors(fired) : NIL; });
    ListCell* lc;
    foreach (lc, up) {
        lineage.push_back(lfirst_oid(lc));
    }
    for (Oid relid : lineage) {
        if (std::find(sources.begin(), sources.end(), relid) != sources.end()) {
            return relid;
        }
    }
    return fired;
}

// Column `attnum` of `source` in `fired`, a partition below it (its
// columns may be in another order), by name; 0 (the whole row) stays 0.
int attnum_in(Oid fired, Oid source, int attnum) {
    if (fired == source || attnum == 0) {
        return attnum;
    }
    return pg_call([&] {
        const char* name = get_attname(source, static_cast<AttrNumber>(attnum), false);
        return static_cast<int>(get_attnum(fired, name));
    });
}

// Whose trigger td is: this database's (its instance argument is this
// database's pgt_instance, not that of a database it was restored from),
// and then its stream table's catalog row as this transaction sees it.
struct TriggerOwner {
    bool this_database = false;
    std::optional<catalog::StreamTableRow> row;
};
TriggerOwner trigger_owner(Spi& spi, TriggerData* td) {
    TriggerOwner out;
    std::optional<std::string> here = spi.scalar("SELECT id FROM pgtrickle.pgt_instance");
    out.this_database = here && *here == td->tg_trigger->tgargs[1];
    if (out.this_database) {
        out.row = catalog::find_by_id(spi, std::stoll(td->tg_trigger->tgargs[0]));
    }
    return out;
}

// The trigger's program: kept, or read now (nullptr: the trigger belongs to
// no stream table of this database, e.g. restored from another one).
std::shared_ptr<const Program> program_of(TriggerData* td) {
    const Oid tgoid = td->tg_trigger->tgoid;
    auto found = g_programs.find(tgoid);
    if (found != g_programs.end()) {
        return found->second;
    }
    const int64_t pgt_id = std::stoll(td->tg_trigger->tgargs[0]);
    Spi spi = Spi::connect();
    const TriggerOwner whose = trigger_owner(spi, td);
    const std::optional<catalog::StreamTableRow>& st = whose.row;
    if (!st || st->refresh_mode != RefreshMode::kImmediate) {
        // The trigger is this database's, so its stream table committed
        // after the snapshot this transaction keeps (REPEATABLE READ,
        // SERIALIZABLE): the statement cannot see the stream table's rows
        // it would have to maintain, and skipping it would lose the write.
        const bool unseen =
            whose.this_database && pg_call([] { return IsolationUsesXactSnapshot(); });
        spi.close();
        if (unseen) {
            const std::string table = relation_display_name(RelationGetRelid(td->tg_relation));
            throw pgt::Error("40001",
                             "could not serialize access due to a concurrent change of the "
                             "IMMEDIATE maintenance of table " +
                                 table,
                             "An IMMEDIATE stream table over " + table +
                                 " was created or altered by a transaction that committed after "
                                 "this transaction's snapshot was taken.",
                             "Retry the transaction.");
        }
        return nullptr;
    }
    Program p;
    p.pgt_id = pgt_id;
    p.st_relid = st->relid;
    p.fired_relid = RelationGetRelid(td->tg_relation);
    SpiRows r = catalog::query_as_owner(
        spi,
        "SELECT event, program, source_relid, locking, lock_sql, sources, shared_relid FROM " +
            kPrograms + " WHERE pgt_id OPERATOR(pg_catalog.=) $1",
        {int8_param(pgt_id)});
    p.source_relid = source_fired_for(p.fired_relid, r);
    // The owner's rights now (a REVOKE, row-level security turned on, each
    // sends an invalidation that brings this here again): the writer's
    // statement fails rather than the stream table showing what its owner
    // may no longer read; under row-level security a change's rows carry
    // no policy, so each statement recomputes as the owner.
    const Oid owner = relation_owner(st->relid);
    std::vector<ReadRight> reads = catalog::owner_reads(spi, pgt_id);
    check_read_rights(reads, owner);
    p.row = *st;
    p.recompute = st->reinit_reason.has_value() || !row_security_blocker(reads, owner).empty();
    for (const ReadRight& read : reads) {
        if (read.relid == p.source_relid) {
            for (int a : read.attnums) {
                p.reads.push_back(attnum_in(p.fired_relid, p.source_relid, a));
            }
        }
    }
    const std::string tag = sql::statement_tag("maintenance of " + quote_ident(st->schema) + "." +
                                               quote_ident(st->name));
    for (const auto& row : r.rows) {
        const char* at = std::strchr(kEvents, row.at(0)->at(0));
        const Oid relid = static_cast<Oid>(std::stoul(*row.at(2)));
        if (at == nullptr || (relid != p.source_relid && relid != InvalidOid)) {
            continue;
        }
        if (relid == InvalidOid && row.at(5)) {
            p.multi = true;
            p.sources = oid_array(*row.at(5));
        }
        const diff::DeltaProgram program = diff::decode_program(*row.at(1));
        // Each statement names the stream table it maintains (sql::statement_tag).
        auto tagged = [&](const std::string& sql) { return sql.empty() ? sql : tag + sql; };
        const std::string main = tagged(program.main);
        if (p.multi && !program.key_rows.empty() && program.key_source < p.sources.size()) {
            p.key_rows = tagged(program.key_rows);
            p.key_relid = p.sources[program.key_source];
        }
        for (std::size_t i = 0; i < std::strlen(kEvents); i++) {
            if (p.multi || kEvents + i == at) {  // a join's one row serves every event
                p.main[i] = main;
                p.lock_sql[i] = tagged(row.at(4).value_or(""));
            }
        }
        p.locking = row.at(3)->at(0);
        p.shared_relid = row.at(6) ? static_cast<Oid>(std::stoul(*row.at(6))) : InvalidOid;
    }
    for (const std::string& m : p.main) {
        if (m.empty()) {
            spi.close();
            throw pgt::Error("XX000",
                             "IMMEDIATE programs of stream table " +
                                 relation_display_name(p.st_relid) + " missing",
                             "", "Run pgtrickle.repair_stream_table on it.");
        }
    }
    spi.close();
    auto kept = std::make_shared<const Program>(std::move(p));
    g_programs[tgoid] = kept;
    return kept;
}

// The stream table's writers' lock (locks.hpp).
void lock_for(const Program& p, bool exclusive) {
    lock_immediate_writers(p.pgt_id, exclusive);
}

// 'i': the identities the statement's change touches, their hashes
// computed and sorted by lock_sql, each locked from here (no SQL function
// can take these locks).
void lock_touched_identities(Spi& spi, const Program& p, int which) {
    SpiRows r = spi.query_at(nullptr, p.lock_sql[which], {}, true);
    std::vector<int32_t> hashes;
    hashes.reserve(r.rows.size());
    for (const auto& row : r.rows) {
        hashes.push_back(static_cast<int32_t>(std::stol(row.at(0).value())));
    }
    lock_identities(p.pgt_id, hashes);
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

// pg_trickle.immediate_max_rows: a statement changing more rows of a
// source fails (54000) before its change is applied.
void check_row_cap(TriggerData* td, const Program& p) {
    int64_t rows = 0;
    for (Tuplestorestate* t : {td->tg_oldtable, td->tg_newtable}) {
        rows = std::max<int64_t>(rows, t != nullptr ? tuplestore_tuple_count(t) : 0);
    }
    if (g_immediate_max_rows > 0 && rows > g_immediate_max_rows) {
        throw pgt::Error("54000",
                         "statement changed " + std::to_string(rows) + " rows of " +
                             relation_display_name(p.fired_relid) +
                             ", more than pg_trickle.immediate_max_rows (" +
                             std::to_string(g_immediate_max_rows) + ")",
                         "IMMEDIATE stream table " + relation_display_name(p.st_relid) +
                             " is maintained inside every statement on it.",
                         "Make the change in smaller statements, raise "
                         "pg_trickle.immediate_max_rows, or alter the stream table to "
                         "refresh_mode => 'DIFFERENTIAL'.");
    }
}

// Whether an UPDATE left every column the query reads as it was in every
// row (byte for byte): then the multiset of the rows as the query sees them
// did not change, whichever old row goes with which new one, and neither
// did the stream table (seed EC-08: such a statement does no work).
bool changes_nothing_read(TriggerData* td, const std::vector<int>& reads) {
    Tuplestorestate* olds = td->tg_oldtable;
    Tuplestorestate* news = td->tg_newtable;
    if (reads.empty() || std::find(reads.begin(), reads.end(), 0) != reads.end() ||
        olds == nullptr || news == nullptr ||
        tuplestore_tuple_count(olds) != tuplestore_tuple_count(news)) {
        return false;
    }
    return pg_call([&] {
        TupleDesc desc = RelationGetDescr(td->tg_relation);
        TupleTableSlot* o = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
        TupleTableSlot* n = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
        const int po = tuplestore_alloc_read_pointer(olds, EXEC_FLAG_REWIND);
        const int pn = tuplestore_alloc_read_pointer(news, EXEC_FLAG_REWIND);
        tuplestore_select_read_pointer(olds, po);
        tuplestore_rescan(olds);
        tuplestore_select_read_pointer(news, pn);
        tuplestore_rescan(news);
        bool same = true;
        while (same) {
            tuplestore_select_read_pointer(olds, po);
            const bool got_o = tuplestore_gettupleslot(olds, true, false, o);
            tuplestore_select_read_pointer(news, pn);
            const bool got_n = tuplestore_gettupleslot(news, true, false, n);
            if (!got_o || !got_n) {
                same = got_o == got_n;
                break;
            }
            for (int a : reads) {
                bool null_o = false, null_n = false;
                Datum vo = slot_getattr(o, a, &null_o);
                Datum vn = slot_getattr(n, a, &null_n);
                Form_pg_attribute att = TupleDescAttr(desc, a - 1);
                if (null_o != null_n ||
                    (!null_o && !datumIsEqual(vo, vn, att->attbyval, att->attlen))) {
                    same = false;
                    break;
                }
            }
        }
        ExecDropSingleTupleTableSlot(o);
        ExecDropSingleTupleTableSlot(n);
        return same;
    });
}

// Whether a program reads the newest snapshot, taken once the writer holds
// its locks (its groups', or the stream table's), instead of the current
// one: under REPEATABLE READ and SERIALIZABLE the transaction's snapshot
// is older than the commits of the writers of the same rows before it, and
// a join would pair this change with tables lacking their rows, a
// recomputed group would lack them.
bool reads_newest_snapshot() {
    return IsolationUsesXactSnapshot();
}

// Whether a statement on `fired` whose events are on the key's table
// alone (key_table_only) takes the stream table's writers' lock alone.
bool lock_alone(const Program& p, Relation fired, bool key_table_only) {
    if (p.locking != 'k') {
        return p.locking == 't';
    }
    // Under READ COMMITTED writers of the key's table share it (see
    // prepare_multi) when their statement is their transaction's only one.
    return IsolationUsesXactSnapshot() || !key_table_only || !sole_statement(fired);
}

// Whether an UPDATE names a column the query reads (any other statement:
// yes). One that names none changes nothing the stream table shows
// (changes_nothing_read), and takes no lock.
bool may_change_reads(TriggerData* td, const Program& p) {
    const Bitmapset* cols = td->tg_updatedcols;
    if (!TRIGGER_FIRED_BY_UPDATE(td->tg_event) || cols == nullptr || p.reads.empty()) {
        return true;
    }
    return std::any_of(p.reads.begin(), p.reads.end(), [&](int a) {
        return a == 0 || bms_is_member(a - FirstLowInvalidHeapAttributeNumber, cols);
    });
}

// A join's statement: every source position's four transition relations
// registered (this event's and its stashed siblings' tables in the slots
// of the positions of their table, empty ones elsewhere), then the program
// run as a DIFFERENTIAL refresh runs it.
void apply_multi(TriggerData* td, const Program& p, char event,
                 const std::vector<Stashed>& siblings) {
    std::vector<Stashed> events = siblings;
    events.push_back({p.pgt_id, 0, p.source_relid, event, td->tg_oldtable, td->tg_newtable,
                      td->tg_relation->rd_att, 0});
    // A statement that also wrote another table than the key's takes the
    // lock alone.
    const bool alone = lock_alone(p, td->tg_relation,
                                  std::all_of(events.begin(), events.end(),
                                              [&](auto& e) { return e.relid == p.shared_relid; }));
    Spi spi = Spi::connect();
    as_role_restricted(relation_owner(p.st_relid), [&] {
        lock_for(p, alone);
        using S = diff::TransitionSlot;
        for (std::size_t i = 0; i < p.sources.size(); i++) {
            Tuplestorestate* slots[4] = {nullptr, nullptr, nullptr, nullptr};
            TupleDesc desc = nullptr;
            for (const Stashed& e : events) {
                if (e.relid != p.sources[i]) {
                    continue;
                }
                desc = e.desc;
                if (e.event == 'U') {
                    slots[0] = e.olds;
                    slots[1] = e.news;
                } else if (e.event == 'D') {
                    slots[2] = e.olds;
                } else {
                    slots[3] = e.news;
                }
            }
            if (desc == nullptr) {  // not written: the table's row type, no rows
                desc = pg_call([&] {
                    Relation rel = relation_open(p.sources[i], AccessShareLock);
                    TupleDesc copy = CreateTupleDescCopy(RelationGetDescr(rel));
                    relation_close(rel, AccessShareLock);
                    return copy;
                });
            }
            const S order[4] = {S::kUpdateOld, S::kUpdateNew, S::kDeleted, S::kInserted};
            for (int k = 0; k < 4; k++) {
                spi.register_tuplestore(diff::source_transition_name(i, order[k]), desc, slots[k]);
            }
        }
        // Only the key's table written: its rows recomputed from its
        // transition tables, not from the table (the keys' rows found again).
        if (!p.key_rows.empty() && std::all_of(events.begin(), events.end(), [&](const Stashed& e) {
                return e.relid == p.key_relid;
            })) {
            RefreshWriteScope writing(p.st_relid);
            Snapshot latest = pg_call([] {
                return reads_newest_snapshot() ? RegisterSnapshot(GetLatestSnapshot()) : nullptr;
            });
            // Planned per size class of the transition tables: a plan made for
            // one row would probe row by row for 100,000, and one made for
            // 100,000 would read whole tables for one.
            with_settings_level([&] {
                pin_delta_settings();
                pin_query_settings(p.row.query_settings);
                (void)spi.query_at(latest, p.key_rows, {}, true);
            });
            if (latest != nullptr) {
                pg_call([&] { UnregisterSnapshot(latest); });
            }
            return;
        }
        (void)apply_transition_program(spi, p.row, reads_newest_snapshot());
    });
    spi.close();
    g_counters[p.pgt_id].incremental++;
}

// The statement's change, applied by the program of its event over its
// transition tables (read in place), as the stream table's owner; with
// stashed events of the same statement, all of them by the 'M' program.
void apply_change(TriggerData* td, const Program& p, char event,
                  const std::vector<Stashed>& siblings) {
    check_row_cap(td, p);
    if (event == 'U' && siblings.empty() && changes_nothing_read(td, p.reads)) {
        g_counters[p.pgt_id].incremental++;
        return;
    }
    if (p.multi) {
        apply_multi(td, p, event, siblings);
        return;
    }
    int which = static_cast<int>(std::strchr(kEvents, event) - kEvents);
    bool inconsistent = false;
    Spi spi = Spi::connect();
    as_role_restricted(relation_owner(p.st_relid), [&] {
        lock_for(p, p.locking == 't');
        const TupleDesc desc = td->tg_relation->rd_att;
        if (siblings.empty()) {
            // In place, as the join's are: the plans below are kept per
            // size class of these tables, so that a bulk statement's plan
            // (a hash over the stream table) does not serve the single-row
            // statements after it in this backend.
            if (td->tg_oldtable != nullptr) {
                spi.register_tuplestore(diff::kTransitionOld, desc, td->tg_oldtable);
            }
            if (td->tg_newtable != nullptr) {
                spi.register_tuplestore(diff::kTransitionNew, desc, td->tg_newtable);
            }
        } else {
            which = 3;
            Stashed all[3] = {};  // by event: I U D
            for (const Stashed& e : siblings) {
                all[std::strchr("IUD", e.event) - "IUD"] = e;
            }
            all[std::strchr("IUD", event) - "IUD"] = {p.pgt_id,
                                                      0,
                                                      p.source_relid,
                                                      event,
                                                      td->tg_oldtable,
                                                      td->tg_newtable,
                                                      td->tg_relation->rd_att,
                                                      0};
            spi.register_tuplestore(diff::kTransitionInserted, desc, all[0].news);
            spi.register_tuplestore(diff::kTransitionOld, desc, all[1].olds);
            spi.register_tuplestore(diff::kTransitionNew, desc, all[1].news);
            spi.register_tuplestore(diff::kTransitionDeleted, desc, all[2].olds);
        }
        if (p.locking == 'i') {
            lock_touched_identities(spi, p, which);
        }
        RefreshWriteScope writing(p.st_relid);
        Snapshot latest = pg_call([] {
            return reads_newest_snapshot() ? RegisterSnapshot(GetLatestSnapshot()) : nullptr;
        });
        SpiRows r = with_settings_level([&] {
            pin_delta_settings();
            pin_query_settings(p.row.query_settings);
            return spi.query_at(latest, p.main[which], {}, true);
        });
        if (latest != nullptr) {
            pg_call([&] { UnregisterSnapshot(latest); });
        }
        // A fourth column: groups left alone that must be recomputed.
        inconsistent = !r.rows.empty() && r.rows[0].size() > 3 && r.rows[0][3].value_or("0") != "0";
    });
    spi.close();
    if (inconsistent) {
        recompute_now(p, "a group's kept state was inconsistent: recomputed");
        return;
    }
    g_counters[p.pgt_id].incremental++;
}

char event_of(TriggerData* td) {
    return TRIGGER_FIRED_BY_INSERT(td->tg_event)   ? 'I'
           : TRIGGER_FIRED_BY_UPDATE(td->tg_event) ? 'U'
           : TRIGGER_FIRED_BY_DELETE(td->tg_event) ? 'D'
                                                   : 'T';
}

// The stream table's writers' lock, taken before the statement locks or
// changes a row, in the mode its AFTER trigger takes it: a writer then
// holds the stream-table locks its statement needs before any row or
// identity lock, and takes them in the order its BEFORE triggers fire
// (by name), the same for every writer. A statement that does not change
// what the stream table reads takes none; one that will recompute the
// stream table (it awaits reinitialisation) takes it alone at once.
void lock_before_rows(TriggerData* td) {
    // Read-only: loading the program must not take a new command id, by
    // which the statement's other BEFORE triggers are told to be its own
    // (immediate_after: siblings share one).
    const std::shared_ptr<const Program> p = [&] {
        SpiReadOnlyScope reading;
        return program_of(td);
    }();
    if (p == nullptr || !may_change_reads(td, *p)) {
        return;
    }
    lock_for(*p,
             p->recompute || lock_alone(*p, td->tg_relation, p->source_relid == p->shared_relid));
}

Datum immediate_before(FunctionCallInfo fcinfo) {
    TriggerData* td = immediate_trigger(fcinfo);
    register_callbacks();
    g_pending.push_back({std::stoll(td->tg_trigger->tgargs[0]), RelationGetRelid(td->tg_relation),
                         event_of(td), GetCurrentCommandId(false), GetCurrentTransactionNestLevel(),
                         ++g_pending_seq});
    lock_before_rows(td);
    return PointerGetDatum(nullptr);
}

bool pending_for(int64_t pgt_id) {
    return std::any_of(g_pending.begin(), g_pending.end(),
                       [&](const Pending& e) { return e.pgt_id == pgt_id; });
}

// The stashed events of (pgt_id, cid), taken out of the stash.
std::vector<Stashed> take_stashed(int64_t pgt_id, CommandId cid) {
    std::vector<Stashed> out;
    std::erase_if(g_stash, [&](const Stashed& e) {
        if (e.pgt_id != pgt_id || e.cid != cid) {
            return false;
        }
        out.push_back(e);
        return true;
    });
    return out;
}

Datum immediate_after(FunctionCallInfo fcinfo) {
    TriggerData* td = immediate_trigger(fcinfo);
    register_callbacks();
    const int64_t pgt_id = std::stoll(td->tg_trigger->tgargs[0]);
    const char event = event_of(td);
    const Oid fired = RelationGetRelid(td->tg_relation);
    // This statement's pending entry is the latest of its table and event
    // (an inner statement ends before the statement whose trigger started
    // it; a foreign key's action on another table or event, started by an
    // AFTER ROW trigger of this statement, may end after it). Another
    // statement on a source still running or having changed rows (see
    // Pending) makes this one nested: a delta now would be taken against a
    // state no program expects. Entries of this statement's other events
    // (ON CONFLICT's INSERT and UPDATE) share its command id.
    bool nested = false, siblings = false, rewritten = false;
    CommandId cid = InvalidCommandId;
    if (event != 'T') {
        auto mine = std::find_if(g_pending.rbegin(), g_pending.rend(), [&](const Pending& e) {
            return e.pgt_id == pgt_id && e.relid == fired && e.event == event;
        });
        uint64_t seq = UINT64_MAX;  // none: every other one counts as enclosing
        if (mine != g_pending.rend()) {
            cid = mine->cid;
            seq = mine->seq;
            rewritten = mine->rewritten;
            g_pending.erase(std::next(mine).base());
        }
        for (const Pending& e : g_pending) {
            nested = nested || (e.pgt_id == pgt_id && e.cid != cid && (e.seq < seq || e.wrote));
            siblings = siblings || (e.pgt_id == pgt_id && e.cid == cid);
        }
    } else {
        nested = pending_for(pgt_id);
    }
    const std::shared_ptr<const Program> p = program_of(td);
    if (p == nullptr) {
        return PointerGetDatum(nullptr);
    }
    if (rewritten) {
        g_dirty.emplace(pgt_id, "rows of " + relation_display_name(fired) +
                                    " were updated again inside the statement that updated "
                                    "them (a foreign key action): recomputed");
    }
    if (nested) {
        g_dirty.emplace(pgt_id, "a statement on " + relation_display_name(fired) +
                                    " ran inside another one: recomputed");
        (void)take_stashed(pgt_id, cid);
        return PointerGetDatum(nullptr);
    }
    if (siblings) {
        g_stash.push_back({pgt_id, cid, p->source_relid, event, td->tg_oldtable, td->tg_newtable,
                           td->tg_relation->rd_att, GetCurrentTransactionNestLevel()});
        return PointerGetDatum(nullptr);
    }
    std::vector<Stashed> stashed = take_stashed(pgt_id, cid);
    if (auto dirty = g_dirty.find(pgt_id); dirty != g_dirty.end() && !pending_for(pgt_id)) {
        const std::string why = dirty->second;
        g_dirty.erase(dirty);
        recompute_now(*p, why);
    } else if (event == 'T') {
        recompute_now(
            *p, "table " + relation_display_name(p->fired_relid) + " was truncated: recomputed");
    } else if (p->recompute) {
        recompute_now(*p, "awaiting reinitialisation: recomputed");
    } else {
        apply_change(td, *p, event, stashed);
    }
    return PointerGetDatum(nullptr);
}

// A row a logical replication worker writes to a table whose statement
// triggers maintain an IMMEDIATE stream table (a subscription made after
// it). The worker fires no statement trigger: the write fails, and the
// worker retries it until the stream table is altered or dropped, rather
// than the stream table going stale. ENABLE REPLICA: it fires only under
// session_replication_role = replica, where a session's own statements
// fire the statement triggers (ENABLE ALWAYS) and pass.
Datum immediate_replicated(FunctionCallInfo fcinfo) {
    TriggerData* td = immediate_trigger(fcinfo, /*row=*/true);
    if (!IsLogicalWorker()) {
        return PointerGetDatum(nullptr);
    }
    Spi spi = Spi::connect();
    const std::optional<catalog::StreamTableRow> st = trigger_owner(spi, td).row;
    spi.close();
    if (!st || st->refresh_mode != RefreshMode::kImmediate) {
        return PointerGetDatum(nullptr);  // another database's trigger (restored from a dump)
    }
    throw pgt::Error(
        "0A000",
        "IMMEDIATE stream table " + relation_display_name(st->relid) +
            " cannot follow rows logical replication writes to table " +
            relation_display_name(RelationGetRelid(td->tg_relation)),
        "The logical replication apply worker fires row triggers only, never the statement "
        "triggers that maintain an IMMEDIATE stream table: applying the row would leave the "
        "stream table differing from its query.",
        "Alter the stream table to refresh_mode => 'DIFFERENTIAL' (its change capture sees "
        "replicated rows), or drop it; the worker applies the row at its next attempt.");
}

Datum immediate_counters(FunctionCallInfo fcinfo) {
    const std::string name = text_to_cstring(PG_GETARG_TEXT_PP(0));
    Spi spi = Spi::connect();
    const int64_t id = resolve_stream_table(spi, name, false).pgt_id;  // in the caller's path
    spi.close();
    const Counters c = g_counters[id];
    TupleDesc desc = nullptr;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE) {
        throw pgt::Error("XX000", "_immediate_counters must return a row");
    }
    Datum values[2] = {Int64GetDatum(c.incremental), Int64GetDatum(c.recomputed)};
    bool nulls[2] = {false, false};
    return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls));
}

}  // namespace

void install_immediate_hooks() {
    g_prev_executor_run = ExecutorRun_hook;
    ExecutorRun_hook = immediate_executor_run;
    install_sole_statement_hooks();
}

}  // namespace pgt::pg

Datum pgt_immediate_before(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::immediate_before(fcinfo); });
}

Datum pgt_immediate_after(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::immediate_after(fcinfo); });
}

Datum pgt_immediate_replicated(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::immediate_replicated(fcinfo); });
}

Datum pgt_immediate_counters(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::immediate_counters(fcinfo); });
}
