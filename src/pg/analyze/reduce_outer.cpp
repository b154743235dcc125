// Outer joins reduced to inner joins (see reduce_outer.hpp). A walk down
// the FROM tree carries the tables a condition above has proved non-NULL,
// as PostgreSQL's reduce_outer_joins does: a LEFT JOIN whose nullable side
// holds one is an inner join; below an inner join its ON proves more for
// both sides, below an outer join only for its nullable side (its ON
// removes no preserved row).
#include "pg/analyze/reduce_outer.hpp"

#include "pg/boundary/boundary.hpp"

extern "C" {
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/prep.h"
#include "parser/parsetree.h"
}

namespace pgt::pg {
namespace {

bool reduce(Query* q, Node* n, Relids nonnull) {
    if (IsA(n, RangeTblRef)) {
        return false;
    }
    if (IsA(n, FromExpr)) {
        FromExpr* f = castNode(FromExpr, n);
        Relids below = bms_union(nonnull, find_nonnullable_rels(f->quals));
        bool changed = false;
        ListCell* lc;
        foreach (lc, f->fromlist) {
            changed = reduce(q, static_cast<Node*>(lfirst(lc)), below) || changed;
        }
        return changed;
    }
    JoinExpr* j = castNode(JoinExpr, n);
    const bool left_proved = bms_overlap(get_relids_in_jointree(j->larg, true), nonnull);
    const bool right_proved = bms_overlap(get_relids_in_jointree(j->rarg, true), nonnull);
    JoinType to = j->jointype;
    if (j->jointype == JOIN_LEFT && right_proved) {
        to = JOIN_INNER;
    } else if (j->jointype == JOIN_RIGHT && left_proved) {
        to = JOIN_INNER;
    } else if (j->jointype == JOIN_FULL && (left_proved || right_proved)) {
        to = left_proved && right_proved ? JOIN_INNER : left_proved ? JOIN_LEFT : JOIN_RIGHT;
    }
    const bool changed = to != j->jointype;
    j->jointype = to;
    if (j->rtindex != 0) {
        rt_fetch(j->rtindex, q->rtable)->jointype = to;
    }
    Relids own = find_nonnullable_rels(j->quals);
    Relids left = nonnull, right = nonnull;
    if (to == JOIN_INNER) {
        left = bms_union(nonnull, own);
        right = left;
    } else if (to == JOIN_LEFT) {
        right = bms_union(nonnull, own);
    } else if (to == JOIN_RIGHT) {
        left = bms_union(nonnull, own);
    }
    const bool l = reduce(q, j->larg, left);
    const bool r = reduce(q, j->rarg, right);
    return changed || l || r;
}

bool reduce_query(Query* q) {
    bool changed = false;
    ListCell* lc;
    foreach (lc, q->rtable) {
        RangeTblEntry* rte = lfirst_node(RangeTblEntry, lc);
        if (rte->rtekind == RTE_SUBQUERY && !rte->lateral) {
            changed = reduce_query(rte->subquery) || changed;
        }
    }
    if (q->setOperations != nullptr || q->jointree == nullptr) {
        return changed;
    }
    return reduce(q, reinterpret_cast<Node*>(q->jointree), nullptr) || changed;
}

}  // namespace

bool reduce_outer_joins(Query* q) {
    return pg_call([&] { return reduce_query(q); });
}

}  // namespace pgt::pg
