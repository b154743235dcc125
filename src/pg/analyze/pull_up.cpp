// One grouped derived table under a plain SELECT, pulled up (pull_up.hpp).
// The outer select list and WHERE are rewritten over the derived table's
// own expressions (ReplaceVarsFromTargetList, as the rewriter expands a
// view); the outer WHERE filters groups, so it joins the HAVING clause.
// The derived table's grouping and ordering entries stay as hidden
// entries of the new select list; the caller deparses and analyses the
// result again, which rebuilds them as PostgreSQL would.
#include "pg/analyze/pull_up.hpp"

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

bool plain_outer(const Query* q) {
    return q->commandType == CMD_SELECT && q->setOperations == nullptr && !q->hasAggs &&
           q->groupClause == NIL && q->groupingSets == NIL && q->havingQual == nullptr &&
           q->distinctClause == NIL && q->sortClause == NIL && q->limitCount == nullptr &&
           q->limitOffset == nullptr && !q->hasWindowFuncs && !q->hasSubLinks &&
           !q->hasTargetSRFs && q->cteList == NIL && q->jointree != nullptr &&
           list_length(q->jointree->fromlist) == 1 &&
           IsA(linitial(q->jointree->fromlist), RangeTblRef);
}

bool grouped(const Query* s) {
    return s->hasAggs || s->groupClause != NIL;
}

// Whether the outer select list is the derived table's columns, all of
// them, in order: then a DISTINCT inside is the query's own.
bool selects_every_column(const Query* q, int varno, const Query* s) {
    int n = 0;
    ListCell* lc;
    foreach (lc, s->targetList) {
        n += static_cast<TargetEntry*>(lfirst(lc))->resjunk ? 0 : 1;
    }
    int i = 0;
    foreach (lc, q->targetList) {
        const auto* tle = static_cast<TargetEntry*>(lfirst(lc));
        const auto* v = reinterpret_cast<const Var*>(tle->expr);
        if (tle->resjunk || !IsA(v, Var) || v->varno != varno || v->varattno != ++i) {
            return false;
        }
    }
    return i == n;
}

// A grouped derived table (no DISTINCT), or a DISTINCT one (not grouped)
// whose every column the outer query selects as it is.
bool pullable(const Query* q, const RangeTblEntry* rte, int varno) {
    if (rte->rtekind != RTE_SUBQUERY || rte->lateral || rte->security_barrier) {
        return false;
    }
    const Query* s = rte->subquery;
    const bool distinct = s->distinctClause != NIL;
    const bool shape = distinct ? !grouped(s) && selects_every_column(q, varno, s) &&
                                      (!s->hasDistinctOn || q->jointree->quals == nullptr)
                                : grouped(s);
    return shape && s->groupingSets == NIL && !s->hasWindowFuncs && s->limitCount == nullptr &&
           s->limitOffset == nullptr && s->setOperations == nullptr && !s->hasTargetSRFs &&
           s->cteList == NIL && !contain_volatile_functions(q->jointree->quals);
}

}  // namespace

Query* pull_up_grouped_derived_table(Query* q) {
    return pg_call([&]() -> Query* {
        if (!plain_outer(q)) {
            return nullptr;
        }
        int varno = castNode(RangeTblRef, linitial(q->jointree->fromlist))->rtindex;
        RangeTblEntry* rte = rt_fetch(static_cast<Index>(varno), q->rtable);
        if (!pullable(q, rte, varno) || read_as_whole_row(q, varno)) {
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
        // A derived table's order means nothing, but it chooses DISTINCT
        // ON's row.
        if (!s->hasDistinctOn) {
            s->sortClause = NIL;
        }
        if (q->jointree->quals != nullptr) {
            // On groups a condition is HAVING; on DISTINCT rows, a condition
            // on their columns keeps or drops every copy alike: WHERE.
            Node* cond = over_s(static_cast<Node*>(copyObjectImpl(q->jointree->quals)));
            Node*& into = grouped(s) ? s->havingQual : s->jointree->quals;
            into = into == nullptr
                       ? cond
                       : reinterpret_cast<Node*>(make_andclause(list_make2(into, cond)));
        }
        return s;
    });
}

}  // namespace pgt::pg
