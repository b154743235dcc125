// Setting up DIFFERENTIAL maintenance of a stream table: its source's
// capture, its frontier and the delta statement built once from the IR.
// Invariant: a stream table has frontiers and a delta statement exactly when
// its refresh mode is DIFFERENTIAL.
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "core/diff/algebraic.hpp"
#include "core/diff/derived.hpp"
#include "core/diff/group_rescan.hpp"
#include "core/diff/grouping_sets.hpp"
#include "core/diff/program.hpp"
#include "core/policy/plan_rules.hpp"
#include "core/diff/plan.hpp"
#include "core/diff/join_region.hpp"
#include "core/diff/join_rescan.hpp"
#include "core/diff/scan_delta.hpp"
#include "core/diff/union_all.hpp"
#include "core/ir/scan.hpp"
#include "core/diff/aggregate.hpp"
#include "core/diff/linear.hpp"
#include "core/diff/strategy.hpp"
#include "core/ir/tree.hpp"
#include "pg/common/quote.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/catalog/catalog.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/cdc/change_notes.hpp"
#include "pg/cdc/frontier.hpp"
#include "pg/boundary/as_role.hpp"
#include "pg/refresh/full_refresh.hpp"
#include "pg/refresh/immediate.hpp"
#include "pg/refresh/programs.hpp"
#include "pg/refresh/storage.hpp"
#include "pg/common/settings.hpp"
#include "pg/common/type_facts.hpp"

extern "C" {
#include "postgres.h"
#include "access/relation.h"
#include "utils/rel.h"
#include "commands/defrem.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

namespace pgt::pg {

namespace {

// The planner's estimates of table `relid`'s rows (pg_class.reltuples;
// -1 when never analyzed) and of those `filter` (over ir::kImageAlias)
// keeps when `from` (the table, quoted) is read with it.
struct FilterEstimate {
    double all = -1;
    double kept = -1;
};

FilterEstimate filter_estimate(Spi& spi, Oid owner, Oid relid, const std::string& from,
                               const std::string& filter) {
    FilterEstimate e;
    std::optional<std::string> tuples = spi.scalar(
        "SELECT c.reltuples::pg_catalog.float8 FROM pg_catalog.pg_class c WHERE c.oid "
        "OPERATOR(pg_catalog.=) $1",
        {oid_param(relid)});
    e.all = tuples ? std::stod(*tuples) : -1;
    // Planning folds the owner's IMMUTABLE functions in filter: it runs
    // them, so as the owner, restricted, whoever set this up.
    e.kept = as_role_restricted(owner, [&] {
        return spi.planned_rows("SELECT 1 FROM " + from + " " + ir::kImageAlias + " WHERE " +
                                filter);
    });
    return e;
}

}  // namespace

ir::ScanFilterProject scan_ir(Spi& spi, Oid owner, const AnalyzedQuery& q, Oid relid,
                              const ir::DeltaInput& delta) {
    std::optional<diff::OneTableLevel> level = diff::one_table_level(q.operators);
    std::optional<ir::ScanFilterProject> scan;
    if (level) {
        scan = diff::differentiate_one_table(q.operators, *level, delta);
    }
    if (!scan || q.operators.at(level->scan).relid != relid) {
        throw Error(sqlstate::kInternalError,
                    "the operator tree of a one-table query has no delta of its scan");
    }
    if (!scan->prefilter.empty()) {
        FilterEstimate e =
            filter_estimate(spi, owner, relid, quoted_relation_name(relid), scan->prefilter);
        scan->one_pass = policy::one_pass_images(e.all, e.kept);
    }
    return *scan;
}

namespace {

// The first frontier: the creating transaction's snapshot, with its own
// id in progress (it writes the source after the capture began).
void attach_frontier(Spi& spi, int64_t pgt_id, const CaptureSource& src) {
    const std::string frontier = current_frontier(spi);
    catalog::exec_as_owner(
        spi,
        std::string("INSERT INTO pgtrickle.pgt_frontiers (pgt_id, source_id, frontier, seq_seen)"
                    " VALUES ($2, $3, $4::pg_catalog.pg_snapshot, ") +
            kCaptureSequenceNow + ")",
        {text_param(src.buffer), int8_param(pgt_id), int8_param(src.source_id),
         text_param(frontier)});
}

// The key indexes index_join_keys made before (named in key_indexes, on
// the storage itself), dropped; no other index is.
void drop_key_indexes(Spi& spi, const catalog::StreamTableRow& st) {
    SpiRows r = spi.query(
        "SELECT pg_catalog.quote_ident(n.nspname) OPERATOR(pg_catalog.||) '.' "
        "OPERATOR(pg_catalog.||) pg_catalog.quote_ident(c.relname) FROM "
        "pgtrickle.pgt_stream_tables s JOIN pg_catalog.pg_index i ON i.indrelid "
        "OPERATOR(pg_catalog.=) s.pgt_relid JOIN pg_catalog.pg_class c ON c.oid "
        "OPERATOR(pg_catalog.=) i.indexrelid JOIN pg_catalog.pg_namespace n ON n.oid "
        "OPERATOR(pg_catalog.=) c.relnamespace WHERE s.pgt_id OPERATOR(pg_catalog.=) $1 AND "
        "c.relname OPERATOR(pg_catalog.=) ANY (s.key_indexes)",
        {int8_param(st.pgt_id)});
    for (const auto& row : r.rows) {
        spi.exec("DROP INDEX " + *row.at(0));
    }
}

// The stream table's rows are read by each side's key columns: an index
// on each key's output columns (our own table, so created here, rebuilt
// when maintenance is set up). Named pgt_<id>_key<i> in the stream table's
// schema when that name is free, else as PostgreSQL picks a free one
// (ChooseRelationName); the names are kept in the catalog.
void index_join_keys(Spi& spi, const catalog::StreamTableRow& st, const AnalyzedQuery& q) {
    drop_key_indexes(spi, st);
    const Oid nsp = pg_call([&] { return get_rel_namespace(st.relid); });
    std::vector<std::string> names;
    for (int i = 0; i < 2; i++) {
        const std::string base = "pgt_" + std::to_string(st.pgt_id);
        const std::string label = "key" + std::to_string(i);
        const std::string name = pg_call([&] {
            return static_cast<const char*>(
                ChooseRelationName(base.c_str(), nullptr, label.c_str(), nsp, false));
        });
        std::string cols;
        for (int pos : q.join.key_outputs[i]) {
            cols += (cols.empty() ? "" : ", ") + quote_ident(q.columns[pos].name);
        }
        spi.exec("CREATE INDEX " + quote_ident(name) + " ON " + quoted_relation_name(st.relid) +
                 " (" + cols + ")");
        names.push_back(name);
    }
    catalog::exec_as_owner(
        spi,
        "UPDATE pgtrickle.pgt_stream_tables SET key_indexes = "
        "ARRAY[$2, $3]::pg_catalog.name[] WHERE pgt_id OPERATOR(pg_catalog.=) $1",
        {int8_param(st.pgt_id), text_param(names[0]), text_param(names[1])});
}

// The Δ input of source position i for IMMEDIATE: its four transition
// relations (diff::source_transition_tables) shaped as buffer rows.
std::string transition_input(Oid relid, const std::vector<int>& attnums, std::size_t i) {
    ir::ScanFilterProject scan;
    scan.columns = source_columns(relid, attnums);
    return diff::transition_rows(scan, buffer_column_types(relid, attnums),
                                 diff::source_transition_tables(i));
}

// A source's Δ: its change buffer's window, or (IMMEDIATE) the FROM item
// transition_input made over its transition relations.
ir::DeltaInput delta_input(const std::string& relation, bool immediate) {
    return {
        immediate ? ir::DeltaInput::Kind::kTransitionTables : ir::DeltaInput::Kind::kBufferWindow,
        relation};
}

diff::DeltaProgram join_delta(Spi& spi, catalog::StreamTableRow& st, const AnalyzedQuery& q,
                              bool immediate) {
    std::vector<std::pair<CaptureSource, int>> sides;
    const std::vector<std::pair<Oid, std::vector<int>>> needs = capture_needs(q);
    for (int i = 0; i < 2; i++) {
        if (immediate) {
            sides.push_back({{i, needs.at(i).first,
                              transition_input(needs.at(i).first, needs.at(i).second,
                                               static_cast<std::size_t>(i))},
                             i});
            continue;
        }
        CaptureSource src = ensure_capture(spi, needs.at(i).first, needs.at(i).second);
        attach_frontier(spi, st.pgt_id, src);
        sides.emplace_back(src, i);
    }
    // Window parameters follow captured_sources_of: by source_id (IMMEDIATE:
    // by position, the order of its transition relations).
    std::sort(sides.begin(), sides.end(),
              [](const auto& a, const auto& b) { return a.first.source_id < b.first.source_id; });
    diff::JoinRescan j;
    for (const auto& [src, i] : sides) {
        if (i == q.join.preserved) {
            j.preserved = static_cast<int>(j.sides.size());
        }
        diff::JoinSide side{delta_input(src.buffer, immediate), q.join.key_attnums[i], {}};
        for (int pos : q.join.key_outputs[i]) {
            side.key_outputs.push_back(quote_ident(q.columns[pos].name));
        }
        j.sides.push_back(side);
    }
    j.query = q.effective;
    for (const OutputColumn& c : q.columns) {
        j.outputs.push_back(quote_ident(c.name));
    }
    return diff::one_statement(diff::join_rescan_sql(j, identity_target(st)));
}

// Whether a kept copy of candidate source `relid` pays: the planner's
// estimate of the rows its filter keeps against the table's size.
bool kept_copy_pays(Spi& spi, Oid owner, Oid relid, const ir::KeptCopy& k,
                    const std::string& prefilter) {
    FilterEstimate e = filter_estimate(spi, owner, relid, k.from, prefilter);
    return policy::kept_copy_pays(e.all, e.kept, g_kept_copy_fraction);
}

// The source's kept copy, created empty (invalid): named by stream table
// and source position in pgtrickle_changes, not readable by PUBLIC (its
// owner becomes the stream table's in prepare_maintenance).
std::string create_kept_copy(Spi& spi, const catalog::StreamTableRow& st, std::size_t pos,
                             Oid relid, const ir::RegionSource& src) {
    std::string table = "pgtrickle_changes." + quote_ident("pgt_kept_" + std::to_string(st.pgt_id) +
                                                           "_" + std::to_string(pos));
    std::string cols;
    for (const ir::SourceColumn& c : src.columns) {
        cols += (cols.empty() ? "" : ", ") + std::string(ir::kImageAlias) + "." + c.name;
    }
    catalog::exec_as_owner(spi, "CREATE TABLE " + table + " AS SELECT " + cols + " FROM " +
                                    src.kept.from + " " + ir::kImageAlias + " WITH NO DATA");
    for (const std::string& column : src.kept.index_columns) {
        catalog::exec_as_owner(spi, "CREATE INDEX ON " + table + " (" + column + ")");
    }
    // Each column keeps its table's number of distinct values: a join to
    // the copy is then estimated as a join to the filtered table (joined
    // to a copy of 1,333 parts, 239,000 changed lineitems look like
    // 239,000 rows, not 1,600, and PostgreSQL joins everything else
    // first). ANALYZE of the copy keeps these.
    SpiRows distinct = catalog::query_as_owner(
        spi,
        "SELECT s.attname::pg_catalog.text, (CASE WHEN s.n_distinct >= 0 THEN s.n_distinct ELSE "
        "-s.n_distinct * GREATEST(c.reltuples, 0) END)::pg_catalog.float8 FROM "
        "pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) "
        "c.relnamespace JOIN pg_catalog.pg_stats s ON s.schemaname OPERATOR(pg_catalog.=) "
        "n.nspname AND s.tablename OPERATOR(pg_catalog.=) c.relname AND NOT s.inherited WHERE "
        "c.oid OPERATOR(pg_catalog.=) $1",
        {oid_param(relid)});
    for (const auto& row : distinct.rows) {
        double nd = row.at(1) ? std::stod(*row.at(1)) : 0;
        bool copied = false;
        for (const ir::SourceColumn& c : src.columns) {
            copied = copied || c.name == quote_ident(row.at(0).value());
        }
        if (copied && nd >= 1) {
            catalog::exec_as_owner(
                spi, "ALTER TABLE " + table + " ALTER COLUMN " + quote_ident(row.at(0).value()) +
                         " SET (n_distinct = " + std::to_string(static_cast<int64_t>(nd)) + ")");
        }
    }
    catalog::exec_as_owner(spi, "REVOKE ALL ON " + table + " FROM PUBLIC");
    catalog::insert_kept_copy(spi, st.pgt_id, pos, table);
    return table;
}

// Every kept copy: decided and created (the branches read a source's copy
// where they read the table now: diff::compose_branch).
void keep_copies(Spi& spi, const catalog::StreamTableRow& st, const AnalyzedQuery& q,
                 ir::JoinRegion& r, bool allow_copies) {
    for (std::size_t i = 0; i < r.sources.size() && i < q.region.kept.size(); i++) {
        const ir::KeptCopy& k = q.region.kept[i];
        if (k.from.empty()) {
            continue;
        }
        if (allow_copies && kept_copy_pays(spi, relation_owner(st.relid), q.region.relids[i], k,
                                           r.sources[i].prefilter)) {
            r.sources[i].kept = k;
            r.sources[i].kept.table =
                create_kept_copy(spi, st, i, q.region.relids[i], r.sources[i]);
        }
    }
}

std::vector<std::pair<std::string, std::string>> aux_of(const ir::AlgebraicGroup& a) {
    std::vector<std::pair<std::string, std::string>> aux;
    for (const diff::AuxColumn& c : diff::aux_columns(a)) {
        aux.emplace_back(c.name, c.type);
    }
    return aux;
}

// The algebraic form of a region's outer aggregate (its grouping keys are
// the row query's first columns, r.__pgt_k<j+1>).
ir::AlgebraicGroup region_shape(const AnalyzedQuery& q, const std::vector<std::string>& outputs) {
    ir::AlgebraicGroup shape;
    shape.aggs = q.region.aggs;
    shape.key_alike = q.region.key_alike;
    shape.output_templates = q.region.output_templates;
    shape.group.group_outputs = q.identity.key_columns;
    for (const std::string& name : outputs) {
        shape.group.scan.outputs.push_back({"", name});
    }
    for (std::size_t j = 0; j < q.identity.key_columns.size(); j++) {
        shape.group.scan.outputs.at(static_cast<std::size_t>(q.identity.key_columns[j])).expr =
            "r." + diff::region_key(j);
    }
    return shape;
}

// An aggregate over a grouped derived table's change (RegionShape::derived):
// r holds the derived table's sources and key branches; no kept copies.
diff::DeltaProgram derived_delta(Spi& spi, const catalog::StreamTableRow& st,
                                 const AnalyzedQuery& q, ir::JoinRegion r) {
    ir::DerivedAggregate da;
    for (const OutputColumn& c : q.columns) {
        r.outputs.push_back(quote_ident(c.name));
    }
    da.shape = region_shape(q, r.outputs);
    da.region = std::move(r);
    da.rows = q.region.derived_rows;
    da.keys = q.region.derived_keys;
    da.narrow = q.region.derived_narrow;
    da.source_keys = q.region.source_keys;
    da.select = q.region.derived_select;
    da.row_query = q.region.row_query;
    da.key_nullable = q.region.key_nullable;
    da.key_filtered = q.region.key_filtered;
    sync_aux_columns(spi, st.relid, aux_of(da.shape));
    return diff::derived_aggregate_program(da, identity_target(st));
}

// Every source of a join region is captured whole; each gets its window
// block by captured_sources_of order (source_id).
// IMMEDIATE (immediate): each source's Δ from its transition relations,
// no capture, no kept copies, no fallbacks (a statement's transition
// tables hold committed states only).
diff::DeltaProgram region_delta(Spi& spi, catalog::StreamTableRow& st, const AnalyzedQuery& q,
                                diff::Strategy strategy, bool immediate) {
    ir::JoinRegion r;
    std::vector<std::pair<int64_t, std::size_t>> order;
    for (std::size_t i = 0; i < q.region.relids.size(); i++) {
        Oid relid = q.region.relids[i];
        const std::vector<int>& attnums = q.region.attnums[i];
        CaptureSource src{static_cast<int64_t>(i), relid,
                          immediate ? transition_input(relid, attnums, i) : ""};
        if (!immediate) {
            src = ensure_capture(spi, relid, attnums);
            attach_frontier(spi, st.pgt_id, src);
        }
        order.emplace_back(src.source_id, r.sources.size());
        r.sources.push_back({delta_input(src.buffer, immediate), 0, source_columns(relid, attnums),
                             i < q.region.prefilters.size() ? q.region.prefilters[i] : "",
                             ir::KeptCopy{}});
    }
    std::sort(order.begin(), order.end());
    for (std::size_t w = 0; w < order.size(); w++) {
        r.sources[order[w].second].window = static_cast<int>(w);
    }
    r.tables = q.region.tables;
    r.branches = q.region.branches;
    if (strategy == diff::Strategy::kAlgebraicDerived) {
        return derived_delta(spi, st, q, std::move(r));
    }
    keep_copies(spi, st, q, r, !immediate);
    r.query = q.region.query.empty() ? q.effective : q.region.query;
    r.whole_query = q.region.whole_when_many ? q.effective : "";
    for (const OutputColumn& c : q.columns) {
        r.outputs.push_back(quote_ident(c.name));
    }
    if (has_grouping_set_column(q)) {
        r.outputs.push_back(kGroupingSetColumn);
    }
    r.key_nullable = q.region.key_nullable;
    r.key_filtered = q.region.key_filtered;
    r.key_source = q.region.key_source;
    r.key_rows = q.region.key_rows;
    r.key_columns = q.region.key_columns;
    auto finish = [&](diff::DeltaProgram p) {
        if (immediate) {
            p.fallback.clear();
            p.fallback_images.clear();
        }
        const ir::IdentityTarget target = identity_target(st);
        // DIFFERENTIAL: not with kept copies, which follow every change of
        // their sources through the image steps this statement skips.
        if (r.key_source >= 0 && target.keyed && (immediate || p.kept.empty())) {
            p.key_rows = immediate ? diff::key_table_statement(r, target)
                                   : diff::key_window_statement(r, target);
            p.key_source = static_cast<std::size_t>(r.key_source);
        }
        return p;
    };
    if (strategy == diff::Strategy::kJoinRegion) {
        return finish(diff::join_region_program(r, identity_target(st)));
    }
    ir::AlgebraicJoin aj;
    aj.region = r;
    aj.row_query = q.region.row_query;
    aj.shape = region_shape(q, r.outputs);
    sync_aux_columns(spi, st.relid, aux_of(aj.shape));
    return finish(diff::algebraic_join_program(aj, identity_target(st)));
}

// Algebraic aggregates: auxiliary columns in storage, and the query a FULL
// refresh fills them with carried in the delta program.
diff::DeltaProgram algebraic_delta(Spi& spi, const catalog::StreamTableRow& st,
                                   const AnalyzedQuery& q, const ir::GroupRescan& g) {
    std::optional<ir::AlgebraicGroup> form = diff::algebraic_group(q.operators, g);
    if (!form) {
        throw Error(sqlstate::kInternalError, "an algebraic strategy without an algebraic form");
    }
    const ir::AlgebraicGroup& a = *form;
    diff::DeltaProgram p;
    for (const diff::AuxColumn& c : diff::aux_columns(a)) {
        p.full_aux.push_back(c.name);
    }
    sync_aux_columns(spi, st.relid, aux_of(a));
    p.full_query = diff::algebraic_full_query(a);
    // A buffer window skips netting (a sort of the whole window by image):
    // sums and counts add every image, and MIN/MAX recompute a group where
    // an image left at or beyond its extreme (algebraic_group_sql). The
    // netted statement stays as the fallback for a raising expression.
    // IMMEDIATE (transition tables: no state that never committed, so no
    // fallback) leaves out the rescan of linear aggregates' groups, which a
    // consistent table never needs: its trigger recomputes when one would.
    const bool linear = diff::linear_aggregates(a);
    if (g.scan.delta.windowed()) {
        p.main = diff::algebraic_group_sql(a, identity_target(st), false);
        p.fallback = diff::algebraic_group_sql(a, identity_target(st));
    } else {
        p.main = diff::algebraic_group_sql(a, identity_target(st), !linear, !linear);
    }
    return p;
}

}  // namespace

namespace {

// UNION ALL: each arm over its table's Δ, windows by source_id order
// (IMMEDIATE: the arm's table's transition relations, by position in
// capture_needs, which multi_table_sources gives the triggers).
diff::DeltaProgram union_delta(Spi& spi, catalog::StreamTableRow& st, const AnalyzedQuery& q,
                               bool immediate) {
    const CaptureNeeds needs = capture_needs(q);
    std::vector<CaptureSource> sources;
    for (std::size_t i = 0; i < needs.size(); i++) {
        const auto& [relid, attnums] = needs[i];
        if (immediate) {
            sources.push_back(
                {static_cast<int64_t>(i), relid, transition_input(relid, attnums, i)});
            continue;
        }
        sources.push_back(ensure_capture(spi, relid, attnums));
        attach_frontier(spi, st.pgt_id, sources.back());
    }
    std::sort(sources.begin(), sources.end(), [](const CaptureSource& a, const CaptureSource& b) {
        return a.source_id < b.source_id;
    });
    std::map<Oid, diff::UnionInput> inputs;
    for (std::size_t w = 0; w < sources.size(); w++) {
        inputs[sources[w].relid] = {delta_input(sources[w].buffer, immediate),
                                    5 * static_cast<int>(w)};
    }
    const bool aggregated = q.region.union_aggregate;
    std::vector<std::string> names = q.region.union_columns, outputs;
    for (const OutputColumn& c : q.columns) {
        outputs.push_back(quote_ident(c.name));
    }
    if (!aggregated) {
        names = outputs;
    }
    std::optional<std::vector<diff::UnionArm>> arms = diff::differentiate_union_all(
        q.operators, [&](uint32_t relid) { return inputs.at(relid); }, names,
        aggregated ? diff::aggregated_union(q.operators) : -1);
    if (!arms) {
        throw Error(sqlstate::kInternalError, "a UNION ALL plan whose arms have no delta");
    }
    // As for one table (scan_ir): an arm whose prefilter keeps few rows
    // reads both images of a buffer row in one scan.
    for (diff::UnionArm& a : *arms) {
        if (!a.scan.prefilter.empty()) {
            FilterEstimate e = filter_estimate(spi, relation_owner(st.relid), a.relid,
                                               quoted_relation_name(a.relid), a.scan.prefilter);
            a.scan.one_pass = policy::one_pass_images(e.all, e.kept);
        }
    }
    if (!aggregated) {
        return diff::one_statement(diff::union_all_sql(*arms, identity_target(st)));
    }
    diff::UnionAggregate ua{std::move(*arms),         names,
                            q.region.derived_select,  q.region.row_query,
                            region_shape(q, outputs), q.region.key_nullable,
                            q.region.key_filtered};
    sync_aux_columns(spi, st.relid, aux_of(ua.shape));
    return diff::union_aggregate_program(ua, identity_target(st));
}

}  // namespace

diff::DeltaProgram multi_table_program(Spi& spi, catalog::StreamTableRow& st,
                                       const AnalyzedQuery& q, const diff::DeltaPlan& plan,
                                       bool immediate) {
    if (plan.strategy == diff::Strategy::kJoinRescan) {
        index_join_keys(spi, st, q);
        return join_delta(spi, st, q, immediate);
    }
    if (plan.strategy == diff::Strategy::kUnionAll) {
        return union_delta(spi, st, q, immediate);
    }
    return region_delta(spi, st, q, plan.strategy, immediate);
}

std::vector<Oid> multi_table_sources(const AnalyzedQuery& q, const diff::DeltaPlan& plan) {
    if (plan.strategy != diff::Strategy::kJoinRescan &&
        plan.strategy != diff::Strategy::kUnionAll) {
        return q.region.relids;
    }
    std::vector<Oid> out;
    for (const auto& [relid, attnums] : capture_needs(q)) {
        out.push_back(relid);
    }
    return out;
}

namespace {

// ir::GroupRescan::key_by_array, from the catalog as it is now (an index
// created later is used once the program is made again).
bool key_by_array(const ir::Tree& t, const ir::GroupRescan& g) {
    if (g.group_outputs.size() != 1) {
        return false;
    }
    std::optional<ir::ColumnRef> at = ir::scan_column(t, t.root, g.group_outputs[0]);
    if (!at) {
        return false;
    }
    const ir::Node& scan = t.at(at->node);
    const ir::Column& c = scan.columns.at(static_cast<std::size_t>(at->column));
    return !unmatchable_type(c.type) && column_leads_index(scan.relid, c.name);
}

}  // namespace

diff::DeltaProgram one_table_program(Spi& spi, const catalog::StreamTableRow& st,
                                     const AnalyzedQuery& q, const diff::DeltaPlan& plan,
                                     const ir::ScanFilterProject& scan) {
    std::optional<diff::OneTableLevel> level = diff::one_table_level(q.operators);
    if (!level) {
        throw Error(sqlstate::kInternalError, "a one-table program without a one-table level");
    }
    ir::GroupRescan g =
        diff::group_rescan(q.operators, *level, scan, quoted_relation_name(q.scan.source_relid));
    g.key_by_array = key_by_array(q.operators, g);
    ir::IdentityTarget target = identity_target(st);
    target.delete_only_same = !scan.delta.windowed();
    switch (plan.strategy) {
        case diff::Strategy::kGroupingSetsRescan: {
            std::optional<ir::GroupingSetsRescan> gs = diff::grouping_sets_rescan(q.operators, g);
            if (!gs) {
                throw Error(sqlstate::kInternalError, "grouping sets without arms");
            }
            return diff::one_statement(diff::grouping_sets_rescan_sql(*gs, target));
        }
        case diff::Strategy::kAlgebraicGroup:
            return algebraic_delta(spi, st, q, g);
        case diff::Strategy::kGroupRescan:
            return diff::one_statement(diff::group_rescan_sql(g, target));
        case diff::Strategy::kScan: {
            // Keyed by a unique key of the source: each identity's last
            // event of the window decides (diff::apply_sql).
            ir::ScanFilterProject keyed = scan;
            const ir::IdentitySource key = ir::identity_source(q.operators);
            if (target.keyed && key.relid == q.scan.source_relid) {
                keyed.key_columns = diff::identity_source_columns(scan, target);
            }
            return diff::one_statement(diff::apply_sql(keyed, target));
        }
        default:
            throw Error(sqlstate::kInternalError, "a join strategy for a one-table query");
    }
}

std::string operator_tree_text(const AnalyzedQuery& q, const std::optional<diff::DeltaPlan>& plan,
                               const std::map<Oid, std::string>& deltas) {
    ir::Tree t = q.operators;
    diff::describe_plan(t, plan);
    for (ir::Node& n : t.nodes) {
        auto it = deltas.find(n.relid);
        if (n.op == ir::Op::kScan && it != deltas.end()) {
            n.rule += " from " + it->second;
        }
    }
    return ir::format_tree(t);
}

diff::DeltaPlan delta_plan(const AnalyzedQuery& q) {
    diff::PlanFacts f;
    f.region = q.region.present;
    f.region_algebraic = q.region.algebraic;
    f.join_pair = q.join.present;
    f.derived = q.region.derived;
    f.union_aggregate = q.region.union_aggregate;
    for (const ir::RegionBranch& b : q.region.branches) {
        f.branches.push_back({b.reads, b.padding, b.subqueries});
    }
    for (const ir::BranchTable& t : q.region.tables) {
        f.tables.push_back(t.from);
    }
    std::optional<diff::DeltaPlan> plan = diff::plan_delta(q.operators, f);
    if (!plan) {
        throw Error(sqlstate::kInternalError,
                    "no delta plan for the operator tree of a query DIFFERENTIAL maintains");
    }
    return *plan;
}

void drop_kept_copies(Spi& spi, int64_t pgt_id) {
    for (const std::string& table : catalog::kept_copy_tables(spi, pgt_id)) {
        catalog::exec_as_owner(spi, "DROP TABLE IF EXISTS " + table);
    }
    catalog::delete_kept_copies(spi, pgt_id);
}

namespace {

// A union's tables in the order its arms first read them, each with the
// columns any arm reads.
CaptureNeeds union_needs(const ir::Tree& t) {
    CaptureNeeds needs;
    for (const ir::Node& n : t.nodes) {
        if (n.op != ir::Op::kScan) {
            continue;
        }
        auto it = std::find_if(needs.begin(), needs.end(),
                               [&](const auto& need) { return need.first == n.relid; });
        if (it == needs.end()) {
            needs.emplace_back(n.relid, std::vector<int>{});
            it = needs.end() - 1;
        }
        for (const ir::SourceColumn& c : n.image_columns) {
            it->second.push_back(c.attnum);
        }
        std::sort(it->second.begin(), it->second.end());
        it->second.erase(std::unique(it->second.begin(), it->second.end()), it->second.end());
    }
    return needs;
}

}  // namespace

CaptureNeeds capture_needs(const AnalyzedQuery& q) {
    const diff::DeltaPlan plan = delta_plan(q);
    CaptureNeeds needs;
    if (plan.strategy == diff::Strategy::kJoinRescan) {
        for (Oid relid : q.join.relids) {  // whole rows of both tables
            needs.emplace_back(relid, live_attnums(relid));
        }
    } else if (plan.strategy == diff::Strategy::kUnionAll) {
        needs = union_needs(q.operators);
    } else if (diff::reads_several_tables(plan.strategy)) {
        for (std::size_t i = 0; i < q.region.relids.size(); i++) {
            needs.emplace_back(q.region.relids[i], q.region.attnums[i]);
        }
    } else {
        needs.emplace_back(q.scan.source_relid, q.scan.referenced_attnums);
    }
    return needs;
}

namespace {

// The DIFFERENTIAL program of st, made by the builder plan's label names
// from its sources' buffer windows (captured here).
diff::DeltaProgram differential_program(Spi& spi, catalog::StreamTableRow& st,
                                        const AnalyzedQuery& q, const diff::DeltaPlan& plan) {
    if (diff::reads_several_tables(plan.strategy)) {
        return multi_table_program(spi, st, q, plan, false);
    }
    CaptureSource src = ensure_capture(spi, q.scan.source_relid, q.scan.referenced_attnums);
    attach_frontier(spi, st.pgt_id, src);
    return one_table_program(spi, st, q, plan,
                             scan_ir(spi, relation_owner(st.relid), q, src.relid,
                                     {ir::DeltaInput::Kind::kBufferWindow, src.buffer}));
}

}  // namespace

void prepare_maintenance(Spi& spi, catalog::StreamTableRow& st, const AnalyzedQuery& q) {
    detach_frontiers(spi, st.pgt_id);
    drop_kept_copies(spi, st.pgt_id);
    drop_immediate(spi, st.pgt_id);
    drop_change_notes(spi, st.pgt_id);
    st.delta_program.reset();
    const bool incremental =
        st.refresh_mode == RefreshMode::kDifferential || st.refresh_mode == RefreshMode::kImmediate;
    std::optional<diff::DeltaPlan> plan;
    if (incremental) {
        plan = delta_plan(q);
    }
    if (!plan || !diff::keeps_state(*plan)) {
        sync_aux_columns(spi, st.relid, {});
    }
    if (st.refresh_mode == RefreshMode::kFull) {
        install_change_notes(spi, st, q);
    } else if (st.refresh_mode == RefreshMode::kImmediate) {
        prepare_immediate(spi, st, q, *plan);
    } else if (st.refresh_mode == RefreshMode::kDifferential) {
        st.delta_program = diff::encode_program(differential_program(spi, st, q, *plan));
    }
    // The format of the program just made (a program is never run by a
    // library of another format: refresh_or_reinitialize).
    st.delta_version = st.delta_program ? std::optional<int>(diff::kProgramVersion) : std::nullopt;
    st.delta_strategy = st.delta_program
                            ? std::optional<std::string>(diff::strategy_name(plan->strategy))
                            : std::nullopt;
    std::map<Oid, std::string> buffers;
    for (const CaptureSource& src : captured_sources_of(spi, st.pgt_id)) {
        buffers[src.relid] = src.buffer;
    }
    if (st.refresh_mode == RefreshMode::kImmediate) {
        buffers[q.scan.source_relid] = "the writing statement's transition tables";
    }
    st.operator_tree = operator_tree_text(q, st.delta_program ? plan : std::nullopt, buffers);
    // The owner's rights (refreshes run as the owner): SELECT on the
    // buffers read, the kept copies (catalog::sync_owner_rights).
    catalog::sync_owner_rights(spi, st.pgt_id);
    catalog::update_definition(spi, st);
}

}  // namespace pgt::pg
