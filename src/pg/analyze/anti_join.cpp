// LEFT JOIN ... WHERE r.k IS NULL lowered to NOT EXISTS (see anti_join.hpp).
// The ON condition moves into the subquery: its references to r become the
// subquery's one table (varno 1, level 0), every other reference moves one
// level out. The outer query keeps r's and the join's range table entries,
// unreferenced (the join's made an empty placeholder, which deparses to
// nothing): the caller deparses the result and analyses it again.
#include "pg/analyze/anti_join.hpp"

#include <vector>

#include "pg/analyze/range_entry.hpp"
#include "pg/boundary/boundary.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_attribute.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

namespace pgt::pg {
namespace {

using Walker = bool (*)();

bool same_column(Node* n, int varno, AttrNumber attno) {
    while (n != nullptr && IsA(n, RelabelType)) {
        n = reinterpret_cast<Node*>(castNode(RelabelType, n)->arg);
    }
    return n != nullptr && IsA(n, Var) && castNode(Var, n)->varno == varno &&
           castNode(Var, n)->varattno == attno && castNode(Var, n)->varlevelsup == 0;
}

bool not_null_column(Oid relid, AttrNumber attno) {
    HeapTuple tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(attno));
    if (!HeapTupleIsValid(tup)) {
        return false;
    }
    const bool notnull = reinterpret_cast<Form_pg_attribute>(GETSTRUCT(tup))->attnotnull;
    ReleaseSysCache(tup);
    return notnull;
}

// Whether a row of r that joined has r.attno non-NULL: a NOT NULL column,
// or an argument of a strict operator the ON condition requires.
bool null_only_when_unmatched(const JoinExpr* j, Oid relid, int varno, AttrNumber attno) {
    if (attno > 0 && not_null_column(relid, attno)) {
        return true;
    }
    ListCell* lc;
    foreach (lc, make_ands_implicit(reinterpret_cast<Expr*>(copyObjectImpl(j->quals)))) {
        auto* n = static_cast<Node*>(lfirst(lc));
        if (!IsA(n, OpExpr) || !op_strict(castNode(OpExpr, n)->opno)) {
            continue;
        }
        ListCell* arg;
        foreach (arg, castNode(OpExpr, n)->args) {
            if (same_column(static_cast<Node*>(lfirst(arg)), varno, attno)) {
                return true;
            }
        }
    }
    return false;
}

// The WHERE conjunct r.k IS NULL that makes join j an anti-join, or -1.
int anti_conjunct(const JoinExpr* j, const RangeTblEntry* r, int varno, List* conjuncts) {
    for (int i = 0; i < list_length(conjuncts); i++) {
        auto* n = static_cast<Node*>(list_nth(conjuncts, i));
        if (!IsA(n, NullTest) || castNode(NullTest, n)->nulltesttype != IS_NULL ||
            castNode(NullTest, n)->argisrow) {
            continue;
        }
        auto* arg = reinterpret_cast<Node*>(castNode(NullTest, n)->arg);
        if (IsA(arg, Var) && castNode(Var, arg)->varno == varno &&
            castNode(Var, arg)->varlevelsup == 0 &&
            null_only_when_unmatched(j, r->relid, varno, castNode(Var, arg)->varattno)) {
            return i;
        }
    }
    return -1;
}

// Whether anything of q but j's ON condition and conjunct `skip` reads r.
bool read_elsewhere(Query* q, const JoinExpr* j, int varno, List* conjuncts, int skip) {
    bool found = reads_entry(reinterpret_cast<Node*>(q->targetList), varno) ||
                 reads_entry(q->havingQual, varno) || reads_entry(j->larg, varno);
    for (int i = 0; i < list_length(conjuncts); i++) {
        found =
            found || (i != skip && reads_entry(static_cast<Node*>(list_nth(conjuncts, i)), varno));
    }
    ListCell* lc;
    foreach (lc, q->jointree->fromlist) {
        found = found || (lfirst(lc) != j && reads_entry(static_cast<Node*>(lfirst(lc)), varno));
    }
    foreach (lc, q->rtable) {
        const auto* rte = static_cast<RangeTblEntry*>(lfirst(lc));
        if (rte->rtekind == RTE_SUBQUERY) {  // LATERAL
            found = found || reads_entry(reinterpret_cast<Node*>(rte->subquery), varno);
        } else if (rte->rtekind == RTE_FUNCTION || rte->rtekind == RTE_VALUES) {
            found = found || reads_entry(reinterpret_cast<Node*>(rte->rtekind == RTE_FUNCTION
                                                                     ? rte->functions
                                                                     : rte->values_lists),
                                         varno);
        }
    }
    return found;
}

// References to r, one level out after IncrementVarSublevelsUp, come back
// as the subquery's table 1.
bool pull_in_walker(Node* node, void* ctx) {
    if (node == nullptr) {
        return false;
    }
    if (IsA(node, Var)) {
        auto* v = castNode(Var, node);
        const int varno = *static_cast<int*>(ctx);
        if (v->varno == varno && v->varlevelsup == 1) {
            v->varlevelsup = 0;
            v->varno = 1;
            v->varnosyn = 1;
        }
        return false;
    }
    return expression_tree_walker(
        node, reinterpret_cast<Walker>(reinterpret_cast<void (*)()>(pull_in_walker)), ctx);
}

// NOT EXISTS (SELECT FROM r WHERE <j's ON condition>).
Node* not_exists(const JoinExpr* j, const RangeTblEntry* r, int varno) {
    Query* sub = makeNode(Query);
    sub->commandType = CMD_SELECT;
    sub->querySource = QSRC_ORIGINAL;
    sub->canSetTag = true;
    auto* table = static_cast<RangeTblEntry*>(copyObjectImpl(r));
    table->inFromCl = true;
    sub->rtable = list_make1(table);
    Node* cond = static_cast<Node*>(copyObjectImpl(j->quals));
    IncrementVarSublevelsUp(cond, 1, 0);
    int v = varno;
    (void)pull_in_walker(cond, &v);
    RangeTblRef* ref = makeNode(RangeTblRef);
    ref->rtindex = 1;
    sub->jointree = makeFromExpr(list_make1(ref), cond);
    SubLink* link = makeNode(SubLink);
    link->subLinkType = EXISTS_SUBLINK;
    link->subselect = reinterpret_cast<Node*>(sub);
    link->location = -1;
    return reinterpret_cast<Node*>(makeBoolExpr(NOT_EXPR, list_make1(link), -1));
}

// j, an item of q's FROM list, lowered if it is an anti-join.
bool lower_one(Query* q, ListCell* item) {
    if (!IsA(lfirst(item), JoinExpr)) {
        return false;
    }
    auto* j = static_cast<JoinExpr*>(lfirst(item));
    if (j->jointype != JOIN_LEFT || !IsA(j->rarg, RangeTblRef) || j->usingClause != NIL ||
        j->alias != nullptr || j->quals == nullptr || checkExprHasSubLink(j->quals) ||
        contain_volatile_functions(j->quals)) {
        return false;
    }
    const int varno = castNode(RangeTblRef, j->rarg)->rtindex;
    RangeTblEntry* r = rt_fetch(static_cast<Index>(varno), q->rtable);
    if (r->rtekind != RTE_RELATION) {
        return false;
    }
    List* conjuncts = make_ands_implicit(reinterpret_cast<Expr*>(q->jointree->quals));
    const int at = anti_conjunct(j, r, varno, conjuncts);
    if (at < 0 || read_elsewhere(q, j, varno, conjuncts, at)) {
        return false;
    }
    List* kept = NIL;
    for (int i = 0; i < list_length(conjuncts); i++) {
        kept = lappend(kept, i == at ? not_exists(j, r, varno) : list_nth(conjuncts, i));
    }
    q->jointree->quals = reinterpret_cast<Node*>(make_ands_explicit(kept));
    q->hasSubLinks = true;
    make_placeholder(q, j->rtindex);
    lfirst(item) = j->larg;
    return true;
}

}  // namespace

bool lower_anti_joins(Query* q) {
    return pg_call([&] {
        bool lowered = false;
        for (bool again = true; again;) {
            again = false;
            ListCell* lc;
            foreach (lc, q->jointree->fromlist) {
                if (lower_one(q, lc)) {
                    lowered = again = true;
                    break;
                }
            }
        }
        return lowered;
    });
}

}  // namespace pgt::pg
