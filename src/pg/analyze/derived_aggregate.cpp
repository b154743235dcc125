// Aggregates over a grouped derived table's change (see derived_aggregate.hpp).
// Why the derived table's own analysis decides its branches: with outer
// joins, which padded rows a change reaches is what its join region's terms
// work out (region_terms); without them, a table read from its images with
// the others as they are finds every group holding a changed row.
#include "pg/analyze/derived_aggregate.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/ir/scan.hpp"
#include "core/sql/names.hpp"
#include "pg/analyze/output_key.hpp"
#include "pg/analyze/region_parts.hpp"
#include "pg/analyze/scan_shape.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"
#include "pg/boundary/subtransaction.hpp"
#include "pg/common/quote.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/common/type_facts.hpp"

extern "C" {
#include "postgres.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
}

namespace pgt::pg {
namespace {

using region::RegionTable;

// The outer query's shape: one grouped derived table in FROM, aggregates
// over it, nothing that is not a row-by-row function of its rows.
RangeTblEntry* derived_of(Query* q, const AnalyzedQuery& out) {
    RangeTblEntry* rte = aggregated_subquery(q, out);
    return rte != nullptr && region::grouped_derived(rte) ? rte : nullptr;
}

// The derived table's own shape: plain tables joined, grouped, no
// subqueries; its relations' range-table indexes, or empty.
std::vector<Index> derived_tables(Query* d) {
    if (d->hasSubLinks || d->setOperations != nullptr || d->groupingSets != NIL ||
        d->hasWindowFuncs || d->hasTargetSRFs || d->hasDistinctOn || d->limitCount != nullptr ||
        d->limitOffset != nullptr || d->cteList != NIL || d->rowMarks != NIL ||
        d->sortClause != NIL) {
        return {};
    }
    std::vector<Index> tables;
    Index i = 0;
    ListCell* lc;
    foreach (lc, d->rtable) {
        i++;
        const RangeTblEntry* rte = lfirst_node(RangeTblEntry, lc);
        if (rte->rtekind == RTE_RELATION && rte->relkind == RELKIND_RELATION &&
            rte->tablesample == nullptr) {
            tables.push_back(i);
        } else if (rte->rtekind != RTE_JOIN) {
            return {};
        }
    }
    foreach (lc, d->targetList) {
        if (lfirst_node(TargetEntry, lc)->resjunk) {
            return {};
        }
    }
    return tables;
}

// The columns of relid that d reads (through any reference; a whole-row
// reference reads them all) and those of its key, in attnum order: an
// update of other columns is no change to d.
std::vector<int> read_attnums(Query* d, Oid relid, const std::vector<int>& key) {
    std::set<int> cols(key.begin(), key.end());
    ListCell* lc;
    foreach (lc, d->rtable) {
        const RangeTblEntry* rte = lfirst_node(RangeTblEntry, lc);
        if (rte->rtekind != RTE_RELATION || rte->relid != relid) {
            continue;
        }
        for (int m = -1; (m = bms_next_member(rte->selectedCols, m)) >= 0;) {
            const int a = m + FirstLowInvalidHeapAttributeNumber;
            if (a == InvalidAttrNumber) {
                return live_attnums(relid);
            }
            if (a > 0) {
                cols.insert(a);
            }
        }
    }
    return {cols.begin(), cols.end()};
}

std::string column_name(Oid relid, int attnum) {
    return quote_ident(
        pg_call([&] { return get_attname(relid, static_cast<AttrNumber>(attnum), false); }));
}

std::string deparsed(Query* q) {
    return with_pinned_search_path(
        [&] { return std::string(pg_call([&] { return pg_get_querydef(q, false); })); });
}

// The derived table analysed as a defining query of its own (nullopt when
// that fails or refuses it).
std::optional<AnalyzedQuery> analysed_alone(const std::string& sql) {
    try {
        return in_subtransaction(
            [&] { return std::optional<AnalyzedQuery>(analyze_defining_query(sql)); });
    } catch (const pgt::Error& e) {
        const std::string cls = e.sqlstate().substr(0, 2);
        if (cls != "42" && cls != "0A") {
            throw;
        }
        return std::nullopt;
    }
}

// The derived table's key branches: its region's with outer joins, else
// one per table, that table's signed images with the others now.
bool key_branches(Query* d, bool outer_joins, const std::vector<Index>& rtindexes,
                  const std::vector<Oid>& relids, const AnalyzedQuery& alone,
                  const std::vector<TargetEntry*>& keys, RegionShape& region) {
    if (outer_joins) {
        if (!alone.region.present || alone.region.algebraic || alone.region.relids != relids) {
            return false;
        }
        region.tables = alone.region.tables;
        region.branches = alone.region.branches;
        region.equi_attnums = alone.region.equi_attnums;
        return true;
    }
    std::vector<RegionTable> tables;
    for (Index rt : rtindexes) {
        const Oid relid = rt_fetch(rt, d->rtable)->relid;
        const auto at = std::find(relids.begin(), relids.end(), relid) - relids.begin();
        tables.push_back({{rt}, static_cast<std::size_t>(at), -1});
    }
    region.tables = region::branch_tables(d, tables, {});
    for (std::size_t i = 0; i < tables.size(); i++) {
        std::vector<diff::TableRead> reads(tables.size(), diff::TableRead::kNow);
        reads[i] = diff::TableRead::kBoth;
        region.branches.push_back({region::deparse_branch(d, keys, tables, reads), reads});
    }
    // The columns each table is probed by (index advice at creation).
    region::collect_equi_attnums(d, tables, region);
    return true;
}

}  // namespace

// The outer query's algebraic form over the derived table read as
// region_table(0): its (keys, arguments), aggregates and templates.
RangeTblEntry* aggregated_subquery(Query* q, const AnalyzedQuery& out) {
    if (q->jointree == nullptr || list_length(q->jointree->fromlist) != 1 ||
        !IsA(linitial(q->jointree->fromlist), RangeTblRef) || list_length(q->rtable) != 1 ||
        !(q->hasAggs || q->groupClause != NIL) || q->groupingSets != NIL ||
        q->havingQual != nullptr || q->hasSubLinks || q->hasWindowFuncs || q->hasTargetSRFs ||
        q->distinctClause != NIL || q->limitCount != nullptr || q->limitOffset != nullptr ||
        q->setOperations != nullptr || q->cteList != NIL || q->rowMarks != NIL) {
        return nullptr;
    }
    const bool scalar = q->groupClause == NIL;
    if (out.identity.domain != (scalar ? rowid::Domain::kSynthetic : rowid::Domain::kGroupKey)) {
        return nullptr;
    }
    RangeTblEntry* rte = rt_fetch(1, q->rtable);
    return rte->rtekind == RTE_SUBQUERY && !rte->lateral && !rte->security_barrier ? rte : nullptr;
}

bool outer_algebraic_form(Query* q, const AnalyzedQuery& out, RegionShape& region) {
    std::optional<AlgebraicOutputs> outs = algebraic_outputs(q, nullptr);
    if (!outs) {
        return false;
    }
    std::vector<TargetEntry*> entries;
    for (int k : out.identity.key_columns) {
        TargetEntry* te = static_cast<TargetEntry*>(list_nth(q->targetList, k));
        if (pg_call([&] { return checkExprHasSubLink(reinterpret_cast<Node*>(te->expr)); })) {
            return false;
        }
        entries.push_back(te);
        const Oid type = exprType(reinterpret_cast<Node*>(te->expr));
        region.key_filtered.push_back(!unmatchable_type(type).has_value());
        region.key_nullable.push_back(true);  // a derived table's column
    }
    for (std::size_t i = 0; i < outs->aggs.size(); i++) {
        ir::AlgebraicAgg x = outs->aggs[i].agg;
        Expr* arg = pg_call([&] { return region::aggregate_argument(outs->aggs[i].aggref); });
        if (arg != nullptr) {
            x.arg = "r." + sql::argument_column(i);
            entries.push_back(pg_call([&] {
                return makeTargetEntry(arg, static_cast<AttrNumber>(entries.size() + 1), nullptr,
                                       false);
            }));
        }
        region.aggs.push_back(x);
    }
    const std::vector<RegionTable> d_table{{{1}, 0, -1}};
    region.derived_select = region::deparse_branch(q, entries, d_table, {diff::TableRead::kNow});
    region.output_templates = outs->templates;
    region.key_alike = keys_look_alike(q, out.identity.key_columns);
    region.algebraic = true;
    return true;
}

void derive_derived_aggregate(Query* q, AnalyzedQuery& out) {
    RangeTblEntry* rte = derived_of(q, out);
    if (rte == nullptr) {
        return;
    }
    Query* d = rte->subquery;
    const std::vector<Index> rtindexes = derived_tables(d);
    if (rtindexes.empty()) {
        return;
    }
    const std::string d_sql = deparsed(d);
    std::optional<AnalyzedQuery> alone = analysed_alone(d_sql);
    if (alone && !alone->differential_blocker.empty()) {
        // What keeps the derived table itself from being maintained.
        out.differential_blocker = alone->differential_blocker + " (in a subquery in FROM)";
        return;
    }
    if (!alone || alone->identity.domain != rowid::Domain::kGroupKey ||
        alone->identity.key_columns.empty()) {
        return;
    }
    RegionShape region;
    for (Index rt : rtindexes) {
        const Oid relid = rt_fetch(rt, d->rtable)->relid;
        if (std::find(region.relids.begin(), region.relids.end(), relid) == region.relids.end()) {
            const std::vector<std::vector<int>> unique = unique_keys(relid);
            if (unique.empty()) {
                // Its state before a change cannot be told from its images.
                out.differential_blocker =
                    "an aggregate over a grouped derived table's aggregates whose table " +
                    relation_display_name(relid) +
                    " has no primary key or unique index on NOT NULL columns";
                return;
            }
            region.relids.push_back(relid);
            region.attnums.push_back(read_attnums(d, relid, unique.front()));
            region.source_keys.emplace_back();
            for (int a : unique.front()) {
                region.source_keys.back().push_back(column_name(relid, a));
            }
        }
    }
    std::vector<TargetEntry*> keys;
    for (int k : alone->identity.key_columns) {
        if (k < 0 || k >= list_length(d->targetList)) {
            return;
        }
        TargetEntry* te = static_cast<TargetEntry*>(list_nth(d->targetList, k));
        keys.push_back(te);
        region.derived_keys.push_back(quote_ident(te->resname));
    }
    const bool outer_joins = region::outer_join(reinterpret_cast<Node*>(d->jointree)) != nullptr;
    if (!key_branches(d, outer_joins, rtindexes, region.relids, *alone, keys, region)) {
        return;
    }
    for (std::size_t k = 0; k < keys.size(); k++) {
        const bool may_be_null =
            outer_joins ? alone->region.key_nullable.at(k) : region::nullable(d, keys[k]->expr);
        const Oid type = exprType(reinterpret_cast<Node*>(keys[k]->expr));
        region.derived_narrow.push_back(!may_be_null && !unmatchable_type(type).has_value());
    }
    if (!outer_algebraic_form(q, out, region)) {
        return;
    }
    // D's rows with each source read as sql::derived_source(s).
    Query* renamed = pg_call([&] { return static_cast<Query*>(copyObjectImpl(d)); });
    for (Index rt : rtindexes) {
        const Oid relid = rt_fetch(rt, renamed->rtable)->relid;
        const auto s =
            std::find(region.relids.begin(), region.relids.end(), relid) - region.relids.begin();
        pg_call([&] {
            region::read_table_as(renamed, rt,
                                  sql::derived_source(static_cast<std::size_t>(s)).c_str());
        });
    }
    region.derived_rows = deparsed(renamed);
    region.row_query = "WITH " + sql::region_table(0) + " AS NOT MATERIALIZED (" + d_sql + ") " +
                       region.derived_select;
    region.prefilters.assign(region.relids.size(), "");
    region.kept.assign(region.relids.size(), ir::KeptCopy{});
    region.derived = true;
    region.present = true;
    out.region = std::move(region);
    out.differential_blocker.clear();
}

}  // namespace pgt::pg
