// Algebraic join regions: the signed change of an inner join under
// algebraic aggregates, one branch per term of diff::signed_terms /
// diff::image_terms, semi-joins as flipped values.
// Invariant: the branches sum, with their signs, to the change of the join.
#include "pg/analyze/region_parts.hpp"
#include "core/sql/names.hpp"

#include "pg/analyze/join_region.hpp"
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
#include "optimizer/optimizer.h"
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

// An aggregate's argument as the branches select it: FILTER folded in
// (CASE WHEN filter THEN arg END; count(*) FILTER: CASE WHEN filter THEN
// 1 END); nullptr for an unfiltered count(*).
Expr* folded_argument(const Aggref* a) {
    Expr* arg = a->args == NIL
                    ? nullptr
                    : static_cast<Expr*>(copyObjectImpl(linitial_node(TargetEntry, a->args)->expr));
    if (a->aggfilter == nullptr) {
        return arg;
    }
    if (arg == nullptr) {
        arg = reinterpret_cast<Expr*>(
            makeConst(INT4OID, -1, InvalidOid, sizeof(int32), Int32GetDatum(1), false, true));
    }
    CaseWhen* w = makeNode(CaseWhen);
    w->expr = static_cast<Expr*>(copyObjectImpl(a->aggfilter));
    w->result = arg;
    w->location = -1;
    CaseExpr* c = makeNode(CaseExpr);
    c->casetype = exprType(reinterpret_cast<Node*>(arg));
    c->casecollid = exprCollation(reinterpret_cast<Node*>(arg));
    c->arg = nullptr;
    c->args = list_make1(w);
    c->defresult = reinterpret_cast<Expr*>(
        makeNullConst(c->casetype, exprTypmod(reinterpret_cast<Node*>(arg)), c->casecollid));
    c->location = -1;
    return reinterpret_cast<Expr*>(c);
}

// The branch of a set of changed relations that includes semi-joins `in`:
// `inner` (the query's FROM/WHERE, those EXISTS conjuncts left out,
// selecting the entries and then each semi-join's y as __pgt_k<base+1>...,
// then the signs) joined to each semi-join's flipped values, weighted by
// their flips. Per semi-join: the net count of changed s rows per x (from
// s's signed images), and s's rows now with that x, counted up to one past
// the net (enough to tell whether any were there before).
std::string semi_join_branch(const std::string& inner, const std::string& weight,
                             std::size_t entries, const std::vector<const SemiJoin*>& in,
                             const std::vector<std::string>& images) {
    std::string from = "(" + inner + ") b", flips, nonzero, cols;
    std::size_t base = entries;
    for (std::size_t m = 0; m < in.size(); m++) {
        const SemiJoin& j = *in[m];
        std::string d = "__pgt_d" + std::to_string(m + 1);
        std::vector<std::string> keys, on, probe;
        for (std::size_t p = 0; p < j.inner.size(); p++) {
            std::string e = "__pgt_e" + std::to_string(p + 1);
            keys.push_back(ir::kImageAlias + std::string(".") + j.inner[p] + " AS " + e);
            on.push_back(d + "." + e + " " + j.equal[p] + " b." + diff::region_key(base + p));
            probe.push_back("s." + j.inner[p] + " " + j.equal[p] + " " + d + "." + e);
        }
        std::vector<std::string> group;
        for (std::size_t p = 1; p <= j.inner.size(); p++) {
            group.push_back(std::to_string(p));
        }
        probe.insert(probe.end(), j.s_filter.begin(), j.s_filter.end());
        std::string net = "SELECT " + diff::join(keys, ", ") + ", pg_catalog.sum(" +
                          ir::kImageAlias + "." + sql::kSignColumn +
                          ")::pg_catalog.int8 AS __pgt_net FROM " + images[m] + " " +
                          ir::kImageAlias +
                          (j.i_filter.empty() ? "" : " WHERE " + diff::join(j.i_filter, " AND ")) +
                          " GROUP BY " + diff::join(group, ", ") + " HAVING pg_catalog.sum(" +
                          ir::kImageAlias + "." + sql::kSignColumn + ") OPERATOR(pg_catalog.<>) 0";
        from += " JOIN (" + net + ") " + d + " ON " + diff::join(on, " AND ");
        // Rows of s now with x, up to net + 1 of them: `had` whether any were
        // there before the change (now − net).
        std::string now = "z.__pgt_c", had = "z.__pgt_c OPERATOR(pg_catalog.-) " + d + ".__pgt_net";
        std::string cmp = j.anti ? " OPERATOR(pg_catalog.=) 0" : " OPERATOR(pg_catalog.>) 0";
        std::string f = "__pgt_f" + std::to_string(m + 1);
        flips +=
            ", (SELECT (" + now + cmp + ")::pg_catalog.int4 OPERATOR(pg_catalog.-) (" + had + cmp +
            ")::pg_catalog.int4 FROM (SELECT pg_catalog.count(*) AS __pgt_c FROM (SELECT 1 FROM " +
            j.from + " s WHERE " + diff::join(probe, " AND ") + " LIMIT GREATEST(" + d +
            ".__pgt_net, 0) OPERATOR(pg_catalog.+) 1) x) z) AS " + f;
        nonzero += (nonzero.empty() ? "" : " AND ") + ("y." + f + " OPERATOR(pg_catalog.<>) 0");
        base += j.inner.size();
    }
    std::string w = weight;
    for (std::size_t m = 0; m < in.size(); m++) {
        w += " OPERATOR(pg_catalog.*) y.__pgt_f" + std::to_string(m + 1);
    }
    for (std::size_t k = 0; k < entries; k++) {
        cols += ", y." + diff::region_key(k);
    }
    // OFFSET 0: each flip is counted once, after the join found its rows.
    return "SELECT " + w + " AS " + sql::kWeightColumn + cols + " FROM (SELECT b.*" + flips +
           " FROM " + from + " OFFSET 0) y WHERE " + nonzero;
}

}  // namespace

namespace {

// The branch of a signed term with semi-joins: the query without those
// EXISTS conjuncts, selecting their correlation's outer values y too, whose
// flipped values the branch joins (semi_join_branch).
ir::RegionBranch semi_join_term(Query* q, const std::vector<TargetEntry*>& entries,
                                const std::vector<RegionTable>& tables,
                                const std::vector<diff::TableRead>& states,
                                const std::vector<const SemiJoin*>& in, const std::string& weight,
                                RegionShape& region) {
    std::vector<TargetEntry*> with_y = entries;
    std::vector<int> dropped;
    for (const SemiJoin* j : in) {
        dropped.push_back(j->conjunct);
    }
    Query* qe = pg_call([&] {
        Query* c = static_cast<Query*>(copyObjectImpl(q));
        List* kept = conjuncts_without(
            make_ands_implicit(reinterpret_cast<Expr*>(c->jointree->quals)), dropped);
        c->jointree->quals =
            kept == NIL ? nullptr : reinterpret_cast<Node*>(make_ands_explicit(kept));
        for (const SemiJoin* j : in) {
            for (Expr* y : j->outer) {
                with_y.push_back(makeTargetEntry(static_cast<Expr*>(copyObjectImpl(y)),
                                                 static_cast<AttrNumber>(with_y.size() + 1),
                                                 nullptr, false));
            }
        }
        return c;
    });
    std::vector<std::string> images;
    std::vector<diff::TableRead> reads = states;
    for (const SemiJoin* j : in) {
        images.push_back(diff::region_delta_images(tables[j->table].source));
        reads[j->table] = diff::TableRead::kBoth;
    }
    std::string y_weight = weight;
    for (std::size_t at = y_weight.find(" b."); at != std::string::npos;
         at = y_weight.find(" b.", at + 3)) {
        y_weight.replace(at, 3, " y.");
    }
    return branch_reading(
        semi_join_branch(deparse_branch(qe, with_y, tables, states, {}, {}, {}, true, &region.kept),
                         y_weight, entries.size(), in, images),
        reads, tables);
}

// The branches of Σ over non-empty sets S of relations: (−1)^(|S|+1)
// ⋈(D_i, i ∈ S; the others now), each D_i = after-images (+1) −
// before-images (−1) read signed; a semi-join's D is its flipped values.
void signed_branches(Query* q, const std::vector<TargetEntry*>& entries,
                     const std::vector<RegionTable>& tables, const std::vector<std::size_t>& from,
                     const std::vector<SemiJoin>& semis, RegionShape& region) {
    std::string columns;
    for (std::size_t k = 0; k < entries.size(); k++) {
        columns += ", b." + diff::region_key(k);
    }
    for (const diff::SignedTerm& term : diff::signed_terms(from.size(), semis.size())) {
        std::vector<diff::TableRead> states(tables.size(), diff::TableRead::kNow);
        std::string weight = std::to_string(term.sign) + "::pg_catalog.int8";
        int in_s = 0;
        for (std::size_t i = 0; i < from.size(); i++) {
            if (term.tables[i] != diff::TableRead::kNow) {
                states[from[i]] = term.tables[i];
                weight += " OPERATOR(pg_catalog.*) b.__pgt_sg" + std::to_string(++in_s);
            }
        }
        std::vector<const SemiJoin*> in;
        for (std::size_t m = 0; m < semis.size(); m++) {
            if (term.semis[m]) {
                in.push_back(&semis[m]);
            }
        }
        if (!in.empty()) {
            region.branches.push_back(
                semi_join_term(q, entries, tables, states, in, weight, region));
            continue;
        }
        region.branches.push_back(branch_reading(
            "SELECT " + weight + " AS " + sql::kWeightColumn + columns + " FROM (" +
                deparse_branch(q, entries, tables, states, {}, {}, {}, true, &region.kept) + ") b",
            states, tables));
    }
}

}  // namespace

// Fills the algebraic form of an inner join's region (see RegionShape):
// false when the outputs are not all keys and algebraic aggregates or the
// signed change needs more branches than a region may store.
bool algebraic_region(Query* q, const std::vector<TargetEntry*>& keys,
                      const std::vector<bool>& key_alike, const std::vector<RegionTable>& tables,
                      const std::optional<std::vector<SemiJoin>>& semi_joins, RegionShape& region) {
    // Every subquery must be a semi-join.
    if (!semi_joins) {
        return false;
    }
    const std::vector<SemiJoin>& semis = *semi_joins;
    std::optional<AlgebraicOutputs> outs = algebraic_outputs(q, nullptr);
    std::vector<std::size_t> from;  // the FROM's tables
    for (std::size_t i = 0; i < tables.size(); i++) {
        if (tables[i].sublink < 0) {
            from.push_back(i);
        }
    }
    // Tables of the FROM read their signed images, a derived table on the
    // way selecting the sign: one branch per non-empty set of tables (else
    // one per set and image kind).
    bool signs = std::all_of(from.begin(), from.end(),
                             [&](std::size_t i) { return sign_reaches_top(q, tables[i]); });
    if (!outs || diff::count_signed_terms(from.size() + semis.size(), signs) > kMaxRegionBranches ||
        (!signs && !semis.empty())) {
        return false;
    }
    std::vector<TargetEntry*> entries = keys;
    std::vector<ir::AlgebraicAgg> aggs;
    for (std::size_t i = 0; i < outs->aggs.size(); i++) {
        ir::AlgebraicAgg x = outs->aggs[i].agg;
        Expr* arg = pg_call([&] { return folded_argument(outs->aggs[i].aggref); });
        if (arg != nullptr) {
            x.arg = "r." + sql::argument_column(i);
            entries.push_back(pg_call([&] {
                return makeTargetEntry(arg, static_cast<AttrNumber>(entries.size() + 1), nullptr,
                                       false);
            }));
        }
        aggs.push_back(x);
    }
    region.row_query = deparse_branch(
        q, entries, tables, std::vector<diff::TableRead>(tables.size(), diff::TableRead::kNow));
    region.branches.clear();
    if (signs) {
        signed_branches(q, entries, tables, from, semis, region);
    }
    for (const diff::SignedTerm& term :
         signs ? std::vector<diff::SignedTerm>{} : diff::image_terms(from.size())) {
        region.branches.push_back(branch_reading(
            "SELECT " + std::to_string(term.sign) + "::pg_catalog.int8 AS " + sql::kWeightColumn +
                ", b.* FROM (" +
                deparse_branch(q, entries, tables, term.tables, {}, {}, {}, false, &region.kept) +
                ") b",
            term.tables, tables));
    }
    region.algebraic = true;
    region.aggs = aggs;
    region.output_templates = outs->templates;
    region.key_alike = key_alike;
    return true;
}

}  // namespace pgt::pg::region
