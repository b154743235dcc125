// Internal statements read change buffers with the buffers' owner's rights
// (see buffer_access.hpp for why and the invariant).
#include "pg/cdc/buffer_access.hpp"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "pg/catalog/catalog_schema.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/syscache.h"
}

namespace pgt::pg {

namespace {

std::vector<const char*> g_running;         // texts being prepared or run, innermost last
std::unordered_set<const char*> g_planned;  // texts of plans the wrapper holds
post_parse_analyze_hook_type g_prev_hook = nullptr;

bool is_internal(const char* sql) {
    return std::find(g_running.begin(), g_running.end(), sql) != g_running.end() ||
           g_planned.count(sql) > 0;
}

Oid owner_of(Oid relid) {
    HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
    if (!HeapTupleIsValid(tup)) {
        return InvalidOid;
    }
    Oid owner = reinterpret_cast<Form_pg_class>(GETSTRUCT(tup))->relowner;
    ReleaseSysCache(tup);
    return owner;
}

bool mark_walker(Node* node, void* ctx);

bool (*walker_fn())() {
    return reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(mark_walker));
}

// Every reference to a relation of the changes schema, at any depth
// (subqueries, CTEs, sublinks), is checked as that relation's owner.
bool mark_walker(Node* node, void* ctx) {
    if (node == nullptr) {
        return false;
    }
    if (IsA(node, RangeTblEntry)) {
        auto* rte = reinterpret_cast<RangeTblEntry*>(node);
        const Oid changes = *static_cast<Oid*>(ctx);
        if (rte->rtekind == RTE_RELATION && get_rel_namespace(rte->relid) == changes) {
            rte->checkAsUser = owner_of(rte->relid);
        }
        return false;
    }
    if (IsA(node, Query)) {
        return query_tree_walker(reinterpret_cast<Query*>(node), walker_fn(), ctx,
                                 QTW_EXAMINE_RTES_BEFORE);
    }
    return expression_tree_walker(node, walker_fn(), ctx);
}

void on_parse_analyze(ParseState* pstate, Query* query, JumbleState* jstate) {
    if (g_prev_hook != nullptr) {
        g_prev_hook(pstate, query, jstate);
    }
    if (pstate == nullptr || pstate->p_sourcetext == nullptr ||
        !is_internal(pstate->p_sourcetext)) {
        return;
    }
    Oid changes = get_namespace_oid(pgt::catalog::kChangesSchema, true);
    if (OidIsValid(changes)) {
        (void)mark_walker(reinterpret_cast<Node*>(query), &changes);
    }
}

}  // namespace

InternalStatement::InternalStatement(const char* sql) {
    g_running.push_back(sql);
}

InternalStatement::~InternalStatement() {
    g_running.pop_back();
}

void remember_internal_plan(SPIPlanPtr plan) {
    ListCell* lc;
    foreach (lc, SPI_plan_get_plan_sources(plan)) {
        g_planned.insert(static_cast<CachedPlanSource*>(lfirst(lc))->query_string);
    }
}

void forget_internal_plan(SPIPlanPtr plan) {
    ListCell* lc;
    foreach (lc, SPI_plan_get_plan_sources(plan)) {
        g_planned.erase(static_cast<CachedPlanSource*>(lfirst(lc))->query_string);
    }
}

void install_buffer_access_hook() {
    g_prev_hook = post_parse_analyze_hook;
    post_parse_analyze_hook = on_parse_analyze;
}

}  // namespace pgt::pg
