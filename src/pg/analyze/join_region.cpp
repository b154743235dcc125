// Join-region recognition and branch deparsing.
// Invariant: branches are produced by PostgreSQL's deparser from a copy of
// the analyzed query, so quoting, schema qualification and operator
// resolution are the query's own.
#include "pg/analyze/join_region.hpp"

#include "pg/analyze/region_parts.hpp"
#include "pg/analyze/grouping_sets.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/diff/apply.hpp"
#include "core/diff/join_region.hpp"
#include "core/diff/join_terms.hpp"
#include "core/ir/scan.hpp"
#include "pg/analyze/scan_shape.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"
#include "pg/common/quote.hpp"
#include "pg/common/type_facts.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/common/settings.hpp"

extern "C" {
#include "postgres.h"
#include "access/relation.h"
#include "access/htup_details.h"
#include "catalog/pg_index.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "catalog/pg_namespace.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/prep.h"
#include "optimizer/tlist.h"
#include "rewrite/rewriteManip.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

namespace pgt::pg::region {
namespace {

// The identity key's target entries, in key order.
std::vector<TargetEntry*> key_entries(Query* q, const std::vector<int>& key_columns) {
    std::vector<TargetEntry*> outputs;
    ListCell* lc;
    foreach (lc, q->targetList) {
        TargetEntry* te = lfirst_node(TargetEntry, lc);
        if (!te->resjunk) {
            outputs.push_back(te);
        }
    }
    std::vector<TargetEntry*> keys;
    for (int pos : key_columns) {
        keys.push_back(outputs.at(static_cast<std::size_t>(pos)));
    }
    return keys;
}

// Whether e is a column of a table of q's FROM that leads one of its
// indexes: a `= ANY (array)` filter on it is one index probe per element,
// on another column it compares every row with every element.
bool index_led(Query* q, Expr* e) {
    if (!IsA(e, Var) || castNode(Var, e)->varlevelsup != 0 || castNode(Var, e)->varattno < 1) {
        return false;
    }
    Var* v = castNode(Var, e);
    RangeTblEntry* rte = rt_fetch(v->varno, q->rtable);
    return rte->rtekind == RTE_RELATION && column_leads_index(rte->relid, v->varattno);
}

// Collects the top-level outer joins; returns the blocker for one a region
// cannot maintain (FULL, a nullable side that is not one table, USING or
// NATURAL, an alias on the join), nullptr otherwise.
const char* collect_outer_joins(Node* n, std::vector<OuterJoin>& out) {
    if (IsA(n, FromExpr)) {
        ListCell* lc;
        foreach (lc, castNode(FromExpr, n)->fromlist) {
            if (const char* b = collect_outer_joins(static_cast<Node*>(lfirst(lc)), out)) {
                return b;
            }
        }
    } else if (IsA(n, JoinExpr)) {
        JoinExpr* j = castNode(JoinExpr, n);
        if (j->jointype == JOIN_FULL) {
            if (!IsA(j->larg, RangeTblRef) || !IsA(j->rarg, RangeTblRef)) {
                return "a FULL JOIN whose sides are not single tables";
            }
            if (j->usingClause != NIL || j->alias != nullptr) {
                return "a FULL JOIN with USING, NATURAL or an alias";
            }
            out.push_back({static_cast<Index>(castNode(RangeTblRef, j->rarg)->rtindex), false, true,
                           static_cast<Index>(castNode(RangeTblRef, j->larg)->rtindex)});
            return nullptr;
        }
        if (j->jointype == JOIN_LEFT || j->jointype == JOIN_RIGHT) {
            Node* nullable = j->jointype == JOIN_LEFT ? j->rarg : j->larg;
            if (!IsA(nullable, RangeTblRef)) {
                return "a LEFT or RIGHT JOIN whose nullable side is not a single table";
            }
            if (j->usingClause != NIL || j->alias != nullptr) {
                return "a LEFT or RIGHT JOIN with USING, NATURAL or an alias";
            }
            out.push_back({static_cast<Index>(castNode(RangeTblRef, nullable)->rtindex),
                           j->jointype == JOIN_LEFT});
        } else if (j->jointype != JOIN_INNER) {
            return "a semi- or anti-join";
        }
        if (const char* b = collect_outer_joins(j->larg, out)) {
            return b;
        }
        return collect_outer_joins(j->rarg, out);
    }
    return nullptr;
}

// Where the nullable tables' columns may be read: their own ON, the select
// list and HAVING, and the ON of a LEFT or RIGHT join of a single table
// above them that pads where they are padded — a lookup chain, `orders o
// LEFT JOIN customers c ON c.id = o.cust LEFT JOIN regions r ON r.id =
// c.region` (that ON is never true where they are NULL:
// find_nonnullable_rels; not a FULL JOIN's
// sides). A WHERE or another join condition over them would make a row's
// presence depend on padding the region cannot follow. (In a chain the
// branches' paddings per join still cover every row: a padded customer
// pads its region, which the term padding both finds.)
bool nullable_read_only_where_allowed(Query* q, const std::vector<OuterJoin>& joins) {
    struct Ctx {
        const std::vector<OuterJoin>* joins;
        bool ok;
    } ctx{&joins, true};
    // own, own2: the tables this join's ON may read although nullable;
    // chain: the preserved side's tables when this join pads one table.
    auto reads_nullable = [&](Node* quals, Index own, Index own2, Bitmapset* chain) {
        Bitmapset* used = pull_varnos(nullptr, quals);
        for (const OuterJoin& oj : joins) {
            for (Index t : {oj.nullable, oj.full ? oj.other : Index{0}}) {
                const bool lookup =
                    !oj.full && bms_is_member(static_cast<int>(t), chain) &&
                    bms_is_member(static_cast<int>(t), find_nonnullable_rels(quals));
                if (t != 0 && t != own && t != own2 && !lookup &&
                    bms_is_member(static_cast<int>(t), used)) {
                    return true;
                }
            }
        }
        return false;
    };
    std::vector<Node*> stack{reinterpret_cast<Node*>(q->jointree)};
    while (!stack.empty() && ctx.ok) {
        Node* n = stack.back();
        stack.pop_back();
        if (IsA(n, FromExpr)) {
            ctx.ok = !reads_nullable(castNode(FromExpr, n)->quals, 0, 0, nullptr);
            ListCell* lc;
            foreach (lc, castNode(FromExpr, n)->fromlist) {
                stack.push_back(static_cast<Node*>(lfirst(lc)));
            }
        } else if (IsA(n, JoinExpr)) {
            JoinExpr* j = castNode(JoinExpr, n);
            Node* nullable = j->jointype == JOIN_LEFT || j->jointype == JOIN_FULL ? j->rarg
                             : j->jointype == JOIN_RIGHT                          ? j->larg
                                                                                  : nullptr;
            Index own = nullable != nullptr && IsA(nullable, RangeTblRef)
                            ? static_cast<Index>(castNode(RangeTblRef, nullable)->rtindex)
                            : 0;
            Index own2 = j->jointype == JOIN_FULL && IsA(j->larg, RangeTblRef)
                             ? static_cast<Index>(castNode(RangeTblRef, j->larg)->rtindex)
                             : 0;
            Node* preserved = j->jointype == JOIN_LEFT    ? j->larg
                              : j->jointype == JOIN_RIGHT ? j->rarg
                                                          : nullptr;
            Bitmapset* chain = preserved != nullptr && own != 0
                                   ? get_relids_in_jointree(preserved, false)
                                   : nullptr;
            ctx.ok = !reads_nullable(j->quals, own, own2, chain);
            stack.push_back(j->larg);
            stack.push_back(j->rarg);
        }
    }
    return ctx.ok;
}

// No column is read through a join's range-table entry (USING merges,
// join aliases): branches remove joins from the FROM tree.
bool reads_join_entries(Query* q) {
    Bitmapset* used = pull_varnos(nullptr, reinterpret_cast<Node*>(q->targetList));
    used = bms_union(used, pull_varnos(nullptr, reinterpret_cast<Node*>(q->jointree)));
    used = bms_union(used, pull_varnos(nullptr, q->havingQual));
    int x = -1;
    while ((x = bms_next_member(used, x)) >= 0) {
        if (rt_fetch(static_cast<Index>(x), q->rtable)->rtekind == RTE_JOIN) {
            return true;
        }
    }
    return false;
}

// A derived table the region can see through: a plain SELECT over inner
// joins, which PostgreSQL flattens into the outer query.
const char* derived_table_blocker(const RangeTblEntry* rte) {
    const Query* s = rte->subquery;
    if (rte->lateral) {
        return "a LATERAL subquery in FROM";
    }
    if (s->setOperations != nullptr || s->cteList != NIL || s->hasAggs || s->groupClause != NIL ||
        s->groupingSets != NIL || s->havingQual != nullptr || s->hasWindowFuncs ||
        s->distinctClause != NIL || s->hasTargetSRFs || s->hasSubLinks ||
        s->limitCount != nullptr || s->limitOffset != nullptr || s->rowMarks != NIL) {
        return "a subquery in FROM with aggregates, DISTINCT, LIMIT, set operations, window "
               "functions or subqueries";
    }
    if (const char* o = outer_join(reinterpret_cast<Node*>(s->jointree))) {
        return o;
    }
    return nullptr;
}

// Whether n holds a column reference of any level or a subquery.
bool reads_columns(Node* n, void* ctx) {
    if (n == nullptr) {
        return false;
    }
    if (IsA(n, Var) || IsA(n, PlaceHolderVar) || IsA(n, SubLink) || IsA(n, Query)) {
        return true;
    }
    return expression_tree_walker(
        n, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(reads_columns)), ctx);
}

// A VALUES list in FROM that no change can alter: constants and functions
// of them (no column of another FROM item, no subquery, no volatile
// function). It is no table of the region: every branch and every
// recompute reads it as written. (STABLE functions in it are judged with
// the rest of the query.)
bool constant_values(const RangeTblEntry* rte) {
    return rte->rtekind == RTE_VALUES && !rte->lateral && !pg_call([&] {
               Node* lists = reinterpret_cast<Node*>(rte->values_lists);
               return reads_columns(lists, nullptr) || contain_volatile_functions(lists);
           });
}

}  // namespace

// The first join that is not inner (JOIN ... ON, comma lists, CROSS JOIN,
// USING and NATURAL are inner), named; nullptr when there is none.
const char* outer_join(Node* n) {
    if (IsA(n, FromExpr)) {
        ListCell* lc;
        foreach (lc, castNode(FromExpr, n)->fromlist) {
            if (const char* o = outer_join(static_cast<Node*>(lfirst(lc)))) {
                return o;
            }
        }
    } else if (IsA(n, JoinExpr)) {
        JoinExpr* j = castNode(JoinExpr, n);
        if (j->jointype == JOIN_FULL) {
            return "a FULL JOIN";
        }
        if (j->jointype != JOIN_INNER) {
            return "a LEFT or RIGHT JOIN other than of two tables with both keys selected";
        }
        if (const char* o = outer_join(j->larg)) {
            return o;
        }
        return outer_join(j->rarg);
    }
    return nullptr;
}

// A key column can be NULL unless it is a NOT NULL column of a joined
// table (inner joins never pad with NULLs).
bool nullable(Query* q, Expr* e) {
    if (!IsA(e, Var) || castNode(Var, e)->varlevelsup != 0 || castNode(Var, e)->varattno < 1) {
        return true;
    }
    Var* v = castNode(Var, e);
    RangeTblEntry* rte = rt_fetch(v->varno, q->rtable);
    if (rte->rtekind != RTE_RELATION) {
        return true;
    }
    return !pg_call([&] {
        Relation rel = relation_open(rte->relid, AccessShareLock);
        bool notnull = TupleDescAttr(RelationGetDescr(rel), v->varattno - 1)->attnotnull;
        relation_close(rel, AccessShareLock);
        return notnull;
    });
}

// The tables of q's FROM, through derived tables; false (with the blocker
// set) when a FROM item is neither a table nor such a derived table.
bool collect_tables(Query* q, const std::vector<Index>& prefix, std::vector<RegionTable>& tables,
                    RegionShape& region, AnalyzedQuery& out, int sublink, bool read_target_list) {
    ListCell* lc;
    Index rtindex = 0;
    foreach (lc, q->rtable) {
        rtindex++;
        RangeTblEntry* rte = static_cast<RangeTblEntry*>(lfirst(lc));
        std::vector<Index> path = prefix;
        path.push_back(rtindex);
        if (rte->rtekind == RTE_JOIN || constant_values(rte)) {
            continue;
        }
        if (rte->rtekind == RTE_SUBQUERY) {
            const char* b = derived_table_blocker(rte);
            if (b != nullptr && grouped_derived(rte) && prefix.empty()) {
                // An aggregate over aggregates (of the query or of a subquery).
                b = grouped_table_blocker(q, rtindex);
            }
            if (b != nullptr) {
                out.differential_blocker = b;
                return false;
            }
            if (!check_functions(rte->subquery, out) ||
                !collect_tables(rte->subquery, path, tables, region, out, sublink)) {
                return false;
            }
            continue;
        }
        if (const char* b = relation_blocker(rte)) {
            out.differential_blocker = b;
            return false;
        }
        if (rte->tablesample != nullptr) {
            out.differential_blocker = "TABLESAMPLE";
            return false;
        }
        std::size_t source = 0;
        while (source < region.relids.size() && region.relids[source] != rte->relid) {
            source++;
        }
        if (source == region.relids.size()) {
            region.relids.push_back(rte->relid);
            region.attnums.emplace_back();
        }
        // The images carry only the columns the query reads (netting
        // compares whole images: fewer columns, less work).
        std::vector<int>& cols = region.attnums[source];
        const char* system_column = nullptr;
        bool row_value = false;
        std::vector<int> read = referenced_attnums(q, rtindex, rte->relid, read_target_list,
                                                   &system_column, &row_value);
        if (row_value) {
            out.differential_blocker = row_value_blocker(rte->relid);
            return false;
        }
        if (system_column != nullptr) {
            // Change images carry user columns only.
            out.differential_blocker = std::string("the system column ") + system_column +
                                       " of a table in a join or subquery";
            return false;
        }
        for (int a : read) {
            if (std::find(cols.begin(), cols.end(), a) == cols.end()) {
                cols.push_back(a);
            }
        }
        std::sort(cols.begin(), cols.end());
        tables.push_back({path, source, sublink});
    }
    return true;
}

}  // namespace pgt::pg::region

namespace pgt::pg {

namespace region {
namespace {

// The outer joins of q's FROM into `outer`; a value when they settle the
// answer (a blocker set: false for a join kind the region does not
// follow, the two-table join's own reason then saying more; true for one
// it names itself), nullopt to go on.
std::optional<bool> outer_join_verdict(Query* q, std::vector<OuterJoin>& outer,
                                       AnalyzedQuery& out) {
    if (const char* o = collect_outer_joins(reinterpret_cast<Node*>(q->jointree), outer)) {
        out.differential_blocker = o;
        return false;
    }
    if (!outer.empty() && !pg_call([&] { return nullable_read_only_where_allowed(q, outer); })) {
        out.differential_blocker =
            "an outer join whose nullable side is read by WHERE or another join condition";
        return false;
    }
    if (!outer.empty() && pg_call([&] { return reads_join_entries(q); })) {
        out.differential_blocker = "a column read through a join alias or USING";
        return false;
    }
    for (const OuterJoin& oj : outer) {
        for (Index side : {oj.nullable, oj.full ? oj.other : oj.nullable}) {
            if (rt_fetch(side, q->rtable)->rtekind != RTE_RELATION) {
                out.differential_blocker =
                    oj.full ? "a FULL JOIN whose side is a subquery, not a table"
                            : "an outer join whose nullable side is a subquery, not a table";
                return true;
            }
        }
    }
    return std::nullopt;
}

// The tables of the FROM, then of each WHERE subquery (subquery k's
// tables read images only in the branches for subquery k); at most
// kMaxRegionTables per group. False with a blocker set.
bool collect_region_tables(Query* q, const std::vector<SubquerySite>& sublinks,
                           const std::vector<OuterJoin>& outer, std::vector<RegionTable>& tables,
                           RegionShape& region, AnalyzedQuery& out) {
    if (!collect_tables(q, {}, tables, region, out)) {
        return false;
    }
    // (Next to LEFT and RIGHT joins a subquery reads only preserved tables
    // in WHERE, or any in the select list; a FULL JOIN's branches are not
    // made for them.)
    if (!sublinks.empty() &&
        std::any_of(outer.begin(), outer.end(), [](const OuterJoin& o) { return o.full; })) {
        out.differential_blocker = "a subquery together with a FULL JOIN";
        return false;
    }
    for (std::size_t k = 0; k < sublinks.size(); k++) {
        std::string b = subquery_blocker(sublinks[k]);
        if (!b.empty()) {
            out.differential_blocker = b;
            return false;
        }
        Query* sub = castNode(Query, sublinks[k].link->subselect);
        if (!collect_tables(sub, {}, tables, region, out, static_cast<int>(k),
                            !selects_nothing_read(sublinks[k].link))) {
            return false;
        }
    }
    for (int group = -1; group < static_cast<int>(sublinks.size()); group++) {
        std::size_t members = 0;
        for (const RegionTable& t : tables) {
            members += t.sublink == group ? 1 : 0;
        }
        if (members > static_cast<std::size_t>(kMaxRegionTables)) {
            out.differential_blocker =
                "a join of more than " + std::to_string(kMaxRegionTables) + " tables";
            return false;
        }
    }
    return true;
}

// Whether the query's identity lets a region be replaced by key, and its
// functions allow DIFFERENTIAL. False with a blocker set.
bool identity_allows_region(Query* q, AnalyzedQuery& out) {
    if (q->groupClause != NIL && out.identity.domain != rowid::Domain::kGroupKey) {
        out.differential_blocker = "a GROUP BY expression that is not in the select list";
        return false;
    }
    if (out.identity.domain != rowid::Domain::kGroupKey &&
        out.identity.domain != rowid::Domain::kKeylessRow &&
        out.identity.domain != rowid::Domain::kSynthetic &&
        out.identity.domain != rowid::Domain::kScanKey) {
        out.differential_blocker = "a join whose rows have no identity key";
        return false;
    }
    return check_functions(q, out);
}

// Whether key expression e reads the nullable side of an outer join (its
// value is NULL in a padded row).
bool padded_key(Expr* e, const std::vector<OuterJoin>& outer) {
    for (const OuterJoin& oj : outer) {
        if (pg_call([&] {
                Bitmapset* used = pull_varnos(nullptr, reinterpret_cast<Node*>(e));
                return bms_is_member(static_cast<int>(oj.nullable), used) ||
                       (oj.full && bms_is_member(static_cast<int>(oj.other), used));
            })) {
            return true;
        }
    }
    return false;
}

// Per identity key: whether it can be NULL and whether the query can be
// filtered on it. False with a blocker set (a subquery in a key).
bool key_properties(Query* q, const std::vector<TargetEntry*>& keys,
                    const std::vector<OuterJoin>& outer, bool gsets, RegionShape& region,
                    AnalyzedQuery& out) {
    for (TargetEntry* te : keys) {
        if (pg_call([&] { return checkExprHasSubLink(reinterpret_cast<Node*>(te->expr)); })) {
            out.differential_blocker = "a subquery in a grouping key or a key column";
            return false;
        }
    }
    for (TargetEntry* te : keys) {
        Oid type = exprType(reinterpret_cast<Node*>(te->expr));
        region.key_filtered.push_back(!unmatchable_type(type).has_value());
        region.key_nullable.push_back(gsets || padded_key(te->expr, outer) ||
                                      nullable(q, te->expr));
    }
    // With a key column that leads an index, only such columns are
    // filtered (the others are narrowed through the identity): a filter on
    // an unindexed column costs rows × keys comparisons, hours for a
    // refresh that touches 10^5 groups of 10^6 rows.
    std::vector<bool> led;
    for (TargetEntry* te : keys) {
        led.push_back(index_led(q, te->expr));
    }
    bool any_led = false;
    for (std::size_t k = 0; k < keys.size(); k++) {
        any_led = any_led || (led[k] && region.key_filtered[k]);
    }
    for (std::size_t k = 0; any_led && k < keys.size(); k++) {
        region.key_filtered[k] = region.key_filtered[k] && led[k];
    }
    if (gsets) {
        region.key_filtered.push_back(true);
        region.key_nullable.push_back(false);
    }
    return true;
}

// Per outer join, which tables (indexes into `tables`) are its nullable
// side and, for a FULL JOIN, its larg.
std::vector<diff::OuterJoinTables> outer_join_tables(const std::vector<RegionTable>& tables,
                                                     const std::vector<OuterJoin>& outer) {
    const std::size_t n = tables.size();
    std::vector<diff::OuterJoinTables> out;
    for (const OuterJoin& oj : outer) {
        diff::OuterJoinTables t{n, oj.full, n};
        for (std::size_t i = 0; i < n; i++) {
            if (tables[i].sublink >= 0 || tables[i].path.size() != 1) {
                continue;  // (no subquery next to an outer join; defensive)
            }
            if (tables[i].path[0] == oj.nullable) {
                t.nullable = i;
            }
            if (oj.full && tables[i].path[0] == oj.other) {
                t.other = i;
            }
        }
        out.push_back(t);
    }
    return out;
}

// A semi-join's branches probe the FROM's tables by the correlation's
// outer columns.
void probe_semi_join_columns(const std::optional<std::vector<SemiJoin>>& semi_joins,
                             const std::vector<RegionTable>& tables, RegionShape& region) {
    for (const SemiJoin& j : semi_joins ? *semi_joins : std::vector<SemiJoin>{}) {
        for (Expr* e : j.outer) {
            const Var* y = reinterpret_cast<const Var*>(e);
            for (const RegionTable& t : tables) {
                if (t.sublink < 0 && t.path.size() == 1 &&
                    t.path[0] == static_cast<Index>(y->varno)) {
                    region.equi_attnums[t.source].push_back(y->varattno);
                }
            }
        }
    }
}

// The region's query (narrowed below subqueries, or one GROUP BY per
// grouping set), its algebraic form where it has one, and what makes
// AUTO prefer a recompute.
void finish_region(Query* q, const std::vector<TargetEntry*>& keys,
                   const std::vector<RegionTable>& tables, const std::vector<OuterJoin>& outer,
                   const std::vector<SubquerySite>& sublinks,
                   const std::optional<std::vector<SemiJoin>>& semi_joins, bool gsets,
                   RegionShape& region, AnalyzedQuery& out) {
    if (!sublinks.empty() && !gsets) {
        region.query = narrowed_query(q, keys);
    }
    if (gsets) {
        std::vector<uint32_t> sets = grouping_sets_of(q, kMaxGroupingSets).values;
        for (ir::RegionBranch& b : region.branches) {
            b.sql = each_grouping_set(b.sql, keys.size(), sets);
        }
        region.query = grouping_sets_union(q, sets);
    }
    region.present = true;
    if (outer.empty() && !gsets) {
        (void)algebraic_region(q, keys, keys_look_alike(q, out.identity.key_columns), tables,
                               semi_joins, region);
    }
    out.region = region;
    // One table read without a filter: every change reaches the one row, and
    // DIFFERENTIAL recomputes it from the whole table. Where a filter or a
    // join can keep a change away from it, such a change costs DIFFERENTIAL
    // next to nothing, so AUTO measures both (TPC-H q17: 23 ms against
    // FULL's 1.7 s after a trickle that misses its parts).
    if (out.identity.domain == rowid::Domain::kSynthetic && !region.algebraic &&
        tables.size() == 1 && q->jointree->quals == nullptr) {
        out.auto_full_reason = "the whole aggregate without GROUP BY";
    }
    for (const OuterJoin& oj : outer) {
        if (oj.full) {
            out.auto_full_reason = "the whole FULL JOIN (its key filter cannot reach below it)";
        }
    }
    if (gsets && has_empty_grouping_set(q)) {
        out.auto_full_reason = kEmptySetReason;
    }
}

// When every row of the result derives from one row of a table of the
// FROM, by that table's key (ir::identity_source): that table's source
// index and the query with it read from its new images
// (RegionShape::key_rows). A query that groups, deduplicates or computes
// over several rows has no such table here.
void key_table_rows(Query* q, const std::vector<RegionTable>& tables,
                    const std::vector<OuterJoin>& outer, RegionShape& region,
                    const AnalyzedQuery& out) {
    const ir::IdentitySource key = ir::identity_source(out.operators);
    if (key.relid == 0 || region.algebraic || q->hasAggs || q->groupClause != NIL ||
        std::any_of(tables.begin(), tables.end(),
                    [&](const RegionTable& t) { return inside_grouped(q, t); }) ||
        q->groupingSets != NIL || q->havingQual != nullptr || q->distinctClause != NIL ||
        q->hasWindowFuncs || q->hasTargetSRFs ||
        std::count_if(out.reads.begin(), out.reads.end(),
                      [&](const ReadRight& r) { return r.relid == key.relid; }) != 1) {
        return;
    }
    std::vector<diff::TableRead> states(tables.size(), diff::TableRead::kNow);
    int found = -1;
    for (std::size_t i = 0; i < tables.size(); i++) {
        if (region.relids.at(tables[i].source) == key.relid) {
            if (found >= 0 || tables[i].sublink >= 0) {
                return;
            }
            found = static_cast<int>(i);
            states[i] = diff::TableRead::kNew;
        }
    }
    if (found < 0) {
        return;
    }
    std::vector<int> all;
    for (std::size_t c = 0; c < out.columns.size(); c++) {
        all.push_back(static_cast<int>(c));
    }
    const std::vector<diff::Padding> as_written(outer.size(), diff::Padding::kKeep);
    region.key_rows = diff::compose_branch(
        deparse_branch(q, key_entries(q, all), tables, states, outer, as_written), region.tables,
        states);
    region.key_source = static_cast<int>(tables[static_cast<std::size_t>(found)].source);
    // The table's own column names: the query's names can be aliases
    // (FROM t AS x(a, b)), and the key is read from its change images.
    region.key_columns.clear();
    for (int c : key.columns) {
        region.key_columns.push_back(pg_call([&] {
            return quote_identifier(get_attname(key.relid, static_cast<AttrNumber>(c + 1), false));
        }));
    }
}

}  // namespace
}  // namespace region

bool derive_region_shape(Query* q, AnalyzedQuery& out) {
    using namespace region;
    std::vector<OuterJoin> outer;
    if (std::optional<bool> verdict = outer_join_verdict(q, outer, out)) {
        return *verdict;
    }
    std::vector<RegionTable> tables;
    RegionShape region;
    std::vector<SubquerySite> sublinks = region_sites(q);
    if (!collect_region_tables(q, sublinks, outer, tables, region, out) ||
        !identity_allows_region(q, out)) {
        return true;
    }
    region.tables = branch_tables(q, tables, sublinks);
    // Grouping sets: branches select the grouping expressions, then every
    // set's projection of them (the hidden set column is the last key).
    const bool gsets = has_grouping_set_column(out);
    std::vector<int> key_columns = out.identity.key_columns;
    if (gsets) {
        key_columns.pop_back();
    }
    std::vector<TargetEntry*> keys = key_entries(q, key_columns);
    if (!key_properties(q, keys, outer, gsets, region, out)) {
        return true;
    }
    // The terms of the delta (diff::region_terms) over the tables, with
    // their groups (FROM or a subquery) and the outer joins between them.
    std::vector<int> groups;
    for (const RegionTable& t : tables) {
        groups.push_back(t.sublink);
    }
    std::vector<int> parents;
    for (const SubquerySite& s : sublinks) {
        parents.push_back(s.parent);
    }
    const std::vector<diff::OuterJoinTables> outer_tables = outer_join_tables(tables, outer);
    const std::size_t count = diff::count_region_terms(groups, parents, outer_tables);
    if (count > kMaxRegionBranches) {
        out.differential_blocker = "a join whose delta needs " + std::to_string(count) +
                                   " branches (at most " + std::to_string(kMaxRegionBranches) +
                                   "; fewer tables or outer joins)";
        return true;
    }
    collect_equi_attnums(q, tables, region);
    region.prefilters = region_prefilters(q, tables, region, sublinks);
    std::optional<std::vector<SemiJoin>> semi_joins = semi_joins_of(q, sublinks, tables, region);
    probe_semi_join_columns(semi_joins, tables, region);
    // (Subqueries: only semi-joins, whose branches read the FROM's tables
    // as they are now, or their images.)
    region.kept = kept_candidates(q, tables, region, outer.empty() && semi_joins && !gsets);
    for (const diff::RegionTerm& t : diff::region_terms(groups, parents, outer_tables)) {
        region.branches.push_back(
            {deparse_branch(q, keys, tables, t.tables, outer, t.padding, t.subqueries), t.tables,
             t.padding, t.subqueries});
    }
    finish_region(q, keys, tables, outer, sublinks, semi_joins, gsets, region, out);
    if (!gsets) {
        key_table_rows(q, tables, outer, out.region, out);
    }
    return true;
}

}  // namespace pgt::pg
