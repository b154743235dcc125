// Join-region recognition and branch deparsing.
// Invariant: branches are produced by PostgreSQL's deparser from a copy of
// the analyzed query, so quoting, schema qualification and operator
// resolution are the query's own.
#include "pg/analyze/join_region.hpp"

#include "pg/analyze/grouping_sets.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/diff/apply.hpp"
#include "core/diff/join_region.hpp"
#include "core/diff/join_terms.hpp"
#include "core/ir/scan.hpp"
#include "pg/analyze/scan_shape.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"
#include "pg/common/type_facts.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/common/settings.hpp"

extern "C" {
#include "postgres.h"
#include "access/relation.h"
#include "access/htup_details.h"
#include "catalog/pg_index.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "catalog/pg_namespace.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "rewrite/rewriteManip.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

namespace pgt::pg {
namespace {

// A table of the join: its range-table index, inside the derived tables
// on the way to it (path = the rtindex at each level, outermost first).
struct RegionTable {
    std::vector<Index> path;
    std::size_t source;  // index into RegionShape::relids
    int sublink = -1;    // the subquery (subquery_sites index) it is in; -1: the query's FROM
};

// A LEFT or RIGHT join of the top-level FROM whose nullable side is one
// table: its rows are NULL-padded when it has no partner. A FULL JOIN of
// two tables: both sides are nullable (nullable: rarg, other: larg).
struct OuterJoin {
    Index nullable;  // the nullable table's rtindex
    bool left;       // LEFT JOIN (the preserved side is larg)
    bool full = false;
    Index other = 0;  // FULL: larg's rtindex
};

// The first join that is not inner (JOIN ... ON, comma lists, CROSS JOIN,
// USING and NATURAL are inner), named; nullptr when there is none.
const char* outer_join(Node* n) {
    if (IsA(n, FromExpr)) {
        ListCell* lc;
        foreach (lc, castNode(FromExpr, n)->fromlist) {
            if (const char* o = outer_join(static_cast<Node*>(lfirst(lc)))) {
                return o;
            }
        }
    } else if (IsA(n, JoinExpr)) {
        JoinExpr* j = castNode(JoinExpr, n);
        if (j->jointype == JOIN_FULL) {
            return "a FULL JOIN";
        }
        if (j->jointype != JOIN_INNER) {
            return "a LEFT or RIGHT JOIN other than of two tables with both keys selected";
        }
        if (const char* o = outer_join(j->larg)) {
            return o;
        }
        return outer_join(j->rarg);
    }
    return nullptr;
}

// The identity key's target entries, in key order.
std::vector<TargetEntry*> key_entries(Query* q, const std::vector<int>& key_columns) {
    std::vector<TargetEntry*> outputs;
    ListCell* lc;
    foreach (lc, q->targetList) {
        TargetEntry* te = lfirst_node(TargetEntry, lc);
        if (!te->resjunk) {
            outputs.push_back(te);
        }
    }
    std::vector<TargetEntry*> keys;
    for (int pos : key_columns) {
        keys.push_back(outputs.at(static_cast<std::size_t>(pos)));
    }
    return keys;
}

// A key column can be NULL unless it is a NOT NULL column of a joined
// table (inner joins never pad with NULLs).
bool nullable(Query* q, Expr* e) {
    if (!IsA(e, Var) || castNode(Var, e)->varlevelsup != 0 || castNode(Var, e)->varattno < 1) {
        return true;
    }
    Var* v = castNode(Var, e);
    RangeTblEntry* rte = rt_fetch(v->varno, q->rtable);
    if (rte->rtekind != RTE_RELATION) {
        return true;
    }
    return !pg_call([&] {
        Relation rel = relation_open(rte->relid, AccessShareLock);
        bool notnull = TupleDescAttr(RelationGetDescr(rel), v->varattno - 1)->attnotnull;
        relation_close(rel, AccessShareLock);
        return notnull;
    });
}

// Whether e is a column of a table of q's FROM that leads one of its
// indexes: a `= ANY (array)` filter on it is one index probe per element,
// on another column it compares every row with every element.
bool index_led(Query* q, Expr* e) {
    if (!IsA(e, Var) || castNode(Var, e)->varlevelsup != 0 || castNode(Var, e)->varattno < 1) {
        return false;
    }
    Var* v = castNode(Var, e);
    RangeTblEntry* rte = rt_fetch(v->varno, q->rtable);
    if (rte->rtekind != RTE_RELATION) {
        return false;
    }
    return pg_call([&] {
        Relation rel = relation_open(rte->relid, AccessShareLock);
        List* indexes = RelationGetIndexList(rel);
        bool led = false;
        ListCell* lc;
        foreach (lc, indexes) {
            HeapTuple tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
            if (HeapTupleIsValid(tup)) {
                Form_pg_index ix = reinterpret_cast<Form_pg_index>(GETSTRUCT(tup));
                led = led || (ix->indisvalid && ix->indnkeyatts > 0 &&
                              ix->indkey.values[0] == v->varattno);
                ReleaseSysCache(tup);
            }
        }
        relation_close(rel, AccessShareLock);
        return led;
    });
}

// Vars of table `varno` (this level) replaced by NULLs of their type: the
// key a NULL-padded row would have.
Node* null_vars_of(Node* node, void* ctx) {
    if (node == nullptr) {
        return nullptr;
    }
    Index varno = *static_cast<Index*>(ctx);
    if (IsA(node, Var) && castNode(Var, node)->varlevelsup == 0 &&
        static_cast<Index>(castNode(Var, node)->varno) == varno) {
        Var* v = castNode(Var, node);
        return reinterpret_cast<Node*>(makeNullConst(v->vartype, v->vartypmod, v->varcollid));
    }
    return expression_tree_mutator(
        node, reinterpret_cast<Node* (*)()>(reinterpret_cast<void (*)()>(null_vars_of)), ctx);
}

// The outer join whose nullable side is `nullable`, and the slot holding it.
JoinExpr** find_outer_join(Node** slot, Index nullable) {
    Node* n = *slot;
    if (IsA(n, FromExpr)) {
        ListCell* lc;
        foreach (lc, castNode(FromExpr, n)->fromlist) {
            if (JoinExpr** j = find_outer_join(reinterpret_cast<Node**>(&lfirst(lc)), nullable)) {
                return j;
            }
        }
    } else if (IsA(n, JoinExpr)) {
        JoinExpr* j = castNode(JoinExpr, n);
        Node* side = j->jointype == JOIN_LEFT || j->jointype == JOIN_FULL ? j->rarg
                     : j->jointype == JOIN_RIGHT                          ? j->larg
                                                                          : nullptr;
        if (side != nullptr && IsA(side, RangeTblRef) &&
            static_cast<Index>(castNode(RangeTblRef, side)->rtindex) == nullable) {
            return reinterpret_cast<JoinExpr**>(slot);
        }
        if (JoinExpr** found = find_outer_join(&j->larg, nullable)) {
            return found;
        }
        return find_outer_join(&j->rarg, nullable);
    }
    return nullptr;
}

// A subquery in the query's expressions that a region follows: in a WHERE
// conjunct (conjunct >= 0), or in the select list or HAVING (-1).
// form 'i': the conjunct is exactly `x IN (it)`, 'n': `x NOT IN (it)`
// (one column, `=`, a subquery whose selected values are its rows' own:
// no LIMIT, window functions or DISTINCT ON, under GROUP BY a grouping
// key); 'g': anything else (EXISTS, NOT EXISTS, scalar subqueries).
struct SubquerySite {
    SubLink* link;
    int conjunct;
    char form;
};

// Subqueries of an expression at this level (not inside subqueries).
bool collect_links(Node* n, void* ctx) {
    if (n == nullptr || IsA(n, Query)) {
        return false;
    }
    if (IsA(n, SubLink)) {
        List** links = static_cast<List**>(ctx);
        *links = lappend(*links, n);
    }
    return expression_tree_walker(
        n, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(collect_links)), ctx);
}

std::vector<SubLink*> links_of(Node* n) {
    List* links = NIL;
    pg_call([&] { (void)collect_links(n, &links); });
    std::vector<SubLink*> out;
    ListCell* lc;
    foreach (lc, links) {
        out.push_back(static_cast<SubLink*>(lfirst(lc)));
    }
    return out;
}

// Whether sub's selected values are its rows' own (see SubquerySite).
bool selects_row_values(Query* sub) {
    if (sub->limitCount != nullptr || sub->limitOffset != nullptr || sub->hasWindowFuncs ||
        sub->hasDistinctOn || sub->groupingSets != NIL || sub->hasTargetSRFs) {
        return false;
    }
    if (!sub->hasAggs && sub->groupClause == NIL && sub->havingQual == nullptr) {
        return true;
    }
    TargetEntry* te = static_cast<TargetEntry*>(linitial(sub->targetList));
    return sub->groupClause != NIL && te->ressortgroupref != 0 &&
           get_sortgroupref_clause_noerr(te->ressortgroupref, sub->groupClause) != nullptr;
}

// conj as `x [NOT] IN (subquery)` with a one-column `=`: the form, or 0.
char in_form(Node* conj) {
    char form = 'i';
    if (IsA(conj, BoolExpr) && castNode(BoolExpr, conj)->boolop == NOT_EXPR) {
        conj = static_cast<Node*>(linitial(castNode(BoolExpr, conj)->args));
        form = 'n';
    }
    if (!IsA(conj, SubLink)) {
        return 0;
    }
    SubLink* s = castNode(SubLink, conj);
    if (s->subLinkType != ANY_SUBLINK || s->testexpr == nullptr || !IsA(s->testexpr, OpExpr)) {
        return 0;
    }
    OpExpr* op = castNode(OpExpr, s->testexpr);
    if (list_length(op->args) != 2 || !IsA(lsecond(op->args), Param) ||
        checkExprHasSubLink(static_cast<Node*>(linitial(op->args)))) {
        return 0;
    }
    char* name = get_opname(op->opno);  // a cache lookup: NULL when missing, never an error
    if (name == nullptr || strcmp(name, "=") != 0 ||
        !selects_row_values(castNode(Query, s->subselect))) {
        return 0;
    }
    return form;
}

// The subqueries of q's WHERE conjuncts, select list and HAVING, in that
// order (pointers into q's own tree; the same order for a copy of q).
std::vector<SubquerySite> subquery_sites(Query* q) {
    std::vector<SubquerySite> out;
    if (q->jointree->quals != nullptr) {
        int c = 0;
        ListCell* lc;
        List* conjuncts = pg_call(
            [&] { return make_ands_implicit(reinterpret_cast<Expr*>(q->jointree->quals)); });
        foreach (lc, conjuncts) {
            Node* conj = static_cast<Node*>(lfirst(lc));
            std::vector<SubLink*> links = links_of(conj);
            char form = links.size() == 1 ? pg_call([&] { return in_form(conj); }) : 0;
            for (SubLink* l : links) {
                out.push_back({l, c, form != 0 ? form : 'g'});
            }
            c++;
        }
    }
    for (SubLink* l : links_of(reinterpret_cast<Node*>(q->targetList))) {
        out.push_back({l, -1, 'g'});
    }
    for (SubLink* l : links_of(q->havingQual)) {
        out.push_back({l, -1, 'g'});
    }
    return out;
}

// An EXISTS whose select list is never evaluated for its result: no
// aggregate, grouping, DISTINCT, window function, set-returning function or
// LIMIT for it to take part in. Its tables' images need not carry the
// columns only the select list reads (`EXISTS (SELECT * ...)`).
bool selects_nothing_read(const SubLink* link) {
    const Query* sub = castNode(Query, link->subselect);
    return link->subLinkType == EXISTS_SUBLINK && !sub->hasAggs && !sub->hasWindowFuncs &&
           !sub->hasTargetSRFs && sub->groupClause == NIL && sub->groupingSets == NIL &&
           sub->havingQual == nullptr && sub->distinctClause == NIL && sub->limitCount == nullptr &&
           sub->limitOffset == nullptr;
}

bool has_aggregate_of_upper_level(Node* n, void* ctx) {
    if (n == nullptr) {
        return false;
    }
    int* levels = static_cast<int*>(ctx);
    if (IsA(n, Aggref) && static_cast<int>(castNode(Aggref, n)->agglevelsup) >= *levels) {
        return true;
    }
    auto walker =
        reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(has_aggregate_of_upper_level));
    if (IsA(n, Query)) {
        (*levels)++;
        bool r = query_tree_walker(castNode(Query, n), walker, ctx, 0);
        (*levels)--;
        return r;
    }
    return expression_tree_walker(n, walker, ctx);
}

// Why a region cannot follow this subquery ("" when it can): its FROM
// must be tables and inner joins (no set operations, WITH or subqueries of
// its own), and it may not use the query's aggregates.
std::string subquery_blocker(const SubquerySite& site) {
    Query* s = castNode(Query, site.link->subselect);
    if (s->setOperations != nullptr || s->cteList != NIL || s->hasSubLinks || s->rowMarks != NIL) {
        return "a subquery with set operations, WITH or subqueries of its own";
    }
    if (outer_join(reinterpret_cast<Node*>(s->jointree)) != nullptr) {
        return "a subquery with an outer join";
    }
    int levels = 1;
    if (pg_call([&] {
            return query_tree_walker(s,
                                     reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(
                                         has_aggregate_of_upper_level)),
                                     &levels, 0);
        })) {
        return "a subquery over the query's own aggregates";
    }
    return "";
}

// Whether c compares a column expression of the subquery with one of the
// query (one level up) by a hash- or merge-joinable operator: a
// correlation PostgreSQL can drive from the images.
bool equi_correlation(Node* c) {
    if (!IsA(c, OpExpr) || list_length(castNode(OpExpr, c)->args) != 2) {
        return false;
    }
    OpExpr* op = castNode(OpExpr, c);
    Node* a = static_cast<Node*>(linitial(op->args));
    Node* b = static_cast<Node*>(lsecond(op->args));
    auto outer_only = [](Node* n) {
        return contain_vars_of_level(n, 1) && !contain_vars_of_level(n, 0);
    };
    auto inner_only = [](Node* n) {
        return contain_vars_of_level(n, 0) && !contain_vars_of_level(n, 1);
    };
    return (op_mergejoinable(op->opno, exprType(a)) || op_hashjoinable(op->opno, exprType(a))) &&
           ((outer_only(a) && inner_only(b)) || (inner_only(a) && outer_only(b)));
}

// The subquery's WHERE without the terms that relate it to the query other
// than by equality (`l2.l_suppkey <> l1.l_suppkey`): a superset of its rows
// for any row of the query, which lets PostgreSQL run the images first
// (a semi-join with such a term cannot be driven from its inner side).
void relax_correlation(Query* sub) {
    if (sub->jointree->quals == nullptr) {
        return;
    }
    List* kept = NIL;
    ListCell* lc;
    foreach (lc, make_ands_implicit(reinterpret_cast<Expr*>(sub->jointree->quals))) {
        Node* c = static_cast<Node*>(lfirst(lc));
        if (!contain_vars_of_level(c, 1) || equi_correlation(c)) {
            kept = lappend(kept, c);
        }
    }
    sub->jointree->quals =
        kept == NIL ? nullptr : reinterpret_cast<Node*>(make_ands_explicit(kept));
}

// A subquery's condition in a branch that reads its tables' images:
// which rows of the query a changed subquery row can concern. 'g': those
// for which the subquery's FROM/WHERE over the images finds a row (it
// correlates with them; every row when uncorrelated); 'i': those whose
// value it selects (without GROUP BY/HAVING: the changed row's group);
// 'n' also every row when the changed row selects NULL, and rows whose own
// value is NULL (both flip when the subquery's result does). Runs under
// pg_call; changes the site's subquery.
Node* images_condition(const SubquerySite& site) {
    Query* sub = castNode(Query, site.link->subselect);
    sub->groupClause = NIL;
    sub->groupingSets = NIL;
    sub->havingQual = nullptr;
    sub->hasAggs = false;
    sub->distinctClause = NIL;
    sub->hasDistinctOn = false;
    sub->sortClause = NIL;
    sub->limitCount = nullptr;
    sub->limitOffset = nullptr;
    sub->windowClause = NIL;
    sub->hasWindowFuncs = false;
    relax_correlation(sub);
    auto exists = [](Query* q) {
        SubLink* e = makeNode(SubLink);
        e->subLinkType = EXISTS_SUBLINK;
        e->subLinkId = 0;
        e->testexpr = nullptr;
        e->operName = NIL;
        e->subselect = reinterpret_cast<Node*>(q);
        e->location = -1;
        return e;
    };
    if (site.form == 'g') {
        sub->targetList = list_make1(
            makeTargetEntry(reinterpret_cast<Expr*>(makeConst(INT4OID, -1, InvalidOid, 4,
                                                              Int32GetDatum(1), false, true)),
                            1, pstrdup("one"), false));
        return reinterpret_cast<Node*>(exists(sub));
    }
    if (site.form == 'i') {
        return reinterpret_cast<Node*>(site.link);
    }
    Query* nulls = static_cast<Query*>(copyObjectImpl(sub));
    TargetEntry* te = static_cast<TargetEntry*>(linitial(nulls->targetList));
    NullTest* selected_null = makeNode(NullTest);
    selected_null->arg = static_cast<Expr*>(copyObjectImpl(te->expr));
    selected_null->nulltesttype = IS_NULL;
    selected_null->argisrow = false;
    selected_null->location = -1;
    nulls->jointree->quals =
        nulls->jointree->quals == nullptr
            ? reinterpret_cast<Node*>(selected_null)
            : reinterpret_cast<Node*>(
                  makeBoolExpr(AND_EXPR, list_make2(nulls->jointree->quals, selected_null), -1));
    NullTest* own_null = makeNode(NullTest);
    own_null->arg =
        static_cast<Expr*>(copyObjectImpl(linitial(castNode(OpExpr, site.link->testexpr)->args)));
    own_null->nulltesttype = IS_NULL;
    own_null->argisrow = false;
    own_null->location = -1;
    return reinterpret_cast<Node*>(
        makeBoolExpr(OR_EXPR, list_make3(site.link, exists(nulls), own_null), -1));
}

// Selects the images' __pgt_sign of table t (its range-table entry rte,
// already reading a signed relation) as column `col` of c: each derived
// table on the way selects it as its next column. Runs under pg_call.
void select_sign(Query* c, const RegionTable& t, RangeTblEntry* rte, const std::string& col) {
    if (t.sublink >= 0) {
        elog(ERROR, "signed images of a table inside a subquery expression");
    }
    // The relation's extra last column, by name.
    rte->eref->colnames = lappend(rte->eref->colnames, makeString(pstrdup("__pgt_sign")));
    Expr* sign = reinterpret_cast<Expr*>(makeVar(
        static_cast<int>(t.path.back()), static_cast<AttrNumber>(list_length(rte->eref->colnames)),
        INT8OID, -1, InvalidOid, 0));
    auto select = [&](Query* level) {
        level->targetList = lappend(
            level->targetList,
            makeTargetEntry(sign, static_cast<AttrNumber>(list_length(level->targetList) + 1),
                            pstrdup(col.c_str()), false));
    };
    for (std::size_t d = t.path.size() - 1; d > 0; d--) {
        Query* outer_level = c;
        for (std::size_t e = 0; e + 1 < d; e++) {
            outer_level = rt_fetch(t.path[e], outer_level->rtable)->subquery;
        }
        RangeTblEntry* derived = rt_fetch(t.path[d - 1], outer_level->rtable);
        select(derived->subquery);
        derived->eref->colnames =
            lappend(derived->eref->colnames, makeString(pstrdup(col.c_str())));
        sign = reinterpret_cast<Expr*>(
            makeVar(static_cast<int>(t.path[d - 1]),
                    static_cast<AttrNumber>(list_length(derived->subquery->targetList)), INT8OID,
                    -1, InvalidOid, 0));
    }
    select(c);
}

// Vars of two tables of one query level (and the same tables seen from its
// subqueries) become columns of a derived table `to` selecting them.
struct DriveRemap {
    Index delta = 0;
    Index partner = 0;
    Index to = 0;
    int up = 0;
    bool failed = false;
    List* selected = NIL;  // the derived table's select list (Vars of its rtindex 1 / 2)
};

bool drive_remap_walker(Node* n, void* ctx) {
    auto* m = static_cast<DriveRemap*>(ctx);
    if (n == nullptr) {
        return false;
    }
    if (IsA(n, Var)) {
        Var* v = castNode(Var, n);
        if (static_cast<int>(v->varlevelsup) != m->up ||
            (v->varno != static_cast<int>(m->delta) && v->varno != static_cast<int>(m->partner))) {
            return false;
        }
        if (v->varattno <= 0) {  // whole-row or system column: left as it is
            m->failed = true;
            return false;
        }
        int inner = v->varno == static_cast<int>(m->delta) ? 1 : 2;
        AttrNumber resno = 0;
        ListCell* lc;
        foreach (lc, m->selected) {
            Var* s = castNode(Var, lfirst_node(TargetEntry, lc)->expr);
            if (s->varno == inner && s->varattno == v->varattno) {
                resno = lfirst_node(TargetEntry, lc)->resno;
            }
        }
        if (resno == 0) {
            Var* s = static_cast<Var*>(copyObjectImpl(v));
            s->varno = inner;
            s->varnosyn = static_cast<Index>(inner);
            s->varattnosyn = v->varattno;
            s->varlevelsup = 0;
            resno = static_cast<AttrNumber>(list_length(m->selected) + 1);
            m->selected =
                lappend(m->selected,
                        makeTargetEntry(reinterpret_cast<Expr*>(s), resno,
                                        psprintf("__pgt_c%d", static_cast<int>(resno)), false));
        }
        v->varno = static_cast<int>(m->to);
        v->varnosyn = m->to;
        v->varattno = resno;
        v->varattnosyn = resno;
        return false;
    }
    auto walker = reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(drive_remap_walker));
    if (IsA(n, Query)) {
        m->up++;
        bool r = query_tree_walker(castNode(Query, n), walker, ctx, 0);
        m->up--;
        return r;
    }
    return expression_tree_walker(n, walker, ctx);
}

// A FROM item naming range-table entry rtindex.
RangeTblRef* table_ref(int rtindex) {
    RangeTblRef* r = makeNode(RangeTblRef);
    r->rtindex = rtindex;
    return r;
}

// A branch reading one table's images: PostgreSQL may still join the other
// tables first when it misjudges how many rows their join yields (TPC-H q09:
// part, partsupp and lineitem joined by two columns, estimated at 147 rows,
// found 320,412, before the 30,124 changed orders were looked at). When the
// images' table `delta` joins exactly one other table of its level's FROM
// (a comma list) and nothing else, both go into a derived table of their
// own with the conditions over them, which OFFSET 0 keeps the planner from
// flattening: the join starts from the images, and PostgreSQL still picks
// how (index probes or a hash). Otherwise the level is left as it is. Runs
// under pg_call.
void drive_from_images(Query* level, Index delta) {
    if (level->setOperations != nullptr || level->hasTargetSRFs || level->hasWindowFuncs ||
        level->rowMarks != NIL) {
        return;
    }
    ListCell* lc;
    foreach (lc, level->jointree->fromlist) {
        if (!IsA(lfirst(lc), RangeTblRef)) {
            return;
        }
    }
    foreach (lc, level->rtable) {
        if (lfirst_node(RangeTblEntry, lc)->lateral) {
            return;  // could read the two tables, and would come before them
        }
    }
    List* conjuncts = make_ands_implicit(reinterpret_cast<Expr*>(level->jointree->quals));
    Index partner = 0;
    foreach (lc, conjuncts) {
        Node* conj = static_cast<Node*>(lfirst(lc));
        Relids varnos = pull_varnos(nullptr, conj);
        if (!bms_is_member(static_cast<int>(delta), varnos)) {
            continue;
        }
        if (contain_volatile_functions(conj) || checkExprHasSubLink(conj)) {
            return;
        }
        Relids others = bms_del_member(bms_copy(varnos), static_cast<int>(delta));
        int other = -1;
        if (bms_get_singleton_member(others, &other)) {
            if (partner != 0 && partner != static_cast<Index>(other)) {
                return;  // a second partner: not a leaf of the join graph
            }
            partner = static_cast<Index>(other);
        } else if (!bms_is_empty(others)) {
            return;
        }
    }
    if (partner == 0) {
        return;
    }
    const RangeTblEntry* p = rt_fetch(partner, level->rtable);
    if (p->rtekind != RTE_RELATION &&
        !(p->rtekind == RTE_CTE && strncmp(p->ctename, kKeptToken, strlen(kKeptToken)) == 0)) {
        return;
    }
    bool listed = false;
    foreach (lc, level->jointree->fromlist) {
        listed = listed || static_cast<Index>(lfirst_node(RangeTblRef, lc)->rtindex) == partner;
    }
    if (!listed) {
        return;
    }
    List* inside = NIL;
    List* outside = NIL;
    Relids pair =
        bms_add_member(bms_make_singleton(static_cast<int>(delta)), static_cast<int>(partner));
    foreach (lc, conjuncts) {
        Node* conj = static_cast<Node*>(lfirst(lc));
        Relids varnos = pull_varnos(nullptr, conj);
        bool goes_in = !bms_is_empty(varnos) && bms_is_subset(varnos, pair) &&
                       !contain_volatile_functions(conj) && !checkExprHasSubLink(conj);
        if (goes_in) {
            inside = lappend(inside, copyObjectImpl(conj));
        } else {
            outside = lappend(outside, conj);
        }
    }
    // Renumber the inner conditions: delta -> 1, partner -> 2 (through
    // numbers no table has, so the two renames cannot meet).
    const int far = list_length(level->rtable) + 1000;
    Node* inner_quals = reinterpret_cast<Node*>(make_ands_explicit(inside));
    ChangeVarNodes(inner_quals, static_cast<int>(delta), far, 0);
    ChangeVarNodes(inner_quals, static_cast<int>(partner), far + 1, 0);
    ChangeVarNodes(inner_quals, far, 1, 0);
    ChangeVarNodes(inner_quals, far + 1, 2, 0);

    DriveRemap m;
    m.delta = delta;
    m.partner = partner;
    m.to = static_cast<Index>(list_length(level->rtable) + 1);
    Node* quals = level->jointree->quals;
    level->jointree->quals = reinterpret_cast<Node*>(make_ands_explicit(outside));
    if (outside == NIL) {
        level->jointree->quals = nullptr;
    }
    Query* probe = static_cast<Query*>(
        copyObjectImpl(level));  // remapped first on a copy: a failure leaves level as is
    query_tree_walker(
        probe, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(drive_remap_walker)), &m,
        0);
    if (m.failed || m.selected == NIL) {
        level->jointree->quals = quals;
        return;
    }
    Query* sub = makeNode(Query);
    sub->commandType = CMD_SELECT;
    sub->querySource = QSRC_ORIGINAL;
    sub->canSetTag = true;
    sub->rtable = list_make2(copyObjectImpl(rt_fetch(delta, level->rtable)),
                             copyObjectImpl(rt_fetch(partner, level->rtable)));
    sub->jointree =
        makeFromExpr(list_make2(table_ref(1), table_ref(2)), inside == NIL ? nullptr : inner_quals);
    sub->targetList = m.selected;
    sub->limitOffset = reinterpret_cast<Node*>(makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
                                                         Int64GetDatum(0), false, FLOAT8PASSBYVAL));
    sub->limitOption = LIMIT_OPTION_COUNT;
    List* names = NIL;
    foreach (lc, m.selected) {
        names = lappend(names, makeString(pstrdup(lfirst_node(TargetEntry, lc)->resname)));
    }
    RangeTblEntry* rte = makeNode(RangeTblEntry);
    rte->rtekind = RTE_SUBQUERY;
    rte->subquery = sub;
    rte->alias = makeAlias("__pgt_drive", NIL);
    rte->eref = makeAlias("__pgt_drive", names);
    rte->inFromCl = true;
    *level = *probe;
    level->rtable = lappend(level->rtable, rte);
    List* from = NIL;
    foreach (lc, level->jointree->fromlist) {
        Index r = static_cast<Index>(lfirst_node(RangeTblRef, lc)->rtindex);
        if (r != delta && r != partner) {
            from = lappend(from, lfirst(lc));
        }
    }
    level->jointree->fromlist = lappend(from, table_ref(static_cast<int>(m.to)));
}

// The conjuncts (a top-level AND's list) but those at the positions in
// `dropped`. Runs under pg_call.
List* conjuncts_without(List* conjuncts, const std::vector<int>& dropped) {
    List* out = NIL;
    int at = 0;
    ListCell* lc;
    foreach (lc, conjuncts) {
        if (std::find(dropped.begin(), dropped.end(), at) == dropped.end()) {
            out = lappend(out, lfirst(lc));
        }
        at++;
    }
    return out;
}

// The defining query's FROM/WHERE selecting the key expressions, with the
// tables read as `states` says (diff::TableRead), the outer joins as
// `padding` says (one entry per outer join) and the WHERE subqueries as
// `sublinks` says (none: as written). With signs, each kBoth table's sign is
// selected after the keys, as __pgt_sg1, __pgt_sg2, ... in table order
// (tables of the FROM, also inside derived tables: see sign_reaches_top).
std::string deparse_branch(Query* q, const std::vector<TargetEntry*>& keys,
                           const std::vector<RegionTable>& tables,
                           const std::vector<diff::TableRead>& states,
                           const std::vector<OuterJoin>& outer = {},
                           const std::vector<diff::Padding>& padding = {},
                           const std::vector<diff::SubqueryRead>& sublinks = {}, bool signs = false,
                           const std::vector<ir::KeptCopy>* kept = nullptr) {
    return with_pinned_search_path([&] {
        Query* c = pg_call([&] { return static_cast<Query*>(copyObjectImpl(q)); });
        // Subqueries: each 't' (a WHERE conjunct holding one is dropped: a
        // superset) or 'i' (its tables marked below read images, and its
        // images_condition is added to WHERE).
        std::vector<SubquerySite> sites;
        if (!sublinks.empty()) {
            sites = subquery_sites(c);  // before the select list and HAVING go
        }
        return std::string(pg_call([&] {
            List* conjuncts = NIL;
            if (!sublinks.empty() && c->jointree->quals != nullptr) {
                conjuncts = make_ands_implicit(reinterpret_cast<Expr*>(c->jointree->quals));
            }
            List* tl = NIL;
            for (std::size_t k = 0; k < keys.size(); k++) {
                Node* e = static_cast<Node*>(copyObjectImpl(keys[k]->expr));
                for (std::size_t o = 0; o < outer.size(); o++) {
                    if (diff::pads_nullable(padding[o])) {
                        Index varno = outer[o].nullable;
                        e = null_vars_of(e, &varno);
                    } else if (diff::pads_other(padding[o])) {
                        Index varno = outer[o].other;
                        e = null_vars_of(e, &varno);
                    }
                }
                tl = lappend(
                    tl, makeTargetEntry(reinterpret_cast<Expr*>(e), static_cast<AttrNumber>(k + 1),
                                        pstrdup(diff::region_key(k).c_str()), false));
            }
            for (std::size_t o = 0; o < outer.size(); o++) {
                JoinExpr** slot =
                    find_outer_join(reinterpret_cast<Node**>(&c->jointree), outer[o].nullable);
                if (slot == nullptr || padding[o] == diff::Padding::kKeep) {
                    continue;
                }
                if (diff::join_on_false(padding[o])) {
                    // ON false: every preserved row once, padded (the
                    // nullable table is not read).
                    (*slot)->quals = makeBoolConst(false, false);
                    if (outer[o].full) {
                        (*slot)->jointype =
                            padding[o] == diff::Padding::kLeftAlone ? JOIN_LEFT : JOIN_RIGHT;
                    }
                } else {
                    (*slot)->jointype = JOIN_INNER;
                }
            }
            c->targetList = tl;
            c->groupClause = NIL;
            c->groupingSets = NIL;
            c->havingQual = nullptr;
            c->hasAggs = false;
            c->distinctClause = NIL;
            c->hasDistinctOn = false;
            c->sortClause = NIL;
            int signed_tables = 0;
            for (std::size_t i = 0; i < tables.size(); i++) {
                if (states[i] == diff::TableRead::kNow) {
                    // A table as it is now: its kept copy where it has one.
                    if (kept != nullptr && tables[i].sublink < 0 &&
                        !kept->at(tables[i].source).from.empty()) {
                        Query* level = c;
                        for (std::size_t d = 0; d + 1 < tables[i].path.size(); d++) {
                            level = rt_fetch(tables[i].path[d], level->rtable)->subquery;
                        }
                        RangeTblEntry* rte = rt_fetch(tables[i].path.back(), level->rtable);
                        rte->rtekind = RTE_CTE;
                        rte->ctename = psprintf("%s%zu", kKeptToken, tables[i].source);
                        rte->ctelevelsup = 0;
                        rte->self_reference = false;
                    }
                    continue;
                }
                Query* level =
                    tables[i].sublink < 0
                        ? c
                        : castNode(Query, sites.at(static_cast<std::size_t>(tables[i].sublink))
                                              .link->subselect);
                for (std::size_t d = 0; d + 1 < tables[i].path.size(); d++) {
                    level = rt_fetch(tables[i].path[d], level->rtable)->subquery;
                }
                RangeTblEntry* rte = rt_fetch(tables[i].path.back(), level->rtable);
                std::string name = states[i] == diff::TableRead::kOld
                                       ? diff::region_old_images(tables[i].source)
                                   : states[i] == diff::TableRead::kNew
                                       ? diff::region_new_images(tables[i].source)
                                       : diff::region_delta_images(tables[i].source);
                rte->rtekind = RTE_CTE;
                rte->ctename = pstrdup(name.c_str());
                rte->ctelevelsup = 0;
                rte->self_reference = false;
                if (signs && states[i] == diff::TableRead::kBoth) {
                    select_sign(c, tables[i], rte, "__pgt_sg" + std::to_string(++signed_tables));
                }
            }
            if (!sublinks.empty()) {
                std::vector<int> holding;  // conjuncts that hold a subquery
                for (const SubquerySite& site : sites) {
                    holding.push_back(site.conjunct);
                }
                List* conj = conjuncts_without(conjuncts, holding);
                for (std::size_t k = 0; k < sites.size(); k++) {
                    if (sublinks[k] == diff::SubqueryRead::kImages) {
                        conj = lappend(conj, images_condition(sites[k]));
                    }
                }
                c->jointree->quals =
                    conj == NIL ? nullptr : reinterpret_cast<Node*>(make_ands_explicit(conj));
            }
            if (g_drive_from_changes && sublinks.empty() && outer.empty() &&
                std::count_if(states.begin(), states.end(),
                              [](diff::TableRead s) { return s != diff::TableRead::kNow; }) == 1) {
                std::size_t i = static_cast<std::size_t>(
                    std::find_if(states.begin(), states.end(),
                                 [](diff::TableRead s) { return s != diff::TableRead::kNow; }) -
                    states.begin());
                if (tables[i].sublink < 0) {
                    Query* level = c;
                    for (std::size_t d = 0; d + 1 < tables[i].path.size(); d++) {
                        level = rt_fetch(tables[i].path[d], level->rtable)->subquery;
                    }
                    drive_from_images(level, tables[i].path.back());
                }
            }
            return pg_get_querydef(c, false);
        }));
    });
}

// Plain-column equalities between two tables, per source: what each table
// is probed by when a branch joins another table's images to it.
void collect_equalities(Node* quals, const std::vector<RegionTable>& tables, RegionShape& region) {
    for_each_column_equality(quals, [&](const Var* a, const Var* b) {
        for (const Var* v : {a, b}) {
            for (const RegionTable& t : tables) {
                if (t.sublink < 0 && t.path.size() == 1 &&
                    static_cast<Index>(v->varno) == t.path[0]) {
                    region.equi_attnums[t.source].push_back(v->varattno);
                }
            }
        }
    });
}

bool quals_walker(Node* n, void* ctx);

struct QualsCtx {
    const std::vector<RegionTable>* tables;
    RegionShape* region;
};

bool quals_walker(Node* n, void* ctx) {
    if (n == nullptr) {
        return false;
    }
    auto* c = static_cast<QualsCtx*>(ctx);
    if (IsA(n, FromExpr)) {
        collect_equalities(castNode(FromExpr, n)->quals, *c->tables, *c->region);
        ListCell* lc;
        foreach (lc, castNode(FromExpr, n)->fromlist) {
            (void)quals_walker(static_cast<Node*>(lfirst(lc)), ctx);
        }
    } else if (IsA(n, JoinExpr)) {
        JoinExpr* j = castNode(JoinExpr, n);
        collect_equalities(j->quals, *c->tables, *c->region);
        (void)quals_walker(j->larg, ctx);
        (void)quals_walker(j->rarg, ctx);
    }
    return false;
}

// Collects the top-level outer joins; returns the blocker for one a region
// cannot maintain (FULL, a nullable side that is not one table, USING or
// NATURAL, an alias on the join), nullptr otherwise.
const char* collect_outer_joins(Node* n, std::vector<OuterJoin>& out) {
    if (IsA(n, FromExpr)) {
        ListCell* lc;
        foreach (lc, castNode(FromExpr, n)->fromlist) {
            if (const char* b = collect_outer_joins(static_cast<Node*>(lfirst(lc)), out)) {
                return b;
            }
        }
    } else if (IsA(n, JoinExpr)) {
        JoinExpr* j = castNode(JoinExpr, n);
        if (j->jointype == JOIN_FULL) {
            if (!IsA(j->larg, RangeTblRef) || !IsA(j->rarg, RangeTblRef)) {
                return "a FULL JOIN whose sides are not single tables";
            }
            if (j->usingClause != NIL || j->alias != nullptr) {
                return "a FULL JOIN with USING, NATURAL or an alias";
            }
            out.push_back({static_cast<Index>(castNode(RangeTblRef, j->rarg)->rtindex), false, true,
                           static_cast<Index>(castNode(RangeTblRef, j->larg)->rtindex)});
            return nullptr;
        }
        if (j->jointype == JOIN_LEFT || j->jointype == JOIN_RIGHT) {
            Node* nullable = j->jointype == JOIN_LEFT ? j->rarg : j->larg;
            if (!IsA(nullable, RangeTblRef)) {
                return "a LEFT or RIGHT JOIN whose nullable side is not a single table";
            }
            if (j->usingClause != NIL || j->alias != nullptr) {
                return "a LEFT or RIGHT JOIN with USING, NATURAL or an alias";
            }
            out.push_back({static_cast<Index>(castNode(RangeTblRef, nullable)->rtindex),
                           j->jointype == JOIN_LEFT});
        } else if (j->jointype != JOIN_INNER) {
            return "a semi- or anti-join";
        }
        if (const char* b = collect_outer_joins(j->larg, out)) {
            return b;
        }
        return collect_outer_joins(j->rarg, out);
    }
    return nullptr;
}

// Where the nullable tables' columns may be read: their own ON, the select
// list and HAVING. A WHERE or another join condition over them would make
// a row's presence depend on padding the region cannot follow.
bool nullable_read_only_where_allowed(Query* q, const std::vector<OuterJoin>& joins) {
    struct Ctx {
        const std::vector<OuterJoin>* joins;
        bool ok;
    } ctx{&joins, true};
    // own, own2: the tables this join's ON may read although nullable.
    auto reads_nullable = [&](Node* quals, Index own, Index own2) {
        Bitmapset* used = pull_varnos(nullptr, quals);
        for (const OuterJoin& oj : joins) {
            for (Index t : {oj.nullable, oj.full ? oj.other : Index{0}}) {
                if (t != 0 && t != own && t != own2 && bms_is_member(static_cast<int>(t), used)) {
                    return true;
                }
            }
        }
        return false;
    };
    std::vector<Node*> stack{reinterpret_cast<Node*>(q->jointree)};
    while (!stack.empty() && ctx.ok) {
        Node* n = stack.back();
        stack.pop_back();
        if (IsA(n, FromExpr)) {
            ctx.ok = !reads_nullable(castNode(FromExpr, n)->quals, 0, 0);
            ListCell* lc;
            foreach (lc, castNode(FromExpr, n)->fromlist) {
                stack.push_back(static_cast<Node*>(lfirst(lc)));
            }
        } else if (IsA(n, JoinExpr)) {
            JoinExpr* j = castNode(JoinExpr, n);
            Node* nullable = j->jointype == JOIN_LEFT || j->jointype == JOIN_FULL ? j->rarg
                             : j->jointype == JOIN_RIGHT                          ? j->larg
                                                                                  : nullptr;
            Index own = nullable != nullptr && IsA(nullable, RangeTblRef)
                            ? static_cast<Index>(castNode(RangeTblRef, nullable)->rtindex)
                            : 0;
            Index own2 = j->jointype == JOIN_FULL && IsA(j->larg, RangeTblRef)
                             ? static_cast<Index>(castNode(RangeTblRef, j->larg)->rtindex)
                             : 0;
            ctx.ok = !reads_nullable(j->quals, own, own2);
            stack.push_back(j->larg);
            stack.push_back(j->rarg);
        }
    }
    return ctx.ok;
}

// No column is read through a join's range-table entry (USING merges,
// join aliases): branches remove joins from the FROM tree.
bool reads_join_entries(Query* q) {
    Bitmapset* used = pull_varnos(nullptr, reinterpret_cast<Node*>(q->targetList));
    used = bms_union(used, pull_varnos(nullptr, reinterpret_cast<Node*>(q->jointree)));
    used = bms_union(used, pull_varnos(nullptr, q->havingQual));
    int x = -1;
    while ((x = bms_next_member(used, x)) >= 0) {
        if (rt_fetch(static_cast<Index>(x), q->rtable)->rtekind == RTE_JOIN) {
            return true;
        }
    }
    return false;
}

// A derived table the region can see through: a plain SELECT over inner
// joins, which PostgreSQL flattens into the outer query.
const char* derived_table_blocker(const RangeTblEntry* rte) {
    const Query* s = rte->subquery;
    if (rte->lateral) {
        return "a LATERAL subquery in FROM";
    }
    if (s->setOperations != nullptr || s->cteList != NIL || s->hasAggs || s->groupClause != NIL ||
        s->groupingSets != NIL || s->havingQual != nullptr || s->hasWindowFuncs ||
        s->distinctClause != NIL || s->hasTargetSRFs || s->hasSubLinks ||
        s->limitCount != nullptr || s->limitOffset != nullptr || s->rowMarks != NIL) {
        return "a subquery in FROM with aggregates, DISTINCT, LIMIT, set operations, window "
               "functions or subqueries";
    }
    if (const char* o = outer_join(reinterpret_cast<Node*>(s->jointree))) {
        return o;
    }
    return nullptr;
}

// The tables of q's FROM, through derived tables; false (with the blocker
// set) when a FROM item is neither a table nor such a derived table.
bool collect_tables(Query* q, const std::vector<Index>& prefix, std::vector<RegionTable>& tables,
                    RegionShape& region, AnalyzedQuery& out, int sublink = -1,
                    bool read_target_list = true) {
    ListCell* lc;
    Index rtindex = 0;
    foreach (lc, q->rtable) {
        rtindex++;
        RangeTblEntry* rte = static_cast<RangeTblEntry*>(lfirst(lc));
        std::vector<Index> path = prefix;
        path.push_back(rtindex);
        if (rte->rtekind == RTE_JOIN) {
            continue;
        }
        if (rte->rtekind == RTE_SUBQUERY) {
            if (const char* b = derived_table_blocker(rte)) {
                out.differential_blocker = b;
                return false;
            }
            if (!check_functions(rte->subquery, out) ||
                !collect_tables(rte->subquery, path, tables, region, out, sublink)) {
                return false;
            }
            continue;
        }
        if (const char* b = relation_blocker(rte)) {
            out.differential_blocker = b;
            return false;
        }
        if (rte->tablesample != nullptr) {
            out.differential_blocker = "TABLESAMPLE";
            return false;
        }
        std::size_t source = 0;
        while (source < region.relids.size() && region.relids[source] != rte->relid) {
            source++;
        }
        if (source == region.relids.size()) {
            region.relids.push_back(rte->relid);
            region.attnums.emplace_back();
        }
        // The images carry only the columns the query reads (netting
        // compares whole images: fewer columns, less work).
        std::vector<int>& cols = region.attnums[source];
        const char* system_column = nullptr;
        std::vector<int> read =
            referenced_attnums(q, rtindex, rte->relid, read_target_list, &system_column);
        if (system_column != nullptr) {
            // Change images carry user columns only.
            out.differential_blocker = std::string("the system column ") + system_column +
                                       " of a table in a join or subquery";
            return false;
        }
        for (int a : read) {
            if (std::find(cols.begin(), cols.end(), a) == cols.end()) {
                cols.push_back(a);
            }
        }
        std::sort(cols.begin(), cols.end());
        tables.push_back({path, source, sublink});
    }
    return true;
}

// An aggregate's argument as the branches select it: FILTER folded in
// (CASE WHEN filter THEN arg END; count(*) FILTER: CASE WHEN filter THEN
// 1 END); nullptr for an unfiltered count(*).
Expr* folded_argument(const Aggref* a) {
    Expr* arg = a->args == NIL
                    ? nullptr
                    : static_cast<Expr*>(copyObjectImpl(linitial_node(TargetEntry, a->args)->expr));
    if (a->aggfilter == nullptr) {
        return arg;
    }
    if (arg == nullptr) {
        arg = reinterpret_cast<Expr*>(
            makeConst(INT4OID, -1, InvalidOid, sizeof(int32), Int32GetDatum(1), false, true));
    }
    CaseWhen* w = makeNode(CaseWhen);
    w->expr = static_cast<Expr*>(copyObjectImpl(a->aggfilter));
    w->result = arg;
    w->location = -1;
    CaseExpr* c = makeNode(CaseExpr);
    c->casetype = exprType(reinterpret_cast<Node*>(arg));
    c->casecollid = exprCollation(reinterpret_cast<Node*>(arg));
    c->arg = nullptr;
    c->args = list_make1(w);
    c->defresult = reinterpret_cast<Expr*>(
        makeNullConst(c->casetype, exprTypmod(reinterpret_cast<Node*>(arg)), c->casecollid));
    c->location = -1;
    return reinterpret_cast<Expr*>(c);
}

// A branch over `sql` reading, per table, what its state says.
ir::RegionBranch branch_reading(std::string sql, const std::vector<diff::TableRead>& states,
                                const std::vector<RegionTable>& tables) {
    ir::RegionBranch b;
    b.sql = std::move(sql);
    for (std::size_t i = 0; i < tables.size(); i++) {
        uint64_t bit = uint64_t{1} << tables[i].source;
        b.old_sources |= states[i] == diff::TableRead::kOld ? bit : 0;
        b.new_sources |= states[i] == diff::TableRead::kNew ? bit : 0;
        b.delta_sources |= states[i] == diff::TableRead::kBoth ? bit : 0;
    }
    return b;
}

// Whether a column added to the select list of each derived table on the
// way to t (a table of the FROM) is that derived table's next column: no
// derived table there has junk entries, whose numbers come first.
bool sign_reaches_top(Query* q, const RegionTable& t) {
    if (t.sublink >= 0) {
        return false;
    }
    Query* level = q;
    for (std::size_t d = 0; d + 1 < t.path.size(); d++) {
        level = rt_fetch(t.path[d], level->rtable)->subquery;
        ListCell* lc;
        foreach (lc, level->targetList) {
            if (lfirst_node(TargetEntry, lc)->resjunk) {
                return false;
            }
        }
    }
    return true;
}

// A WHERE conjunct `[NOT] EXISTS (SELECT ... FROM s WHERE ...)` over one
// table s whose WHERE is conditions on s alone and equalities `s.x = t.y`
// (t a table or derived table of the query's FROM, both sides of one type
// compared by its default B-tree equality): a semi-join (anti-join) whose
// existence e(y) for each value y (a tuple of values) can be counted.
// With the query's FROM, it is a join of the FROM with the set E of the
// values y that have a row in s: its change D_E is the values whose
// existence flipped, each +1 or -1 (NOT EXISTS: the reverse), so the
// algebraic region's sum over changed sets of relations takes E as one more.
struct SemiJoin {
    int conjunct;                       // in the query's top-level WHERE
    bool anti;                          // NOT EXISTS
    std::size_t table;                  // index in the region's tables of s
    std::vector<Expr*> outer;           // each y, over the query's range table
    std::vector<std::string> inner;     // each x: s's column, quoted
    std::vector<std::string> equal;     // each equality, OPERATOR(schema.=)
    std::vector<std::string> s_filter;  // s's own conditions over alias "s"
    std::vector<std::string> i_filter;  // the same over the images alias "i"
    std::string from;                   // s, quoted ([ONLY] schema.table)
};

// One conjunct of a semi-join's subquery: a condition on s alone
// (deparsed over "s" and over the images alias), or a correlation `x = y`
// (its outer Var y, moved to the query's level, and s's column x).
struct SemiConjunct {
    bool ok = false;
    const char* s_text = nullptr;
    const char* i_text = nullptr;
    Var* outer = nullptr;
    const char* column = nullptr;
    Oid type = InvalidOid;
};

// Whether n reads a whole row (the signed images' rows also carry
// __pgt_sign) or a system column (refused earlier, by collect_tables).
bool reads_beyond_user_columns(Node* n, void* ctx) {
    if (n == nullptr) {
        return false;
    }
    if (IsA(n, Var)) {
        return castNode(Var, n)->varattno <= 0;
    }
    return expression_tree_walker(
        n, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(reads_beyond_user_columns)),
        ctx);
}

// Runs under pg_call.
SemiConjunct semi_conjunct(Node* c, Oid relid) {
    SemiConjunct r;
    if (!contain_vars_of_level(c, 1)) {
        if (contain_vars_of_level(c, 2) || checkExprHasSubLink(c) ||
            reads_beyond_user_columns(c, nullptr)) {
            return r;
        }
        r.s_text = deparse_expression(c, deparse_context_for("s", relid), true, false);
        r.i_text = deparse_expression(c, deparse_context_for(ir::kImageAlias, relid), true, false);
        r.ok = true;
        return r;
    }
    if (!IsA(c, OpExpr) || list_length(castNode(OpExpr, c)->args) != 2) {
        return r;
    }
    OpExpr* op = castNode(OpExpr, c);
    // (A binary-compatible cast, e.g. varchar compared as text, is looked
    // through: the column's own type has that equality.)
    auto bare = [](Node* n) {
        while (IsA(n, RelabelType)) {
            n = reinterpret_cast<Node*>(castNode(RelabelType, n)->arg);
        }
        return n;
    };
    Node* a = bare(static_cast<Node*>(linitial(op->args)));
    Node* b = bare(static_cast<Node*>(lsecond(op->args)));
    auto level = [](Node* n, Index up) {
        return IsA(n, Var) && castNode(Var, n)->varlevelsup == up && castNode(Var, n)->varattno > 0;
    };
    if (level(a, 1) && level(b, 0)) {
        std::swap(a, b);
    }
    if (!level(a, 0) || !level(b, 1)) {
        return r;
    }
    Var* x = castNode(Var, a);
    Var* y = castNode(Var, b);
    TypeCacheEntry* tc = lookup_type_cache(x->vartype, TYPECACHE_EQ_OPR);
    if (x->vartype != y->vartype || tc->eq_opr != op->opno || x->varcollid != y->varcollid) {
        return r;
    }
    r.outer = static_cast<Var*>(copyObjectImpl(y));
    r.outer->varlevelsup = 0;
    r.column = quote_identifier(get_attname(relid, x->varattno, false));
    r.type = x->vartype;
    r.ok = true;
    return r;
}

// The semi-join of subquery site k, if it has that shape.
std::optional<SemiJoin> semi_join_of(Query* q, const SubquerySite& site, int k,
                                     const std::vector<RegionTable>& tables,
                                     const RegionShape& region) {
    if (site.conjunct < 0 || site.link->subLinkType != EXISTS_SUBLINK ||
        !selects_nothing_read(site.link)) {
        return std::nullopt;
    }
    SemiJoin j;
    j.conjunct = site.conjunct;
    std::size_t members = 0;
    for (std::size_t i = 0; i < tables.size(); i++) {
        if (tables[i].sublink == k) {
            members++;
            j.table = i;
        }
    }
    Query* sub = castNode(Query, site.link->subselect);
    if (members != 1 || list_length(sub->rtable) != 1 ||
        list_length(sub->jointree->fromlist) != 1 ||
        !IsA(linitial(sub->jointree->fromlist), RangeTblRef) ||
        rt_fetch(1, sub->rtable)->rtekind != RTE_RELATION || sub->jointree->quals == nullptr) {
        return std::nullopt;
    }
    // The conjunct is the EXISTS itself, or NOT of it.
    int form = pg_call([&] {
        List* conjuncts = make_ands_implicit(reinterpret_cast<Expr*>(q->jointree->quals));
        Node* conj = static_cast<Node*>(list_nth(conjuncts, site.conjunct));
        if (conj == reinterpret_cast<Node*>(site.link)) {
            return 1;
        }
        bool negated = IsA(conj, BoolExpr) && castNode(BoolExpr, conj)->boolop == NOT_EXPR &&
                       linitial(castNode(BoolExpr, conj)->args) == site.link;
        return negated ? 2 : 0;
    });
    if (form == 0) {
        return std::nullopt;  // the EXISTS inside a larger expression
    }
    j.anti = form == 2;
    Oid relid = region.relids[tables[j.table].source];
    j.from = (rt_fetch(1, sub->rtable)->inh ? "" : "ONLY ") + quoted_relation_name(relid);
    List* conjuncts =
        pg_call([&] { return make_ands_implicit(reinterpret_cast<Expr*>(sub->jointree->quals)); });
    ListCell* lc;
    foreach (lc, conjuncts) {
        Node* c = static_cast<Node*>(lfirst(lc));
        SemiConjunct sc = pg_call([&] { return semi_conjunct(c, relid); });
        if (!sc.ok) {
            return std::nullopt;
        }
        if (sc.outer == nullptr) {
            j.s_filter.emplace_back(sc.s_text);
            j.i_filter.emplace_back(sc.i_text);
            continue;
        }
        std::string equal = pg_call([&] { return btree_equality(sc.type); });
        if (equal.empty()) {
            return std::nullopt;
        }
        j.outer.push_back(reinterpret_cast<Expr*>(sc.outer));
        j.inner.emplace_back(sc.column);
        j.equal.push_back(equal);
    }
    if (j.outer.empty()) {
        return std::nullopt;  // uncorrelated: one value for every row
    }
    return j;
}

// Every subquery as a semi-join, in subquery order; nullopt when one is
// not.
std::optional<std::vector<SemiJoin>> semi_joins_of(Query* q,
                                                   const std::vector<SubquerySite>& sublinks,
                                                   const std::vector<RegionTable>& tables,
                                                   const RegionShape& region) {
    std::vector<SemiJoin> out;
    for (std::size_t k = 0; k < sublinks.size(); k++) {
        std::optional<SemiJoin> j =
            semi_join_of(q, sublinks[k], static_cast<int>(k), tables, region);
        if (!j) {
            return std::nullopt;
        }
        out.push_back(*j);
    }
    return out;
}

// The branch of a set of changed relations that includes semi-joins `in`:
// `inner` (the query's FROM/WHERE, those EXISTS conjuncts left out,
// selecting the entries and then each semi-join's y as __pgt_k<base+1>...,
// then the signs) joined to each semi-join's flipped values, weighted by
// their flips. Per semi-join: the net count of changed s rows per x (from
// s's signed images), and s's rows now with that x, counted up to one past
// the net (enough to tell whether any were there before).
std::string semi_join_branch(const std::string& inner, const std::string& weight,
                             std::size_t entries, const std::vector<const SemiJoin*>& in,
                             const std::vector<std::string>& images) {
    std::string from = "(" + inner + ") b", flips, nonzero, cols;
    std::size_t base = entries;
    for (std::size_t m = 0; m < in.size(); m++) {
        const SemiJoin& j = *in[m];
        std::string d = "__pgt_d" + std::to_string(m + 1);
        std::vector<std::string> keys, on, probe;
        for (std::size_t p = 0; p < j.inner.size(); p++) {
            std::string e = "__pgt_e" + std::to_string(p + 1);
            keys.push_back(ir::kImageAlias + std::string(".") + j.inner[p] + " AS " + e);
            on.push_back(d + "." + e + " " + j.equal[p] + " b." + diff::region_key(base + p));
            probe.push_back("s." + j.inner[p] + " " + j.equal[p] + " " + d + "." + e);
        }
        std::vector<std::string> group;
        for (std::size_t p = 1; p <= j.inner.size(); p++) {
            group.push_back(std::to_string(p));
        }
        probe.insert(probe.end(), j.s_filter.begin(), j.s_filter.end());
        std::string net = "SELECT " + diff::join(keys, ", ") + ", pg_catalog.sum(" +
                          ir::kImageAlias + ".__pgt_sign)::pg_catalog.int8 AS __pgt_net FROM " +
                          images[m] + " " + ir::kImageAlias +
                          (j.i_filter.empty() ? "" : " WHERE " + diff::join(j.i_filter, " AND ")) +
                          " GROUP BY " + diff::join(group, ", ") + " HAVING pg_catalog.sum(" +
                          ir::kImageAlias + ".__pgt_sign) OPERATOR(pg_catalog.<>) 0";
        from += " JOIN (" + net + ") " + d + " ON " + diff::join(on, " AND ");
        // Rows of s now with x, up to net + 1 of them: `had` whether any were
        // there before the change (now − net).
        std::string now = "z.__pgt_c", had = "z.__pgt_c OPERATOR(pg_catalog.-) " + d + ".__pgt_net";
        std::string cmp = j.anti ? " OPERATOR(pg_catalog.=) 0" : " OPERATOR(pg_catalog.>) 0";
        std::string f = "__pgt_f" + std::to_string(m + 1);
        flips +=
            ", (SELECT (" + now + cmp + ")::pg_catalog.int4 OPERATOR(pg_catalog.-) (" + had + cmp +
            ")::pg_catalog.int4 FROM (SELECT pg_catalog.count(*) AS __pgt_c FROM (SELECT 1 FROM " +
            j.from + " s WHERE " + diff::join(probe, " AND ") + " LIMIT GREATEST(" + d +
            ".__pgt_net, 0) OPERATOR(pg_catalog.+) 1) x) z) AS " + f;
        nonzero += (nonzero.empty() ? "" : " AND ") + ("y." + f + " OPERATOR(pg_catalog.<>) 0");
        base += j.inner.size();
    }
    std::string w = weight;
    for (std::size_t m = 0; m < in.size(); m++) {
        w += " OPERATOR(pg_catalog.*) y.__pgt_f" + std::to_string(m + 1);
    }
    for (std::size_t k = 0; k < entries; k++) {
        cols += ", y." + diff::region_key(k);
    }
    // OFFSET 0: each flip is counted once, after the join found its rows.
    return "SELECT " + w + " AS __pgt_w" + cols + " FROM (SELECT b.*" + flips + " FROM " + from +
           " OFFSET 0) y WHERE " + nonzero;
}

// Fills the algebraic form of an inner join's region (see RegionShape):
// false when the outputs are not all keys and algebraic aggregates or the
// signed change needs more branches than a region may store.
bool algebraic_region(Query* q, const std::vector<TargetEntry*>& keys,
                      const std::vector<bool>& key_alike, const std::vector<RegionTable>& tables,
                      const std::optional<std::vector<SemiJoin>>& semi_joins, RegionShape& region) {
    // Every subquery must be a semi-join.
    if (!semi_joins) {
        return false;
    }
    const std::vector<SemiJoin>& semis = *semi_joins;
    std::optional<AlgebraicOutputs> outs = algebraic_outputs(q, nullptr);
    std::vector<std::size_t> from;  // the FROM's tables
    for (std::size_t i = 0; i < tables.size(); i++) {
        if (tables[i].sublink < 0) {
            from.push_back(i);
        }
    }
    // Tables of the FROM read their signed images, a derived table on the
    // way selecting the sign: one branch per non-empty set of tables (else
    // one per set and image kind).
    bool signs = std::all_of(from.begin(), from.end(),
                             [&](std::size_t i) { return sign_reaches_top(q, tables[i]); });
    const std::size_t n = from.size();
    if (!outs || diff::count_signed_terms(n + semis.size(), signs) > kMaxRegionBranches ||
        (!signs && !semis.empty())) {
        return false;
    }
    std::vector<TargetEntry*> entries = keys;
    std::vector<ir::AlgebraicAgg> aggs;
    for (std::size_t i = 0; i < outs->aggs.size(); i++) {
        ir::AlgebraicAgg x = outs->aggs[i].agg;
        Expr* arg = pg_call([&] { return folded_argument(outs->aggs[i].aggref); });
        if (arg != nullptr) {
            x.arg = "r.__pgt_x" + std::to_string(i + 1);
            entries.push_back(pg_call([&] {
                return makeTargetEntry(arg, static_cast<AttrNumber>(entries.size() + 1), nullptr,
                                       false);
            }));
        }
        aggs.push_back(x);
    }
    region.row_query = deparse_branch(
        q, entries, tables, std::vector<diff::TableRead>(tables.size(), diff::TableRead::kNow));
    // Σ over non-empty sets S of relations: (−1)^(|S|+1) ⋈(D_i, i ∈ S; the
    // others now), each D_i = after-images (+1) − before-images (−1); a
    // semi-join's D is its flipped values (semi_join_branch).
    region.branches.clear();
    std::string columns;
    for (std::size_t k = 0; k < entries.size(); k++) {
        columns += ", b." + diff::region_key(k);
    }
    for (const diff::SignedTerm& term :
         signs ? diff::signed_terms(n, semis.size()) : std::vector<diff::SignedTerm>{}) {
        std::vector<diff::TableRead> states(tables.size(), diff::TableRead::kNow);
        std::string weight;
        int in_s = 0;
        for (std::size_t i = 0; i < n; i++) {
            if (term.tables[i] != diff::TableRead::kNow) {
                states[from[i]] = term.tables[i];
                weight += " OPERATOR(pg_catalog.*) b.__pgt_sg" + std::to_string(++in_s);
            }
        }
        std::vector<const SemiJoin*> in;
        for (std::size_t m = 0; m < semis.size(); m++) {
            if (term.semis[m]) {
                in.push_back(&semis[m]);
            }
        }
        const std::string sign = std::to_string(term.sign) + "::pg_catalog.int8";
        if (in.empty()) {
            region.branches.push_back(branch_reading(
                "SELECT " + sign + weight + " AS __pgt_w" + columns + " FROM (" +
                    deparse_branch(q, entries, tables, states, {}, {}, {}, true, &region.kept) +
                    ") b",
                states, tables));
            continue;
        }
        // The query without those EXISTS conjuncts, selecting their y too.
        std::vector<TargetEntry*> with_y = entries;
        std::vector<std::string> images;
        std::vector<int> dropped;
        for (const SemiJoin* j : in) {
            dropped.push_back(j->conjunct);
        }
        Query* qe = pg_call([&] {
            Query* c = static_cast<Query*>(copyObjectImpl(q));
            List* kept = conjuncts_without(
                make_ands_implicit(reinterpret_cast<Expr*>(c->jointree->quals)), dropped);
            c->jointree->quals =
                kept == NIL ? nullptr : reinterpret_cast<Node*>(make_ands_explicit(kept));
            for (const SemiJoin* j : in) {
                for (Expr* y : j->outer) {
                    with_y.push_back(makeTargetEntry(static_cast<Expr*>(copyObjectImpl(y)),
                                                     static_cast<AttrNumber>(with_y.size() + 1),
                                                     nullptr, false));
                }
            }
            return c;
        });
        std::vector<diff::TableRead> reads = states;
        for (const SemiJoin* j : in) {
            images.push_back(diff::region_delta_images(tables[j->table].source));
            reads[j->table] = diff::TableRead::kBoth;
        }
        std::string y_weight = weight;
        for (std::size_t at = y_weight.find(" b."); at != std::string::npos;
             at = y_weight.find(" b.", at + 3)) {
            y_weight.replace(at, 3, " y.");
        }
        region.branches.push_back(branch_reading(
            semi_join_branch(
                deparse_branch(qe, with_y, tables, states, {}, {}, {}, true, &region.kept),
                sign + y_weight, entries.size(), in, images),
            reads, tables));
    }
    for (const diff::SignedTerm& term :
         signs ? std::vector<diff::SignedTerm>{} : diff::image_terms(n)) {
        const std::vector<diff::TableRead>& states = term.tables;
        const int sign = term.sign;
        region.branches.push_back(branch_reading(
            "SELECT " + std::to_string(sign) + "::pg_catalog.int8 AS __pgt_w, b.* FROM (" +
                deparse_branch(q, entries, tables, states, {}, {}, {}, false, &region.kept) + ") b",
            states, tables));
    }
    region.algebraic = true;
    region.aggs = aggs;
    region.output_templates = outs->templates;
    region.key_alike = key_alike;
    return true;
}

// WHERE and the ON of every inner join: conditions no output row escapes.
void filtering_quals(Node* n, std::vector<Node*>& out) {
    if (n == nullptr) {
        return;
    }
    if (IsA(n, FromExpr)) {
        out.push_back(castNode(FromExpr, n)->quals);
        ListCell* lc;
        foreach (lc, castNode(FromExpr, n)->fromlist) {
            filtering_quals(static_cast<Node*>(lfirst(lc)), out);
        }
    } else if (IsA(n, JoinExpr)) {
        JoinExpr* j = castNode(JoinExpr, n);
        if (j->jointype == JOIN_INNER) {
            out.push_back(j->quals);
        }
        filtering_quals(j->larg, out);
        filtering_quals(j->rarg, out);
    }
}

// The one table of the region that reads source s; nullptr when it is
// read more than once (a self-join).
const RegionTable* only_use(const std::vector<RegionTable>& tables, std::size_t s) {
    const RegionTable* only = nullptr;
    int uses = 0;
    for (const RegionTable& t : tables) {
        if (t.source == s) {
            uses++;
            only = &t;
        }
    }
    return uses == 1 ? only : nullptr;
}

// Per source, the conditions its change images must meet to reach any
// output row (tables read once at the top level only).
std::vector<std::string> region_prefilters(Query* q, const std::vector<RegionTable>& tables,
                                           const RegionShape& region,
                                           const std::vector<SubquerySite>& sublinks) {
    std::vector<std::string> out(region.relids.size());
    for (std::size_t s = 0; s < region.relids.size(); s++) {
        const RegionTable* only = only_use(tables, s);
        if (only == nullptr) {
            continue;
        }
        // A table of a WHERE subquery: that subquery's own conditions; of
        // a derived table (a plain inner join): the derived table's (a row
        // failing them is in none of its rows).
        Query* level =
            only->sublink < 0
                ? q
                : castNode(Query,
                           sublinks.at(static_cast<std::size_t>(only->sublink)).link->subselect);
        for (std::size_t d = 0; d + 1 < only->path.size(); d++) {
            level = rt_fetch(only->path[d], level->rtable)->subquery;
        }
        std::vector<Node*> quals;
        filtering_quals(reinterpret_cast<Node*>(level->jointree), quals);
        for (Node* qual : quals) {
            std::string p = image_prefilter(qual, only->path.back(), region.relids[s]);
            if (!p.empty()) {
                out[s] += (out[s].empty() ? "" : " AND ") + p;
            }
        }
    }
    return out;
}

// q with each WHERE term `x IN (subquery)` whose x is identity key j
// narrowed inside: the subquery also requires its selected expression to
// be among key j's touched values (ir::key_slot(j)). The recompute keeps
// only rows whose key j is touched, and for those the subquery's rows with
// that value are all kept (under GROUP BY the selected expression is a
// key: whole groups), so their IN is unchanged; the subquery then reads a
// few groups instead of all (TPC-H q18). "" when no term qualifies. (Not
// for NOT IN: a NULL the filter drops would change its result.)
std::string narrowed_query(Query* q, const std::vector<TargetEntry*>& keys) {
    Query* c = pg_call([&] { return static_cast<Query*>(copyObjectImpl(q)); });
    bool narrowed = false;
    for (const SubquerySite& site : subquery_sites(c)) {
        if (site.form != 'i' || site.conjunct < 0) {
            continue;
        }
        OpExpr* test = castNode(OpExpr, site.link->testexpr);
        Node* x = static_cast<Node*>(linitial(test->args));
        for (std::size_t j = 0; j < keys.size(); j++) {
            bool done = pg_call([&] {
                if (!equal(x, keys[j]->expr)) {
                    return false;
                }
                Oid commutator = get_commutator(test->opno);
                Oid array = get_array_type(exprType(x));
                if (commutator == InvalidOid || array == InvalidOid) {
                    return false;
                }
                Query* sub = castNode(Query, site.link->subselect);
                TargetEntry* te = static_cast<TargetEntry*>(linitial(sub->targetList));
                Param* values = makeNode(Param);
                values->paramkind = PARAM_EXTERN;
                values->paramid = ir::kKeySlotBase + static_cast<int>(j);  // ir::key_slot(j)
                values->paramtype = array;
                values->paramtypmod = -1;
                values->paramcollid = exprCollation(x);
                values->location = -1;
                ScalarArrayOpExpr* any = makeNode(ScalarArrayOpExpr);
                any->opno = commutator;
                any->opfuncid = get_opcode(commutator);
                any->useOr = true;
                any->inputcollid = test->inputcollid;
                any->args = list_make2(copyObjectImpl(te->expr), values);
                any->location = -1;
                sub->jointree->quals =
                    sub->jointree->quals == nullptr
                        ? reinterpret_cast<Node*>(any)
                        : reinterpret_cast<Node*>(
                              makeBoolExpr(AND_EXPR, list_make2(sub->jointree->quals, any), -1));
                return true;
            });
            narrowed = narrowed || done;
            if (done) {
                break;
            }
        }
    }
    if (!narrowed) {
        return "";
    }
    return with_pinned_search_path(
        [&] { return std::string(pg_call([&] { return pg_get_querydef(c, false); })); });
}

// Whether a condition of `quals` over table `varno` alone calls a mutable
// function. Runs under pg_call.
bool own_conditions_mutable(const std::vector<Node*>& quals, int varno) {
    for (Node* qual : quals) {
        List* conj = make_ands_implicit(reinterpret_cast<Expr*>(qual));
        ListCell* lc;
        foreach (lc, conj) {
            Node* c = static_cast<Node*>(lfirst(lc));
            Bitmapset* used = pull_varnos(nullptr, c);
            if (bms_is_member(varno, used) && bms_num_members(used) == 1 &&
                contain_mutable_functions(c)) {
                return true;
            }
        }
    }
    return false;
}

// Per source: the kept copy it may have (ir::KeptCopy without a table;
// `from` "" for none). A candidate is a table read once, in the FROM of
// a query without outer joins, grouping sets or subqueries other than
// semi-joins (SemiJoin) (or of a
// derived table of it, a plain inner join), whose
// prefilter is not empty and whose own conditions are all immutable (the
// copy must not go stale while the table stands still), and which another
// table is probed by on a column with a btree equality (the copy's index).
std::vector<ir::KeptCopy> kept_candidates(Query* q, const std::vector<RegionTable>& tables,
                                          const RegionShape& region, bool plain) {
    std::vector<ir::KeptCopy> out(region.relids.size());
    if (!plain || g_kept_copy_fraction <= 0) {
        return out;
    }
    std::string text = with_pinned_search_path(
        [&] { return std::string(pg_call([&] { return pg_get_querydef(q, false); })); });
    if (text.find(kKeptToken) != std::string::npos) {
        return out;  // the token could not be told from the query's own text
    }
    for (std::size_t s = 0; s < region.relids.size(); s++) {
        const RegionTable* only = only_use(tables, s);
        if (only == nullptr || only->sublink >= 0 || s >= region.prefilters.size() ||
            region.prefilters[s].empty()) {
            continue;
        }
        // Its level: the query, or the (plain inner join) derived table
        // holding it; its own conditions are that level's.
        Query* level = q;
        for (std::size_t d = 0; d + 1 < only->path.size(); d++) {
            level = rt_fetch(only->path[d], level->rtable)->subquery;
        }
        std::vector<Node*> quals;
        filtering_quals(reinterpret_cast<Node*>(level->jointree), quals);
        Index rtindex = only->path.back();
        const RangeTblEntry* rte = rt_fetch(rtindex, level->rtable);
        bool mutable_conditions =
            pg_call([&] { return own_conditions_mutable(quals, static_cast<int>(rtindex)); });
        if (mutable_conditions || rte->rtekind != RTE_RELATION ||
            (rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_PARTITIONED_TABLE)) {
            continue;
        }
        // What it is probed by: at the top level, region.equi_attnums; in a
        // derived table, the equalities of that level.
        std::vector<int> equi = region.equi_attnums[s];
        for (std::size_t q_i = 0; only->path.size() > 1 && q_i < quals.size(); q_i++) {
            pg_call([&] {
                for_each_column_equality(quals[q_i], [&](const Var* a, const Var* b) {
                    for (const Var* v : {a, b}) {
                        if (v->varno == static_cast<int>(rtindex) && v->varlevelsup == 0) {
                            equi.push_back(v->varattno);
                        }
                    }
                });
            });
        }
        for (int attnum : equi) {
            const char* equal = pg_call([&] {
                return btree_equality(get_atttype(rte->relid, static_cast<AttrNumber>(attnum)));
            });
            if (*equal == '\0') {
                continue;
            }
            std::string column = pg_call([&] {
                return quote_identifier(
                    get_attname(rte->relid, static_cast<AttrNumber>(attnum), false));
            });
            // Every such column is indexed (a probe by any of them); the
            // first one also finds the rows a change deletes.
            if (out[s].probe_column.empty()) {
                out[s].probe_column = column;
                out[s].probe_equal = equal;
                out[s].from = (rte->inh ? "" : "ONLY ") + quoted_relation_name(rte->relid);
            }
            if (std::find(out[s].index_columns.begin(), out[s].index_columns.end(), column) ==
                out[s].index_columns.end()) {
                out[s].index_columns.push_back(column);
            }
        }
    }
    return out;
}

}  // namespace

bool subqueries_in_supported_places(Query* q) {
    std::size_t all = links_of(reinterpret_cast<Node*>(q->targetList)).size() +
                      links_of(reinterpret_cast<Node*>(q->jointree)).size() +
                      links_of(q->havingQual).size();
    return all == subquery_sites(q).size();
}

bool derive_region_shape(Query* q, AnalyzedQuery& out) {
    std::vector<OuterJoin> outer;
    if (const char* o = collect_outer_joins(reinterpret_cast<Node*>(q->jointree), outer)) {
        out.differential_blocker = o;
        return false;
    }
    if (!outer.empty() && !pg_call([&] { return nullable_read_only_where_allowed(q, outer); })) {
        out.differential_blocker =
            "an outer join whose nullable side is read by WHERE or another join condition";
        return false;
    }
    if (!outer.empty() && pg_call([&] { return reads_join_entries(q); })) {
        out.differential_blocker = "a column read through a join alias or USING";
        return false;
    }
    for (const OuterJoin& oj : outer) {
        for (Index side : {oj.nullable, oj.full ? oj.other : oj.nullable}) {
            if (rt_fetch(side, q->rtable)->rtekind != RTE_RELATION) {
                out.differential_blocker =
                    oj.full ? "a FULL JOIN whose side is a subquery, not a table"
                            : "an outer join whose nullable side is a subquery, not a table";
                return true;
            }
        }
    }
    std::vector<RegionTable> tables;
    RegionShape region;
    if (!collect_tables(q, {}, tables, region, out)) {
        return true;
    }
    // Subqueries: their tables join the region (subquery k's tables read
    // images only in the branches for subquery k).
    std::vector<SubquerySite> sublinks = subquery_sites(q);
    if (!sublinks.empty() && !outer.empty()) {
        out.differential_blocker = "a subquery together with an outer join";
        return true;
    }
    for (std::size_t k = 0; k < sublinks.size(); k++) {
        std::string b = subquery_blocker(sublinks[k]);
        Query* sub = castNode(Query, sublinks[k].link->subselect);
        if (!b.empty()) {
            out.differential_blocker = b;
            return true;
        }
        if (!collect_tables(sub, {}, tables, region, out, static_cast<int>(k),
                            !selects_nothing_read(sublinks[k].link))) {
            return true;
        }
    }
    // The query's FROM and each subquery: at most kMaxRegionTables each.
    for (int group = -1; group < static_cast<int>(sublinks.size()); group++) {
        std::size_t members = 0;
        for (const RegionTable& t : tables) {
            members += t.sublink == group ? 1 : 0;
        }
        if (members > static_cast<std::size_t>(kMaxRegionTables)) {
            out.differential_blocker =
                "a join of more than " + std::to_string(kMaxRegionTables) + " tables";
            return true;
        }
    }
    if (q->groupClause != NIL && out.identity.domain != "group_key") {
        out.differential_blocker = "a GROUP BY expression that is not in the select list";
        return true;
    }
    if (out.identity.domain != "group_key" && out.identity.domain != "keyless_row" &&
        out.identity.domain != "synthetic" && out.identity.domain != "scan_key") {
        out.differential_blocker = "a join whose rows have no identity key";
        return true;
    }
    if (!check_functions(q, out)) {
        return true;
    }
    // Grouping sets: branches select the grouping expressions, then every
    // set's projection of them (the hidden set column is the last key).
    const bool gsets = has_grouping_set_column(out);
    std::vector<int> key_columns = out.identity.key_columns;
    if (gsets) {
        key_columns.pop_back();
    }
    std::vector<TargetEntry*> keys = key_entries(q, key_columns);
    for (TargetEntry* te : keys) {
        if (pg_call([&] { return checkExprHasSubLink(reinterpret_cast<Node*>(te->expr)); })) {
            out.differential_blocker = "a subquery in a grouping key or a key column";
            return true;
        }
    }
    for (TargetEntry* te : keys) {
        Oid type = exprType(reinterpret_cast<Node*>(te->expr));
        region.key_filtered.push_back(!unmatchable_type(type).has_value());
        bool padded = false;
        for (const OuterJoin& oj : outer) {
            padded = padded || pg_call([&] {
                         Bitmapset* used = pull_varnos(nullptr, reinterpret_cast<Node*>(te->expr));
                         return bms_is_member(static_cast<int>(oj.nullable), used) ||
                                (oj.full && bms_is_member(static_cast<int>(oj.other), used));
                     });
        }
        region.key_nullable.push_back(gsets || padded || nullable(q, te->expr));
    }
    // With a key column that leads an index, only such columns are
    // filtered (the others are narrowed through the identity): a filter on
    // an unindexed column costs rows × keys comparisons, hours for a
    // refresh that touches 10^5 groups of 10^6 rows.
    std::vector<bool> led;
    for (TargetEntry* te : keys) {
        led.push_back(index_led(q, te->expr));
    }
    bool any_led = false;
    for (std::size_t k = 0; k < keys.size(); k++) {
        any_led = any_led || (led[k] && region.key_filtered[k]);
    }
    for (std::size_t k = 0; any_led && k < keys.size(); k++) {
        region.key_filtered[k] = region.key_filtered[k] && led[k];
    }
    if (gsets) {
        region.key_filtered.push_back(true);
        region.key_nullable.push_back(false);
    }
    // The terms of the delta (diff::region_terms) over the tables, with
    // their groups (FROM or a subquery) and the outer joins between them.
    std::size_t n = tables.size();
    // Per outer join: which table its nullable side is (FULL: and larg).
    std::vector<std::size_t> nullable_table(outer.size(), n), other_table(outer.size(), n);
    for (std::size_t o = 0; o < outer.size(); o++) {
        for (std::size_t i = 0; i < n; i++) {
            if (tables[i].sublink >= 0) {
                continue;  // (no subquery next to an outer join; defensive)
            }
            if (tables[i].path.size() == 1 && tables[i].path[0] == outer[o].nullable) {
                nullable_table[o] = i;
            }
            if (outer[o].full && tables[i].path.size() == 1 &&
                tables[i].path[0] == outer[o].other) {
                other_table[o] = i;
            }
        }
    }
    std::vector<int> groups;
    for (const RegionTable& t : tables) {
        groups.push_back(t.sublink);
    }
    std::vector<diff::OuterJoinTables> outer_tables;
    for (std::size_t o = 0; o < outer.size(); o++) {
        outer_tables.push_back({nullable_table[o], outer[o].full, other_table[o]});
    }
    const std::size_t count = diff::count_region_terms(groups, sublinks.size(), outer_tables);
    if (count > kMaxRegionBranches) {
        out.differential_blocker = "a join whose delta needs " + std::to_string(count) +
                                   " branches (at most " + std::to_string(kMaxRegionBranches) +
                                   "; fewer tables or outer joins)";
        return true;
    }
    region.equi_attnums.resize(region.relids.size());
    QualsCtx ctx{&tables, &region};
    pg_call([&] { (void)quals_walker(reinterpret_cast<Node*>(q->jointree), &ctx); });
    region.prefilters = region_prefilters(q, tables, region, sublinks);
    std::optional<std::vector<SemiJoin>> semi_joins = semi_joins_of(q, sublinks, tables, region);
    // A semi-join's branches probe the FROM's tables by the correlation's
    // outer columns.
    for (const SemiJoin& j : semi_joins ? *semi_joins : std::vector<SemiJoin>{}) {
        for (Expr* e : j.outer) {
            const Var* y = reinterpret_cast<const Var*>(e);
            for (const RegionTable& t : tables) {
                if (t.sublink < 0 && t.path.size() == 1 &&
                    t.path[0] == static_cast<Index>(y->varno)) {
                    region.equi_attnums[t.source].push_back(y->varattno);
                }
            }
        }
    }
    // (Subqueries: only semi-joins, whose branches read the FROM's tables
    // as they are now, or their images.)
    region.kept = kept_candidates(q, tables, region, outer.empty() && semi_joins && !gsets);
    for (const diff::RegionTerm& t : diff::region_terms(groups, sublinks.size(), outer_tables)) {
        region.branches.push_back(
            branch_reading(deparse_branch(q, keys, tables, t.tables, outer, t.padding, t.subqueries,
                                          false, &region.kept),
                           t.tables, tables));
    }
    if (!sublinks.empty() && !gsets) {
        region.query = narrowed_query(q, keys);
    }
    if (gsets) {
        std::vector<uint32_t> sets = grouping_sets_of(q, kMaxGroupingSets).values;
        for (ir::RegionBranch& b : region.branches) {
            b.sql = each_grouping_set(b.sql, keys.size(), sets);
        }
        region.query = grouping_sets_union(q, sets);
    }
    region.present = true;
    if (outer.empty() && !gsets) {
        (void)algebraic_region(q, keys, keys_look_alike(q, out.identity.key_columns), tables,
                               semi_joins, region);
    }
    out.region = region;
    if (out.identity.domain == "synthetic" && !region.algebraic) {
        out.auto_full_reason = "the whole aggregate without GROUP BY";
    }
    for (const OuterJoin& oj : outer) {
        if (oj.full) {
            out.auto_full_reason = "the whole FULL JOIN (its key filter cannot reach below it)";
        }
    }
    if (gsets && has_empty_grouping_set(q)) {
        out.auto_full_reason = kEmptySetReason;
    }
    return true;
}

}  // namespace pgt::pg
