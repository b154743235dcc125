// Capture triggers: every row change of a source becomes one buffer row
// (xid, action, old and new values); TRUNCATE becomes one marker row.
// Invariant: the per-row path runs no SQL and no executor: the buffer layout
// is resolved once per trigger, values go straight from the tuples into one
// staged row (no privilege check: the writing role needs no rights on
// pgtrickle_changes), written with the statement's other rows in batches
// (staged_rows.hpp). An UPDATE that changes no captured column writes nothing.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "pg/common/quote.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/spi.hpp"
#include "pg/catalog/catalog.hpp"
#include "pg/boundary/datum_equal.hpp"
#include "pg/cdc/commit_marks.hpp"
#include "pg/cdc/staged_rows.hpp"
#include "pg/scheduler/hooks.hpp"

extern "C" {
#include "postgres.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/tuplestore.h"
#include "utils/xid8.h"

PG_FUNCTION_INFO_V1(pgt_capture_row);
PG_FUNCTION_INFO_V1(pgt_capture_statement);
PG_FUNCTION_INFO_V1(pgt_capture_truncate);
}

namespace pgt::pg {
namespace {

// Prepared insert of one trigger (keyed by the trigger's OID).
// Where one trigger writes: the buffer and, for every captured source column,
// the buffer positions of its old and new value.
struct CapturePlan {
    // A trigger another database made (restored by pg_restore, its third
    // argument another pgt_instance id) captures nothing: its stream tables
    // are rebuilt when the restored catalog is adopted.
    bool inert = false;
    Oid buffer = InvalidOid;
    Oid seq = InvalidOid;             // the buffer's identity sequence (column seq)
    std::vector<AttrNumber> attnums;  // captured source columns
    std::vector<Oid> source_types;    // their types when the plan was made
    std::vector<bool> byval;
    std::vector<int16> typlen;
    std::vector<int> old_pos, new_pos;  // buffer attribute index of o<attnum> / n<attnum>
    std::vector<Datum> values;          // scratch row of the buffer
    std::unique_ptr<bool[]> nulls;      // same length as values
    TupleDesc desc = nullptr;           // the buffer's layout (a copy, for the plan's life)
};

// Buffer attribute layout: seq, xid, action, then o<attnum>/n<attnum> pairs.
constexpr int kSeqPos = 0, kXidPos = 1, kActionPos = 2;

std::unordered_map<Oid, CapturePlan> g_plans;

// nargs: the arguments of the triggers this version makes (the last is the
// pgt_instance id); a trigger made by 0.1.0 has one fewer.
TriggerData* trigger_data(FunctionCallInfo fcinfo, bool row_level, int nargs) {
    if (!CALLED_AS_TRIGGER(fcinfo)) {
        throw pgt::Error("39P01", "capture function called outside a trigger");
    }
    TriggerData* td = reinterpret_cast<TriggerData*>(fcinfo->context);
    if (!TRIGGER_FIRED_AFTER(td->tg_event) ||
        (TRIGGER_FIRED_FOR_ROW(td->tg_event) != 0) != row_level ||
        (td->tg_trigger->tgnargs != nargs && td->tg_trigger->tgnargs != nargs - 1)) {
        throw pgt::Error("39P01",
                         "capture trigger defined with the wrong timing, level or arguments", "",
                         "pg_trickle installs its capture triggers itself.");
    }
    return td;
}

// Resolves the buffer (by catalog lookups that check no privileges: the
// writing role may not even see the schema) and maps its columns.
void locate_buffer(CapturePlan& cp, const char* buffer) {
    std::string name = buffer;
    size_t dot = name.find('.');
    std::string nsp = name.substr(0, dot), rel = name.substr(dot + 1);
    std::vector<std::string> cols;
    pg_call([&] {
        cp.buffer = get_relname_relid(rel.c_str(), get_namespace_oid(nsp.c_str(), false));
        if (!OidIsValid(cp.buffer)) {
            elog(ERROR, "change buffer %s does not exist", buffer);
        }
        cp.seq = getIdentitySequence(cp.buffer, 1, false);
        Relation r = table_open(cp.buffer, AccessShareLock);
        TupleDesc bd = RelationGetDescr(r);
        cp.values.resize(bd->natts);
        for (int i = 0; i < bd->natts; i++) {
            cols.emplace_back(NameStr(TupleDescAttr(bd, i)->attname));
        }
        MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
        cp.desc = CreateTupleDescCopy(bd);
        MemoryContextSwitchTo(old);
        table_close(r, AccessShareLock);
    });
    cp.nulls = std::make_unique<bool[]>(cp.values.size());
    for (size_t i = 0; i < cp.values.size(); i++) {
        cp.nulls[i] = true;
    }
    cp.old_pos.assign(cp.attnums.size(), -1);
    cp.new_pos.assign(cp.attnums.size(), -1);
    for (size_t c = 3; c < cols.size(); c++) {
        int attnum = std::stoi(cols[c].substr(1));
        auto it = std::find(cp.attnums.begin(), cp.attnums.end(), attnum);
        if (it != cp.attnums.end()) {
            (cols[c][0] == 'o' ? cp.old_pos : cp.new_pos)[it - cp.attnums.begin()] = int(c);
        }
    }
    if (std::count(cp.old_pos.begin(), cp.old_pos.end(), -1) +
            std::count(cp.new_pos.begin(), cp.new_pos.end(), -1) >
        0) {
        throw pgt::Error("55000", "change buffer " + name + " lacks a captured column", "",
                         "Recreate the stream tables that read this table.");
    }
}

// Every captured column's value goes into its buffer columns unconverted:
// they must have its (base) type. After an ALTER COLUMN ... TYPE they do
// not, and a value formed with the wrong type would crash the server or
// be stored wrong, so the write fails instead (55000, naming the column).
void check_buffer_types(const CapturePlan& cp, Relation source) {
    std::vector<std::pair<Oid, Oid>> types;  // (source base type, buffer type) per column
    pg_call([&] {
        Relation r = table_open(cp.buffer, AccessShareLock);
        TupleDesc bd = RelationGetDescr(r);
        for (size_t i = 0; i < cp.attnums.size(); i++) {
            Oid base = getBaseType(cp.source_types[i]);
            types.emplace_back(base, TupleDescAttr(bd, cp.old_pos[i])->atttypid);
            types.emplace_back(base, TupleDescAttr(bd, cp.new_pos[i])->atttypid);
        }
        table_close(r, AccessShareLock);
    });
    for (size_t k = 0; k < types.size(); k++) {
        if (types[k].first == types[k].second) {
            continue;
        }
        const AttrNumber a = cp.attnums[k / 2];
        std::string table = pg_call([&] { return RelationGetRelationName(source); });
        std::string column = pg_call(
            [&] { return NameStr(TupleDescAttr(RelationGetDescr(source), a - 1)->attname); });
        std::string now = pg_call([&] { return format_type_be(types[k].first); });
        std::string then = pg_call([&] { return format_type_be(types[k].second); });
        throw pgt::Error(
            "55000",
            "cannot capture a change of table " + table + ": column " + column +
                " is now of type " + now + ", its stream tables' change buffer holds " + then,
            "The column's type was changed after DIFFERENTIAL stream tables began reading it; "
            "their change buffer cannot take the new values.",
            "Drop the stream tables that read " + table + "." + column +
                " and create them again, or change the column back.");
    }
}

// Whether the trigger was made in this database (its last argument is
// this database's pgtrickle.pgt_instance id). Read once per plan.
bool made_here(TriggerData* td, int nargs) {
    if (td->tg_trigger->tgnargs < nargs) {
        return true;  // made by 0.1.0, which had no instance id (and no restore)
    }
    const std::string made_by = td->tg_trigger->tgargs[nargs - 1];
    Spi spi = Spi::connect();
    std::optional<std::string> here = spi.scalar("SELECT id FROM pgtrickle.pgt_instance");
    spi.close();
    return here && *here == made_by;
}

CapturePlan build_plan(TriggerData* td) {
    CapturePlan cp;
    if (!made_here(td, 3)) {
        cp.inert = true;
        return cp;
    }
    TupleDesc desc = RelationGetDescr(td->tg_relation);
    // Captured columns: the second trigger argument, "3,1,4" (attnums).
    std::string list = td->tg_trigger->tgargs[1];
    for (size_t pos = 0; pos < list.size();) {
        size_t comma = list.find(',', pos);
        int attnum = std::stoi(list.substr(pos, comma - pos));
        pos = comma == std::string::npos ? list.size() : comma + 1;
        if (attnum < 1 || attnum > desc->natts || TupleDescAttr(desc, attnum - 1)->attisdropped) {
            throw pgt::Error("55000", "change capture lists a column the source no longer has",
                             "Attribute number " + std::to_string(attnum) + ".",
                             "Recreate the stream tables that read this table.");
        }
        Form_pg_attribute att = TupleDescAttr(desc, attnum - 1);
        cp.attnums.push_back(att->attnum);
        cp.source_types.push_back(att->atttypid);
        cp.byval.push_back(att->attbyval);
        cp.typlen.push_back(att->attlen);
    }
    locate_buffer(cp, td->tg_trigger->tgargs[0]);
    check_buffer_types(cp, td->tg_relation);
    return cp;
}

// Whether the source's captured columns still have the types the plan was
// made for (a per-row check of a few integers: ALTER COLUMN ... TYPE or
// DROP COLUMN since, in this backend or another, changes the descriptor
// under a plan kept by trigger OID).
bool plan_still_fits(const CapturePlan& cp, TupleDesc desc) {
    for (size_t i = 0; i < cp.attnums.size(); i++) {
        const int a = cp.attnums[i];
        if (a > desc->natts || TupleDescAttr(desc, a - 1)->attisdropped ||
            TupleDescAttr(desc, a - 1)->atttypid != cp.source_types[i]) {
            return false;
        }
    }
    return true;
}

CapturePlan& plan_for(TriggerData* td) {
    auto it = g_plans.find(td->tg_trigger->tgoid);
    if (it != g_plans.end() && !plan_still_fits(it->second, RelationGetDescr(td->tg_relation))) {
        if (it->second.desc != nullptr) {
            FreeTupleDesc(it->second.desc);
        }
        g_plans.erase(it);  // made again below, and checked against the buffer
        it = g_plans.end();
    }
    if (it == g_plans.end()) {
        it = g_plans.emplace(td->tg_trigger->tgoid, build_plan(td)).first;
    }
    return it->second;
}

// True when no captured column differs between the filled old and new values.
bool unchanged(const CapturePlan& cp) {
    for (size_t i = 0; i < cp.attnums.size(); i++) {
        int o = cp.old_pos[i], n = cp.new_pos[i];
        if (cp.nulls[o] != cp.nulls[n] ||
            (!cp.nulls[o] &&
             !stored_datums_equal(cp.values[o], cp.values[n], cp.byval[i], cp.typlen[i]))) {
            return false;
        }
    }
    return true;
}

void fill_side(CapturePlan& cp, const std::vector<int>& pos, HeapTuple tup, TupleDesc desc) {
    for (size_t i = 0; i < cp.attnums.size(); i++) {
        bool isnull = true;
        Datum v = tup ? heap_getattr(tup, cp.attnums[i], desc, &isnull) : (Datum)0;
        cp.values[pos[i]] = v;
        cp.nulls[pos[i]] = isnull;
    }
}

// Same as fill_side, from a transition-table slot.
void fill_side_slot(CapturePlan& cp, const std::vector<int>& pos, TupleTableSlot* slot) {
    for (size_t i = 0; i < cp.attnums.size(); i++) {
        bool isnull = true;
        Datum v = slot ? slot_getattr(slot, cp.attnums[i], &isnull) : (Datum)0;
        cp.values[pos[i]] = v;
        cp.nulls[pos[i]] = isnull;
    }
}

// Stages the prepared row for the buffer: no executor, no SPI. The buffer
// has no index, trigger or constraint to maintain; heap_insert or
// heap_multi_insert WAL-logs the rows and fetches any TOAST value of the
// source into the buffer's own storage.
void append_row(CapturePlan& cp) {
    pg_call([&] {
        cp.values[kSeqPos] = Int64GetDatum(nextval_internal(cp.seq, false));
        stage_buffer_row(cp.buffer, cp.desc, cp.values.data(), cp.nulls.get());
    });
}

Datum capture_row(FunctionCallInfo fcinfo) {
    TriggerData* td = trigger_data(fcinfo, true, 3);
    CapturePlan& cp = plan_for(td);
    if (cp.inert) {
        return PointerGetDatum(nullptr);
    }
    TupleDesc desc = RelationGetDescr(td->tg_relation);
    HeapTuple old_tup = nullptr, new_tup = nullptr;
    char action;
    if (TRIGGER_FIRED_BY_INSERT(td->tg_event)) {
        action = 'I';
        new_tup = td->tg_trigtuple;
    } else if (TRIGGER_FIRED_BY_DELETE(td->tg_event)) {
        action = 'D';
        old_tup = td->tg_trigtuple;
    } else {
        action = 'U';
        old_tup = td->tg_trigtuple;
        new_tup = td->tg_newtuple;
    }
    fill_side(cp, cp.old_pos, old_tup, desc);  // each version is read once
    fill_side(cp, cp.new_pos, new_tup, desc);
    if (action == 'U' && unchanged(cp)) {
        return PointerGetDatum(nullptr);
    }
    cp.values[kXidPos] = FullTransactionIdGetDatum(GetTopFullTransactionId());
    cp.values[kActionPos] = CharGetDatum(action);
    cp.nulls[kSeqPos] = cp.nulls[kXidPos] = cp.nulls[kActionPos] = false;
    append_row(cp);
    note_buffer_written(cp.buffer);
    mark_source_written(RelationGetRelid(td->tg_relation));
    return PointerGetDatum(nullptr);
}

// Statement-level variant (measured against capture_row, see
// docs/benchmarks.md §3): reads the statement's transition tables and writes
// the buffer rows in batches with heap_multi_insert. UPDATE pairs the i-th old
// row with the i-th new row, the order in which PostgreSQL fills both tables.
constexpr int kBatch = 1000;

struct StatementCapture {
    Relation rel = nullptr;
    TupleDesc src = nullptr;
    TupleTableSlot* old_slot = nullptr;
    TupleTableSlot* new_slot = nullptr;
    TupleTableSlot* batch[kBatch] = {};
    int used = 0;
    BulkInsertState bistate = nullptr;
};

int read_pointer(Tuplestorestate* ts) {
    int ptr = tuplestore_alloc_read_pointer(ts, EXEC_FLAG_REWIND);
    tuplestore_select_read_pointer(ts, ptr);
    tuplestore_rescan(ts);
    return ptr;
}

bool next_row(Tuplestorestate* ts, int ptr, TupleTableSlot* slot) {
    if (ts == nullptr) {
        return false;
    }
    tuplestore_select_read_pointer(ts, ptr);
    return tuplestore_gettupleslot(ts, true, false, slot);
}

void flush_batch(StatementCapture& sc) {
    if (sc.used > 0) {
        heap_multi_insert(sc.rel, sc.batch, sc.used, GetCurrentCommandId(true), 0, sc.bistate);
        for (int i = 0; i < sc.used; i++) {
            ExecClearTuple(sc.batch[i]);
        }
        sc.used = 0;
    }
}

// Copies the prepared row into the next batch slot (by-reference values are
// copied: the transition slots are reused for the next row).
void stage_row(CapturePlan& cp, StatementCapture& sc) {
    if (sc.batch[sc.used] == nullptr) {
        sc.batch[sc.used] = MakeSingleTupleTableSlot(RelationGetDescr(sc.rel), &TTSOpsVirtual);
    }
    TupleTableSlot* slot = sc.batch[sc.used++];
    cp.values[kSeqPos] = Int64GetDatum(nextval_internal(cp.seq, false));
    for (size_t i = 0; i < cp.values.size(); i++) {
        slot->tts_values[i] = cp.values[i];
        slot->tts_isnull[i] = cp.nulls[i];
    }
    ExecStoreVirtualTuple(slot);
    ExecMaterializeSlot(slot);
    if (sc.used == kBatch) {
        flush_batch(sc);
    }
}

void capture_transition_rows(TriggerData* td, CapturePlan& cp, char action) {
    StatementCapture sc;
    sc.rel = table_open(cp.buffer, RowExclusiveLock);
    sc.src = RelationGetDescr(td->tg_relation);
    sc.bistate = GetBulkInsertState();
    sc.old_slot = MakeSingleTupleTableSlot(sc.src, &TTSOpsMinimalTuple);
    sc.new_slot = MakeSingleTupleTableSlot(sc.src, &TTSOpsMinimalTuple);
    Tuplestorestate* olds = action == 'I' ? nullptr : td->tg_oldtable;
    Tuplestorestate* news = action == 'D' ? nullptr : td->tg_newtable;
    int optr = olds ? read_pointer(olds) : -1, nptr = news ? read_pointer(news) : -1;
    cp.values[kXidPos] = FullTransactionIdGetDatum(GetTopFullTransactionId());
    cp.values[kActionPos] = CharGetDatum(action);
    cp.nulls[kSeqPos] = cp.nulls[kXidPos] = cp.nulls[kActionPos] = false;
    for (;;) {
        bool have_old = next_row(olds, optr, sc.old_slot);
        bool have_new = next_row(news, nptr, sc.new_slot);
        if (!have_old && !have_new) {
            break;
        }
        fill_side_slot(cp, cp.old_pos, have_old ? sc.old_slot : nullptr);
        fill_side_slot(cp, cp.new_pos, have_new ? sc.new_slot : nullptr);
        if (action == 'U' && unchanged(cp)) {
            continue;
        }
        stage_row(cp, sc);
    }
    flush_batch(sc);
    for (TupleTableSlot* slot : sc.batch) {
        if (slot != nullptr) {
            ExecDropSingleTupleTableSlot(slot);
        }
    }
    ExecDropSingleTupleTableSlot(sc.old_slot);
    ExecDropSingleTupleTableSlot(sc.new_slot);
    FreeBulkInsertState(sc.bistate);
    table_close(sc.rel, NoLock);
}

Datum capture_statement(FunctionCallInfo fcinfo) {
    TriggerData* td = trigger_data(fcinfo, false, 3);
    CapturePlan& cp = plan_for(td);
    if (cp.inert) {
        return PointerGetDatum(nullptr);
    }
    char action = TRIGGER_FIRED_BY_INSERT(td->tg_event)   ? 'I'
                  : TRIGGER_FIRED_BY_DELETE(td->tg_event) ? 'D'
                                                          : 'U';
    if ((action != 'I' && td->tg_oldtable == nullptr) ||
        (action != 'D' && td->tg_newtable == nullptr)) {
        throw pgt::Error("39P01", "capture trigger defined without its transition tables", "",
                         "pg_trickle installs its capture triggers itself.");
    }
    pg_call([&] { capture_transition_rows(td, cp, action); });
    note_buffer_written(cp.buffer);
    mark_source_written(RelationGetRelid(td->tg_relation));
    return PointerGetDatum(nullptr);
}

// The marker goes in through the executor (as the buffer's owner: the
// truncating role may not write the buffer), so the buffer's partial index
// over markers holds it; row capture never writes a marker, so its direct
// heap inserts leave that index complete (see create_capture).
Datum capture_truncate(FunctionCallInfo fcinfo) {
    TriggerData* td = trigger_data(fcinfo, false, 2);
    if (!made_here(td, 2)) {
        return PointerGetDatum(nullptr);
    }
    std::string name = td->tg_trigger->tgargs[0];
    size_t dot = name.find('.');
    std::string target = quote_ident(name.substr(0, dot)) + "." + quote_ident(name.substr(dot + 1));
    Spi spi = Spi::connect();
    catalog::exec_as_owner(spi, "INSERT INTO " + target +
                                    " (xid, action) VALUES (pg_catalog.pg_current_xact_id(), 'T')");
    spi.close();
    pg_call([&] {
        note_buffer_written(get_relname_relid(
            name.substr(dot + 1).c_str(), get_namespace_oid(name.substr(0, dot).c_str(), false)));
    });
    mark_source_written(RelationGetRelid(td->tg_relation));
    return PointerGetDatum(nullptr);
}

}  // namespace
}  // namespace pgt::pg

Datum pgt_capture_row(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::capture_row(fcinfo); });
}

Datum pgt_capture_statement(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::capture_statement(fcinfo); });
}

Datum pgt_capture_truncate(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::capture_truncate(fcinfo); });
}
