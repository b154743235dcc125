// Views expanded into derived tables (see expand_views.hpp). Each view
// reference becomes a subquery holding a copy of the view's query, named
// as the reference was, with the view's column names; the walk then goes
// into it (range_table_walker reads the entry's kind after this walker has
// seen it), so views over views expand too. Placeholder entries of a
// view's stored query (not in its FROM) are left alone.
#include "pg/analyze/expand_views.hpp"

#include "pg/boundary/boundary.hpp"

extern "C" {
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "rewrite/rewriteHandler.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

namespace pgt::pg {
namespace {

using Walker = bool (*)();

struct Expansion {
    std::vector<Oid> views;
    bool refused = false;  // a view or table that cannot be read directly
    // The role PostgreSQL checks this level's relations as: the caller at
    // the top, a view's owner in its body (the reference's checker when it
    // is security_invoker).
    Oid checker = InvalidOid;
};

bool may_select(Oid relid, Oid role) {
    return pg_class_aclcheck(relid, role, ACL_SELECT) == ACLCHECK_OK;
}

// A table reached: read directly, without row-level security, by the
// caller, and by the role the view's query reads it as.
void check_table(const RangeTblEntry* rte, Expansion& e) {
    if (!rte->inFromCl) {
        return;  // a view's placeholder entry
    }
    Relation rel = relation_open(rte->relid, AccessShareLock);
    const bool rls = rel->rd_rel->relrowsecurity;
    relation_close(rel, AccessShareLock);
    if (rls || !may_select(rte->relid, GetUserId()) || !may_select(rte->relid, e.checker)) {
        e.refused = true;
    }
}

bool expand_walker(Node* node, void* ctx);

void expand(RangeTblEntry* rte, Expansion& e) {
    Relation view = relation_open(rte->relid, AccessShareLock);
    // A view reads its tables as its owner unless it is security_invoker.
    // Read directly as the stream table's owner they give the same rows
    // when neither role meets row-level security, and both may read them:
    // the caller (the refresh reads as it) and the role PostgreSQL checks
    // them as, so what fails as written fails expanded too.
    const Oid checker = RelationHasSecurityInvoker(view) ? e.checker : view->rd_rel->relowner;
    if (RelationIsSecurityView(view) || !may_select(rte->relid, e.checker)) {
        relation_close(view, AccessShareLock);
        e.refused = true;
        return;
    }
    auto* body = static_cast<Query*>(copyObjectImpl(get_view_query(view)));
    relation_close(view, AccessShareLock);
    e.views.push_back(rte->relid);
    // Its body with its own checker; the walk below goes into it again as
    // the reference's (its tables checked once more, its views expanded).
    Expansion inner{{}, false, checker};
    (void)query_tree_walker(body,
                            reinterpret_cast<Walker>(reinterpret_cast<void (*)()>(expand_walker)),
                            &inner, QTW_EXAMINE_RTES_BEFORE);
    e.views.insert(e.views.end(), inner.views.begin(), inner.views.end());
    e.refused = e.refused || inner.refused;
    // Deparsed, the subquery is read by the reference's name and the
    // view's column names, which are not its query's own.
    const char* name = rte->alias != nullptr ? rte->alias->aliasname : rte->eref->aliasname;
    rte->alias = makeAlias(name, static_cast<List*>(copyObjectImpl(rte->eref->colnames)));
    rte->rtekind = RTE_SUBQUERY;
    rte->subquery = body;
    rte->security_barrier = false;
    rte->relid = InvalidOid;
    rte->relkind = 0;
    rte->rellockmode = 0;
    rte->inh = false;
}

bool expand_walker(Node* node, void* ctx) {
    auto* e = static_cast<Expansion*>(ctx);
    if (node == nullptr || e->refused) {
        return false;
    }
    if (IsA(node, RangeTblEntry)) {
        auto* rte = castNode(RangeTblEntry, node);
        if (rte->rtekind == RTE_RELATION && rte->inFromCl) {
            if (rte->relkind == RELKIND_VIEW) {
                expand(rte, *e);
            } else {
                check_table(rte, *e);
            }
        }
        return false;
    }
    if (IsA(node, Query)) {
        return query_tree_walker(
            castNode(Query, node),
            reinterpret_cast<Walker>(reinterpret_cast<void (*)()>(expand_walker)), ctx,
            QTW_EXAMINE_RTES_BEFORE);
    }
    return expression_tree_walker(
        node, reinterpret_cast<Walker>(reinterpret_cast<void (*)()>(expand_walker)), ctx);
}

}  // namespace

std::vector<Oid> expand_views(Query* q) {
    Expansion e;
    e.checker = GetUserId();
    pg_call([&] {
        auto* work = static_cast<Query*>(copyObjectImpl(q));
        (void)query_tree_walker(
            work, reinterpret_cast<Walker>(reinterpret_cast<void (*)()>(expand_walker)), &e,
            QTW_EXAMINE_RTES_BEFORE);
        if (!e.refused && !e.views.empty()) {
            *q = *work;
        }
    });
    return e.refused ? std::vector<Oid>{} : e.views;
}

}  // namespace pgt::pg
