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
#include "core/diff/semi_join.hpp"
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

// The branch of a signed term with semi-joins: the query without those
// EXISTS conjuncts, selecting their correlation's outer values y too, whose
// flipped values the branch joins (diff::semi_join_branch_sql).
ir::RegionBranch semi_join_term(Query* q, const std::vector<TargetEntry*>& entries,
                                const std::vector<RegionTable>& tables,
                                const std::vector<diff::TableRead>& states,
                                const diff::SignedTerm& term,
                                const std::vector<const SemiJoin*>& in) {
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
    std::vector<const diff::CountedSemiJoin*> counted;
    std::vector<diff::TableRead> reads = states;
    for (const SemiJoin* j : in) {
        images.push_back(diff::region_delta_images(tables[j->table].source));
        counted.push_back(&j->counted);
        reads[j->table] = diff::TableRead::kBoth;
    }
    return {diff::semi_join_branch_sql(term, entries.size(),
                                       deparse_branch(qe, with_y, tables, states, {}, {}, {}, true),
                                       counted, images),
            reads};
}

// The branches of Σ over non-empty sets S of relations: (−1)^(|S|+1)
// ⋈(D_i, i ∈ S; the others now), each D_i = after-images (+1) −
// before-images (−1) read signed; a semi-join's D is its flipped values.
void signed_branches(Query* q, const std::vector<TargetEntry*>& entries,
                     const std::vector<RegionTable>& tables, const std::vector<std::size_t>& from,
                     const std::vector<SemiJoin>& semis, RegionShape& region) {
    for (const diff::SignedTerm& term : diff::signed_terms(from.size(), semis.size())) {
        std::vector<diff::TableRead> states(tables.size(), diff::TableRead::kNow);
        for (std::size_t i = 0; i < from.size(); i++) {
            states[from[i]] = term.tables[i];
        }
        std::vector<const SemiJoin*> in;
        for (std::size_t m = 0; m < semis.size(); m++) {
            if (term.semis[m]) {
                in.push_back(&semis[m]);
            }
        }
        if (!in.empty()) {
            region.branches.push_back(semi_join_term(q, entries, tables, states, term, in));
            continue;
        }
        region.branches.push_back(
            {diff::signed_branch_sql(term, entries.size(),
                                     deparse_branch(q, entries, tables, states, {}, {}, {}, true)),
             states});
    }
}

}  // namespace

Expr* aggregate_argument(const Aggref* a) {
    return folded_argument(a);
}

// Fills the algebraic form of an inner join's region (see RegionShape):
// false when the outputs are not all keys and algebraic aggregates or the
// signed change needs more branches than a region may store.
bool algebraic_region(Query* q, const std::vector<TargetEntry*>& keys,
                      const std::vector<bool>& key_alike, const std::vector<RegionTable>& tables,
                      const std::optional<std::vector<SemiJoin>>& semi_joins, RegionShape& region) {
    // Every subquery must be a semi-join, and no table's rows reach the
    // query through a GROUP BY (its signed change is not theirs).
    if (!semi_joins || std::any_of(tables.begin(), tables.end(),
                                   [&](const RegionTable& t) { return inside_grouped(q, t); })) {
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
    const std::vector<diff::TableRead> now(tables.size(), diff::TableRead::kNow);
    region.row_query =
        diff::compose_branch(deparse_branch(q, entries, tables, now), region.tables, now);
    region.branches.clear();
    if (signs) {
        signed_branches(q, entries, tables, from, semis, region);
    }
    for (const diff::SignedTerm& term :
         signs ? std::vector<diff::SignedTerm>{} : diff::image_terms(from.size())) {
        region.branches.push_back(
            {diff::image_branch_sql(term, deparse_branch(q, entries, tables, term.tables)),
             term.tables});
    }
    region.algebraic = true;
    region.aggs = aggs;
    region.output_templates = outs->templates;
    region.key_alike = key_alike;
    return true;
}

}  // namespace pgt::pg::region
