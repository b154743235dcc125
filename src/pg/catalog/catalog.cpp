// Catalog access: parameterised SQL over pgtrickle.pgt_* tables.
// Invariant: writes switch to the catalog owner for exactly the statement,
// in a security-restricted operation with search_path pinned, and switch
// back on every path (as_role_restricted).
#include "pg/catalog/catalog.hpp"

#include <algorithm>

#include "pg/boundary/as_role.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/common/relation_names.hpp"

extern "C" {
#include "postgres.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_type.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

namespace pgt::pg::catalog {

using namespace pgt::catalog;

namespace {

const std::string kSt = std::string(kSchema) + "." + kStreamTables;
const std::string kDep = std::string(kSchema) + "." + kDependencies;
const std::string kHist = std::string(kSchema) + "." + kRefreshHistory;
const std::string kKeptTable = std::string(kSchema) + "." + kKept;

}  // namespace

Oid catalog_owner() {
    Oid rel =
        pg_call([] { return get_relname_relid(kStreamTables, get_namespace_oid(kSchema, false)); });
    return relation_owner(rel);
}

SpiRows query_as_owner(Spi& spi, const std::string& sql, const std::vector<SpiParam>& params) {
    // The extension's owner is a superuser: nothing the caller chose (its
    // search_path, its functions and operators) may be reached from here.
    return as_role_restricted(catalog_owner(), [&] { return spi.query(sql, params); });
}

std::string text_array_literal(const std::vector<std::string>& items) {
    std::string lit = "{";
    for (size_t i = 0; i < items.size(); i++) {
        lit += i ? ",\"" : "\"";
        for (char c : items[i]) {
            if (c == '"' || c == '\\') {
                lit += '\\';
            }
            lit += c;
        }
        lit += '"';
    }
    return lit + "}";
}

namespace {

const char* kSelectColumns =
    "pgt_id, pgt_relid::pg_catalog.oid, pgt_schema, pgt_name, defining_query, effective_query, "
    "schedule, "
    "requested_mode, refresh_mode, status, is_populated, row_identity_domain, "
    "row_identity_version, row_probe_version, delta_program, notify_channel, query_tree, "
    "reinit_reason, delta_version, delta_strategy, operator_tree, "
    "pg_catalog.array_to_string(query_settings, E'\\n'), requested_cdc_mode";

StreamTableRow row_from(const std::vector<std::optional<std::string>>& r) {
    StreamTableRow row;
    row.pgt_id = std::stoll(*r[0]);
    row.relid = static_cast<Oid>(std::stoul(*r[1]));
    row.schema = *r[2];
    row.name = *r[3];
    row.defining_query = *r[4];
    row.effective_query = *r[5];
    row.schedule = *r[6];
    std::optional<RefreshMode> requested = mode_named(*r[7]), effective = mode_named(*r[8]);
    if (!requested || !effective) {
        throw pgt::Error(sqlstate::kInternalError, "unknown refresh mode in the catalog");
    }
    row.requested_mode = *requested;
    row.refresh_mode = *effective;
    row.status = sched::status_named(*r[9]);
    row.is_populated = *r[10] == "t";
    std::optional<rowid::Domain> domain = rowid::domain_spelled(*r[11]);
    if (!domain) {
        throw pgt::Error(sqlstate::kInternalError,
                         "unknown row identity domain \"" + *r[11] + "\" in the catalog");
    }
    row.identity_domain = *domain;
    row.row_identity_version = std::stoi(*r[12]);
    row.row_probe_version = std::stoi(*r[13]);
    row.delta_program = r[14];
    row.notify_channel = r[15];
    row.query_tree = r[16];
    row.reinit_reason = r[17];
    if (r[18]) {
        row.delta_version = std::stoi(*r[18]);
    }
    row.delta_strategy = r[19];
    row.operator_tree = r[20];
    // (values of these settings hold no line break)
    for (std::size_t pos = 0; r[21] && pos < r[21]->size();) {
        const std::size_t end = std::min(r[21]->find('\n', pos), r[21]->size());
        row.query_settings.push_back(r[21]->substr(pos, end - pos));
        pos = end + 1;
    }
    row.requested_cdc_mode = r[22];
    return row;
}

// Completes a row with its identity columns, in order.
StreamTableRow with_identity_columns(Spi& spi, StreamTableRow row) {
    SpiRows cols = spi.query("SELECT c FROM " + kSt +
                                 " s, pg_catalog.unnest(s.row_identity_columns) WITH ORDINALITY"
                                 " AS u(c, n) WHERE s.pgt_id OPERATOR(pg_catalog.=) $1 ORDER BY n",
                             {int8_param(row.pgt_id)});
    for (const auto& c : cols.rows) {
        row.identity_columns.push_back(*c[0]);
    }
    return row;
}

}  // namespace

uint64_t exec_as_owner(Spi& spi, const std::string& sql, const std::vector<SpiParam>& params) {
    return query_as_owner(spi, sql, params).processed;
}

namespace {

std::optional<StreamTableRow> find_one(Spi& spi, const char* column, const SpiParam& value) {
    SpiRows rows = spi.query(std::string("SELECT ") + kSelectColumns + " FROM " + kSt + " WHERE " +
                                 column + " OPERATOR(pg_catalog.=) $1",
                             {value});
    if (rows.rows.empty()) {
        return std::nullopt;
    }
    return with_identity_columns(spi, row_from(rows.rows[0]));
}

}  // namespace

const char* library_version() {
    return PGT_VERSION;
}

std::string catalog_version(Spi& spi) {
    // Every API call asks: the plan is kept.
    SpiRows r = spi.query_kept(
        "SELECT extversion FROM pg_catalog.pg_extension WHERE extname "
        "OPERATOR(pg_catalog.=) 'pg_trickle'");
    return r.rows.empty() || !r.rows[0][0] ? "" : *r.rows[0][0];
}

void open_catalog(Spi& spi) {
    const std::string v = catalog_version(spi);
    if (v != library_version()) {
        throw pgt::Error("55000",
                         "pg_trickle's catalog in this database is version " + v +
                             ", its library version " + library_version(),
                         "The library was updated (or downgraded) without the catalog.",
                         "Run ALTER EXTENSION pg_trickle UPDATE in this database.");
    }
}

std::string instance(Spi& spi) {
    return spi.scalar("SELECT pgtrickle._instance()").value();
}

int64_t adopt_restored(Spi& spi, bool force) {
    // Every API call comes here: the test the function starts with, without
    // the cost of calling a SECURITY DEFINER PL/pgSQL function.
    SpiRows any = as_role_restricted(catalog_owner(), [&] {
        return spi.query_kept(
            "SELECT EXISTS (SELECT 1 FROM pgtrickle.pgt_stream_tables s, pgtrickle.pgt_instance i "
            "WHERE s.instance OPERATOR(pg_catalog.<>) i.id) OR EXISTS (SELECT 1 FROM "
            "pgtrickle.pgt_sources s, pgtrickle.pgt_instance i WHERE s.instance "
            "OPERATOR(pg_catalog.<>) i.id)");
    });
    if (any.rows.at(0).at(0) == "f") {
        return 0;
    }
    return std::stoll(
        query_as_owner(spi, "SELECT pgtrickle._adopt_restored($1)", {bool_param(force)})
            .rows.at(0)
            .at(0)
            .value());
}

std::optional<StreamTableRow> find_by_relid(Spi& spi, Oid relid) {
    return find_one(spi, "pgt_relid", oid_param(relid));
}

std::optional<StreamTableRow> find_by_id(Spi& spi, int64_t pgt_id) {
    return find_one(spi, "pgt_id", int8_param(pgt_id));
}

bool is_stream_table(Spi& spi, Oid relid) {
    return find_by_relid(spi, relid).has_value();
}

// Parameters shared by insert and update: $2..$24 in this order.
std::vector<SpiParam> definition_params(const StreamTableRow& row) {
    return {oid_param(row.relid),
            text_param(row.schema),
            text_param(row.name),
            text_param(row.defining_query),
            text_param(row.effective_query),
            text_param(row.schedule),
            text_param(std::string(mode_name(row.requested_mode))),
            text_param(std::string(mode_name(row.refresh_mode))),
            text_param(std::string(sched::status_name(row.status))),
            bool_param(row.is_populated),
            text_param(std::string(rowid::domain_spelling(row.identity_domain))),
            text_param(text_array_literal(row.identity_columns)),
            int8_param(row.row_identity_version),
            int8_param(row.row_probe_version),
            text_param(row.delta_program),
            text_param(row.notify_channel),
            text_param(row.query_tree),
            text_param(row.reinit_reason),
            row.delta_version ? int8_param(*row.delta_version) : SpiParam{INT4OID, (Datum)0, true},
            text_param(row.delta_strategy),
            text_param(row.operator_tree),
            text_param(text_array_literal(row.query_settings)),
            text_param(row.requested_cdc_mode)};
}

int64_t insert_stream_table(Spi& spi, const StreamTableRow& row) {
    std::vector<SpiParam> params = definition_params(row);
    params.insert(params.begin(), int8_param(0));  // $1 (pgt_id) unused: the sequence assigns it
    exec_as_owner(
        spi,
        "INSERT INTO " + kSt +
            " (pgt_relid, pgt_schema, pgt_name, defining_query, effective_query,"
            " schedule, requested_mode, refresh_mode, status, is_populated,"
            " row_identity_domain, row_identity_columns, row_identity_version,"
            " row_probe_version, delta_program, notify_channel, query_tree, reinit_reason,"
            " delta_version, delta_strategy, operator_tree, query_settings, requested_cdc_mode)"
            " VALUES ($2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::pg_catalog.text[], $14,"
            " $15, $16::pg_catalog.jsonb, $17, $18, $19, $20, $21, $22, $23::pg_catalog.text[],"
            " $24)",
        params);
    return find_by_relid(spi, row.relid).value().pgt_id;
}

void update_definition(Spi& spi, const StreamTableRow& row) {
    std::vector<SpiParam> params = definition_params(row);
    params.insert(params.begin(), int8_param(row.pgt_id));
    exec_as_owner(
        spi,
        "UPDATE " + kSt +
            " SET pgt_relid = $2, pgt_schema = $3, pgt_name = $4, defining_query = $5,"
            " effective_query = $6, schedule = $7, requested_mode = $8,"
            " refresh_mode = $9, status = $10, is_populated = $11,"
            " row_identity_domain = $12, row_identity_columns = $13::pg_catalog.text[],"
            " row_identity_version = $14, row_probe_version = $15, delta_program = "
            "$16::pg_catalog.jsonb,"
            " notify_channel = $17, query_tree = $18, reinit_reason = $19, delta_version = $20,"
            " delta_strategy = $21, operator_tree = $22, query_settings = $23::pg_catalog.text[],"
            " requested_cdc_mode = $24 WHERE pgt_id OPERATOR(pg_catalog.=) $1",
        params);
}

void mark_refreshed(Spi& spi, int64_t pgt_id) {
    exec_as_owner(spi,
                  "UPDATE " + kSt +
                      " SET is_populated = true, consecutive_errors = 0,"
                      " data_timestamp = pg_catalog.now(),"
                      " last_refresh_at = pg_catalog.clock_timestamp()"
                      " WHERE pgt_id OPERATOR(pg_catalog.=) $1",
                  {int8_param(pgt_id)});
}

void delete_stream_table(Spi& spi, int64_t pgt_id) {
    exec_as_owner(spi, "DELETE FROM " + kSt + " WHERE pgt_id OPERATOR(pg_catalog.=) $1",
                  {int8_param(pgt_id)});
}

void replace_dependencies(Spi& spi, int64_t pgt_id, const std::vector<Dependency>& deps) {
    exec_as_owner(spi, "DELETE FROM " + kDep + " WHERE pgt_id OPERATOR(pg_catalog.=) $1",
                  {int8_param(pgt_id)});
    for (const Dependency& d : deps) {
        std::optional<std::string> cols;
        if (d.columns_read) {
            cols = "{";
            for (int a : *d.columns_read) {
                *cols += (cols->size() > 1 ? "," : "") + std::to_string(a);
            }
            *cols += "}";
        }
        exec_as_owner(
            spi,
            "INSERT INTO " + kDep +
                " (pgt_id, source_relid, source_type, columns_read) VALUES ($1, $2, $3, "
                "$4::pg_catalog.int2[])",
            {int8_param(pgt_id), oid_param(d.relid), text_param(d.source_type), text_param(cols)});
    }
}

namespace {

// The storage's guard trigger depends on every column the query reads
// (pg_depend, as a trigger's UPDATE OF list does), in every refresh mode:
// PostgreSQL then refuses ALTER COLUMN ... TYPE (0A000) and DROP COLUMN
// (2BP01) of such a column, naming the stream table, instead of leaving a
// stream table that stores values of the old type or can no longer be
// maintained. (A dependency of the table itself would make ALTER TYPE fail
// with an internal error.) Runs inside pg_call.
void depend_on_columns_read(Oid st_relid, const std::vector<Dependency>& deps) {
    const Oid guard = get_trigger_oid(st_relid, "pgt_guard", true);
    if (!OidIsValid(guard)) {
        return;
    }
    deleteDependencyRecordsForClass(TriggerRelationId, guard, RelationRelationId,
                                    DEPENDENCY_NORMAL);
    ObjectAddress self{TriggerRelationId, guard, 0};
    for (const Dependency& d : deps) {
        for (int a : d.columns_read.value_or(std::vector<int>{})) {
            if (a > 0) {
                ObjectAddress column{RelationRelationId, d.relid, a};
                recordDependencyOn(&self, &column, DEPENDENCY_NORMAL);
            }
        }
    }
}

}  // namespace

void record_dependencies(Oid st_relid, const std::vector<Dependency>& deps,
                         const std::vector<Oid>& functions, const std::vector<Oid>& types) {
    pg_call([&] {
        // A stream table's storage has no other normal dependency on a
        // relation or a function (its schema, column types and owner are
        // other classes; its generated column's function is its default's).
        deleteDependencyRecordsForClass(RelationRelationId, st_relid, RelationRelationId,
                                        DEPENDENCY_NORMAL);
        deleteDependencyRecordsForClass(RelationRelationId, st_relid, ProcedureRelationId,
                                        DEPENDENCY_NORMAL);
        // Its columns depend on their types too (objsubid > 0): only the
        // table's own type dependencies (objsubid 0), recorded below, are
        // replaced. (deleteDependencyRecordsForSpecific would take the
        // columns' with them.)
        ScanKeyData key[2];
        ScanKeyInit(&key[0], Anum_pg_depend_classid, BTEqualStrategyNumber, F_OIDEQ,
                    ObjectIdGetDatum(RelationRelationId));
        ScanKeyInit(&key[1], Anum_pg_depend_objid, BTEqualStrategyNumber, F_OIDEQ,
                    ObjectIdGetDatum(st_relid));
        Relation dep = table_open(DependRelationId, RowExclusiveLock);
        SysScanDesc scan = systable_beginscan(dep, DependDependerIndexId, true, nullptr, 2, key);
        for (HeapTuple tup; HeapTupleIsValid(tup = systable_getnext(scan));) {
            auto* d = reinterpret_cast<Form_pg_depend>(GETSTRUCT(tup));
            if (d->objsubid == 0 && d->refclassid == TypeRelationId &&
                d->deptype == DEPENDENCY_NORMAL) {
                CatalogTupleDelete(dep, &tup->t_self);
            }
        }
        systable_endscan(scan);
        table_close(dep, RowExclusiveLock);
        ObjectAddress self{RelationRelationId, st_relid, 0};
        for (const Dependency& d : deps) {
            ObjectAddress source{RelationRelationId, d.relid, 0};
            recordDependencyOn(&self, &source, DEPENDENCY_NORMAL);
        }
        depend_on_columns_read(st_relid, deps);
        for (Oid f : functions) {  // built-in (pinned) ones are not recorded
            ObjectAddress func{ProcedureRelationId, f, 0};
            recordDependencyOn(&self, &func, DEPENDENCY_NORMAL);
        }
        for (Oid t : types) {  // so are built-in types
            ObjectAddress type{TypeRelationId, t, 0};
            recordDependencyOn(&self, &type, DEPENDENCY_NORMAL);
        }
        CommandCounterIncrement();
    });
}

void forget_dependency(Oid st_relid, Oid relid) {
    pg_call([&] {
        deleteDependencyRecordsForSpecific(RelationRelationId, st_relid, DEPENDENCY_NORMAL,
                                           RelationRelationId, relid);
        const Oid guard = get_trigger_oid(st_relid, "pgt_guard", true);
        if (OidIsValid(guard)) {  // the columns it reads (depend_on_columns_read)
            deleteDependencyRecordsForSpecific(TriggerRelationId, guard, DEPENDENCY_NORMAL,
                                               RelationRelationId, relid);
        }
        CommandCounterIncrement();
    });
}

std::vector<ReadRight> owner_reads(Spi& spi, int64_t pgt_id) {
    SpiRows r = spi.query(
        "SELECT source_relid::pg_catalog.oid, pg_catalog.array_to_string(columns_read, ',') FROM " +
            kDep + " WHERE pgt_id OPERATOR(pg_catalog.=) $1 AND columns_read IS NOT NULL",
        {int8_param(pgt_id)});
    std::vector<ReadRight> out;
    for (const auto& row : r.rows) {
        ReadRight rr{static_cast<Oid>(std::stoul(*row[0])), InvalidOid, {}};
        const std::string& list = row[1].value_or("");
        for (std::size_t pos = 0; pos < list.size();) {
            std::size_t comma = list.find(',', pos);
            rr.attnums.push_back(std::stoi(list.substr(pos, comma - pos)));
            pos = comma == std::string::npos ? list.size() : comma + 1;
        }
        out.push_back(std::move(rr));
    }
    return out;
}

void record_history(Spi& spi, const HistoryRow& h) {
    exec_as_owner(
        spi,
        "INSERT INTO " + kHist +
            " (pgt_id, action, status, initiated_by, rows_inserted, rows_deleted,"
            " start_time, end_time, reason, source_changes, kept_refill_ms)"
            " VALUES ($1, $2, 'SUCCESS', $3, $4, $5, $6::pg_catalog.timestamptz,"
            " pg_catalog.clock_timestamp(), $7, $8, $9)",
        {int8_param(h.pgt_id), text_param(h.action), text_param(h.initiated_by),
         int8_param(h.rows_inserted), int8_param(h.rows_deleted), text_param(h.start_time),
         text_param(h.reason),
         h.source_changes ? int8_param(*h.source_changes) : SpiParam{INT8OID, (Datum)0, true},
         typed_param(FLOAT8OID, h.kept_refill_ms ? std::optional(std::to_string(*h.kept_refill_ms))
                                                 : std::nullopt)});
}

void record_failed_refresh(Spi& spi, int64_t pgt_id, const std::string& action,
                           const std::string& initiated_by, const std::string& start_time,
                           const std::string& error, const std::string& status) {
    exec_as_owner(spi,
                  "INSERT INTO " + kHist +
                      " (pgt_id, action, status, initiated_by, start_time, end_time,"
                      " error_message) VALUES ($1, $2, $6, $3, $4::pg_catalog.timestamptz,"
                      " pg_catalog.clock_timestamp(), $5)",
                  {int8_param(pgt_id), text_param(action), text_param(initiated_by),
                   text_param(start_time), text_param(error), text_param(status)});
}

void set_health(Spi& spi, int64_t pgt_id, sched::Status status, int consecutive_errors) {
    exec_as_owner(spi,
                  "UPDATE " + kSt +
                      " SET status = $2, consecutive_errors = $3 WHERE pgt_id "
                      "OPERATOR(pg_catalog.=) $1 AND (status, consecutive_errors) IS DISTINCT "
                      "FROM ($2, $3)",
                  {int8_param(pgt_id), text_param(std::string(sched::status_name(status))),
                   int8_param(consecutive_errors)});
}

std::vector<StreamTableRow> dependents_of(Spi& spi, Oid relid) {
    SpiRows rows = spi.query(std::string("SELECT ") + kSelectColumns + " FROM " + kSt +
                                 " WHERE pgt_id IN (SELECT pgt_id FROM " + kDep +
                                 " WHERE source_relid OPERATOR(pg_catalog.=) $1) ORDER BY pgt_id",
                             {oid_param(relid)});
    std::vector<StreamTableRow> out;
    for (const auto& r : rows.rows) {
        out.push_back(with_identity_columns(spi, row_from(r)));
    }
    return out;
}

std::string clock_now(Spi& spi) {
    return spi.query_kept("SELECT pg_catalog.clock_timestamp()::pg_catalog.text")
        .rows.at(0)
        .at(0)
        .value();
}

void insert_kept_copy(Spi& spi, int64_t pgt_id, std::size_t source_pos, const std::string& table) {
    exec_as_owner(
        spi,
        "INSERT INTO " + kKeptTable +
            " (pgt_id, source_pos, copy_relid) VALUES ($1, $2, $3::pg_catalog.regclass)",
        {int8_param(pgt_id), int8_param(static_cast<int64_t>(source_pos)), text_param(table)});
}

std::vector<std::string> kept_copy_tables(Spi& spi, int64_t pgt_id) {
    SpiRows rows =
        spi.query("SELECT c.oid::pg_catalog.regclass::pg_catalog.text FROM " + kKeptTable +
                      " k JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) "
                      "k.copy_relid WHERE k.pgt_id OPERATOR(pg_catalog.=) $1",
                  {int8_param(pgt_id)});
    std::vector<std::string> out;
    for (const auto& row : rows.rows) {
        out.push_back(row.at(0).value());
    }
    return out;
}

void delete_kept_copies(Spi& spi, int64_t pgt_id) {
    exec_as_owner(spi, "DELETE FROM " + kKeptTable + " WHERE pgt_id OPERATOR(pg_catalog.=) $1",
                  {int8_param(pgt_id)});
}

uint64_t valid_kept_copies(Spi& spi, int64_t pgt_id) {
    SpiRows rows = spi.query("SELECT k.source_pos FROM " + kKeptTable +
                                 " k WHERE k.pgt_id OPERATOR(pg_catalog.=) $1 AND k.valid",
                             {int8_param(pgt_id)});
    uint64_t out = 0;
    for (const auto& row : rows.rows) {
        out |= uint64_t{1} << std::stoull(row.at(0).value());
    }
    return out;
}

void set_kept_copy_valid(Spi& spi, int64_t pgt_id, std::size_t source_pos) {
    exec_as_owner(spi,
                  "UPDATE " + kKeptTable +
                      " SET valid = true WHERE pgt_id OPERATOR(pg_catalog.=) $1 AND source_pos "
                      "OPERATOR(pg_catalog.=) $2",
                  {int8_param(pgt_id), int8_param(static_cast<int64_t>(source_pos))});
}

void invalidate_kept_copies(Spi& spi, int64_t pgt_id) {
    exec_as_owner(spi,
                  "UPDATE " + kKeptTable +
                      " SET valid = false WHERE pgt_id OPERATOR(pg_catalog.=) $1 AND valid",
                  {int8_param(pgt_id)});
}

void ensure_owner_rights(Spi& spi, int64_t pgt_id, Oid owner) {
    SpiRows r = query_as_owner(
        spi,
        "SELECT EXISTS (SELECT 1 FROM " + kKeptTable +
            " k JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) k.copy_relid WHERE "
            "k.pgt_id OPERATOR(pg_catalog.=) $1 AND c.relowner OPERATOR(pg_catalog.<>) $2)",
        {int8_param(pgt_id), oid_param(owner)});
    if (r.rows.at(0).at(0).value_or("f") == "t") {
        sync_owner_rights(spi, pgt_id);
    }
}

void sync_owner_rights(Spi& spi, int64_t pgt_id) {
    exec_as_owner(spi, std::string("SELECT ") + kSchema + "._sync_owner_rights($1)",
                  {int8_param(pgt_id)});
}

}  // namespace pgt::pg::catalog
