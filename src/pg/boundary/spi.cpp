// SPI wrapper: parameterised statements, return-code checks, text results.
// Invariant: results are copied out of SPI memory into C++ values before
// the next SPI call can free them.
#include "pg/boundary/spi.hpp"
#include "core/policy/plan_rules.hpp"
#include "core/sql/names.hpp"

#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"
#include "pg/cdc/buffer_access.hpp"

#include <cmath>
#include <unordered_map>

extern "C" {
#include "postgres.h"
#include "catalog/pg_type.h"
#include "access/htup_details.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"
#include "utils/snapmgr.h"
#include "nodes/params.h"
#include "executor/tuptable.h"
#include "utils/lsyscache.h"
#include "nodes/plannodes.h"
#include "utils/plancache.h"
}

namespace pgt::pg {

SpiParam text_param(const std::string& s) {
    Datum d =
        pg_call([&] { return PointerGetDatum(cstring_to_text_with_len(s.data(), s.size())); });
    return {TEXTOID, d, false};
}

SpiParam text_param(const std::optional<std::string>& s) {
    return s ? text_param(*s) : SpiParam{TEXTOID, (Datum)0, true};
}

SpiParam typed_param(Oid type, const std::optional<std::string>& text) {
    if (!text) {
        return {type, (Datum)0, true};
    }
    Datum d = pg_call([&] {
        Oid input, ioparam;
        getTypeInputInfo(type, &input, &ioparam);
        return OidInputFunctionCall(input, const_cast<char*>(text->c_str()), ioparam, -1);
    });
    return {type, d, false};
}

SpiParam oid_param(Oid v) {
    return {OIDOID, ObjectIdGetDatum(v), false};
}
SpiParam int8_param(int64_t v) {
    return {INT8OID, Int64GetDatum(v), false};
}
SpiParam bool_param(bool v) {
    return {BOOLOID, BoolGetDatum(v), false};
}

namespace {

// Kept plans of the statements refreshes run, by SQL text and parameter
// types. PostgreSQL's plan cache revalidates them after DDL; the text of a
// stream table's statements only changes when its definition does.
std::unordered_map<std::string, SPIPlanPtr> g_plans;

SPIPlanPtr& plan_cache_slot(const std::string& sql, const std::vector<Oid>& types) {
    std::string key;
    for (Oid t : types) {
        key += std::to_string(t) + ",";
    }
    return g_plans[key + ";" + sql];
}

// Kept plans of statements reading registered relations, by SQL text and
// a size class per registered relation (see Spi::run). At most
// kSizedPlansMax; past that a statement's plan is made for its run and
// freed after it (none kept is ever freed: one may be running further up
// the stack, in a refresh a trigger started).
std::unordered_map<std::string, SPIPlanPtr> g_sized_plans;
constexpr std::size_t kSizedPlansMax = 256;

// The plan for a statement reading registered relations, by `key` (SQL
// text and size classes, see Spi::run): the kept one, or one prepared now
// and kept while there is room (else returned in `unkept` too, for the
// caller to free after its run). A statement that reads its parameters
// (window bounds in the subquery regions' statements) is planned for their
// values each run, as before; only its parse is kept.
SPIPlanPtr sized_plan_slot(const std::string& key, const std::string& sql, std::vector<Oid>& types,
                           SPIPlanPtr& unkept) {
    auto found = g_sized_plans.find(key);
    if (found != g_sized_plans.end()) {
        return found->second;
    }
    const bool room = g_sized_plans.size() < kSizedPlansMax;
    bool reads_params = false;
    for (std::size_t at = sql.find('$'); at != std::string::npos && !reads_params;
         at = sql.find('$', at + 1)) {
        reads_params = at + 1 < sql.size() && sql[at + 1] >= '0' && sql[at + 1] <= '9';
    }
    const int options = reads_params ? CURSOR_OPT_CUSTOM_PLAN : CURSOR_OPT_GENERIC_PLAN;
    SPIPlanPtr plan = pg_call([&]() -> SPIPlanPtr {
        SPIPlanPtr p =
            SPI_prepare_cursor(sql.c_str(), static_cast<int>(types.size()), types.data(), options);
        if (p == nullptr || (room && SPI_keepplan(p) != 0)) {
            return nullptr;
        }
        if (room) {
            remember_internal_plan(p);  // (an unkept plan lives only in Spi::run)
        }
        return p;
    });
    if (plan == nullptr) {
        throw pgt::Error("XX000", "internal statement failed", SPI_result_code_string(SPI_result));
    }
    if (room) {
        g_sized_plans.emplace(key, plan);
    } else {
        unkept = plan;
    }
    return plan;
}

// The text PostgreSQL parses plan's statement from when it revalidates it.
const char* plan_text(SPIPlanPtr plan) {
    List* sources = SPI_plan_get_plan_sources(plan);
    return sources != NIL ? static_cast<CachedPlanSource*>(linitial(sources))->query_string
                          : nullptr;
}

// Prepares sql and keeps its plan in slot, unless one is there already.
// generic: one plan for every parameter value from the first run on, where
// PostgreSQL would plan each of the first five runs for its values (a
// catalog statement keyed by a stream table's id gains nothing from that,
// and a session's second to sixth refreshes paid it: about 2 ms each for
// one that found nothing to do, against 0.6 ms after). Runs under pg_call;
// false (SPI_result set) when preparing failed.
bool keep_plan(SPIPlanPtr& slot, const std::string& sql, std::vector<Oid>& types, bool generic) {
    if (slot == nullptr) {
        SPIPlanPtr plan = SPI_prepare_cursor(sql.c_str(), static_cast<int>(types.size()),
                                             types.data(), generic ? CURSOR_OPT_GENERIC_PLAN : 0);
        if (plan == nullptr || SPI_keepplan(plan) != 0) {
            return false;
        }
        remember_internal_plan(plan);
        slot = plan;
    }
    return true;
}

}  // namespace

Spi Spi::connect() {
    int rc = pg_call([] { return SPI_connect(); });
    if (rc != SPI_OK_CONNECT) {
        throw pgt::Error("XX000", "could not connect to SPI", SPI_result_code_string(rc));
    }
    Spi spi;
    spi.open_ = true;
    return spi;
}

void Spi::close() {
    if (open_) {
        open_ = false;
        int rc = pg_call([] { return SPI_finish(); });
        if (rc != SPI_OK_FINISH) {
            throw pgt::Error("XX000", "could not finish SPI", SPI_result_code_string(rc));
        }
    }
}

// Every statement the extension runs is parsed under the pinned
// search_path, whoever called: a name it leaves unqualified (the operator
// behind JOIN ... USING, IN or IS DISTINCT FROM) never finds a caller's
// object. Nested in a pinned scope (refreshes, IMMEDIATE), nothing to do.
namespace {
int g_read_only_scopes = 0;
}  // namespace

SpiReadOnlyScope::SpiReadOnlyScope() {
    g_read_only_scopes++;
}
SpiReadOnlyScope::~SpiReadOnlyScope() {
    g_read_only_scopes--;
}

double Spi::planned_rows(const std::string& sql) {
    auto plan_it = [&] {
        return pg_call([&] {
            SPIPlanPtr plan = SPI_prepare(sql.c_str(), 0, nullptr);
            if (plan == nullptr) {
                elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
            }
            CachedPlan* cplan = SPI_plan_get_cached_plan(plan);
            double rows = -1;
            if (cplan != nullptr && cplan->stmt_list != NIL) {
                const PlannedStmt* ps = linitial_node(PlannedStmt, cplan->stmt_list);
                rows = ps->planTree != nullptr ? ps->planTree->plan_rows : -1;
            }
            if (cplan != nullptr) {
                ReleaseCachedPlan(cplan, nullptr);  // an unsaved plan's: no resource owner
            }
            SPI_freeplan(plan);
            return rows;
        });
    };
    return search_path_is_pinned() ? plan_it() : with_pinned_search_path(plan_it);
}

int Spi::run(const std::string& sql, const std::vector<SpiParam>& params, bool read_only,
             Snapshot snapshot, bool sized_plan) {
    read_only = read_only || g_read_only_scopes > 0;
    if (search_path_is_pinned()) {
        return run_unpinned(sql, params, read_only, snapshot, sized_plan);
    }
    return with_pinned_search_path(
        [&] { return run_unpinned(sql, params, read_only, snapshot, sized_plan); });
}

namespace {

// sql::statement_tag of this process's statements ("": none).
std::string g_process_tag;

// raw with the process's tag before it, unless it begins with a comment
// (a statement run for one stream table names it); kept in holder.
const std::string& with_process_tag(const std::string& raw, std::string& holder) {
    if (g_process_tag.empty() || raw.rfind("/*", 0) == 0) {
        return raw;
    }
    holder = g_process_tag + raw;
    return holder;
}

}  // namespace

void Spi::tag_process_statements(const std::string& tag) {
    g_process_tag = tag;
}

int Spi::run_unpinned(const std::string& raw, const std::vector<SpiParam>& params, bool read_only,
                      Snapshot snapshot, bool sized_plan) {
    std::string holder;
    const std::string& sql = with_process_tag(raw, holder);
    // Parsed from this text (now, or again after an invalidation), the
    // statement reads change buffers with their owner's rights.
    InternalStatement internal(sql.c_str());
    const int n = static_cast<int>(params.size());
    std::vector<Oid> types(n);
    std::vector<Datum> values(n);
    std::vector<char> nulls(n);
    for (int i = 0; i < n; i++) {
        types[i] = params[i].type;
        values[i] = params[i].value;
        nulls[i] = params[i].isnull ? 'n' : ' ';
    }
    // Parameterised statements (catalog reads and writes, refresh steps) are
    // few and repeat: keep their plans. DDL built with literal names is not.
    // A statement reading registered relations (sized_plan) is kept per
    // size class of those relations, not by its text alone: PostgreSQL
    // takes a registered relation's row count when it analyzes a statement,
    // so one plan per text would serve every later run in this backend
    // with the counts of the first (a refresh after a 3-row change planned
    // a later one's 56,000 and 30,000 rows as 1 and 3: 62 s, not 0.15). The
    // class is each relation's floor(log2(rows + 1)): a plan serves counts
    // within a factor of 2 of those it was made for, and the parse and
    // planning (3-5 ms of TPC-H q07's and q08's refreshes after a one-row
    // change) are paid once per class in a long-lived backend.
    bool keep = (snapshot != nullptr || n > 0) && !sized_plan;
    SPIPlanPtr* cached = keep ? &plan_cache_slot(sql, types) : nullptr;
    SPIPlanPtr sized = nullptr;
    SPIPlanPtr unkept = nullptr;  // sized, when not kept: freed after its run
    if (sized_plan) {
        std::string key;
        for (const auto* list : {&in_place_, &registered_}) {
            for (const auto& [name, rows] : *list) {
                key += name + ":" + std::to_string(policy::plan_size_class(rows)) + ",";
            }
        }
        sized = sized_plan_slot(key + ";" + sql, sql, types, unkept);
    }
    InternalStatement internal_unkept(unkept != nullptr ? plan_text(unkept) : nullptr);
    int rc = pg_call([&] {
        if (sized != nullptr) {
            int r = snapshot != nullptr
                        ? SPI_execute_snapshot(sized, values.data(), nulls.data(), snapshot,
                                               InvalidSnapshot, read_only, true, 0)
                        : SPI_execute_plan(sized, values.data(), nulls.data(), read_only, 0);
            if (unkept != nullptr) {
                SPI_freeplan(unkept);  // (on an error, SPI_finish frees it)
            }
            return r;
        }
        if (cached != nullptr) {
            // Statements without the refresh's snapshot read and write the
            // catalog: a generic plan.
            if (!keep_plan(*cached, sql, types, snapshot == nullptr)) {
                return SPI_result;
            }
            return snapshot != nullptr
                       ? SPI_execute_snapshot(*cached, values.data(), nulls.data(), snapshot,
                                              InvalidSnapshot, read_only, true, 0)
                       : SPI_execute_plan(*cached, values.data(), nulls.data(), read_only, 0);
        }
        return n == 0 ? SPI_execute(sql.c_str(), read_only, 0)
                      : SPI_execute_with_args(sql.c_str(), n, types.data(), values.data(),
                                              nulls.data(), read_only, 0);
    });
    if (rc < 0) {
        throw pgt::Error("XX000", "internal statement failed", SPI_result_code_string(rc));
    }
    return rc;
}

uint64_t Spi::exec(const std::string& sql, const std::vector<SpiParam>& params, bool read_only) {
    run(sql, params, read_only);
    return SPI_processed;
}

SpiRows Spi::query(const std::string& sql, const std::vector<SpiParam>& params, bool read_only) {
    run(sql, params, read_only);
    return collect();
}

namespace {

// The ephemeral named relation `name` over `store` (rows of desc, `rows`
// of them), for SPI_register_relation. Inside a PostgreSQL frame.
EphemeralNamedRelation named_tuplestore(const char* name, TupleDesc desc, Tuplestorestate* store,
                                        double rows) {
    auto* enr = static_cast<EphemeralNamedRelation>(palloc0(sizeof(EphemeralNamedRelationData)));
    enr->md.name = pstrdup(name);
    enr->md.reliddesc = InvalidOid;
    enr->md.tupdesc = desc;
    enr->md.enrtype = ENR_NAMED_TUPLESTORE;
    enr->md.enrtuples = rows;
    enr->reldata = store;
    return enr;
}

}  // namespace

void Spi::register_tuplestore(const std::string& name, TupleDesc desc, Tuplestorestate* store) {
    int rc = pg_call([&] {
        // In the connection's procedure context: lives until SPI_finish.
        Tuplestorestate* rows =
            store != nullptr ? store : tuplestore_begin_heap(false, false, work_mem);
        return SPI_register_relation(named_tuplestore(
            name.c_str(), desc, rows, static_cast<double>(tuplestore_tuple_count(rows))));
    });
    if (rc != SPI_OK_REL_REGISTER) {
        throw pgt::Error("XX000", "could not register relation \"" + name + "\"",
                         SPI_result_code_string(rc));
    }
    // The row type goes into the plan's key with the name: a partition's
    // transition tables may order the same columns differently, and a plan
    // reads columns by position.
    in_place_.emplace_back(name + "/" + std::to_string(desc->tdtypeid),
                           store != nullptr ? pg_call([&] {
                               return static_cast<double>(tuplestore_tuple_count(store));
                           })
                                            : 0.0);
}

SpiRows Spi::query_kept(const std::string& raw, Snapshot snapshot) {
    std::string holder;
    const std::string& sql = with_process_tag(raw, holder);
    InternalStatement internal(sql.c_str());
    std::vector<Oid> types;
    SPIPlanPtr* cached = &plan_cache_slot(sql, types);
    int rc = pg_call([&] {
        if (!keep_plan(*cached, sql, types, false)) {
            return SPI_result;
        }
        return snapshot != nullptr ? SPI_execute_snapshot(*cached, nullptr, nullptr, snapshot,
                                                          InvalidSnapshot, false, true, 0)
                                   : SPI_execute_plan(*cached, nullptr, nullptr, false, 0);
    });
    if (rc < 0) {
        throw pgt::Error("XX000", "internal statement failed", SPI_result_code_string(rc));
    }
    return collect();
}

SpiRows Spi::query_at(Snapshot snapshot, const std::string& sql,
                      const std::vector<SpiParam>& params, bool sized_plan) {
    run(sql, params, false, snapshot, sized_plan);
    return collect();
}

namespace {

// Registers `store` (rows of desc) as the ephemeral named relation `name`
// on the current SPI connection. A refresh that failed in a subtransaction
// on this connection may have left one of that name registered: it is
// replaced. Inside a PostgreSQL frame; raises.
void register_store(const char* name, TupleDesc desc, Tuplestorestate* store, double rows) {
    (void)SPI_unregister_relation(name);
    int reg = SPI_register_relation(named_tuplestore(name, desc, store, rows));
    if (reg != SPI_OK_REL_REGISTER) {
        elog(ERROR, "could not register relation \"%s\": %s", name, SPI_result_code_string(reg));
    }
}

// Receives the images statement's rows straight into the tuplestores,
// without an SPI tuple table in between. A row is one image (first column
// __pgt_is_old: whether it is a before-image), or, when the first column is
// __pgt_keep_old, a buffer row's pair (diff::paired_images: keep_old,
// keep_new, the before-image's columns, the after-image's). Descriptors and
// stores live in `cxt` (the connection's procedure context), not in the
// executor's.
struct ImageReceiver {
    DestReceiver pub;
    MemoryContext cxt;
    Tuplestorestate* stores[3];
    TupleDesc out;
    TupleDesc signed_out;
    Datum* values;
    bool* nulls;
    double counts[2];
    bool paired;
};

void images_startup(DestReceiver* self, int, TupleDesc in) {
    auto* r = reinterpret_cast<ImageReceiver*>(self);
    MemoryContext old = MemoryContextSwitchTo(r->cxt);
    r->paired =
        in->natts > 0 && strcmp(NameStr(TupleDescAttr(in, 0)->attname), sql::kKeepOldColumn) == 0;
    const int first = r->paired ? 2 : 1;  // columns before the image's own
    const int natts = r->paired ? (in->natts - 2) / 2 : in->natts - 1;
    r->out = CreateTemplateTupleDesc(natts);
    r->signed_out = CreateTemplateTupleDesc(natts + 1);
    for (int a = 1; a <= natts; a++) {
        TupleDescCopyEntry(r->out, static_cast<AttrNumber>(a), in,
                           static_cast<AttrNumber>(a + first));
        TupleDescCopyEntry(r->signed_out, static_cast<AttrNumber>(a), in,
                           static_cast<AttrNumber>(a + first));
    }
    TupleDescInitEntry(r->signed_out, static_cast<AttrNumber>(natts + 1), sql::kSignColumn, INT8OID,
                       -1, 0);
    r->values = static_cast<Datum*>(palloc(sizeof(Datum) * (static_cast<std::size_t>(natts) + 1)));
    r->nulls = static_cast<bool*>(palloc(sizeof(bool) * (static_cast<std::size_t>(natts) + 1)));
    MemoryContextSwitchTo(old);
}

// One image: which 0 (before) or 1 (after), its columns at values/nulls.
void put_image(ImageReceiver* r, int which, Datum* values, bool* nulls) {
    const int natts = r->out->natts;
    r->counts[which] += 1;
    if (r->stores[which] != nullptr) {
        tuplestore_putvalues(r->stores[which], r->out, values, nulls);
    }
    if (r->stores[2] != nullptr) {  // the same, then the sign
        for (int a = 0; a < natts; a++) {
            r->values[a] = values[a];
            r->nulls[a] = nulls[a];
        }
        r->values[natts] = Int64GetDatum(which == 0 ? -1 : 1);
        r->nulls[natts] = false;
        tuplestore_putvalues(r->stores[2], r->signed_out, r->values, r->nulls);
    }
}

bool images_receive(TupleTableSlot* slot, DestReceiver* self) {
    auto* r = reinterpret_cast<ImageReceiver*>(self);
    slot_getallattrs(slot);
    auto flag = [&](int i) { return !slot->tts_isnull[i] && DatumGetBool(slot->tts_values[i]); };
    if (!r->paired) {
        put_image(r, flag(0) ? 0 : 1, slot->tts_values + 1, slot->tts_isnull + 1);
        return true;
    }
    const int natts = r->out->natts;
    if (flag(0)) {
        put_image(r, 0, slot->tts_values + 2, slot->tts_isnull + 2);
    }
    if (flag(1)) {
        put_image(r, 1, slot->tts_values + 2 + natts, slot->tts_isnull + 2 + natts);
    }
    return true;
}

void images_shutdown(DestReceiver*) {}
void images_destroy(DestReceiver*) {}

}  // namespace

std::pair<uint64_t, uint64_t> Spi::register_images(Snapshot snapshot, const std::string& sql,
                                                   const std::vector<SpiParam>& params,
                                                   const std::string& old_name,
                                                   const std::string& new_name,
                                                   const std::string& delta_name) {
    const int n = static_cast<int>(params.size());
    std::vector<Oid> types(n);
    for (int i = 0; i < n; i++) {
        types[i] = params[i].type;
    }
    SPIPlanPtr* cached = &plan_cache_slot(sql, types);
    InternalStatement internal(sql.c_str());
    const std::string* names[3] = {&old_name, &new_name, &delta_name};
    double counts[3] = {0, 0, 0};
    int rc = pg_call([&] {
        if (!keep_plan(*cached, sql, types, false)) {
            return SPI_result;
        }
        // In the connection's procedure context: lives until SPI_finish.
        ImageReceiver r{};
        r.pub.receiveSlot = images_receive;
        r.pub.rStartup = images_startup;
        r.pub.rShutdown = images_shutdown;
        r.pub.rDestroy = images_destroy;
        r.pub.mydest = DestNone;
        r.cxt = CurrentMemoryContext;
        for (int i = 0; i < 3; i++) {
            r.stores[i] =
                names[i]->empty() ? nullptr : tuplestore_begin_heap(false, false, work_mem);
        }
        ParamListInfo pl = makeParamList(n);
        for (int i = 0; i < n; i++) {
            pl->params[i].value = params[static_cast<std::size_t>(i)].value;
            pl->params[i].isnull = params[static_cast<std::size_t>(i)].isnull;
            pl->params[i].pflags = PARAM_FLAG_CONST;
            pl->params[i].ptype = types[static_cast<std::size_t>(i)];
        }
        SPIExecuteOptions options{};
        options.params = pl;
        options.read_only = true;  // runs in the active snapshot: the refresh's
        options.dest = &r.pub;
        PushActiveSnapshot(snapshot);
        int result = SPI_execute_plan_extended(*cached, &options);
        PopActiveSnapshot();
        if (result < 0) {
            return result;
        }
        if (r.out == nullptr) {
            elog(ERROR, "images statement returned no row type");
        }
        counts[0] = r.counts[0];
        counts[1] = r.counts[1];
        counts[2] = counts[0] + counts[1];
        for (int i = 0; i < 3; i++) {
            if (r.stores[i] == nullptr) {
                continue;
            }
            stores_.push_back(r.stores[i]);
            register_store(names[i]->c_str(), i == 2 ? r.signed_out : r.out, r.stores[i],
                           counts[i]);
        }
        return result;
    });
    if (rc < 0) {
        throw pgt::Error("XX000", "internal statement failed", SPI_result_code_string(rc));
    }
    for (int i = 0; i < 3; i++) {
        if (!names[i]->empty()) {
            registered_.emplace_back(*names[i], counts[i]);
        }
    }
    return {static_cast<uint64_t>(counts[0]), static_cast<uint64_t>(counts[1])};
}

namespace {

// Receives a statement's rows into one tuplestore, its descriptor copied
// into `cxt` (the connection's procedure context).
struct RowsReceiver {
    DestReceiver pub;
    MemoryContext cxt;
    Tuplestorestate* store;
    TupleDesc desc;
};

void rows_startup(DestReceiver* self, int, TupleDesc in) {
    auto* r = reinterpret_cast<RowsReceiver*>(self);
    MemoryContext old = MemoryContextSwitchTo(r->cxt);
    r->desc = CreateTupleDescCopy(in);
    MemoryContextSwitchTo(old);
}

bool rows_receive(TupleTableSlot* slot, DestReceiver* self) {
    auto* r = reinterpret_cast<RowsReceiver*>(self);
    tuplestore_puttupleslot(r->store, slot);
    return true;
}

void rows_shutdown(DestReceiver*) {}
void rows_destroy(DestReceiver*) {}

}  // namespace

uint64_t Spi::register_rows(Snapshot snapshot, const std::string& raw, const std::string& name) {
    std::string holder;
    const std::string& sql = with_process_tag(raw, holder);
    InternalStatement internal(sql.c_str());
    double count = 0;
    auto execute = [&] {
        return pg_call([&] {
            RowsReceiver r{};
            r.pub.receiveSlot = rows_receive;
            r.pub.rStartup = rows_startup;
            r.pub.rShutdown = rows_shutdown;
            r.pub.rDestroy = rows_destroy;
            r.pub.mydest = DestNone;
            r.cxt = CurrentMemoryContext;
            r.store = tuplestore_begin_heap(false, false, work_mem);
            // One-shot: planned for this run with CURSOR_OPT_PARALLEL_OK, so a
            // parallel plan is possible (a kept plan is never parallel here).
            SPIExecuteOptions options{};
            options.read_only = true;  // runs in the active snapshot: the refresh's
            options.dest = &r.pub;
            PushActiveSnapshot(snapshot);
            int result = SPI_execute_extended(sql.c_str(), &options);
            PopActiveSnapshot();
            if (result < 0) {
                return result;
            }
            if (r.desc == nullptr) {
                elog(ERROR, "rows statement returned no row type");
            }
            count = static_cast<double>(tuplestore_tuple_count(r.store));
            stores_.push_back(r.store);
            register_store(name.c_str(), r.desc, r.store, count);
            return result;
        });
    };
    const int rc = search_path_is_pinned() ? execute() : with_pinned_search_path(execute);
    if (rc < 0) {
        throw pgt::Error("XX000", "internal statement failed", SPI_result_code_string(rc));
    }
    registered_.emplace_back(name, count);
    return static_cast<uint64_t>(count);
}

void Spi::forget_relations() {
    for (const auto& [name, rows] : registered_) {
        pg_call([&] { (void)SPI_unregister_relation(name.c_str()); });
    }
    registered_.clear();
    stores_.clear();
}

void Spi::unregister_relations() {
    for (const auto& [name, rows] : registered_) {
        pg_call([&] { (void)SPI_unregister_relation(name.c_str()); });
    }
    registered_.clear();
    // Their temporary files (past work_mem) go now, not at transaction end.
    for (Tuplestorestate* ts : stores_) {
        pg_call([&] { tuplestore_end(ts); });
    }
    stores_.clear();
}

SpiRows Spi::collect() {
    SpiRows out;
    out.processed = SPI_processed;
    if (SPI_tuptable == nullptr) {
        return out;
    }
    TupleDesc desc = SPI_tuptable->tupdesc;
    const uint64_t nrows = SPI_processed;
    const int ncols = desc->natts;
    // One guarded batch: output functions may raise; only raw pointers are
    // written inside it, strings are built after.
    std::vector<char*> cells(nrows * ncols, nullptr);
    pg_call([&] {
        for (uint64_t r = 0; r < nrows; r++) {
            for (int c = 0; c < ncols; c++) {
                cells[r * ncols + c] = SPI_getvalue(SPI_tuptable->vals[r], desc, c + 1);
            }
        }
    });
    out.rows.resize(nrows);
    for (uint64_t r = 0; r < nrows; r++) {
        out.rows[r].reserve(ncols);
        for (int c = 0; c < ncols; c++) {
            char* v = cells[r * ncols + c];
            out.rows[r].push_back(v ? std::optional<std::string>(v) : std::nullopt);
        }
    }
    return out;
}

std::optional<std::string> Spi::scalar(const std::string& sql,
                                       const std::vector<SpiParam>& params) {
    SpiRows r = query(sql, params, false);
    if (r.rows.empty() || r.rows[0].empty()) {
        return std::nullopt;
    }
    return r.rows[0][0];
}

}  // namespace pgt::pg
