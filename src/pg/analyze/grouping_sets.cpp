// Expansion of GROUPING SETS/ROLLUP/CUBE through PostgreSQL's own
// expand_grouping_sets, and the per-set rewrite of the select list.
// Invariant: inside an aggregate nothing is rewritten (an aggregate of an
// absent key still reads the rows' values); outside, an expression equal
// to an absent grouping expression is NULL, as PostgreSQL evaluates it.
#include "pg/analyze/grouping_sets.hpp"
#include "core/sql/names.hpp"

#include <set>
#include <string>
#include <vector>

#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"
#include "pg/common/type_facts.hpp"

extern "C" {
#include "postgres.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pg_list.h"
#include "optimizer/optimizer.h"
#include "parser/parse_agg.h"
#include "utils/builtins.h"
#include "utils/ruleutils.h"
#include "catalog/pg_type.h"
}

namespace pgt::pg {
namespace {

constexpr int kMaxGroupingArgs = 31;  // GROUPING() takes fewer than 32 arguments

// Position of sortgroupref `ref` in q->groupClause, or -1.
int key_index(Query* q, Index ref) {
    int j = 0;
    ListCell* lc;
    foreach (lc, q->groupClause) {
        if (lfirst_node(SortGroupClause, lc)->tleSortGroupRef == ref) {
            return j;
        }
        j++;
    }
    return -1;
}

struct ArmCtx {
    std::vector<Node*> absent;   // grouping expressions not in this set
    std::vector<Node*> present;  // and those in it
    Query* q;
    uint32_t value;  // GROUPING(every key) of this set
    int nkeys;
};

// The set of GROUPING value `value` over q's grouping expressions keys.
ArmCtx arm_of(Query* q, const std::vector<Node*>& keys, uint32_t value) {
    const int n = static_cast<int>(keys.size());
    ArmCtx c{{}, {}, q, value, n};
    for (int j = 0; j < n; j++) {
        bool gone = ((value >> (n - 1 - j)) & 1U) != 0;
        (gone ? c.absent : c.present).push_back(keys[static_cast<std::size_t>(j)]);
    }
    return c;
}

bool key_absent(const ArmCtx* c, Index ref) {
    int j = key_index(c->q, ref);
    return j >= 0 && ((c->value >> (c->nkeys - 1 - j)) & 1U) != 0;
}

// Runs under pg_call.
Node* arm_mutator(Node* node, void* ctx) {
    if (node == nullptr) {
        return nullptr;
    }
    auto* c = static_cast<ArmCtx*>(ctx);
    if (IsA(node, Aggref)) {
        return node;  // an aggregate reads its rows whatever the set
    }
    if (IsA(node, GroupingFunc)) {
        int32 v = 0;
        ListCell* lc;
        foreach (lc, castNode(GroupingFunc, node)->refs) {
            v = (v << 1) | (key_absent(c, static_cast<Index>(lfirst_int(lc))) ? 1 : 0);
        }
        return reinterpret_cast<Node*>(
            makeConst(INT4OID, -1, InvalidOid, 4, Int32GetDatum(v), false, true));
    }
    for (Node* e : c->absent) {
        if (equal(node, e)) {
            return reinterpret_cast<Node*>(
                makeNullConst(exprType(e), exprTypmod(e), exprCollation(e)));
        }
    }
    // A grouping expression of this set is its group's value whole, even
    // when it contains an absent one (x > 20 grouped with x rolled up).
    for (Node* e : c->present) {
        if (equal(node, e)) {
            return node;
        }
    }
    return expression_tree_mutator(
        node, reinterpret_cast<Node* (*)()>(reinterpret_cast<void (*)()>(arm_mutator)), ctx);
}

}  // namespace

GroupingSets grouping_sets_of(Query* q, int limit) {
    GroupingSets out;
    if (q->groupingSets == NIL) {
        return out;
    }
    const int n = list_length(q->groupClause);
    if (n == 0 || n > kMaxGroupingArgs) {
        out.verdict = GroupingSetsVerdict::kTooWide;
        return out;
    }
    List* sets =
        pg_call([&] { return expand_grouping_sets(q->groupingSets, q->groupDistinct, limit); });
    if (sets == NIL) {
        out.verdict = GroupingSetsVerdict::kTooMany;
        return out;
    }
    std::set<uint32_t> seen;
    bool duplicate = false;
    ListCell* lc;
    foreach (lc, sets) {
        uint32_t present = 0;
        ListCell* rc;
        foreach (rc, static_cast<List*>(lfirst(lc))) {
            int j = key_index(q, static_cast<Index>(lfirst_int(rc)));
            if (j >= 0) {
                present |= 1U << (n - 1 - j);
            }
        }
        uint32_t value = ~present & ((1U << n) - 1U);  // n <= 31 (checked above)
        duplicate = duplicate || !seen.insert(value).second;
        out.values.push_back(value);
    }
    bool selected = pg_call([&] {
        ListCell* gc;
        foreach (gc, q->groupClause) {
            TargetEntry* te =
                get_sortgroupclause_tle(lfirst_node(SortGroupClause, gc), q->targetList);
            if (te->resjunk) {
                return false;
            }
        }
        return true;
    });
    out.verdict = duplicate   ? GroupingSetsVerdict::kDuplicate
                  : !selected ? GroupingSetsVerdict::kUnselected
                              : GroupingSetsVerdict::kKeyed;
    return out;
}

std::string grouping_sets_blocker(Query* q, int limit, bool* over_limit) {
    *over_limit = false;
    switch (grouping_sets_of(q, limit).verdict) {
        case GroupingSetsVerdict::kNone:
            return "";
        case GroupingSetsVerdict::kKeyed: {
            // Every set's touched groups are matched with a bare `=` (IN).
            ListCell* lc;
            foreach (lc, q->groupClause) {
                SortGroupClause* sgc = lfirst_node(SortGroupClause, lc);
                TargetEntry* te = get_sortgroupclause_tle(sgc, q->targetList);
                const Oid type =
                    pg_call([&] { return exprType(reinterpret_cast<Node*>(te->expr)); });
                if (unmatchable_type(type)) {
                    return "GROUPING SETS, CUBE or ROLLUP over a key of type " +
                           *unmatchable_type(type) + ", whose equality is not pg_catalog's";
                }
            }
            return "";
        }
        case GroupingSetsVerdict::kTooMany:
            *over_limit = true;
            return "GROUPING SETS, CUBE or ROLLUP expanding to more than " + std::to_string(limit) +
                   " grouping sets (pg_trickle.max_grouping_set_branches)";
        case GroupingSetsVerdict::kDuplicate:
            return "GROUPING SETS, CUBE or ROLLUP with duplicate grouping sets (GROUP BY DISTINCT "
                   "removes them)";
        case GroupingSetsVerdict::kUnselected:
            return "a GROUP BY expression that is not in the select list";
        case GroupingSetsVerdict::kTooWide:
            return "GROUPING SETS over no grouping expression or more than 31 of them";
    }
    return "";
}

void append_grouping_set_column(Query* q) {
    pg_call([&] {
        GroupingFunc* g = makeNode(GroupingFunc);
        ListCell* lc;
        foreach (lc, q->groupClause) {
            SortGroupClause* sgc = lfirst_node(SortGroupClause, lc);
            TargetEntry* te = get_sortgroupclause_tle(sgc, q->targetList);
            g->args = lappend(g->args, copyObjectImpl(te->expr));
            g->refs = lappend_int(g->refs, static_cast<int>(sgc->tleSortGroupRef));
        }
        g->agglevelsup = 0;
        g->location = -1;
        TargetEntry* te = makeTargetEntry(reinterpret_cast<Expr*>(g),
                                          static_cast<AttrNumber>(list_length(q->targetList) + 1),
                                          pstrdup(kGroupingSetColumn), false);
        q->targetList = lappend(q->targetList, te);
    });
}

void drop_grouping_set_column(Query* q) {
    if (q->groupingSets == NIL || q->targetList == NIL) {
        return;
    }
    TargetEntry* last = static_cast<TargetEntry*>(llast(q->targetList));
    if (!last->resjunk && last->resname != nullptr &&
        strcmp(last->resname, kGroupingSetColumn) == 0 && IsA(last->expr, GroupingFunc)) {
        q->targetList = pg_call([&] { return list_delete_last(q->targetList); });
    }
}

bool has_empty_grouping_set(Query* q) {
    const int n = list_length(q->groupClause);
    for (uint32_t v : grouping_sets_of(q, kMaxGroupingSets).values) {
        if (n > 0 && v + 1 == (1U << n)) {
            return true;
        }
    }
    return false;
}

std::string each_grouping_set(const std::string& branch, std::size_t n,
                              const std::vector<uint32_t>& sets) {
    std::vector<std::string> cols, values;
    for (std::size_t j = 0; j < n; j++) {
        std::string k = sql::key_column(j);
        cols.push_back("CASE WHEN (s.m OPERATOR(pg_catalog.&) " +
                       std::to_string(1U << (n - 1 - j)) + ") OPERATOR(pg_catalog.=) 0 THEN b." +
                       k + " END AS " + k);
    }
    cols.push_back("s.m AS " + sql::key_column(n));
    for (uint32_t v : sets) {
        values.push_back("(" + std::to_string(v) + ")");
    }
    std::string list, vals;
    for (const std::string& c : cols) {
        list += (list.empty() ? "" : ", ") + c;
    }
    for (const std::string& v : values) {
        vals += (vals.empty() ? "" : ", ") + v;
    }
    return "SELECT " + list + " FROM (" + branch + ") b CROSS JOIN (VALUES " + vals + ") s(m)";
}

// q's grouping expressions, in group clause (GROUPING) order.
std::vector<Node*> grouping_exprs(Query* q) {
    std::vector<Node*> keys;
    ListCell* lc;
    foreach (lc, q->groupClause) {
        SortGroupClause* sgc = lfirst_node(SortGroupClause, lc);
        keys.push_back(pg_call([&] {
            return reinterpret_cast<Node*>(get_sortgroupclause_tle(sgc, q->targetList)->expr);
        }));
    }
    return keys;
}

std::string grouping_sets_union(Query* q, const std::vector<uint32_t>& sets) {
    std::vector<Node*> keys = grouping_exprs(q);
    std::string out;
    for (uint32_t value : sets) {
        ArmCtx c = arm_of(q, keys, value);
        std::string arm = with_pinned_search_path([&] {
            return std::string(pg_call([&] {
                Query* a = static_cast<Query*>(copyObjectImpl(q));
                List* tl = NIL;
                ListCell* tc;
                foreach (tc, a->targetList) {
                    TargetEntry* te = lfirst_node(TargetEntry, tc);
                    if (te->resjunk) {
                        continue;
                    }
                    te->expr =
                        reinterpret_cast<Expr*>(arm_mutator(reinterpret_cast<Node*>(te->expr), &c));
                    te->ressortgroupref = 0;
                    tl = lappend(tl, te);
                }
                tl = lappend(
                    tl, makeTargetEntry(reinterpret_cast<Expr*>(makeConst(
                                            INT4OID, -1, InvalidOid, 4,
                                            Int32GetDatum(static_cast<int32>(value)), false, true)),
                                        static_cast<AttrNumber>(list_length(tl) + 1),
                                        pstrdup(kGroupingSetColumn), false));
                // GROUP BY the set's expressions (by value: the select list
                // now holds NULLs and constants in their place).
                List* group = NIL;
                ListCell* gc;
                foreach (gc, q->groupClause) {
                    SortGroupClause* sgc = lfirst_node(SortGroupClause, gc);
                    if (!key_absent(&c, sgc->tleSortGroupRef)) {
                        TargetEntry* kte = get_sortgroupclause_tle(sgc, q->targetList);
                        TargetEntry* junk = makeTargetEntry(
                            static_cast<Expr*>(copyObjectImpl(kte->expr)),
                            static_cast<AttrNumber>(list_length(tl) + 1), nullptr, true);
                        junk->ressortgroupref = sgc->tleSortGroupRef;
                        tl = lappend(tl, junk);
                        group = lappend(group, copyObjectImpl(sgc));
                    }
                }
                a->targetList = tl;
                a->groupClause = group;
                a->groupingSets = NIL;
                a->groupDistinct = false;
                a->sortClause = NIL;
                if (a->havingQual != nullptr) {
                    a->havingQual = arm_mutator(a->havingQual, &c);
                } else if (group == NIL && !a->hasAggs) {
                    a->havingQual = reinterpret_cast<Node*>(makeBoolConst(true, false));  // one row
                }
                return pg_get_querydef(a, false);
            }));
        });
        out += (out.empty() ? "" : " UNION ALL ") + arm;
    }
    return out;
}

void derive_scan_grouping_sets(Query* q, Oid relid, ir::Node& node) {
    GroupingSets sets = grouping_sets_of(q, kMaxGroupingSets);
    with_pinned_search_path([&] {
        List* ctx = pg_call([&] { return deparse_context_for(kScanAlias, relid); });
        auto text = [&](Node* e) -> std::string {
            return pg_call([&] { return deparse_expression(e, ctx, true, false); });
        };
        std::vector<Node*> keys = grouping_exprs(q);
        for (Node* k : keys) {
            node.grouping_keys.push_back(text(k));
        }
        for (uint32_t value : sets.values) {
            ArmCtx c = arm_of(q, keys, value);
            auto rewritten = [&](Node* e) {
                return text(pg_call(
                    [&] { return arm_mutator(static_cast<Node*>(copyObjectImpl(e)), &c); }));
            };
            ir::GroupingSetArm arm;
            arm.grouping = value;
            ListCell* tc;
            foreach (tc, q->targetList) {
                TargetEntry* te = lfirst_node(TargetEntry, tc);
                if (!te->resjunk) {
                    arm.outputs.push_back(rewritten(reinterpret_cast<Node*>(te->expr)));
                }
            }
            arm.outputs.push_back(std::to_string(value));
            if (q->havingQual != nullptr) {
                arm.having = rewritten(q->havingQual);
            }
            node.arms.push_back(std::move(arm));
        }
    });
}

}  // namespace pgt::pg
