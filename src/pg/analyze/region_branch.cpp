// The branches of a join region, deparsed: the defining query's FROM/WHERE
// with tables read from change images, outer joins padded as a term says.
// Invariant: a branch is produced by PostgreSQL's deparser from a copy of
// the analysed query, so quoting, qualification and operators are its own.
#include "pg/analyze/region_parts.hpp"
#include "core/sql/names.hpp"

#include "pg/analyze/join_region.hpp"
#include "pg/analyze/grouping_sets.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
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

namespace pgt::pg::region {
namespace {

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

// Selects the images' __pgt_sign of table t (its range-table entry rte,
// already reading a signed relation) as column `col` of c: each derived
// table on the way selects it as its next column. Runs under pg_call.
void select_sign(Query* c, const RegionTable& t, RangeTblEntry* rte, const std::string& col) {
    if (t.sublink >= 0) {
        elog(ERROR, "signed images of a table inside a subquery expression");
    }
    // The relation's extra last column, by name.
    rte->eref->colnames = lappend(rte->eref->colnames, makeString(pstrdup(sql::kSignColumn)));
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

// Calls fn(var, up) for each Var of q, of its subqueries and of the
// queries in its expressions, where it stands (no copy is made): up is the
// number of queries entered below q, so a Var of q's own range table has
// varlevelsup == up. Runs under pg_call.
struct VarVisit {
    const std::function<void(Var*, int)>* fn;
    int up = 0;
};

bool var_visit_walker(Node* n, void* ctx) {
    auto* v = static_cast<VarVisit*>(ctx);
    if (n == nullptr) {
        return false;
    }
    if (IsA(n, Var)) {
        (*v->fn)(castNode(Var, n), v->up);
        return false;
    }
    auto walker = reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(var_visit_walker));
    if (IsA(n, Query)) {
        v->up++;
        bool r = query_tree_walker(castNode(Query, n), walker, ctx, 0);
        v->up--;
        return r;
    }
    return expression_tree_walker(n, walker, ctx);
}

void for_each_var(Query* q, const std::function<void(Var*, int)>& fn) {
    VarVisit v{&fn, 0};
    query_tree_walker(
        q, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(var_visit_walker)), &v, 0);
}

// Vars of two tables of one query level (and the same tables seen from its
// subqueries) become columns of a derived table `to` selecting them.
struct DriveRemap {
    Index delta = 0;
    Index partner = 0;
    Index to = 0;
    bool failed = false;
    List* selected = NIL;  // the derived table's select list (Vars of its rtindex 1 / 2)
};

// Var v of delta or partner (at nesting depth up) as the derived table's
// column, which it adds to m.selected the first time.
void drive_remap(Var* v, int up, DriveRemap& m) {
    if (static_cast<int>(v->varlevelsup) != up ||
        (v->varno != static_cast<int>(m.delta) && v->varno != static_cast<int>(m.partner))) {
        return;
    }
    if (v->varattno <= 0) {  // whole-row or system column: left as it is
        m.failed = true;
        return;
    }
    int inner = v->varno == static_cast<int>(m.delta) ? 1 : 2;
    AttrNumber resno = 0;
    ListCell* lc;
    foreach (lc, m.selected) {
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
        resno = static_cast<AttrNumber>(list_length(m.selected) + 1);
        m.selected = lappend(
            m.selected, makeTargetEntry(reinterpret_cast<Expr*>(s), resno,
                                        psprintf("__pgt_c%d", static_cast<int>(resno)), false));
    }
    v->varno = static_cast<int>(m.to);
    v->varnosyn = m.to;
    v->varattno = resno;
    v->varattnosyn = resno;
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
// Whether a level's FROM is a plain comma list of tables the planner may
// reorder (no set operation, SRF, window, row mark or LATERAL item).
bool drivable_level(Query* level) {
    if (level->setOperations != nullptr || level->hasTargetSRFs || level->hasWindowFuncs ||
        level->rowMarks != NIL) {
        return false;
    }
    ListCell* lc;
    foreach (lc, level->jointree->fromlist) {
        if (!IsA(lfirst(lc), RangeTblRef)) {
            return false;
        }
    }
    foreach (lc, level->rtable) {
        if (lfirst_node(RangeTblEntry, lc)->lateral) {
            return false;  // could read the two tables, and would come before them
        }
    }
    return true;
}

// The one other table of the FROM list that delta's conditions join it to
// (a table or a kept copy), or 0 when there is none or more than one.
Index sole_partner(Query* level, Index delta, List* conjuncts) {
    Index partner = 0;
    ListCell* lc;
    foreach (lc, conjuncts) {
        Node* conj = static_cast<Node*>(lfirst(lc));
        Relids varnos = pull_varnos(nullptr, conj);
        if (!bms_is_member(static_cast<int>(delta), varnos)) {
            continue;
        }
        if (contain_volatile_functions(conj) || checkExprHasSubLink(conj)) {
            return 0;
        }
        Relids others = bms_del_member(bms_copy(varnos), static_cast<int>(delta));
        int other = -1;
        if (bms_get_singleton_member(others, &other)) {
            if (partner != 0 && partner != static_cast<Index>(other)) {
                return 0;  // a second partner: not a leaf of the join graph
            }
            partner = static_cast<Index>(other);
        } else if (!bms_is_empty(others)) {
            return 0;
        }
    }
    if (partner == 0) {
        return 0;
    }
    // A table of the region (its relation: the table now or its kept copy).
    const RangeTblEntry* p = rt_fetch(partner, level->rtable);
    if (p->rtekind != RTE_CTE ||
        strncmp(p->ctename, sql::kRegionTablePrefix, strlen(sql::kRegionTablePrefix)) != 0) {
        return 0;
    }
    foreach (lc, level->jointree->fromlist) {
        if (static_cast<Index>(lfirst_node(RangeTblRef, lc)->rtindex) == partner) {
            return partner;
        }
    }
    return 0;
}

// The derived table (delta, partner) WHERE inner_quals OFFSET 0 selecting
// `selected`, over copies of the two tables numbered 1 and 2.
RangeTblEntry* drive_table(Query* level, Index delta, Index partner, Node* inner_quals,
                           List* selected) {
    Query* sub = makeNode(Query);
    sub->commandType = CMD_SELECT;
    sub->querySource = QSRC_ORIGINAL;
    sub->canSetTag = true;
    sub->rtable = list_make2(copyObjectImpl(rt_fetch(delta, level->rtable)),
                             copyObjectImpl(rt_fetch(partner, level->rtable)));
    sub->jointree = makeFromExpr(list_make2(table_ref(1), table_ref(2)), inner_quals);
    sub->targetList = selected;
    sub->limitOffset = reinterpret_cast<Node*>(makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
                                                         Int64GetDatum(0), false, FLOAT8PASSBYVAL));
    sub->limitOption = LIMIT_OPTION_COUNT;
    List* names = NIL;
    ListCell* lc;
    foreach (lc, selected) {
        names = lappend(names, makeString(pstrdup(lfirst_node(TargetEntry, lc)->resname)));
    }
    RangeTblEntry* rte = makeNode(RangeTblEntry);
    rte->rtekind = RTE_SUBQUERY;
    rte->subquery = sub;
    rte->alias = makeAlias(sql::kDriveAlias, NIL);
    rte->eref = makeAlias(sql::kDriveAlias, names);
    rte->inFromCl = true;
    return rte;
}

// The conditions over exactly delta and partner (immutable, no subquery),
// renumbered for the derived table: delta -> 1, partner -> 2 (through
// numbers no table has, so the two renames cannot meet); the others stay
// in `outside`.
Node* pair_conditions(Query* level, Index delta, Index partner, List* conjuncts, List** outside) {
    List* inside = NIL;
    Relids pair =
        bms_add_member(bms_make_singleton(static_cast<int>(delta)), static_cast<int>(partner));
    ListCell* lc;
    foreach (lc, conjuncts) {
        Node* conj = static_cast<Node*>(lfirst(lc));
        Relids varnos = pull_varnos(nullptr, conj);
        bool goes_in = !bms_is_empty(varnos) && bms_is_subset(varnos, pair) &&
                       !contain_volatile_functions(conj) && !checkExprHasSubLink(conj);
        if (goes_in) {
            inside = lappend(inside, copyObjectImpl(conj));
        } else {
            *outside = lappend(*outside, conj);
        }
    }
    if (inside == NIL) {
        return nullptr;
    }
    const int far = list_length(level->rtable) + 1000;
    Node* inner_quals = reinterpret_cast<Node*>(make_ands_explicit(inside));
    ChangeVarNodes(inner_quals, static_cast<int>(delta), far, 0);
    ChangeVarNodes(inner_quals, static_cast<int>(partner), far + 1, 0);
    ChangeVarNodes(inner_quals, far, 1, 0);
    ChangeVarNodes(inner_quals, far + 1, 2, 0);
    return inner_quals;
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
    if (!drivable_level(level)) {
        return;
    }
    List* conjuncts = make_ands_implicit(reinterpret_cast<Expr*>(level->jointree->quals));
    Index partner = sole_partner(level, delta, conjuncts);
    if (partner == 0) {
        return;
    }
    List* outside = NIL;
    Node* inner_quals = pair_conditions(level, delta, partner, conjuncts, &outside);
    DriveRemap m;
    m.delta = delta;
    m.partner = partner;
    m.to = static_cast<Index>(list_length(level->rtable) + 1);
    Node* quals = level->jointree->quals;
    level->jointree->quals =
        outside == NIL ? nullptr : reinterpret_cast<Node*>(make_ands_explicit(outside));
    // Remapped first on a copy: a failure leaves level as it is.
    Query* probe = static_cast<Query*>(copyObjectImpl(level));
    for_each_var(probe, [&m](Var* v, int up) { drive_remap(v, up, m); });
    if (m.failed || m.selected == NIL) {
        level->jointree->quals = quals;
        return;
    }
    RangeTblEntry* rte = drive_table(level, delta, partner, inner_quals, m.selected);
    *level = *probe;
    level->rtable = lappend(level->rtable, rte);
    List* from = NIL;
    ListCell* lc;
    foreach (lc, level->jointree->fromlist) {
        Index r = static_cast<Index>(lfirst_node(RangeTblRef, lc)->rtindex);
        if (r != delta && r != partner) {
            from = lappend(from, lfirst(lc));
        }
    }
    level->jointree->fromlist = lappend(from, table_ref(static_cast<int>(m.to)));
}

}  // namespace

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

namespace {

// The key expressions as the branch's select list (__pgt_k1, ...), each
// with the columns NULL that the branch's padding of an outer join leaves
// NULL. Runs under pg_call.
List* key_targets(const std::vector<TargetEntry*>& keys, const std::vector<OuterJoin>& outer,
                  const std::vector<diff::Padding>& padding) {
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
        tl = lappend(tl, makeTargetEntry(reinterpret_cast<Expr*>(e), static_cast<AttrNumber>(k + 1),
                                         pstrdup(diff::region_key(k).c_str()), false));
    }
    return tl;
}

// Each outer join of c read as its padding says. Runs under pg_call.
void pad_outer_joins(Query* c, const std::vector<OuterJoin>& outer,
                     const std::vector<diff::Padding>& padding) {
    for (std::size_t o = 0; o < outer.size(); o++) {
        JoinExpr** slot =
            find_outer_join(reinterpret_cast<Node**>(&c->jointree), outer[o].nullable);
        if (slot == nullptr || padding[o] == diff::Padding::kKeep) {
            continue;
        }
        if (diff::join_on_false(padding[o])) {
            // ON false: every preserved row once, padded (the nullable
            // table is not read).
            (*slot)->quals = makeBoolConst(false, false);
            if (outer[o].full) {
                (*slot)->jointype =
                    padding[o] == diff::Padding::kLeftAlone ? JOIN_LEFT : JOIN_RIGHT;
            }
        } else {
            (*slot)->jointype = JOIN_INNER;
        }
    }
}

// The query level of c that holds table t (inside its subquery and the
// derived tables on its path).
Query* level_of(Query* c, const RegionTable& t, const std::vector<SubquerySite>& sites) {
    Query* level =
        t.sublink < 0
            ? c
            : castNode(Query, sites.at(static_cast<std::size_t>(t.sublink)).link->subselect);
    for (std::size_t d = 0; d + 1 < t.path.size(); d++) {
        level = rt_fetch(t.path[d], level->rtable)->subquery;
    }
    return level;
}

// Table `varno` of `level` read from the relation `name` (the table now,
// its kept copy or its images), which carries the table's live columns by
// their own names, in order (a kept copy and images: those the query
// reads). The query's column aliases (FROM t AS x(a, b)) are dropped and
// its Vars renumbered past dropped columns, so the deparser names each
// column as the relation does and a column list it must print (a renamed
// USING column) lines up with the relation's. Runs under pg_call.
void read_as(Query* level, Index varno, const char* name) {
    RangeTblEntry* rte = rt_fetch(varno, level->rtable);
    if (rte->rtekind == RTE_RELATION) {
        Relation rel = relation_open(rte->relid, AccessShareLock);
        TupleDesc desc = RelationGetDescr(rel);
        std::vector<AttrNumber> live(static_cast<std::size_t>(desc->natts) + 1, 0);
        List* names = NIL;  // attnum a is live column live[a]
        for (int a = 1; a <= desc->natts; a++) {
            const Form_pg_attribute att = TupleDescAttr(desc, a - 1);
            if (!att->attisdropped) {
                names = lappend(names, makeString(pstrdup(NameStr(att->attname))));
                live[static_cast<std::size_t>(a)] = static_cast<AttrNumber>(list_length(names));
            }
        }
        relation_close(rel, AccessShareLock);
        if (list_length(names) < desc->natts) {
            // In place: the caller holds pointers into level (its subqueries).
            for_each_var(level, [&](Var* v, int up) {
                if (static_cast<int>(v->varlevelsup) != up || v->varno != static_cast<int>(varno) ||
                    v->varattno <= 0) {
                    return;
                }
                if (v->varnosyn == varno && v->varattnosyn == v->varattno) {
                    v->varattnosyn = live.at(static_cast<std::size_t>(v->varattno));
                }
                v->varattno = live.at(static_cast<std::size_t>(v->varattno));
            });
        }
        rte->eref->colnames = names;
        if (rte->alias != nullptr) {
            rte->alias->colnames = NIL;
        }
    }
    rte->rtekind = RTE_CTE;
    rte->ctename = pstrdup(name);
    rte->ctelevelsup = 0;
    rte->self_reference = false;
}

// Each JOIN ... USING but FULL ones written with its ON condition (the
// analysed join holds it): PostgreSQL's deparser names both sides' USING
// columns alike, printing a column list for a side whose column is renamed,
// and a side read from change images carries fewer columns than the table.
// A FULL JOIN's merged column has no side to print it from; a USING with
// an alias of its own is left too. Runs under pg_call.
bool using_to_on_walker(Node* n, void* ctx) {
    if (n == nullptr) {
        return false;
    }
    if (IsA(n, JoinExpr)) {
        JoinExpr* j = castNode(JoinExpr, n);
        if (j->usingClause != NIL && j->jointype != JOIN_FULL && j->join_using_alias == nullptr) {
            j->usingClause = NIL;
        }
    }
    auto walker = reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(using_to_on_walker));
    if (IsA(n, Query)) {
        return query_tree_walker(castNode(Query, n), walker, ctx, 0);
    }
    return expression_tree_walker(n, walker, ctx);
}

// Each table read as the relation sql::region_table(i), which the branch
// defines (diff::compose_branch), but those of subqueries a branch keeps
// as written (no sites: their tables are read now); with `signs`, each
// kBoth table's sign selected. Runs under pg_call.
void name_tables(Query* c, const std::vector<RegionTable>& tables,
                 const std::vector<diff::TableRead>& states, const std::vector<SubquerySite>& sites,
                 bool signs) {
    int signed_tables = 0;
    for (std::size_t i = 0; i < tables.size(); i++) {
        const RegionTable& t = tables[i];
        if (t.sublink >= 0 && sites.empty()) {
            continue;  // its subquery as written: the table now, named as the query does
        }
        Query* level = level_of(c, t, sites);
        read_as(level, t.path.back(), sql::region_table(i).c_str());
        if (signs && states[i] == diff::TableRead::kBoth) {
            select_sign(c, t, rt_fetch(t.path.back(), level->rtable),
                        "__pgt_sg" + std::to_string(++signed_tables));
        }
    }
}

// The WHERE conjuncts of `quals` without those that hold a subquery whose
// parent is `parent`, plus the condition of each such subquery the branch
// reads images of (or of one nested in it). Runs under pg_call.
Node* subquery_conditions(List* conjuncts, const std::vector<SubquerySite>& sites,
                          const std::vector<diff::SubqueryRead>& sublinks, int parent);

// Site k's images condition, its subquery's WHERE first read the same way
// (a nested subquery's images reach the query through it; its own tables
// are then read as they are now). Runs under pg_call.
Node* site_condition(const std::vector<SubquerySite>& sites,
                     const std::vector<diff::SubqueryRead>& sublinks, std::size_t k) {
    Query* sub = castNode(Query, sites[k].link->subselect);
    drop_grouped_having(sub);
    if (sub->hasSubLinks && sub->jointree->quals != nullptr) {
        sub->jointree->quals =
            subquery_conditions(make_ands_implicit(reinterpret_cast<Expr*>(sub->jointree->quals)),
                                sites, sublinks, static_cast<int>(k));
    }
    return images_condition(sites[k]);
}

Node* subquery_conditions(List* conjuncts, const std::vector<SubquerySite>& sites,
                          const std::vector<diff::SubqueryRead>& sublinks, int parent) {
    // Inside a subquery whose tables are read as they are now (subquery c
    // nested in it reads images), a conjunct holding only subqueries ranked
    // after c (SubquerySite::rank) stays as written. A row of that subquery
    // read now changes its WHERE only when some conjuncts change value, and
    // then the others are true in both states; the last ranked of those
    // that change has a term of its own (through it) in which every
    // conjunct kept is one that did not change: true now. A conjunct ranked
    // before c is dropped (a superset): it may have changed too, and be
    // false now. Where the level's own tables read images, a changed row
    // may be read, whose conjuncts would be judged in the wrong state:
    // every one is dropped. So is every one at the query's level, where the
    // same rule holds but costs more than it saves: a kept subquery runs
    // for every row a branch reads (TPC-H q15, q21, q22 measured).
    std::size_t path = sites.size();
    for (std::size_t k = 0; parent >= 0 && k < sites.size(); k++) {
        if (sites[k].parent == parent && sublinks[k] == diff::SubqueryRead::kImages) {
            path = k;
        }
    }
    std::vector<int> holding;
    for (std::size_t k = 0; k < sites.size(); k++) {
        if (sites[k].parent == parent &&
            (path == sites.size() || sites[k].rank <= sites[path].rank)) {
            holding.push_back(sites[k].conjunct);
        }
    }
    List* conj = conjuncts_without(conjuncts, holding);
    for (std::size_t k = 0; k < sites.size(); k++) {
        if (sites[k].parent == parent && sublinks[k] == diff::SubqueryRead::kImages) {
            conj = lappend(conj, site_condition(sites, sublinks, k));
        }
    }
    return conj == NIL ? nullptr : reinterpret_cast<Node*>(make_ands_explicit(conj));
}

// A branch of inner joins reading one table's images: the join is driven
// from them (pg_trickle.drive_joins_from_changes). Runs under pg_call.
void drive_single_change(Query* c, const std::vector<RegionTable>& tables,
                         const std::vector<diff::TableRead>& states) {
    auto changed = [](diff::TableRead s) { return s != diff::TableRead::kNow; };
    if (std::count_if(states.begin(), states.end(), changed) != 1) {
        return;
    }
    std::size_t i = static_cast<std::size_t>(std::find_if(states.begin(), states.end(), changed) -
                                             states.begin());
    if (tables[i].sublink < 0 && !inside_grouped(c, tables[i])) {
        drive_from_images(level_of(c, tables[i], {}), tables[i].path.back());
    }
}

}  // namespace

void read_table_as(Query* level, Index varno, const char* name) {
    read_as(level, varno, name);
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
                           const std::vector<OuterJoin>& outer,
                           const std::vector<diff::Padding>& padding,
                           const std::vector<diff::SubqueryRead>& sublinks, bool signs) {
    return with_pinned_search_path([&] {
        Query* c = pg_call([&] { return static_cast<Query*>(copyObjectImpl(q)); });
        // Subqueries: each kTrue (a WHERE conjunct holding one is dropped: a
        // superset) or kImages (its tables marked below read images, and its
        // images_condition is added to WHERE).
        std::vector<SubquerySite> sites;
        if (!sublinks.empty()) {
            sites = region_sites(c);  // before the select list and HAVING go
        }
        return std::string(pg_call([&] {
            List* conjuncts = NIL;
            if (!sublinks.empty() && c->jointree->quals != nullptr) {
                conjuncts = make_ands_implicit(reinterpret_cast<Expr*>(c->jointree->quals));
            }
            List* tl = key_targets(keys, outer, padding);
            pad_outer_joins(c, outer, padding);
            c->targetList = tl;
            c->groupClause = NIL;
            c->groupingSets = NIL;
            c->havingQual = nullptr;
            c->hasAggs = false;
            c->distinctClause = NIL;
            c->hasDistinctOn = false;
            c->sortClause = NIL;
            name_tables(c, tables, states, sites, signs);
            drop_grouped_having(c);
            query_tree_walker(
                c, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(using_to_on_walker)),
                nullptr, 0);
            if (!sublinks.empty()) {
                c->jointree->quals = subquery_conditions(conjuncts, sites, sublinks, -1);
            }
            if (g_drive_from_changes && sublinks.empty() && outer.empty()) {
                drive_single_change(c, tables, states);
            }
            return pg_get_querydef(c, false);
        }));
    });
}

std::vector<ir::BranchTable> branch_tables(Query* q, const std::vector<RegionTable>& tables,
                                           const std::vector<SubquerySite>& sites) {
    std::vector<ir::BranchTable> out;
    for (const RegionTable& t : tables) {
        const RangeTblEntry* rte =
            pg_call([&] { return rt_fetch(t.path.back(), level_of(q, t, sites)->rtable); });
        out.push_back({t.source, (rte->inh ? "" : "ONLY ") + quoted_relation_name(rte->relid)});
    }
    return out;
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

}  // namespace pgt::pg::region
