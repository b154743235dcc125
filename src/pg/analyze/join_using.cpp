// USING / NATURAL / aliased outer joins lowered to ON joins (join_using.hpp).
#include "pg/analyze/join_using.hpp"

#include <vector>

#include "pg/analyze/flatten_derived.hpp"
#include "pg/boundary/boundary.hpp"

extern "C" {
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
}

namespace pgt::pg {
namespace {

// The outer joins of a jointree written with USING, NATURAL or an alias.
void collect(Node* n, std::vector<JoinExpr*>& out) {
    if (n == nullptr) {
        return;
    }
    if (IsA(n, FromExpr)) {
        ListCell* lc;
        foreach (lc, castNode(FromExpr, n)->fromlist) {
            collect(static_cast<Node*>(lfirst(lc)), out);
        }
    } else if (IsA(n, JoinExpr)) {
        auto* j = castNode(JoinExpr, n);
        const bool outer =
            j->jointype == JOIN_LEFT || j->jointype == JOIN_RIGHT || j->jointype == JOIN_FULL;
        if (outer && (j->usingClause != NIL || j->alias != nullptr)) {
            out.push_back(j);
        }
        collect(j->larg, out);
        collect(j->rarg, out);
    }
}

}  // namespace

bool lower_join_using(Query* q) {
    return pg_call([&] {
        std::vector<JoinExpr*> joins;
        collect(reinterpret_cast<Node*>(q->jointree), joins);
        if (joins.empty()) {
            return false;
        }
        // References to any join's columns become what they stand for
        // (COALESCE of a FULL JOIN's merged column), at every level.
        resolve_join_references(q);
        joins.clear();  // (the jointree is a new one)
        collect(reinterpret_cast<Node*>(q->jointree), joins);
        for (JoinExpr* j : joins) {
            j->usingClause = NIL;
            j->isNatural = false;
            j->alias = nullptr;
            j->join_using_alias = nullptr;
            RangeTblEntry* rte = rt_fetch(static_cast<Index>(j->rtindex), q->rtable);
            rte->alias = nullptr;
            rte->join_using_alias = nullptr;
        }
        return true;
    });
}

}  // namespace pgt::pg
