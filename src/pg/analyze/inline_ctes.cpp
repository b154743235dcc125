// WITH queries inlined as derived tables (see inline_ctes.hpp).
//
//   WITH b AS (SELECT ... FROM o WHERE ...)      SELECT ... FROM
//   SELECT ... FROM b JOIN c ON ...         =>     (SELECT ... FROM o WHERE ...) b JOIN c ON ...
//
// Every query level is visited with the levels above it on a stack: a
// reference names its WITH query by name and by how many levels up it is
// (ctelevelsup). A WITH query's own body is visited (and inlined) before
// any reference copies it, so copies need no further work but one: moved
// `up` levels deeper than the WITH list, its references to enclosing
// levels (Vars, WITH references) get `up` more levels.
#include "pg/analyze/inline_ctes.hpp"

#include <cstring>
#include <vector>

#include "pg/boundary/boundary.hpp"

extern "C" {
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "rewrite/rewriteManip.h"
}

namespace pgt::pg {
namespace {

enum class Pass { kCheck, kInline };

struct Walk {
    Pass pass;
    std::vector<Query*> levels;  // the query being visited last
    bool found = false;          // a WITH list
    bool inlinable = true;       // every WITH query can be inlined
};

void visit(Query* q, Walk& w);

bool expression_walker(Node* node, void* ctx) {
    if (node == nullptr) {
        return false;
    }
    if (IsA(node, Query)) {  // a subquery in an expression (EXISTS, IN, scalar)
        visit(castNode(Query, node), *static_cast<Walk*>(ctx));
        return false;
    }
    return expression_tree_walker(
        node, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(expression_walker)), ctx);
}

bool inlinable(const CommonTableExpr* cte) {
    if (cte->cterecursive || !IsA(cte->ctequery, Query)) {
        return false;
    }
    const auto* body = castNode(Query, cte->ctequery);
    // A volatile function runs once for a WITH query, once per reference
    // when inlined: the results could differ.
    return body->commandType == CMD_SELECT &&
           !contain_volatile_functions(reinterpret_cast<Node*>(cte->ctequery));
}

// The WITH query a reference in the innermost level names.
CommonTableExpr* referenced(const RangeTblEntry* rte, const Walk& w) {
    const Query* owner = w.levels.at(w.levels.size() - 1 - rte->ctelevelsup);
    ListCell* lc;
    foreach (lc, owner->cteList) {
        auto* cte = static_cast<CommonTableExpr*>(lfirst(lc));
        if (strcmp(cte->ctename, rte->ctename) == 0) {
            return cte;
        }
    }
    elog(ERROR, "WITH query \"%s\" not found", rte->ctename);
    return nullptr;
}

void inline_reference(RangeTblEntry* rte, const Walk& w) {
    auto* body = static_cast<Query*>(copyObjectImpl(referenced(rte, w)->ctequery));
    if (rte->ctelevelsup > 0) {
        IncrementVarSublevelsUp(reinterpret_cast<Node*>(body), static_cast<int>(rte->ctelevelsup),
                                1);
    }
    rte->rtekind = RTE_SUBQUERY;
    rte->subquery = body;
    // The reference's column names (the WITH query's column list, or the
    // reference's own) are not the body's: deparsed, they must be written.
    rte->alias = makeAlias(rte->alias != nullptr ? rte->alias->aliasname : rte->eref->aliasname,
                           static_cast<List*>(copyObjectImpl(rte->eref->colnames)));
    rte->security_barrier = false;
    rte->ctename = nullptr;
    rte->ctelevelsup = 0;
    rte->self_reference = false;
    rte->coltypes = NIL;
    rte->coltypmods = NIL;
    rte->colcollations = NIL;
}

void visit(Query* q, Walk& w) {
    w.levels.push_back(q);
    w.found = w.found || q->cteList != NIL;
    ListCell* lc;
    foreach (lc, q->cteList) {
        auto* cte = static_cast<CommonTableExpr*>(lfirst(lc));
        w.inlinable = w.inlinable && inlinable(cte);
        if (IsA(cte->ctequery, Query)) {
            visit(castNode(Query, cte->ctequery), w);
        }
    }
    foreach (lc, q->rtable) {
        auto* rte = static_cast<RangeTblEntry*>(lfirst(lc));
        if (rte->rtekind == RTE_SUBQUERY) {
            visit(rte->subquery, w);
        } else if (rte->rtekind == RTE_CTE && w.pass == Pass::kInline) {
            inline_reference(rte, w);
        }
    }
    (void)query_tree_walker(
        q, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(expression_walker)), &w,
        QTW_IGNORE_RT_SUBQUERIES | QTW_IGNORE_CTE_SUBQUERIES);
    w.levels.pop_back();
}

void drop_with_lists(Query* q);

bool drop_walker(Node* node, void* ctx) {
    if (node == nullptr) {
        return false;
    }
    if (IsA(node, Query)) {
        drop_with_lists(castNode(Query, node));
        return false;
    }
    return expression_tree_walker(
        node, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(drop_walker)), ctx);
}

// After inlining no reference is left: the WITH lists go.
void drop_with_lists(Query* q) {
    q->cteList = NIL;
    q->hasRecursive = false;
    ListCell* lc;
    foreach (lc, q->rtable) {
        auto* rte = static_cast<RangeTblEntry*>(lfirst(lc));
        if (rte->rtekind == RTE_SUBQUERY) {
            drop_with_lists(rte->subquery);
        }
    }
    (void)query_tree_walker(q,
                            reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(drop_walker)),
                            nullptr, QTW_IGNORE_RT_SUBQUERIES | QTW_IGNORE_CTE_SUBQUERIES);
}

}  // namespace

bool inline_with_queries(Query* q) {
    Walk check{Pass::kCheck, {}};
    pg_call([&] { visit(q, check); });
    if (!check.found || !check.inlinable) {
        return false;
    }
    Walk w{Pass::kInline, {}};
    pg_call([&] {
        visit(q, w);
        drop_with_lists(q);
    });
    return true;
}

}  // namespace pgt::pg
