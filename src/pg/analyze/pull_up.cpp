// One grouped derived table under a plain SELECT, pulled up (pull_up.hpp).
// The outer select list and WHERE are rewritten over the derived table's
// own expressions (ReplaceVarsFromTargetList, as the rewriter expands a
// view); the outer WHERE filters groups, so it joins the HAVING clause.
// The derived table's grouping and ordering entries stay as hidden
// entries of the new select list; the caller deparses and analyses the
// result again, which rebuilds them as PostgreSQL would.
#include "pg/analyze/pull_up.hpp"

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

bool plain_outer(const Query* q) {
    return q->commandType == CMD_SELECT && q->setOperations == nullptr && !q->hasAggs &&
           q->groupClause == NIL && q->groupingSets == NIL && q->havingQual == nullptr &&
           q->distinctClause == NIL && q->sortClause == NIL && q->limitCount == nullptr &&
           q->limitOffset == nullptr && !q->hasWindowFuncs && !q->hasSubLinks &&
           !q->hasTargetSRFs && q->cteList == NIL && q->jointree != nullptr &&
           list_length(q->jointree->fromlist) == 1 &&
           IsA(linitial(q->jointree->fromlist), RangeTblRef);
}

bool grouped_derived(const RangeTblEntry* rte) {
    if (rte->rtekind != RTE_SUBQUERY || rte->lateral || rte->security_barrier) {
        return false;
    }
    const Query* s = rte->subquery;
    return (s->hasAggs || s->groupClause != NIL) && s->groupingSets == NIL &&
           s->distinctClause == NIL && !s->hasWindowFuncs && s->limitCount == nullptr &&
           s->limitOffset == nullptr && s->setOperations == nullptr && !s->hasTargetSRFs &&
           s->cteList == NIL;
}

// Whether node reads the derived table's whole row (x.*, x as a value).
bool whole_row_walker(Node* node, void* ctx) {
    if (node == nullptr) {
        return false;
    }
    if (IsA(node, Var)) {
        return castNode(Var, node)->varattno == InvalidAttrNumber &&
               castNode(Var, node)->varno == *static_cast<int*>(ctx);
    }
    return expression_tree_walker(
        node, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(whole_row_walker)), ctx);
}

}  // namespace

Query* pull_up_grouped_derived_table(Query* q) {
    return pg_call([&]() -> Query* {
        if (!plain_outer(q)) {
            return nullptr;
        }
        int varno = castNode(RangeTblRef, linitial(q->jointree->fromlist))->rtindex;
        RangeTblEntry* rte = rt_fetch(static_cast<Index>(varno), q->rtable);
        if (!grouped_derived(rte) ||
            whole_row_walker(reinterpret_cast<Node*>(q->targetList), &varno) ||
            whole_row_walker(q->jointree->quals, &varno)) {
            return nullptr;
        }
        Query* s = static_cast<Query*>(copyObjectImpl(rte->subquery));
        auto over_s = [&](Node* n) {
            return ReplaceVarsFromTargetList(n, varno, 0, rte, s->targetList,
                                             REPLACEVARS_REPORT_ERROR, 0, nullptr);
        };
        List* outer = castNode(List, over_s(static_cast<Node*>(copyObjectImpl(q->targetList))));
        List* tlist = NIL;
        ListCell* lc;
        foreach (lc, outer) {
            auto* tle = static_cast<TargetEntry*>(lfirst(lc));
            tle->ressortgroupref = 0;
            tle->resno = static_cast<AttrNumber>(list_length(tlist) + 1);
            tlist = lappend(tlist, tle);
        }
        foreach (lc, s->targetList) {  // what GROUP BY and ORDER BY point at
            auto* tle = static_cast<TargetEntry*>(lfirst(lc));
            if (tle->ressortgroupref != 0) {
                TargetEntry* hidden = flatCopyTargetEntry(tle);
                hidden->resjunk = true;
                hidden->resno = static_cast<AttrNumber>(list_length(tlist) + 1);
                tlist = lappend(tlist, hidden);
            }
        }
        s->targetList = tlist;
        s->sortClause = NIL;  // a derived table's order means nothing
        if (q->jointree->quals != nullptr) {
            Node* groups = over_s(static_cast<Node*>(copyObjectImpl(q->jointree->quals)));
            s->havingQual =
                s->havingQual == nullptr
                    ? groups
                    : reinterpret_cast<Node*>(make_andclause(list_make2(s->havingQual, groups)));
        }
        return s;
    });
}

}  // namespace pgt::pg
