// Grouped derived tables joined on their whole key, as correlated
// subqueries (see grouped_join.hpp). Each reference to a column of the
// derived table becomes a copy of its query selecting that column (the
// keys as hidden entries, for its GROUP BY), with the equalities of the
// join moved into its WHERE, the outer expressions one level out. The
// derived table's entry stays in the range table, unreferenced: the
// caller deparses the result and analyses it again.
#include "pg/analyze/grouped_join.hpp"

#include <optional>
#include <string>
#include <vector>

#include "core/ir/scan.hpp"
#include "pg/analyze/flatten_derived.hpp"
#include "pg/analyze/range_entry.hpp"
#include "pg/analyze/scan_shape.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
}

namespace pgt::pg {
namespace {

bool grouped(const RangeTblEntry* rte) {
    if (rte->rtekind != RTE_SUBQUERY || rte->lateral || rte->security_barrier) {
        return false;
    }
    const Query* s = rte->subquery;
    if (s->commandType != CMD_SELECT || s->groupClause == NIL || s->groupingSets != NIL ||
        s->havingQual != nullptr || s->distinctClause != NIL || s->limitCount != nullptr ||
        s->limitOffset != nullptr || s->hasWindowFuncs || s->hasTargetSRFs ||
        s->setOperations != nullptr || s->cteList != NIL || s->rowMarks != NIL || s->hasForUpdate ||
        contain_volatile_functions(reinterpret_cast<Node*>(rte->subquery))) {
        return false;
    }
    ListCell* lc;
    foreach (lc, s->groupClause) {
        const auto* g = static_cast<SortGroupClause*>(lfirst(lc));
        if (get_sortgroupclause_tle(const_cast<SortGroupClause*>(g), s->targetList)->resjunk) {
            return false;  // a key the outer query cannot be joined on
        }
    }
    return true;
}

// One GROUP BY key's join: the equality found and its outer side.
struct KeyJoin {
    TargetEntry* key;  // in the derived table's select list
    Oid eqop;
    Oid collation;
    Node* outer;  // an expression of the other tables, at the outer level
    int conjunct;
};

// Whether node reads entry varno at its own level or holds a subquery or
// a volatile function (an outer side must be a plain expression).
bool usable_outer(Node* node, int varno) {
    if (node == nullptr || checkExprHasSubLink(node) || contain_volatile_functions(node)) {
        return false;
    }
    Bitmapset* used = pull_varnos(nullptr, node);
    return !bms_is_member(varno, used);
}

// The key equalities among conjuncts: one per GROUP BY key, each `d.key =
// expr` (either way round) with the key's grouping equality; empty when a
// key has none.
std::vector<KeyJoin> key_joins(const Query* s, int varno, List* conjuncts) {
    std::vector<KeyJoin> out;
    ListCell* g;
    foreach (g, s->groupClause) {
        auto* sgc = static_cast<SortGroupClause*>(lfirst(g));
        TargetEntry* tle = get_sortgroupclause_tle(sgc, s->targetList);
        bool found = false;
        for (int i = 0; i < list_length(conjuncts) && !found; i++) {
            auto* op = static_cast<Node*>(list_nth(conjuncts, i));
            if (!IsA(op, OpExpr) || castNode(OpExpr, op)->opno != sgc->eqop ||
                list_length(castNode(OpExpr, op)->args) != 2) {
                continue;
            }
            for (int side = 0; side < 2 && !found; side++) {
                auto* v = static_cast<Node*>(list_nth(castNode(OpExpr, op)->args, side));
                auto* other = static_cast<Node*>(list_nth(castNode(OpExpr, op)->args, 1 - side));
                if (IsA(v, Var) && castNode(Var, v)->varno == varno &&
                    castNode(Var, v)->varlevelsup == 0 &&
                    castNode(Var, v)->varattno == tle->resno && usable_outer(other, varno)) {
                    out.push_back({tle, sgc->eqop, castNode(OpExpr, op)->inputcollid, other, i});
                    found = true;
                }
            }
        }
        if (!found) {
            return {};
        }
    }
    return out;
}

struct Group {
    Query* s;
    std::vector<KeyJoin> keys;
};

// The derived table's query narrowed to the outer row's group, `levels`
// below the outer query, selecting `selected` (hidden keys for its GROUP
// BY), or the bare narrowed rows for EXISTS (selected == nullptr).
Query* group_query(const Group& g, TargetEntry* selected, int levels) {
    auto* sub = static_cast<Query*>(copyObjectImpl(g.s));
    sub->sortClause = NIL;  // a derived table's order means nothing
    List* tlist = NIL;
    if (selected != nullptr) {
        TargetEntry* first = flatCopyTargetEntry(selected);
        first->resno = 1;
        first->resjunk = false;
        tlist = lappend(tlist, first);
        for (const KeyJoin& k : g.keys) {
            if (k.key->resno != selected->resno) {
                TargetEntry* hidden = flatCopyTargetEntry(k.key);
                hidden->resno = static_cast<AttrNumber>(list_length(tlist) + 1);
                hidden->resjunk = true;
                tlist = lappend(tlist, hidden);
            }
        }
    } else {
        TargetEntry* one = flatCopyTargetEntry(g.keys.front().key);
        one->resno = 1;
        one->ressortgroupref = 0;
        tlist = lappend(tlist, one);
        sub->groupClause = NIL;
        sub->hasAggs = false;
    }
    sub->targetList = tlist;
    List* conds = NIL;
    for (const KeyJoin& k : g.keys) {
        auto* outer = static_cast<Node*>(copyObjectImpl(k.outer));
        IncrementVarSublevelsUp(outer, levels + 1, 0);
        auto* key = static_cast<Expr*>(copyObjectImpl(k.key->expr));
        conds =
            lappend(conds, make_opclause(k.eqop, BOOLOID, false, key,
                                         reinterpret_cast<Expr*>(outer), InvalidOid, k.collation));
    }
    if (sub->jointree->quals != nullptr) {
        conds =
            list_concat(make_ands_implicit(reinterpret_cast<Expr*>(sub->jointree->quals)), conds);
    }
    sub->jointree->quals = reinterpret_cast<Node*>(make_ands_explicit(conds));
    return sub;
}

SubLink* sublink(SubLinkType type, Query* sub) {
    SubLink* link = makeNode(SubLink);
    link->subLinkType = type;
    link->subselect = reinterpret_cast<Node*>(sub);
    link->location = -1;
    return link;
}

Node* column_as_subquery(Var* var, replace_rte_variables_context* ctx) {
    const auto* g = static_cast<const Group*>(ctx->callback_arg);
    TargetEntry* tle = get_tle_by_resno(g->s->targetList, var->varattno);
    if (tle == nullptr) {
        elog(ERROR, "column %d of a grouped derived table has no entry", var->varattno);
    }
    ctx->inserted_sublink = true;
    return reinterpret_cast<Node*>(sublink(EXPR_SUBLINK, group_query(*g, tle, ctx->sublevels_up)));
}

// Every reference to varno in q replaced by its group's subquery.
void replace_columns(Query* q, int varno, const Group& g) {
    bool links = q->hasSubLinks;
    Node* replaced = replace_rte_variables(reinterpret_cast<Node*>(q), varno, 0, column_as_subquery,
                                           const_cast<Group*>(&g), &links);
    *q = *castNode(Query, replaced);
    q->hasSubLinks = true;
}

// A FROM-list item `x LEFT JOIN d ON <the key equalities>` lowered.
bool lower_left_join(Query* q, ListCell* item) {
    auto* j = static_cast<JoinExpr*>(lfirst(item));
    if (!IsA(j, JoinExpr) || j->jointype != JOIN_LEFT || !IsA(j->rarg, RangeTblRef) ||
        j->quals == nullptr) {
        return false;
    }
    const int varno = castNode(RangeTblRef, j->rarg)->rtindex;
    RangeTblEntry* rte = rt_fetch(static_cast<Index>(varno), q->rtable);
    if (!grouped(rte) || read_as_whole_row(q, varno)) {
        return false;
    }
    List* conjuncts = make_ands_implicit(reinterpret_cast<Expr*>(j->quals));
    Group g{rte->subquery, key_joins(rte->subquery, varno, conjuncts)};
    if (g.keys.empty() || static_cast<int>(g.keys.size()) != list_length(conjuncts)) {
        return false;  // another ON condition decides matches as well
    }
    lfirst(item) = j->larg;
    make_placeholder(q, j->rtindex);
    replace_columns(q, varno, g);
    return true;
}

// A FROM-list item d joined by WHERE equalities lowered.
bool lower_inner_join(Query* q, ListCell* item) {
    if (!IsA(lfirst(item), RangeTblRef) || list_length(q->jointree->fromlist) < 2) {
        return false;
    }
    const int varno = castNode(RangeTblRef, lfirst(item))->rtindex;
    RangeTblEntry* rte = rt_fetch(static_cast<Index>(varno), q->rtable);
    if (!grouped(rte) || read_as_whole_row(q, varno)) {
        return false;
    }
    List* conjuncts = make_ands_implicit(reinterpret_cast<Expr*>(q->jointree->quals));
    Group g{rte->subquery, key_joins(rte->subquery, varno, conjuncts)};
    if (g.keys.empty()) {
        return false;
    }
    List* kept = NIL;
    for (int i = 0; i < list_length(conjuncts); i++) {
        bool used = false;
        for (const KeyJoin& k : g.keys) {
            used = used || k.conjunct == i;
        }
        if (!used) {
            kept = lappend(kept, list_nth(conjuncts, i));
        }
    }
    // The row meets its group where the group exists.
    kept = lappend(kept, sublink(EXISTS_SUBLINK, group_query(g, nullptr, 0)));
    q->jointree->quals = reinterpret_cast<Node*>(make_ands_explicit(kept));
    q->jointree->fromlist = list_delete_ptr(q->jointree->fromlist, lfirst(item));
    replace_columns(q, varno, g);
    return true;
}

bool lower_one(Query* q) {
    ListCell* lc;
    foreach (lc, q->jointree->fromlist) {
        if (lower_left_join(q, lc) || lower_inner_join(q, lc)) {
            return true;
        }
    }
    return false;
}

bool has_candidate(Query* q) {
    ListCell* lc;
    foreach (lc, q->rtable) {
        if (grouped(static_cast<RangeTblEntry*>(lfirst(lc)))) {
            return true;
        }
    }
    return false;
}

// The joined group of FROM-list item `item` (as lower_left_join and
// lower_inner_join find it), or none.
std::optional<Group> joined_group(Query* q, ListCell* item) {
    Node* n = static_cast<Node*>(lfirst(item));
    List* conjuncts = NIL;
    int varno = 0;
    if (IsA(n, JoinExpr) && castNode(JoinExpr, n)->jointype == JOIN_LEFT &&
        IsA(castNode(JoinExpr, n)->rarg, RangeTblRef) && castNode(JoinExpr, n)->quals != nullptr) {
        varno = castNode(RangeTblRef, castNode(JoinExpr, n)->rarg)->rtindex;
        conjuncts = make_ands_implicit(reinterpret_cast<Expr*>(castNode(JoinExpr, n)->quals));
    } else if (IsA(n, RangeTblRef) && list_length(q->jointree->fromlist) >= 2 &&
               q->jointree->quals != nullptr) {
        varno = castNode(RangeTblRef, n)->rtindex;
        conjuncts = make_ands_implicit(reinterpret_cast<Expr*>(q->jointree->quals));
    } else {
        return std::nullopt;
    }
    RangeTblEntry* rte = rt_fetch(static_cast<Index>(varno), q->rtable);
    if (!grouped(rte)) {
        return std::nullopt;
    }
    Group g{rte->subquery, key_joins(rte->subquery, varno, conjuncts)};
    if (g.keys.empty()) {
        return std::nullopt;
    }
    return g;
}

// The filter narrowing g to the touched keys: `key = ANY(values)` for the
// first of its key equalities whose other side is output key column j
// (select-list index key_columns[j]) of the same type; null when none is.
// One key keeps whole groups: every row of a group has its value.
Expr* key_filter(const Group& g, Query* work, const std::vector<int>& key_columns) {
    for (const KeyJoin& kj : g.keys) {
        Oid type = exprType(reinterpret_cast<Node*>(kj.key->expr));
        for (std::size_t j = 0; j < key_columns.size(); j++) {
            if (key_columns[j] < 0 || key_columns[j] >= list_length(work->targetList)) {
                continue;
            }
            auto* out = static_cast<TargetEntry*>(list_nth(work->targetList, key_columns[j]));
            if (exprType(kj.outer) == type && equal(reinterpret_cast<Node*>(out->expr), kj.outer)) {
                if (Expr* any =
                        among_touched_keys(kj.key->expr, kj.eqop, kj.collation, type,
                                           exprCollation(reinterpret_cast<Node*>(kj.key->expr)),
                                           static_cast<int>(j))) {
                    return any;
                }
            }
        }
    }
    return nullptr;
}

}  // namespace

std::string narrowed_to_joined_groups(Query* q, const std::vector<int>& key_columns) {
    return with_pinned_search_path([&] {
        const char* text = pg_call([&]() -> const char* {
            if (q->commandType != CMD_SELECT || q->setOperations != nullptr ||
                q->jointree == nullptr || q->groupingSets != NIL || !has_candidate(q)) {
                return nullptr;
            }
            auto* work = static_cast<Query*>(copyObjectImpl(q));
            inner_joins_as_from_list(work);
            bool narrowed = false;
            ListCell* lc;
            foreach (lc, work->jointree->fromlist) {
                std::optional<Group> g = joined_group(work, lc);
                Expr* filter = g ? key_filter(*g, work, key_columns) : nullptr;
                if (filter != nullptr) {
                    Query* s = g->s;  // the derived table's own query, in work
                    s->jointree->quals =
                        conjunction(s->jointree->quals, reinterpret_cast<Node*>(filter));
                    narrowed = true;
                }
            }
            return narrowed ? pg_get_querydef(work, false) : nullptr;
        });
        return text == nullptr ? std::string() : std::string(text);
    });
}

bool lower_joined_groups(Query* q) {
    return pg_call([&] {
        if (q->commandType != CMD_SELECT || q->setOperations != nullptr || q->jointree == nullptr ||
            !has_candidate(q)) {
            return false;
        }
        auto* work = static_cast<Query*>(copyObjectImpl(q));
        inner_joins_as_from_list(work);
        bool lowered = false;
        for (int i = 0; i < 64 && lower_one(work); i++) {
            lowered = true;
        }
        if (lowered) {
            *q = *work;
        }
        return lowered;
    });
}

}  // namespace pgt::pg
