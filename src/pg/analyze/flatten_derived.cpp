// Plain derived tables merged into their query (see flatten_derived.hpp).
// The derived table's range table is appended to the outer one (its
// variables offset past the outer entries), its FROM items take the place
// of its reference, its WHERE joins the outer WHERE, and outer variables
// of its columns become its select-list expressions. Its own entry stays,
// unreferenced: the caller deparses the result and analyses it again.
#include "pg/analyze/flatten_derived.hpp"

#include <vector>

#include "pg/analyze/join_side_tables.hpp"
#include "pg/analyze/range_entry.hpp"
#include "pg/boundary/boundary.hpp"

extern "C" {
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
}

namespace pgt::pg {
namespace {

using Walker = bool (*)();

}  // namespace

bool plain_derived_table(const RangeTblEntry* rte) {
    if (rte->rtekind != RTE_SUBQUERY || rte->lateral || rte->security_barrier) {
        return false;
    }
    const Query* s = rte->subquery;
    return s->commandType == CMD_SELECT && s->setOperations == nullptr && !s->hasAggs &&
           s->groupClause == NIL && s->groupingSets == NIL && s->havingQual == nullptr &&
           s->distinctClause == NIL && s->limitCount == nullptr && s->limitOffset == nullptr &&
           !s->hasWindowFuncs && !s->hasTargetSRFs && s->cteList == NIL && s->rowMarks == NIL &&
           !s->hasForUpdate && !s->hasRecursive && s->jointree != nullptr &&
           s->jointree->fromlist != NIL &&
           !contain_volatile_functions(reinterpret_cast<Node*>(s->targetList));
}

namespace {

// The range table entries reached from n through FROM lists and inner
// joins: their rows are never NULL-padded.
void inner_items(Node* n, std::vector<int>& out) {
    if (IsA(n, RangeTblRef)) {
        out.push_back(castNode(RangeTblRef, n)->rtindex);
    } else if (IsA(n, FromExpr)) {
        ListCell* lc;
        foreach (lc, castNode(FromExpr, n)->fromlist) {
            inner_items(static_cast<Node*>(lfirst(lc)), out);
        }
    } else if (IsA(n, JoinExpr) && castNode(JoinExpr, n)->jointype == JOIN_INNER) {
        inner_items(castNode(JoinExpr, n)->larg, out);
        inner_items(castNode(JoinExpr, n)->rarg, out);
    }
}

// The items of an inner join tree as FROM-list items, its ON conditions
// gathered into quals; each inner join's entry becomes an empty
// placeholder (unreferenced, it deparses to nothing).
void unnest_inner(Query* q, Node* n, List** items, Node** quals) {
    if (IsA(n, JoinExpr) && castNode(JoinExpr, n)->jointype == JOIN_INNER) {
        auto* j = castNode(JoinExpr, n);
        unnest_inner(q, j->larg, items, quals);
        unnest_inner(q, j->rarg, items, quals);
        *quals = conjunction(*quals, j->quals);
        make_placeholder(q, j->rtindex);
        return;
    }
    *items = lappend(*items, n);
}

}  // namespace

Node* conjunction(Node* a, Node* b) {
    if (a == nullptr) {
        return b;
    }
    if (b == nullptr) {
        return a;
    }
    // One flat AND: its conjuncts are what later rewrites look through.
    List* both = list_concat(make_ands_implicit(reinterpret_cast<Expr*>(a)),
                             make_ands_implicit(reinterpret_cast<Expr*>(b)));
    return reinterpret_cast<Node*>(make_ands_explicit(both));
}

void resolve_join_references(Query* q) {
    q->targetList =
        castNode(List, flatten_join_alias_vars(q, reinterpret_cast<Node*>(q->targetList)));
    q->jointree =
        castNode(FromExpr, flatten_join_alias_vars(q, reinterpret_cast<Node*>(q->jointree)));
    q->havingQual = flatten_join_alias_vars(q, q->havingQual);
}

void inner_joins_as_from_list(Query* q) {
    resolve_join_references(q);
    List* items = NIL;
    Node* quals = nullptr;
    ListCell* lc;
    foreach (lc, q->jointree->fromlist) {
        unnest_inner(q, static_cast<Node*>(lfirst(lc)), &items, &quals);
    }
    q->jointree->fromlist = items;
    q->jointree->quals = conjunction(q->jointree->quals, quals);
}

namespace {

// Whether an inner join reached through FROM lists and inner joins has a
// subquery in its ON condition.
bool inner_on_has_subquery(Node* n) {
    if (IsA(n, FromExpr)) {
        ListCell* lc;
        foreach (lc, castNode(FromExpr, n)->fromlist) {
            if (inner_on_has_subquery(static_cast<Node*>(lfirst(lc)))) {
                return true;
            }
        }
    } else if (IsA(n, JoinExpr) && castNode(JoinExpr, n)->jointype == JOIN_INNER) {
        auto* j = castNode(JoinExpr, n);
        return checkExprHasSubLink(j->quals) || inner_on_has_subquery(j->larg) ||
               inner_on_has_subquery(j->rarg);
    }
    return false;
}

// Merges the derived table at varno, an item of q's FROM list.
void merge(Query* q, int varno) {
    RangeTblEntry* rte = rt_fetch(static_cast<Index>(varno), q->rtable);
    Query* s = static_cast<Query*>(copyObjectImpl(rte->subquery));
    // Its references to queries above q (a derived table inside a subquery
    // may read the outer query) come one level nearer.
    IncrementVarSublevelsUp(reinterpret_cast<Node*>(s), -1, 1);
    OffsetVarNodes(reinterpret_cast<Node*>(s), list_length(q->rtable), 0);
    // The replacement copies q's jointree: the reference is found after it.
    Node* replaced = ReplaceVarsFromTargetList(reinterpret_cast<Node*>(q), varno, 0, rte,
                                               s->targetList, REPLACEVARS_REPORT_ERROR, 0, nullptr);
    *q = *castNode(Query, replaced);
    q->rtable = list_concat(q->rtable, s->rtable);
    q->hasSubLinks = q->hasSubLinks || s->hasSubLinks;
    q->jointree->quals = conjunction(q->jointree->quals, s->jointree->quals);
    // The derived table's FROM items stand where its reference stood.
    List* items = NIL;
    ListCell* lc;
    foreach (lc, q->jointree->fromlist) {
        auto* item = static_cast<Node*>(lfirst(lc));
        if (IsA(item, RangeTblRef) && castNode(RangeTblRef, item)->rtindex == varno) {
            items = list_concat(items, s->jointree->fromlist);
        } else {
            items = lappend(items, item);
        }
    }
    q->jointree->fromlist = items;
}

// One mergeable derived table merged; false when there is none left.
bool merge_one(Query* q) {
    std::vector<int> candidates;
    inner_items(reinterpret_cast<Node*>(q->jointree), candidates);
    for (int varno : candidates) {
        if (plain_derived_table(rt_fetch(static_cast<Index>(varno), q->rtable)) &&
            !read_as_whole_row(q, varno)) {
            inner_joins_as_from_list(q);
            merge(q, varno);
            return true;
        }
    }
    return false;
}

}  // namespace

namespace {

// One query level: subqueries in inner joins' ON moved out, then its plain
// derived tables merged.
bool flatten_level(Query* q) {
    if (q->commandType != CMD_SELECT || q->setOperations != nullptr || q->jointree == nullptr) {
        return false;
    }
    bool merged = false;
    if (inner_on_has_subquery(reinterpret_cast<Node*>(q->jointree))) {
        inner_joins_as_from_list(q);  // (a subquery in WHERE is followed)
        merged = true;
    }
    // Each merge appends entries and may expose derived tables that were
    // inside the merged one; a bound keeps a malformed tree from looping.
    for (int i = 0; i < 64 && merge_one(q); i++) {
        merged = true;
    }
    // Derived tables of one table on the sides of outer joins.
    return collapse_join_side_tables(q) || merged;
}

// Every query below (subqueries, derived tables, WITH queries), each level
// after the ones inside it: a derived table is as flat as it gets before
// the level holding it looks at it.
bool nested_walker(Node* node, void* ctx) {
    if (node == nullptr) {
        return false;
    }
    if (IsA(node, Query)) {
        auto* q = castNode(Query, node);
        (void)query_tree_walker(
            q, reinterpret_cast<Walker>(reinterpret_cast<void (*)()>(nested_walker)), ctx, 0);
        *static_cast<bool*>(ctx) = flatten_level(q) || *static_cast<bool*>(ctx);
        return false;
    }
    return expression_tree_walker(
        node, reinterpret_cast<Walker>(reinterpret_cast<void (*)()>(nested_walker)), ctx);
}

}  // namespace

bool flatten_plain_derived_tables(Query* q) {
    return pg_call([&] {
        bool merged = false;
        (void)nested_walker(reinterpret_cast<Node*>(q), &merged);
        return merged;
    });
}

}  // namespace pgt::pg
