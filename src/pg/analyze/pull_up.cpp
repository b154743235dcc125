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
#include "parser/parse_coerce.h"
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

namespace {

// An arm a select list and WHERE can be pushed into, row by row.
bool plain_arm(const Query* a) {
    return a->commandType == CMD_SELECT && a->setOperations == nullptr && !a->hasAggs &&
           a->groupClause == NIL && a->groupingSets == NIL && a->havingQual == nullptr &&
           a->distinctClause == NIL && a->sortClause == NIL && a->limitCount == nullptr &&
           a->limitOffset == nullptr && !a->hasWindowFuncs && !a->hasTargetSRFs &&
           a->cteList == NIL && a->jointree != nullptr;
}

// Whether every set operation under n is UNION ALL over plain arms of s.
bool union_all_of_plain_arms(const Query* s, const Node* n) {
    if (IsA(n, RangeTblRef)) {
        const RangeTblEntry* rte = rt_fetch(castNode(RangeTblRef, n)->rtindex, s->rtable);
        return rte->rtekind == RTE_SUBQUERY && plain_arm(rte->subquery);
    }
    const auto* op = castNode(SetOperationStmt, n);
    return op->op == SETOP_UNION && op->all && union_all_of_plain_arms(s, op->larg) &&
           union_all_of_plain_arms(s, op->rarg);
}

// The union's columns as arm a gives them: each cast to the union's type
// where it has another (the union casts it so before any outer expression
// sees it); NIL when a cast is missing.
List* arm_as_union(const Query* a, const SetOperationStmt* top) {
    List* out = NIL;
    ListCell *lc, *type, *typmod;
    int resno = 0;
    forthree(lc, a->targetList, type, top->colTypes, typmod, top->colTypmods) {
        auto* tle = flatCopyTargetEntry(lfirst_node(TargetEntry, lc));
        const Oid to = lfirst_oid(type);
        Node* e = reinterpret_cast<Node*>(tle->expr);
        if (exprType(e) != to) {
            e = coerce_to_target_type(nullptr, e, exprType(e), to, lfirst_int(typmod),
                                      COERCION_IMPLICIT, COERCE_EXPLICIT_CAST, -1);
            if (e == nullptr) {
                return NIL;
            }
        }
        tle->expr = reinterpret_cast<Expr*>(e);
        tle->resno = static_cast<AttrNumber>(++resno);
        out = lappend(out, tle);
    }
    return out;
}

// Pushes the outer select list and WHERE (over entry varno, rte) into
// every arm under n; records the leftmost arm's entry. False when an arm's
// column cannot be cast to the union's type.
bool push_into_arms(Query* s, Node* n, const Query* q, int varno, RangeTblEntry* rte,
                    const SetOperationStmt* top, Index& leftmost) {
    if (!IsA(n, RangeTblRef)) {
        auto* op = castNode(SetOperationStmt, n);
        Index ignored = 0;
        return push_into_arms(s, op->larg, q, varno, rte, top, leftmost) &&
               push_into_arms(s, op->rarg, q, varno, rte, top, ignored);
    }
    const Index rti = castNode(RangeTblRef, n)->rtindex;
    leftmost = leftmost == 0 ? rti : leftmost;
    Query* a = rt_fetch(rti, s->rtable)->subquery;
    List* columns = arm_as_union(a, top);
    if (columns == NIL) {
        return false;
    }
    auto over_arm = [&](Node* e) {
        return ReplaceVarsFromTargetList(e, varno, 0, rte, columns, REPLACEVARS_REPORT_ERROR, 0,
                                         nullptr);
    };
    a->targetList = castNode(List, over_arm(static_cast<Node*>(copyObjectImpl(q->targetList))));
    if (q->jointree->quals != nullptr) {
        Node* cond = over_arm(static_cast<Node*>(copyObjectImpl(q->jointree->quals)));
        Node*& into = a->jointree->quals;
        into = into == nullptr ? cond
                               : reinterpret_cast<Node*>(make_andclause(list_make2(into, cond)));
    }
    return true;
}

// Every set operation node under n takes the new columns' types.
void retype(Node* n, List* types, List* typmods, List* collations) {
    if (IsA(n, RangeTblRef)) {
        return;
    }
    auto* op = castNode(SetOperationStmt, n);
    op->colTypes = types;
    op->colTypmods = typmods;
    op->colCollations = collations;
    retype(op->larg, types, typmods, collations);
    retype(op->rarg, types, typmods, collations);
}

}  // namespace

Query* pull_up_union_all(Query* q) {
    return pg_call([&]() -> Query* {
        if (!plain_outer(q)) {
            return nullptr;
        }
        int varno = castNode(RangeTblRef, linitial(q->jointree->fromlist))->rtindex;
        RangeTblEntry* rte = rt_fetch(static_cast<Index>(varno), q->rtable);
        if (rte->rtekind != RTE_SUBQUERY || rte->lateral || rte->security_barrier ||
            rte->subquery->setOperations == nullptr || rte->subquery->cteList != NIL ||
            rte->subquery->sortClause != NIL || rte->subquery->limitCount != nullptr ||
            rte->subquery->limitOffset != nullptr ||
            !union_all_of_plain_arms(rte->subquery, rte->subquery->setOperations) ||
            read_as_whole_row(q, varno) || contain_volatile_functions(q->jointree->quals)) {
            return nullptr;
        }
        Query* s = static_cast<Query*>(copyObjectImpl(rte->subquery));
        auto* top = castNode(SetOperationStmt, s->setOperations);
        List *types = NIL, *typmods = NIL, *collations = NIL;
        ListCell* lc;
        foreach (lc, q->targetList) {
            auto* e = reinterpret_cast<Node*>(lfirst_node(TargetEntry, lc)->expr);
            types = lappend_oid(types, exprType(e));
            typmods = lappend_int(typmods, exprTypmod(e));
            collations = lappend_oid(collations, exprCollation(e));
        }
        Index leftmost = 0;
        if (!push_into_arms(s, s->setOperations, q, varno, rte, top, leftmost)) {
            return nullptr;
        }
        retype(s->setOperations, types, typmods, collations);
        // The union's own select list: the leftmost arm's columns, named
        // as the outer query names them.
        List* tlist = NIL;
        foreach (lc, q->targetList) {
            const auto* tle = lfirst_node(TargetEntry, lc);
            const auto* e = reinterpret_cast<const Node*>(tle->expr);
            const auto resno = static_cast<AttrNumber>(list_length(tlist) + 1);
            Var* v = makeVar(leftmost, resno, exprType(e), exprTypmod(e), exprCollation(e), 0);
            tlist = lappend(
                tlist, makeTargetEntry(reinterpret_cast<Expr*>(v), resno, tle->resname, false));
        }
        s->targetList = tlist;
        return s;
    });
}

}  // namespace pgt::pg
