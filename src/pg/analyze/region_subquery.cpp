// WHERE subqueries of a join region: where they may be, which are
// semi-joins, the images condition their branches add, the query narrowed
// to touched keys.
// Invariant: a subquery is followed only where its result is a function
// of rows the region reads; anything else is a blocker with a name.
#include "pg/analyze/region_parts.hpp"

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
#include "catalog/pg_class.h"
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

// Subqueries of an expression at this level (not inside subqueries).
bool collect_links(Node* n, void* ctx) {
    if (n == nullptr || IsA(n, Query)) {
        return false;
    }
    if (IsA(n, SubLink)) {
        List** links = static_cast<List**>(ctx);
        *links = lappend(*links, n);
    }
    return expression_tree_walker(
        n, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(collect_links)), ctx);
}

std::vector<SubLink*> links_of(Node* n) {
    List* links = NIL;
    pg_call([&] { (void)collect_links(n, &links); });
    std::vector<SubLink*> out;
    ListCell* lc;
    foreach (lc, links) {
        out.push_back(static_cast<SubLink*>(lfirst(lc)));
    }
    return out;
}

// Adds the planner's row estimate (pg_class.reltuples; none for a table
// never analysed) of each table n reads, in its subqueries too, to *ctx.
bool rows_read_walker(Node* n, void* ctx) {
    if (n == nullptr) {
        return false;
    }
    auto walker = reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(rows_read_walker));
    if (IsA(n, RangeTblEntry)) {
        const RangeTblEntry* rte = castNode(RangeTblEntry, n);
        if (rte->rtekind == RTE_RELATION) {
            HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(rte->relid));
            if (HeapTupleIsValid(tuple)) {
                float4 n_rows = reinterpret_cast<Form_pg_class>(GETSTRUCT(tuple))->reltuples;
                *static_cast<double*>(ctx) += n_rows > 0 ? n_rows : 0;
                ReleaseSysCache(tuple);
            }
        }
        return false;
    }
    if (IsA(n, Query)) {
        return query_tree_walker(castNode(Query, n), walker, ctx, QTW_EXAMINE_RTES_BEFORE);
    }
    return expression_tree_walker(n, walker, ctx);
}

// Whether sub's selected values are its rows' own (see SubquerySite).
bool selects_row_values(Query* sub) {
    if (sub->limitCount != nullptr || sub->limitOffset != nullptr || sub->hasWindowFuncs ||
        sub->hasDistinctOn || sub->groupingSets != NIL || sub->hasTargetSRFs) {
        return false;
    }
    if (!sub->hasAggs && sub->groupClause == NIL && sub->havingQual == nullptr) {
        return true;
    }
    TargetEntry* te = static_cast<TargetEntry*>(linitial(sub->targetList));
    return sub->groupClause != NIL && te->ressortgroupref != 0 &&
           get_sortgroupref_clause_noerr(te->ressortgroupref, sub->groupClause) != nullptr;
}

// conj as `x [NOT] IN (subquery)` with a one-column `=`: the form, or 0.
char in_form(Node* conj) {
    char form = 'i';
    if (IsA(conj, BoolExpr) && castNode(BoolExpr, conj)->boolop == NOT_EXPR) {
        conj = static_cast<Node*>(linitial(castNode(BoolExpr, conj)->args));
        form = 'n';
    }
    if (!IsA(conj, SubLink)) {
        return 0;
    }
    SubLink* s = castNode(SubLink, conj);
    if (s->subLinkType != ANY_SUBLINK || s->testexpr == nullptr || !IsA(s->testexpr, OpExpr)) {
        return 0;
    }
    OpExpr* op = castNode(OpExpr, s->testexpr);
    if (list_length(op->args) != 2 || !IsA(lsecond(op->args), Param) ||
        checkExprHasSubLink(static_cast<Node*>(linitial(op->args)))) {
        return 0;
    }
    char* name = get_opname(op->opno);  // a cache lookup: NULL when missing, never an error
    if (name == nullptr || strcmp(name, "=") != 0 ||
        !selects_row_values(castNode(Query, s->subselect))) {
        return 0;
    }
    return form;
}

bool has_aggregate_of_upper_level(Node* n, void* ctx) {
    if (n == nullptr) {
        return false;
    }
    int* levels = static_cast<int*>(ctx);
    if (IsA(n, Aggref) && static_cast<int>(castNode(Aggref, n)->agglevelsup) >= *levels) {
        return true;
    }
    auto walker =
        reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(has_aggregate_of_upper_level));
    if (IsA(n, Query)) {
        (*levels)++;
        bool r = query_tree_walker(castNode(Query, n), walker, ctx, 0);
        (*levels)--;
        return r;
    }
    return expression_tree_walker(n, walker, ctx);
}

// Whether c compares a column expression of the subquery with one of the
// query (one level up) by a hash- or merge-joinable operator: a
// correlation PostgreSQL can drive from the images.
bool equi_correlation(Node* c) {
    if (!IsA(c, OpExpr) || list_length(castNode(OpExpr, c)->args) != 2) {
        return false;
    }
    OpExpr* op = castNode(OpExpr, c);
    Node* a = static_cast<Node*>(linitial(op->args));
    Node* b = static_cast<Node*>(lsecond(op->args));
    auto outer_only = [](Node* n) {
        return contain_vars_of_level(n, 1) && !contain_vars_of_level(n, 0);
    };
    auto inner_only = [](Node* n) {
        return contain_vars_of_level(n, 0) && !contain_vars_of_level(n, 1);
    };
    return (op_mergejoinable(op->opno, exprType(a)) || op_hashjoinable(op->opno, exprType(a))) &&
           ((outer_only(a) && inner_only(b)) || (inner_only(a) && outer_only(b)));
}

// The subquery's WHERE without the terms that relate it to the query other
// than by equality (`l2.l_suppkey <> l1.l_suppkey`): a superset of its rows
// for any row of the query, which lets PostgreSQL run the images first
// (a semi-join with such a term cannot be driven from its inner side).
void relax_correlation(Query* sub) {
    if (sub->jointree->quals == nullptr) {
        return;
    }
    List* kept = NIL;
    ListCell* lc;
    foreach (lc, make_ands_implicit(reinterpret_cast<Expr*>(sub->jointree->quals))) {
        Node* c = static_cast<Node*>(lfirst(lc));
        if (!contain_vars_of_level(c, 1) || equi_correlation(c)) {
            kept = lappend(kept, c);
        }
    }
    sub->jointree->quals =
        kept == NIL ? nullptr : reinterpret_cast<Node*>(make_ands_explicit(kept));
}

// One conjunct of a semi-join's subquery: a condition on s alone
// (deparsed over "s" and over the images alias), or a correlation `x = y`
// (its outer Var y, moved to the query's level, and s's column x).
struct SemiConjunct {
    bool ok = false;
    const char* s_text = nullptr;
    const char* i_text = nullptr;
    Var* outer = nullptr;
    const char* column = nullptr;
    Oid type = InvalidOid;
};

// Whether n reads a whole row (the signed images' rows also carry
// __pgt_sign) or a system column (refused earlier, by collect_tables).
bool reads_beyond_user_columns(Node* n, void* ctx) {
    if (n == nullptr) {
        return false;
    }
    if (IsA(n, Var)) {
        return castNode(Var, n)->varattno <= 0;
    }
    return expression_tree_walker(
        n, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(reads_beyond_user_columns)),
        ctx);
}

// Runs under pg_call.
SemiConjunct semi_conjunct(Node* c, Oid relid) {
    SemiConjunct r;
    if (!contain_vars_of_level(c, 1)) {
        if (contain_vars_of_level(c, 2) || checkExprHasSubLink(c) ||
            reads_beyond_user_columns(c, nullptr)) {
            return r;
        }
        r.s_text = deparse_expression(c, deparse_context_for("s", relid), true, false);
        r.i_text = deparse_expression(c, deparse_context_for(ir::kImageAlias, relid), true, false);
        r.ok = true;
        return r;
    }
    if (!IsA(c, OpExpr) || list_length(castNode(OpExpr, c)->args) != 2) {
        return r;
    }
    OpExpr* op = castNode(OpExpr, c);
    // (A binary-compatible cast, e.g. varchar compared as text, is looked
    // through: the column's own type has that equality.)
    auto bare = [](Node* n) {
        while (IsA(n, RelabelType)) {
            n = reinterpret_cast<Node*>(castNode(RelabelType, n)->arg);
        }
        return n;
    };
    Node* a = bare(static_cast<Node*>(linitial(op->args)));
    Node* b = bare(static_cast<Node*>(lsecond(op->args)));
    auto level = [](Node* n, Index up) {
        return IsA(n, Var) && castNode(Var, n)->varlevelsup == up && castNode(Var, n)->varattno > 0;
    };
    if (level(a, 1) && level(b, 0)) {
        std::swap(a, b);
    }
    if (!level(a, 0) || !level(b, 1)) {
        return r;
    }
    Var* x = castNode(Var, a);
    Var* y = castNode(Var, b);
    TypeCacheEntry* tc = lookup_type_cache(x->vartype, TYPECACHE_EQ_OPR);
    if (x->vartype != y->vartype || tc->eq_opr != op->opno || x->varcollid != y->varcollid) {
        return r;
    }
    r.outer = static_cast<Var*>(copyObjectImpl(y));
    r.outer->varlevelsup = 0;
    r.column = quote_identifier(get_attname(relid, x->varattno, false));
    r.type = x->vartype;
    r.ok = true;
    return r;
}

// The semi-join of subquery site k, if it has that shape.
std::optional<SemiJoin> semi_join_of(Query* q, const SubquerySite& site, int k,
                                     const std::vector<RegionTable>& tables,
                                     const RegionShape& region) {
    if (site.conjunct < 0 || site.parent >= 0 || site.link->subLinkType != EXISTS_SUBLINK ||
        !selects_nothing_read(site.link) || castNode(Query, site.link->subselect)->hasSubLinks) {
        return std::nullopt;
    }
    SemiJoin j;
    j.conjunct = site.conjunct;
    std::size_t members = 0;
    for (std::size_t i = 0; i < tables.size(); i++) {
        if (tables[i].sublink == k) {
            members++;
            j.table = i;
        }
    }
    Query* sub = castNode(Query, site.link->subselect);
    if (members != 1 || list_length(sub->rtable) != 1 ||
        list_length(sub->jointree->fromlist) != 1 ||
        !IsA(linitial(sub->jointree->fromlist), RangeTblRef) ||
        rt_fetch(1, sub->rtable)->rtekind != RTE_RELATION || sub->jointree->quals == nullptr) {
        return std::nullopt;
    }
    // The conjunct is the EXISTS itself, or NOT of it.
    int form = pg_call([&] {
        List* conjuncts = make_ands_implicit(reinterpret_cast<Expr*>(q->jointree->quals));
        Node* conj = static_cast<Node*>(list_nth(conjuncts, site.conjunct));
        if (conj == reinterpret_cast<Node*>(site.link)) {
            return 1;
        }
        bool negated = IsA(conj, BoolExpr) && castNode(BoolExpr, conj)->boolop == NOT_EXPR &&
                       linitial(castNode(BoolExpr, conj)->args) == site.link;
        return negated ? 2 : 0;
    });
    if (form == 0) {
        return std::nullopt;  // the EXISTS inside a larger expression
    }
    j.counted.anti = form == 2;
    Oid relid = region.relids[tables[j.table].source];
    j.counted.from = (rt_fetch(1, sub->rtable)->inh ? "" : "ONLY ") + quoted_relation_name(relid);
    List* conjuncts =
        pg_call([&] { return make_ands_implicit(reinterpret_cast<Expr*>(sub->jointree->quals)); });
    ListCell* lc;
    foreach (lc, conjuncts) {
        Node* c = static_cast<Node*>(lfirst(lc));
        SemiConjunct sc = pg_call([&] { return semi_conjunct(c, relid); });
        if (!sc.ok) {
            return std::nullopt;
        }
        if (sc.outer == nullptr) {
            j.counted.s_filter.emplace_back(sc.s_text);
            j.counted.i_filter.emplace_back(sc.i_text);
            continue;
        }
        std::string equal = pg_call([&] { return btree_equality(sc.type); });
        if (equal.empty()) {
            return std::nullopt;
        }
        j.outer.push_back(reinterpret_cast<Expr*>(sc.outer));
        j.counted.inner.emplace_back(sc.column);
        j.counted.equal.push_back(equal);
    }
    if (j.outer.empty()) {
        return std::nullopt;  // uncorrelated: one value for every row
    }
    return j;
}

}  // namespace

// The subqueries of q's WHERE conjuncts, select list and HAVING, in that
// order (pointers into q's own tree; the same order for a copy of q).
std::vector<SubquerySite> subquery_sites(Query* q) {
    std::vector<SubquerySite> out;
    if (q->jointree->quals != nullptr) {
        int c = 0;
        ListCell* lc;
        List* conjuncts = pg_call(
            [&] { return make_ands_implicit(reinterpret_cast<Expr*>(q->jointree->quals)); });
        foreach (lc, conjuncts) {
            Node* conj = static_cast<Node*>(lfirst(lc));
            std::vector<SubLink*> links = links_of(conj);
            char form = links.size() == 1 ? pg_call([&] { return in_form(conj); }) : 0;
            for (SubLink* l : links) {
                out.push_back({l, c, form != 0 ? form : 'g'});
            }
            c++;
        }
    }
    for (SubLink* l : links_of(reinterpret_cast<Node*>(q->targetList))) {
        out.push_back({l, -1, 'g'});
    }
    for (SubLink* l : links_of(q->havingQual)) {
        out.push_back({l, -1, 'g'});
    }
    return out;
}

std::vector<SubquerySite> region_sites(Query* q) {
    std::vector<SubquerySite> out = subquery_sites(q);
    for (std::size_t k = 0; k < out.size(); k++) {  // (out grows)
        Query* sub = castNode(Query, out[k].link->subselect);
        if (!sub->hasSubLinks) {
            continue;
        }
        for (SubquerySite s : subquery_sites(sub)) {
            s.parent = static_cast<int>(k);
            out.push_back(s);
        }
    }
    // Ranks matter among nested siblings only (region_branch.cpp,
    // subquery_conditions): no catalog lookup for the query's own.
    std::vector<double> rows(out.size(), 0);
    for (std::size_t k = 0; k < out.size(); k++) {
        if (out[k].parent >= 0) {
            pg_call([&] { (void)rows_read_walker(out[k].link->subselect, &rows[k]); });
        }
    }
    for (std::size_t k = 0; k < out.size(); k++) {
        for (std::size_t j = 0; j < out.size(); j++) {
            if (j != k && out[j].parent == out[k].parent &&
                (rows[j] > rows[k] || (rows[j] == rows[k] && j < k))) {
                out[k].rank++;
            }
        }
    }
    return out;
}

// An EXISTS whose select list is never evaluated for its result: no
// aggregate, grouping, DISTINCT, window function, set-returning function or
// LIMIT for it to take part in. Its tables' images need not carry the
// columns only the select list reads (`EXISTS (SELECT * ...)`).
bool selects_nothing_read(const SubLink* link) {
    const Query* sub = castNode(Query, link->subselect);
    return link->subLinkType == EXISTS_SUBLINK && !sub->hasAggs && !sub->hasWindowFuncs &&
           !sub->hasTargetSRFs && sub->groupClause == NIL && sub->groupingSets == NIL &&
           sub->havingQual == nullptr && sub->distinctClause == NIL && sub->limitCount == nullptr &&
           sub->limitOffset == nullptr;
}

// Why a region cannot follow this subquery ("" when it can): its FROM
// must be tables and inner joins (no set operations, WITH or subqueries of
// its own), and it may not use the query's aggregates.
std::string subquery_blocker(const SubquerySite& site) {
    Query* s = castNode(Query, site.link->subselect);
    if (s->setOperations != nullptr || s->cteList != NIL || s->rowMarks != NIL) {
        return "a subquery with set operations or WITH";
    }
    if (site.parent >= 0 && site.conjunct < 0) {
        return "a subquery in the select list or HAVING of a subquery";
    }
    if (s->hasSubLinks && links_of(reinterpret_cast<Node*>(s->jointree)).size() !=
                              links_of(s->jointree->quals).size()) {
        return "a subquery in a join condition of a subquery";
    }
    if (outer_join(reinterpret_cast<Node*>(s->jointree)) != nullptr) {
        return "a subquery with an outer join";
    }
    int levels = 1;
    if (pg_call([&] {
            return query_tree_walker(s,
                                     reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(
                                         has_aggregate_of_upper_level)),
                                     &levels, 0);
        })) {
        return "a subquery over the query's own aggregates";
    }
    return "";
}

// A subquery's condition in a branch that reads its tables' images:
// which rows of the query a changed subquery row can concern. 'g': those
// for which the subquery's FROM/WHERE over the images finds a row (it
// correlates with them; every row when uncorrelated); 'i': those whose
// value it selects (without GROUP BY/HAVING: the changed row's group);
// 'n' also every row when the changed row selects NULL, and rows whose own
// value is NULL (both flip when the subquery's result does). Runs under
// pg_call; changes the site's subquery.
Node* images_condition(const SubquerySite& site) {
    Query* sub = castNode(Query, site.link->subselect);
    sub->groupClause = NIL;
    sub->groupingSets = NIL;
    sub->havingQual = nullptr;
    sub->hasAggs = false;
    sub->distinctClause = NIL;
    sub->hasDistinctOn = false;
    sub->sortClause = NIL;
    sub->limitCount = nullptr;
    sub->limitOffset = nullptr;
    sub->windowClause = NIL;
    sub->hasWindowFuncs = false;
    relax_correlation(sub);
    auto exists = [](Query* q) {
        SubLink* e = makeNode(SubLink);
        e->subLinkType = EXISTS_SUBLINK;
        e->subLinkId = 0;
        e->testexpr = nullptr;
        e->operName = NIL;
        e->subselect = reinterpret_cast<Node*>(q);
        e->location = -1;
        return e;
    };
    if (site.form == 'g') {
        sub->targetList = list_make1(
            makeTargetEntry(reinterpret_cast<Expr*>(makeConst(INT4OID, -1, InvalidOid, 4,
                                                              Int32GetDatum(1), false, true)),
                            1, pstrdup("one"), false));
        return reinterpret_cast<Node*>(exists(sub));
    }
    if (site.form == 'i') {
        return reinterpret_cast<Node*>(site.link);
    }
    Query* nulls = static_cast<Query*>(copyObjectImpl(sub));
    TargetEntry* te = static_cast<TargetEntry*>(linitial(nulls->targetList));
    NullTest* selected_null = makeNode(NullTest);
    selected_null->arg = static_cast<Expr*>(copyObjectImpl(te->expr));
    selected_null->nulltesttype = IS_NULL;
    selected_null->argisrow = false;
    selected_null->location = -1;
    nulls->jointree->quals =
        nulls->jointree->quals == nullptr
            ? reinterpret_cast<Node*>(selected_null)
            : reinterpret_cast<Node*>(
                  makeBoolExpr(AND_EXPR, list_make2(nulls->jointree->quals, selected_null), -1));
    NullTest* own_null = makeNode(NullTest);
    own_null->arg =
        static_cast<Expr*>(copyObjectImpl(linitial(castNode(OpExpr, site.link->testexpr)->args)));
    own_null->nulltesttype = IS_NULL;
    own_null->argisrow = false;
    own_null->location = -1;
    return reinterpret_cast<Node*>(
        makeBoolExpr(OR_EXPR, list_make3(site.link, exists(nulls), own_null), -1));
}

// Every subquery as a semi-join, in subquery order; nullopt when one is
// not.
std::optional<std::vector<SemiJoin>> semi_joins_of(Query* q,
                                                   const std::vector<SubquerySite>& sublinks,
                                                   const std::vector<RegionTable>& tables,
                                                   const RegionShape& region) {
    std::vector<SemiJoin> out;
    for (std::size_t k = 0; k < sublinks.size(); k++) {
        std::optional<SemiJoin> j =
            semi_join_of(q, sublinks[k], static_cast<int>(k), tables, region);
        if (!j) {
            return std::nullopt;
        }
        out.push_back(*j);
    }
    return out;
}

// q with each WHERE term `x IN (subquery)` whose x is identity key j
// narrowed inside: the subquery also requires its selected expression to
// be among key j's touched values (ir::key_slot(j)). The recompute keeps
// only rows whose key j is touched, and for those the subquery's rows with
// that value are all kept (under GROUP BY the selected expression is a
// key: whole groups), so their IN is unchanged; the subquery then reads a
// few groups instead of all (TPC-H q18). "" when no term qualifies. (Not
// for NOT IN: a NULL the filter drops would change its result.)
std::string narrowed_query(Query* q, const std::vector<TargetEntry*>& keys) {
    Query* c = pg_call([&] { return static_cast<Query*>(copyObjectImpl(q)); });
    bool narrowed = false;
    for (const SubquerySite& site : subquery_sites(c)) {
        if (site.form != 'i' || site.conjunct < 0) {
            continue;
        }
        OpExpr* test = castNode(OpExpr, site.link->testexpr);
        Node* x = static_cast<Node*>(linitial(test->args));
        for (std::size_t j = 0; j < keys.size(); j++) {
            bool done = pg_call([&] {
                if (!equal(x, keys[j]->expr)) {
                    return false;
                }
                Oid commutator = get_commutator(test->opno);
                if (commutator == InvalidOid) {
                    return false;
                }
                Query* sub = castNode(Query, site.link->subselect);
                TargetEntry* te = static_cast<TargetEntry*>(linitial(sub->targetList));
                Expr* any = among_touched_keys(te->expr, commutator, test->inputcollid, exprType(x),
                                               exprCollation(x), static_cast<int>(j));
                if (any == nullptr) {
                    return false;
                }
                sub->jointree->quals =
                    sub->jointree->quals == nullptr
                        ? reinterpret_cast<Node*>(any)
                        : reinterpret_cast<Node*>(
                              makeBoolExpr(AND_EXPR, list_make2(sub->jointree->quals, any), -1));
                return true;
            });
            narrowed = narrowed || done;
            if (done) {
                break;
            }
        }
    }
    if (!narrowed) {
        return "";
    }
    return with_pinned_search_path(
        [&] { return std::string(pg_call([&] { return pg_get_querydef(c, false); })); });
}

}  // namespace pgt::pg::region

namespace pgt::pg {

bool subqueries_in_supported_places(Query* q) {
    using namespace region;
    std::size_t all = links_of(reinterpret_cast<Node*>(q->targetList)).size() +
                      links_of(reinterpret_cast<Node*>(q->jointree)).size() +
                      links_of(q->havingQual).size();
    return all == subquery_sites(q).size();
}

}  // namespace pgt::pg
