// SQL-callable lifecycle API: create / alter / drop / refresh.
// Invariant: every argument and the defining query are validated before
// anything is created; all changes happen in the caller's transaction, so
// an error leaves no storage table, trigger or catalog row behind.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/diff/aggregate.hpp"
#include "core/dag/graph.hpp"
#include "core/diff/program.hpp"
#include "core/error.hpp"
#include "core/refresh_mode.hpp"
#include "core/rowid/format.hpp"
#include "core/rowid/probe.hpp"
#include "core/sched/schedule.hpp"
#include "pg/cdc/change_notes.hpp"
#include "pg/analyze/defining_query.hpp"
#include "pg/rowid/identity_types.hpp"
#include "pg/api/advice.hpp"
#include "pg/api/args.hpp"
#include "pg/api/compat_args.hpp"
#include "pg/api/lifecycle.hpp"
#include "pg/api/names.hpp"
#include "pg/boundary/as_role.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"
#include "pg/boundary/spi.hpp"
#include "pg/boundary/subtransaction.hpp"
#include "pg/catalog/catalog.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/cdc/change_buffer.hpp"
#include "pg/cdc/frontier.hpp"
#include "pg/guard/storage_guard.hpp"
#include "pg/notify/stream_notify.hpp"
#include "pg/refresh/full_refresh.hpp"
#include "pg/refresh/immediate.hpp"
#include "pg/refresh/locks.hpp"
#include "pg/refresh/query_settings.hpp"
#include "pg/refresh/storage.hpp"
#include "pg/security/rights.hpp"

extern "C" {
#include "postgres.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(pgt_create_stream_table);
PG_FUNCTION_INFO_V1(pgt_alter_stream_table);
PG_FUNCTION_INFO_V1(pgt_refresh_stream_table);
PG_FUNCTION_INFO_V1(pgt_version);
PG_FUNCTION_INFO_V1(pgt_reinit_immediate);
PG_FUNCTION_INFO_V1(pgt_open_catalog);
}

namespace pgt::pg {
namespace {

std::string source_type_of(Spi& spi, const SourceRelation& s) {
    switch (s.relkind) {
        case 'r':
            return catalog::is_stream_table(spi, s.relid) ? "STREAM_TABLE" : "TABLE";
        case 'p':
            return "PARTITIONED_TABLE";
        case 'v':
            return "VIEW";
        case 'm':
            return "MATVIEW";
        case 'f':
            return "FOREIGN_TABLE";
        default:
            throw pgt::Error("0A000", "stream table query reads " + relation_display_name(s.relid) +
                                          ", a relation of an unsupported kind");
    }
}

// Each relation read, with the columns read as the owner (merged over the
// query's references to it; see pgt_dependencies.columns_read).
std::vector<catalog::Dependency> dependencies_of(Spi& spi, const AnalyzedQuery& q) {
    std::vector<catalog::Dependency> deps;
    for (const SourceRelation& s : q.sources) {
        catalog::Dependency d{s.relid, source_type_of(spi, s), std::nullopt};
        for (const ReadRight& r : q.reads) {
            if (r.relid != s.relid || OidIsValid(r.check_as)) {
                continue;
            }
            std::vector<int> cols = d.columns_read.value_or(std::vector<int>{});
            cols.insert(cols.end(), r.attnums.begin(), r.attnums.end());
            std::sort(cols.begin(), cols.end());
            cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
            d.columns_read = cols;
        }
        deps.push_back(std::move(d));
    }
    return deps;
}

// CREATE TABLE ... AS <query> WITH NO DATA: PostgreSQL derives the exact
// column types, typmods and collations from the analyzed query.
Oid create_storage(Spi& spi, const NewRelationName& target, const AnalyzedQuery& q) {
    std::string cols;
    for (const OutputColumn& c : q.columns) {
        cols += (cols.empty() ? "" : ", ") + quote_ident(c.name);
    }
    if (has_grouping_set_column(q)) {
        cols += std::string(", ") + kGroupingSetColumn;  // the effective query selects it last
    }
    std::string sql = "CREATE TABLE " + target.quoted() + (cols.empty() ? "" : " (" + cols + ")") +
                      " AS " + q.effective + " WITH NO DATA";
    with_pinned_search_path([&] {
        spi.exec(sql);
        add_identity_storage(spi, target.quoted(), q);
    });
    return target.lookup_oid();
}

// The first source whose capture DIFFERENTIAL maintenance of q would
// install or widen without the calling role's right to (rights.hpp,
// may_capture); InvalidOid when there is none.
Oid capture_blocked_on(Spi& spi, const AnalyzedQuery& q) {
    for (const auto& [relid, attnums] : capture_needs(q)) {
        if (!may_capture(relid, GetUserId()) && capture_would_change(spi, relid, attnums)) {
            return relid;
        }
    }
    return InvalidOid;
}

}  // namespace

std::string caller_search_path() {
    const char* path = pg_call([] { return GetConfigOptionByName("search_path", nullptr, false); });
    return path;
}

std::vector<OutputColumn> identity_columns_of(const AnalyzedQuery& q) {
    std::vector<OutputColumn> cols;
    for (int i : q.identity.key_columns) {
        cols.push_back(column_at(q, i));
    }
    return cols;
}

void check_maintainable(const AnalyzedQuery& q, Oid owner) {
    check_read_rights(q.reads, owner);
    check_identity_columns(identity_columns_of(q));
}

std::string star_warning(const AnalyzedQuery& q) {
    if (!q.selects_star) {
        return "";
    }
    std::string cols;
    for (const OutputColumn& c : q.columns) {
        cols += (cols.empty() ? "" : ", ") + quote_ident(c.name);
    }
    return "stream table query selects *, expanded to (" + cols + ")";
}

// The mode q will be maintained in for `owner` (0A000 when DIFFERENTIAL
// or IMMEDIATE was asked for and cannot maintain q, IMMEDIATE also over a
// subscription's table; 42501 when its capture needs a right the caller
// lacks); says why when AUTO chose FULL.
ResolvedMode resolve_mode_quietly(Spi& spi, const std::string& text, const AnalyzedQuery& q,
                                  Oid owner) {
    std::string blocker = q.differential_blocker;
    if (blocker.empty()) {
        // A FULL refresh matches rows by their images; incremental
        // maintenance groups them by equality.
        blocker = image_identity_blocker(identity_columns_of(q));
    }
    if (blocker.empty()) {
        const std::string rls = row_security_blocker(q.reads, owner);
        if (!rls.empty() && upper_trimmed_mode(text) == "DIFFERENTIAL") {
            throw pgt::Error("0A000", "DIFFERENTIAL refresh cannot maintain a query over " + rls,
                             "A change buffer row carries no row-level security policy; only a "
                             "FULL refresh reads the table as the owner and sees what the owner "
                             "may see.",
                             "Use refresh_mode => 'FULL', or 'AUTO', which picks FULL.");
        }
        blocker = rls;
    }
    // (IMMEDIATE puts triggers of its own on every table: checked below.)
    if (blocker.empty() && upper_trimmed_mode(text) != "FULL" &&
        upper_trimmed_mode(text) != "IMMEDIATE") {
        const Oid blocked = capture_blocked_on(spi, q);
        if (OidIsValid(blocked) && upper_trimmed_mode(text) == "DIFFERENTIAL") {
            check_capture_right(blocked);  // 42501 naming the table
        }
        if (OidIsValid(blocked)) {
            blocker = "table " + relation_display_name(blocked) +
                      ", on which the role has no right to create a capture trigger";
        }
    }
    std::string immediate = blocker.empty() ? immediate_blocker(q) : blocker;
    if (immediate.empty() && upper_trimmed_mode(text) == "IMMEDIATE") {
        // Its triggers are its own: always installed, never shared, on
        // every table a join or subquery reads.
        for (Oid relid : immediate_trigger_tables(q)) {
            if (!may_capture(relid, GetUserId())) {
                check_capture_right(relid);  // 42501 naming the table
            }
        }
        // (AUTO never picks IMMEDIATE: only asking for it is refused.)
        refuse_subscribed(spi, q);
    }
    return resolve_refresh_mode(text, blocker, q.auto_full_reason, q.blocker_is_limit, immediate);
}

const char* const kStarDetail =
    "Columns added to its sources later do not appear in the stream table; name the columns in "
    "the query to make that visible.";

ResolvedMode resolve_mode(Spi& spi, const std::string& text, const AnalyzedQuery& q, Oid owner) {
    ResolvedMode mode = resolve_mode_quietly(spi, text, q, owner);
    notice(mode.notice);
    return mode;
}

std::string attribute_name(Oid relid, int attnum) {
    char* name =
        pg_call([&] { return get_attname(relid, static_cast<AttrNumber>(attnum), false); });
    return name;
}

// A DIFFERENTIAL refresh reads `relid` through the columns `attnums`. Unless
// an index serves that lookup — its leading columns are exactly these
// (`whole_prefix`) or its first column is one of them — the index to
// create (never created on a user's table silently).
std::optional<IndexAdvice> advise_index(Spi& spi, Oid relid, const std::vector<int>& attnums,
                                        bool whole_prefix, const std::string& what,
                                        const std::string& before, const std::string& after) {
    std::vector<int> sorted = attnums;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    std::string arr = "{", names;
    for (size_t i = 0; i < sorted.size(); i++) {
        arr += (i ? "," : "") + std::to_string(sorted[i]);
    }
    std::vector<int> seen;
    for (int a : attnums) {  // the hint lists them in query order, once each
        if (std::find(seen.begin(), seen.end(), a) == seen.end()) {
            seen.push_back(a);
            names += (names.empty() ? "" : ", ") + quote_ident(attribute_name(relid, a));
        }
    }
    const std::string leading =
        whole_prefix ? "(SELECT pg_catalog.array_agg(a ORDER BY a) FROM pg_catalog.unnest(((i."
                       "indkey::pg_catalog.int2[])[0:$3 - 1])) a) OPERATOR(pg_catalog.=) "
                       "$2::pg_catalog.int2[]"
                     : "i.indkey[0] OPERATOR(pg_catalog.=) ANY ($2::pg_catalog.int2[]) AND $3 > 0";
    bool served = spi.scalar(
                      "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid "
                      "OPERATOR(pg_catalog.=) $1 AND i.indpred IS NULL AND i.indisvalid "
                      "AND " +
                          leading + ")",
                      {oid_param(relid), text_param(arr + "}"),
                       int8_param(static_cast<int64_t>(sorted.size()))}) == "t";
    if (served) {
        return std::nullopt;
    }
    std::string table = quoted_relation_name(relid);
    return IndexAdvice{"no index on " + table + " serves the " + what + " (" + names + ")",
                       "Each DIFFERENTIAL refresh " + before + table + after +
                           " through these columns; without an index that reads the whole table.",
                       "CREATE INDEX ON " + table + " (" + names + ");"};
}

// GROUP BY reads the touched groups through their keys; a join reads each
// table through its equality columns (the other table's changed keys lead
// there).
std::vector<IndexAdvice> index_advice(Spi& spi, const AnalyzedQuery& q, RefreshMode mode) {
    std::vector<IndexAdvice> out;
    if (mode != RefreshMode::kDifferential) {
        return out;
    }
    auto add = [&](std::optional<IndexAdvice> a) {
        if (a) {
            out.push_back(std::move(*a));
        }
    };
    // Algebraic aggregates read a group's rows only when its MIN or MAX
    // goes (or a numeric sum turns NaN or infinite: rare).
    const ir::Node* algebraic = diff::algebraic_aggregate(q.operators);
    bool reads_groups = algebraic == nullptr;
    for (const ir::AlgebraicAgg& x :
         algebraic ? algebraic->algebraic_aggs : std::vector<ir::AlgebraicAgg>{}) {
        reads_groups = reads_groups || x.kind == ir::AggKind::kMin || x.kind == ir::AggKind::kMax;
    }
    if (q.scan.grouped && !q.scan.group_attnums.empty() && reads_groups) {
        add(advise_index(spi, q.scan.source_relid, q.scan.group_attnums, true, "grouping columns",
                         q.scan.algebraic
                             ? "recomputes a group whose MIN or MAX was deleted by reading "
                             : "recomputes the groups it touches by reading ",
                         ""));
    }
    for (std::size_t i = 0; q.region.present && i < q.region.relids.size(); i++) {
        if (!q.region.equi_attnums[i].empty()) {
            add(advise_index(spi, q.region.relids[i], q.region.equi_attnums[i], false,
                             "join columns", "looks up the rows of ",
                             " that join a changed row of another table"));
        }
    }
    for (int side = 0; q.join.present && side < 2; side++) {
        if (!q.join.equi_attnums[side].empty()) {
            add(advise_index(spi, q.join.relids[side], q.join.equi_attnums[side], false,
                             "join columns", "looks up the rows of ",
                             " that join a changed row of the other table"));
        }
    }
    return out;
}

namespace {

// Seed EC-15: a * in the select list is expanded once, here.
void warn_about_star(const AnalyzedQuery& q) {
    const std::string star = star_warning(q);
    if (!star.empty()) {
        warning(star, kStarDetail);
    }
}

// Says each index a DIFFERENTIAL refresh of q wants in a NOTICE.
void advise_indexes(Spi& spi, const AnalyzedQuery& q, RefreshMode mode) {
    for (const IndexAdvice& a : index_advice(spi, q, mode)) {
        notice_with_hint(a.message, a.detail, a.create);
    }
}

// Records q's row identity shape in row (domain, columns, format versions).
void set_identity(catalog::StreamTableRow& row, const AnalyzedQuery& q) {
    row.identity_domain = q.identity.domain;
    row.identity_columns.clear();
    for (int i : q.identity.key_columns) {
        row.identity_columns.push_back(column_at(q, i).name);
    }
    row.row_identity_version = rowid::kVersion;
    row.row_probe_version = rowid::kProbeVersion;
}

}  // namespace

void create_stream_table(const Args& a) {
    std::string name = a.required_text(0, "name");
    std::string query = a.required_text(1, "query");
    std::string schedule = sched::parse_schedule(a.text_or(2, "calculated")).canonical;
    std::string mode_text = a.text_or(3, "AUTO");
    bool initialize = a.bool_or(4, true);
    const CompatArgs compat = compat_args(a);
    std::optional<std::string> notify = named_text(a, "notify");
    if (notify) {
        check_notify_channel(*notify);
    }

    NewRelationName target = resolve_new_relation_name(name);
    AnalyzedQuery q = analyze_defining_query(query);
    // The caller will own it: it must be able to read what it reads,
    // whatever `initialize` says (refreshes run with the owner's rights).
    check_maintainable(q, GetUserId());
    warn_about_star(q);

    Spi spi = Spi::connect();
    open_stream_tables(spi);
    ResolvedMode mode = resolve_mode(spi, mode_text, q, GetUserId());
    if (mode.effective == RefreshMode::kImmediate && !initialize) {
        throw pgt::Error("22023", "an IMMEDIATE stream table is populated when it is created",
                         "Its sources' statements apply their changes to its rows from then on.",
                         "Omit initialize => false, or use another refresh_mode.");
    }
    const bool old_snapshot = pg_call([] { return IsolationUsesXactSnapshot(); });
    if (mode.effective == RefreshMode::kImmediate && old_snapshot) {
        // Rows committed after this transaction's snapshot and before its
        // triggers exist would be in neither the population nor a statement.
        throw pgt::Error("25001",
                         "an IMMEDIATE stream table cannot be created in a REPEATABLE READ or "
                         "SERIALIZABLE transaction",
                         "Its population reads the transaction's snapshot, which misses rows "
                         "other transactions commit before its triggers exist.",
                         "Create it in a READ COMMITTED transaction.");
    }
    advise_indexes(spi, q, mode.effective);
    std::vector<catalog::Dependency> deps = dependencies_of(spi, q);
    catalog::StreamTableRow row;
    row.relid = create_storage(spi, target, q);
    row.schema = target.schema;
    row.name = target.relname;
    row.defining_query = q.original;
    row.effective_query = q.effective;
    row.query_tree = q.tree;
    row.schedule = schedule;
    row.requested_mode = mode.requested;
    row.refresh_mode = mode.effective;
    row.status = sched::Status::Active;
    set_identity(row, q);
    row.notify_channel = notify;
    row.requested_cdc_mode = compat.cdc_mode;
    row.query_settings = current_query_settings();
    if (old_snapshot) {
        // Rows committed after the transaction's snapshot and before the
        // capture existed are neither populated nor captured: the first
        // refresh recomputes, under a snapshot that sees them.
        row.reinit_reason =
            "created in a REPEATABLE READ or SERIALIZABLE transaction, whose snapshot may miss "
            "rows committed before its change capture existed";
    }
    row.pgt_id = catalog::insert_stream_table(spi, row);
    catalog::replace_dependencies(spi, row.pgt_id, deps);
    catalog::record_dependencies(row.relid, deps, q.functions, q.types);
    prepare_maintenance(spi, row, q);
    if (initialize) {
        full_refresh(spi, row, "CREATE", "initial population");
    }
    sync_notify_trigger(spi, row);  // after the initial population: no INSERT per row
    spi.close();
}

namespace {

// Refuses a new query of `row` that would make stream tables read each other
// in a cycle (3F000 naming the path). Edges: stream table -> stream tables
// whose recorded sources include it.
void check_no_cycle(Spi& spi, const catalog::StreamTableRow& row, const AnalyzedQuery& q) {
    SpiRows st = spi.query(
        "SELECT pgt_id, pgt_relid::pg_catalog.oid, pg_catalog.quote_ident(pgt_schema) || '.' "
        "|| pg_catalog.quote_ident(pgt_name) FROM pgtrickle.pgt_stream_tables");
    dag::Graph graph;
    std::map<Oid, int64_t> by_relid;
    std::map<int64_t, std::string> names;
    for (const auto& r : st.rows) {
        int64_t id = std::stoll(*r[0]);
        graph.add_node(id);
        by_relid[static_cast<Oid>(std::stoul(*r[1]))] = id;
        names[id] = *r[2];
    }
    SpiRows deps =
        spi.query("SELECT pgt_id, source_relid::pg_catalog.oid FROM pgtrickle.pgt_dependencies");
    for (const auto& d : deps.rows) {
        auto up = by_relid.find(static_cast<Oid>(std::stoul(*d[1])));
        if (up != by_relid.end()) {
            graph.add_edge(up->second, std::stoll(*d[0]));
        }
    }
    std::vector<int64_t> upstreams;
    for (const SourceRelation& s : q.sources) {
        auto up = by_relid.find(s.relid);
        if (up != by_relid.end()) {
            upstreams.push_back(up->second);
        }
    }
    dag::check_no_cycle(graph, row.pgt_id, upstreams, [&](int64_t id) { return names.at(id); });
}

// What users add to a stream table's storage that a rebuild must keep:
// GRANTs (table and column), comments, and their own indexes, as the
// statements that make them again on storage of the same name. Column
// grants and comments only for columns the new storage has. Read and
// replayed under the pinned search_path (every name qualified).
std::vector<std::string> storage_decorations(Spi& spi, Oid relid, const std::string& quoted,
                                             const std::vector<OutputColumn>& columns) {
    std::vector<std::string> names;
    for (const OutputColumn& c : columns) {
        names.push_back(c.name);
    }
    const char* kSql =
        "WITH g AS (SELECT a.privilege_type AS p, a.is_grantable AS w, CASE WHEN a.grantee "
        "OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(r.rolname) END AS "
        "who, NULL::pg_catalog.name AS col FROM pg_catalog.pg_class c, "
        "pg_catalog.aclexplode(c.relacl) a LEFT JOIN pg_catalog.pg_roles r ON r.oid "
        "OPERATOR(pg_catalog.=) a.grantee WHERE c.oid OPERATOR(pg_catalog.=) $1 AND a.grantee "
        "OPERATOR(pg_catalog.<>) c.relowner "
        "UNION ALL SELECT a.privilege_type, a.is_grantable, CASE WHEN a.grantee "
        "OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(r.rolname) END, "
        "att.attname FROM pg_catalog.pg_attribute att, pg_catalog.aclexplode(att.attacl) a LEFT "
        "JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) a.grantee WHERE att.attrelid "
        "OPERATOR(pg_catalog.=) $1 AND att.attnum OPERATOR(pg_catalog.>) 0 AND NOT "
        "att.attisdropped AND att.attname::pg_catalog.text OPERATOR(pg_catalog.=) ANY "
        "($3::pg_catalog.text[])) "
        "SELECT 1, pg_catalog.format('GRANT %s%s ON %s TO %s%s', g.p, CASE WHEN g.col IS NULL "
        "THEN '' ELSE pg_catalog.format(' (%I)', g.col) END, $2, g.who, CASE WHEN g.w THEN ' "
        "WITH GRANT OPTION' ELSE '' END) FROM g "
        "UNION ALL SELECT 2, pg_catalog.format('COMMENT ON TABLE %s IS %L', $2, "
        "pg_catalog.obj_description($1, 'pg_class')) WHERE pg_catalog.obj_description($1, "
        "'pg_class') IS NOT NULL "
        "UNION ALL SELECT 2, pg_catalog.format('COMMENT ON COLUMN %s.%I IS %L', $2, att.attname, "
        "pg_catalog.col_description($1, att.attnum)) FROM pg_catalog.pg_attribute att WHERE "
        "att.attrelid OPERATOR(pg_catalog.=) $1 AND att.attnum OPERATOR(pg_catalog.>) 0 AND NOT "
        "att.attisdropped AND pg_catalog.col_description($1, att.attnum) IS NOT NULL AND "
        "att.attname::pg_catalog.text OPERATOR(pg_catalog.=) ANY ($3::pg_catalog.text[]) "
        "UNION ALL SELECT 3, pg_catalog.pg_get_indexdef(i.indexrelid) FROM pg_catalog.pg_index i "
        "JOIN pg_catalog.pg_class ic ON ic.oid OPERATOR(pg_catalog.=) i.indexrelid WHERE "
        "i.indrelid OPERATOR(pg_catalog.=) $1 AND ic.relname::pg_catalog.text NOT LIKE "
        "'pgt\\_%' AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a WHERE a.attrelid "
        "OPERATOR(pg_catalog.=) i.indrelid AND a.attnum OPERATOR(pg_catalog.=) ANY "
        "(i.indkey::pg_catalog.int2[]) AND a.attname::pg_catalog.text LIKE '\\_\\_pgt\\_%') "
        "ORDER BY 1, 2";
    SpiRows r = with_pinned_search_path([&] {
        return spi.query(kSql, {oid_param(relid), text_param(quoted),
                                text_param(catalog::text_array_literal(names))});
    });
    std::vector<std::string> out;
    for (const auto& row : r.rows) {
        out.push_back(*row.at(1));
    }
    return out;
}

// Makes them again on the rebuilt storage; an index the new columns cannot
// serve (it names a column that is gone) is left out with a NOTICE.
void restore_decorations(Spi& spi, const std::vector<std::string>& statements) {
    for (const std::string& sql : statements) {
        if (sql.rfind("CREATE ", 0) != 0) {
            with_pinned_search_path([&] { spi.exec(sql); });
            continue;
        }
        try {
            in_subtransaction([&] {
                with_pinned_search_path([&] { spi.exec(sql); });
                return 0;
            });
        } catch (const pgt::Error& e) {
            notice("index not made again on the rebuilt stream table: " + sql + " (" + e.what() +
                   ")");
        }
    }
}

// Replaces the defining query; keeps the storage table when the output
// columns are unchanged, otherwise rebuilds it (dependent views block this
// with PostgreSQL's own error).
// The search_path of the session that called alter_stream_table with a new
// query: its names resolve as that session wrote them, though the
// redefinition runs as the owner with the path pinned.
std::optional<std::string> g_caller_search_path;

AnalyzedQuery replace_query(Spi& spi, catalog::StreamTableRow& row, const std::string& query,
                            bool stored, bool cascade, std::vector<int64_t>& readers_to_redo) {
    AnalyzedQuery q =
        stored ? with_pinned_search_path([&] { return analyze_defining_query(query, true); })
               : with_settings_level([&] {
                     if (g_caller_search_path) {
                         pin_setting("search_path", g_caller_search_path->c_str());
                     }
                     return analyze_defining_query(query);
                 });
    check_maintainable(q, relation_owner(row.relid));
    warn_about_star(q);
    for (const SourceRelation& s : q.sources) {
        if (s.relid == row.relid) {
            throw pgt::Error("3F000",
                             "stream table query of " + relation_display_name(row.relid) +
                                 " reads the stream table itself",
                             "A stream table cannot depend on its own contents.", "");
        }
    }
    check_no_cycle(spi, row, q);
    std::vector<std::string> old_identity = row.identity_columns;
    bool same_identity = row.identity_domain == q.identity.domain;
    set_identity(row, q);
    same_identity = same_identity && row.identity_columns == old_identity;
    if (!storage_matches(row.relid, q.columns) || !same_identity) {
        // Stream tables reading this one were built on its columns.
        std::vector<catalog::StreamTableRow> readers = catalog::dependents_of(spi, row.relid);
        if (!readers.empty() && !cascade) {
            std::string list;
            for (const auto& r : readers) {
                list += (list.empty() ? "" : ", ") + quoted_relation_name(r.relid);
            }
            throw pgt::Error("2BP01",
                             "cannot change the output columns of stream table " +
                                 relation_display_name(row.relid) +
                                 " because other stream tables read it",
                             "Stream tables reading it: " + list + ".",
                             "Use cascade => true to redefine them over the new columns too (each "
                             "is analysed again and recomputed), or drop them first.");
        }
        for (const auto& r : readers) {
            catalog::forget_dependency(r.relid, row.relid);
            readers_to_redo.push_back(r.pgt_id);
        }
        NewRelationName target = existing_relation_name(row.relid);
        Oid old_relid = row.relid;
        const std::vector<std::string> decorations =
            storage_decorations(spi, old_relid, target.quoted(), q.columns);
        row.relid = InvalidOid;  // detach first: the drop hook must not remove the row
        catalog::update_definition(spi, row);
        spi.exec("DROP TABLE " + quoted_relation_name(old_relid));
        row.relid = create_storage(spi, target, q);
        restore_decorations(spi, decorations);
    }
    row.defining_query = q.original;
    row.effective_query = q.effective;
    row.query_tree = q.tree;
    catalog::update_definition(spi, row);
    std::vector<catalog::Dependency> deps = dependencies_of(spi, q);
    catalog::replace_dependencies(spi, row.pgt_id, deps);
    catalog::record_dependencies(row.relid, deps, q.functions, q.types);
    return q;
}

// The stored query analysed again as it reads now (deparsed from its tree:
// renamed objects under their new names), checked against the owner's
// rights and the storage, with its dependencies recorded again.
AnalyzedQuery reanalyze(Spi& spi, catalog::StreamTableRow& row) {
    const std::string text =
        row.query_tree ? deparse_stored_query(*row.query_tree) : row.effective_query;
    AnalyzedQuery q = with_pinned_search_path([&] { return analyze_defining_query(text, true); });
    check_read_rights(q.reads, relation_owner(row.relid));
    if (!storage_matches(row.relid, q.columns)) {
        throw pgt::Error("55000",
                         "the output columns of stream table " + relation_display_name(row.relid) +
                             "'s query changed",
                         "Its query now reads: " + q.effective,
                         "Give it a query with the stored columns (alter_stream_table with "
                         "query =>), or drop and create it again.");
    }
    if (q.effective != row.effective_query) {
        // What it now reads, as a view's definition shows (views it reads
        // by name, as written).
        row.defining_query = q.tree.empty() ? q.effective : deparse_stored_query(q.tree);
    }
    row.effective_query = q.effective;
    row.query_tree = q.tree;
    std::vector<catalog::Dependency> deps = dependencies_of(spi, q);
    catalog::replace_dependencies(spi, row.pgt_id, deps);
    catalog::record_dependencies(row.relid, deps, q.functions, q.types);
    return q;
}

// A new query (or the stored one, query unset) and mode for row, its
// maintenance rebuilt and its rows recomputed. With cascade, the stream
// tables reading row whose storage had to be rebuilt are redefined over it
// too (as their owners, from their stored text, which names row's storage).
void redefine(Spi& spi, catalog::StreamTableRow& row, const std::optional<std::string>& query,
              bool stored, const std::optional<std::string>& mode_text, bool cascade,
              const std::string& reason) {
    // The mode is resolved against the query it will maintain: the new one,
    // or the stored one (schema-qualified, analyzed under the pinned path).
    std::vector<int64_t> readers;
    AnalyzedQuery q =
        query ? replace_query(spi, row, *query, stored, cascade, readers) : reanalyze(spi, row);
    ResolvedMode mode = resolve_mode(spi, mode_text.value_or(mode_name(row.requested_mode)), q,
                                     relation_owner(row.relid));
    row.requested_mode = mode.requested;
    row.refresh_mode = mode.effective;
    row.reinit_reason.reset();  // what a reinitialisation would do is done here
    if ((query && !stored) || row.query_settings.empty()) {
        row.query_settings = current_query_settings();  // a new definition's
    }
    advise_indexes(spi, q, mode.effective);
    prepare_maintenance(spi, row, q);
    full_refresh(spi, row, "ALTER", reason);
    sync_notify_trigger(spi, row);  // also after a rebuilt storage (its trigger went with it)
    if (query) {
        // A rebuilt storage was filled before its trigger existed, and a
        // listener's reads may name columns that are gone.
        notify_resync(row, reason);
    }
    for (int64_t id : readers) {
        std::optional<catalog::StreamTableRow> r = catalog::find_by_id(spi, id);
        if (!r) {
            continue;
        }
        as_role_restricted(relation_owner(r->relid), [&] {
            redefine(spi, *r, r->effective_query, true, std::nullopt, true,
                     "stream table " + relation_display_name(row.relid) + " it reads redefined");
        });
    }
}

// Whether row's requested mode resolves to the mode its refreshes run now,
// its stored query analysed again as its owner, restricted.
bool resolves_as_before(Spi& spi, const catalog::StreamTableRow& row) {
    const Oid owner = relation_owner(row.relid);
    return as_role_restricted(owner, [&] {
        const std::string text =
            row.query_tree ? deparse_stored_query(*row.query_tree) : row.effective_query;
        AnalyzedQuery q =
            with_pinned_search_path([&] { return analyze_defining_query(text, true); });
        return resolve_mode_quietly(spi, mode_name(row.requested_mode), q, owner).effective ==
               row.refresh_mode;
    });
}

}  // namespace

void alter_stream_table(const AlterRequest& r) {
    Spi spi = Spi::connect();
    open_stream_tables(spi);
    catalog::StreamTableRow row = resolve_stream_table(spi, r.name, /*must_own=*/true);
    if (r.schedule) {
        row.schedule = sched::parse_schedule(*r.schedule).canonical;
    }
    if (r.status) {
        row.status = parse_status(*r.status);
    }
    if (r.notify_given) {
        row.notify_channel = r.notify;
    }
    if (r.cdc_mode) {
        row.requested_cdc_mode = r.cdc_mode;
    }
    if (r.status) {  // resuming (or suspending) by hand starts the error count again
        catalog::set_health(spi, row.pgt_id, row.status, 0);
    }
    // The mode it already has, resolving as it did: nothing to rebuild or
    // recompute (tools that declare a stream table's settings pass them on
    // every run). AUTO asked again may resolve otherwise now (a setting or
    // a right changed): then it is rebuilt, as for another mode.
    const bool new_mode = r.mode && (upper_trimmed_mode(*r.mode) != mode_name(row.requested_mode) ||
                                     row.reinit_reason || !resolves_as_before(spi, row));
    if (!r.query && !new_mode) {
        catalog::update_definition(spi, row);
        sync_notify_trigger(spi, row);
        spi.close();
        return;
    }
    // Analysis, index advice (which plans the query), setup and the refresh
    // run as the owner, restricted: a superuser altering another role's
    // stream table must not run that role's functions with its own rights.
    struct CallerPath {
        CallerPath() { g_caller_search_path = caller_search_path(); }
        ~CallerPath() { g_caller_search_path.reset(); }
    } caller_path;
    as_role_restricted(relation_owner(row.relid), [&] {
        redefine(spi, row, r.query, false, new_mode ? r.mode : std::nullopt, r.cascade,
                 r.query ? "defining query replaced" : "refresh mode changed");
    });
    spi.close();
}

namespace {

void alter_from_args(const Args& a) {
    AlterRequest r;
    r.name = a.required_text(0, "name");
    r.query = a.optional_text(1);
    r.schedule = a.optional_text(2);
    r.mode = a.optional_text(3);
    r.status = a.optional_text(4);
    r.cdc_mode = compat_args(a).cdc_mode;
    // notify: omitted ('') leaves it unchanged, NULL removes it.
    const int notify = a.position("notify");
    r.notify = a.optional_text(notify);
    r.notify_given = !r.notify || !r.notify->empty();
    if (r.notify_given && r.notify) {
        check_notify_channel(*r.notify);
    }
    r.cascade = a.bool_or(a.position("cascade"), false);
    alter_stream_table(r);
}

// A reinitialisation whose query now proves another row identity (a newer
// library proves keys an older one did not) moves the storage to it: its
// rows go, within this transaction (readers keep seeing them until commit;
// the FULL refresh that follows writes them again under the new identity),
// and the probe index is made again for it.
void adopt_identity(Spi& spi, catalog::StreamTableRow& row, const AnalyzedQuery& q) {
    const rowid::Domain old_domain = row.identity_domain;
    const std::vector<std::string> old_columns = row.identity_columns;
    set_identity(row, q);
    if (row.identity_domain == old_domain && row.identity_columns == old_columns) {
        return;
    }
    {
        RefreshWriteScope writing(row.relid);
        spi.exec("DELETE FROM " + quoted_relation_name(row.relid));
    }
    replace_identity_index(spi, row.relid, q);
    catalog::update_definition(spi, row);
}

}  // namespace

RefreshResult reinitialize(Spi& spi, catalog::StreamTableRow& row,
                           const std::string& initiated_by) {
    const Oid owner = relation_owner(row.relid);
    return as_role_restricted(owner, [&]() -> RefreshResult {
        lock_stream_table_for_refresh(row.pgt_id);
        // Another session may have done it while this one waited.
        std::optional<catalog::StreamTableRow> now = catalog::find_by_relid(spi, row.relid);
        if (!now) {
            throw pgt::Error("42P01",
                             "stream table " + relation_display_name(row.relid) + " was dropped");
        }
        row = *now;
        if (!row.reinit_reason) {
            return refresh(spi, row, initiated_by, "");
        }
        const std::string why = *row.reinit_reason + ": reinitialised";
        AnalyzedQuery q = reanalyze(spi, row);
        adopt_identity(spi, row, q);
        ResolvedMode mode = resolve_mode(spi, mode_name(row.requested_mode), q, owner);
        row.refresh_mode = mode.effective;
        row.reinit_reason.reset();
        prepare_maintenance(spi, row, q);
        // Capture disabled (what may have marked it) fires ALWAYS again
        // before this recompute; other readers are marked already.
        (void)repair_disabled_capture(spi, row.pgt_id);
        RefreshResult result = full_refresh(spi, row, initiated_by, why);
        notify_resync(row, why);
        return result;
    });
}

namespace {

void refresh_stream_table(const Args& a) {
    std::string name = a.required_text(0, "name");
    Spi spi = Spi::connect();
    open_stream_tables(spi);
    catalog::StreamTableRow row = resolve_stream_table(spi, name, /*must_own=*/true);
    refresh_or_reinitialize(spi, row, "MANUAL");
    spi.close();
}

}  // namespace

RefreshResult refresh_or_reinitialize(Spi& spi, catalog::StreamTableRow& row,
                                      const std::string& initiated_by) {
    if (!row.reinit_reason && row.refresh_mode == RefreshMode::kDifferential && row.delta_program &&
        row.delta_version != diff::kProgramVersion) {
        const std::string why = "delta statement made by another pg_trickle version";
        catalog::exec_as_owner(spi,
                               "UPDATE pgtrickle.pgt_stream_tables SET reinit_reason = $2 WHERE "
                               "pgt_id OPERATOR(pg_catalog.=) $1",
                               {int8_param(row.pgt_id), text_param(why)});
        row.reinit_reason = why;
    }
    if (row.reinit_reason) {
        return reinitialize(spi, row, initiated_by);
    }
    return refresh(spi, row, initiated_by, "");
}

namespace {

// The IMMEDIATE stream tables of this database marked for reinitialisation;
// with `running`, only those whose programs their sources' statements still
// run (one without programs, e.g. one whose rebuild failed at adoption,
// maintains nothing stale: its next refresh or repair rebuilds it, and
// unrelated DDL does not fail on it meanwhile).
std::vector<int64_t> marked_immediate(Spi& spi, bool running) {
    SpiRows ids = spi.query(
        std::string("SELECT s.pgt_id FROM pgtrickle.pgt_stream_tables s WHERE s.refresh_mode "
                    "OPERATOR(pg_catalog.=) 'IMMEDIATE' AND s.reinit_reason IS NOT NULL AND "
                    "s.instance OPERATOR(pg_catalog.=) pgtrickle._instance()") +
        (running ? " AND EXISTS (SELECT 1 FROM pgtrickle.pgt_immediate i WHERE i.pgt_id "
                   "OPERATOR(pg_catalog.=) s.pgt_id)"
                 : "") +
        " ORDER BY s.pgt_id");
    std::vector<int64_t> out;
    for (const auto& id : ids.rows) {
        out.push_back(std::stoll(*id.at(0)));
    }
    return out;
}

// Reinitialises stream table id if it is still marked.
void reinitialize_if_marked(Spi& spi, int64_t id, const std::string& initiated_by) {
    std::optional<catalog::StreamTableRow> row = catalog::find_by_id(spi, id);
    if (row && row->reinit_reason) {
        (void)reinitialize(spi, *row, initiated_by);
    }
}

}  // namespace

// IMMEDIATE stream tables DDL just marked for reinitialisation, rebuilt
// now, in the DDL's transaction: no statement on their sources may run a
// program made for the old definition, and none is left to a later refresh
// (pgtrickle._on_ddl_end). An error here fails the DDL.
void reinit_immediate() {
    // The rebuild runs DDL of its own (its triggers): that DDL's end finds
    // one already at work.
    if (immediate_being_installed()) {
        return;
    }
    ImmediateInstallScope installing;
    Spi spi = Spi::connect();
    for (int64_t id : marked_immediate(spi, true)) {
        reinitialize_if_marked(spi, id, "IMMEDIATE");
    }
    cover_new_partitions(spi);
    spi.close();
}

int64_t adopt_restored(Spi& spi, bool force, const std::string& initiated_by) {
    // A read-only transaction (a hot standby's, explain_st in one) reads
    // the restored rows as they are; the next read-write call adopts them.
    if (pg_call([] { return XactReadOnly || RecoveryInProgress(); })) {
        return 0;
    }
    const int64_t adopted = catalog::adopt_restored(spi, force);
    if (adopted == 0) {
        return 0;
    }
    // Adoption dropped their restored triggers (which maintained nothing):
    // rebuilt, and recomputed, before anything else writes their sources.
    ImmediateInstallScope installing;
    for (int64_t id : marked_immediate(spi, false)) {
        const std::string start = catalog::clock_now(spi);
        try {
            in_subtransaction([&] {
                reinitialize_if_marked(spi, id, initiated_by);
                return 0;
            });
        } catch (const pgt::Error& e) {
            catalog::record_failed_refresh(spi, id, "FULL", initiated_by, start,
                                           e.sqlstate() + std::string(": ") + e.message());
            catalog::set_health(spi, id, sched::Status::Error, 1);
        }
    }
    return adopted;
}

void open_stream_tables(Spi& spi) {
    catalog::open_catalog(spi);
    (void)adopt_restored(spi, true, "MANUAL");
}

}  // namespace pgt::pg

Datum pgt_reinit_immediate(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] {
        pgt::pg::reinit_immediate();
        (void)fcinfo;
        PG_RETURN_VOID();
    });
}

Datum pgt_open_catalog(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] {
        pgt::pg::Spi spi = pgt::pg::Spi::connect();
        pgt::pg::open_stream_tables(spi);
        spi.close();
        (void)fcinfo;
        PG_RETURN_VOID();
    });
}

Datum pgt_create_stream_table(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] {
        pgt::pg::create_stream_table(pgt::pg::Args(fcinfo));
        PG_RETURN_VOID();
    });
}

Datum pgt_alter_stream_table(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] {
        pgt::pg::alter_from_args(pgt::pg::Args(fcinfo));
        PG_RETURN_VOID();
    });
}

Datum pgt_refresh_stream_table(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] {
        pgt::pg::refresh_stream_table(pgt::pg::Args(fcinfo));
        PG_RETURN_VOID();
    });
}

Datum pgt_version(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&]() -> Datum {
        return pgt::pg::pg_call(
            [] { return CStringGetTextDatum(pgt::pg::catalog::library_version()); });
    });
}
