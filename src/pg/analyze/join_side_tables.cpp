// Derived tables of one table on join sides, read as the table (see
// join_side_tables.hpp). The entry becomes the table's own entry under the
// derived table's name, at the same index, so nothing is renumbered; outer
// references to its columns become its select-list expressions. A join's
// column list describes its inputs' columns: every join's list is rebuilt
// from its inputs (references through join columns are replaced by what
// they stand for first, so the lists are only names for the deparser).
#include "pg/analyze/join_side_tables.hpp"

#include <vector>

#include "pg/analyze/flatten_derived.hpp"
#include "pg/analyze/range_entry.hpp"
#include "pg/boundary/boundary.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
}

namespace pgt::pg {
namespace {

// Each column is NULL when the table's row is.
bool pads_as_null(const Query* s) {
    ListCell* lc;
    foreach (lc, s->targetList) {
        auto* tle = static_cast<TargetEntry*>(lfirst(lc));
        auto* e = reinterpret_cast<Node*>(tle->expr);
        if (tle->resjunk || IsA(e, Var)) {
            continue;
        }
        if (contain_nonstrict_functions(e) || !contain_vars_of_level(e, 0) ||
            contain_vars_of_level(e, 1) || checkExprHasSubLink(e)) {
            return false;
        }
    }
    return true;
}

// The index of the one table s reads, 0 when it reads more. Entries its
// expressions do not reference are left out (a view's stored query holds
// placeholders, a merged derived table leaves its own).
int one_table(const Query* s) {
    if (list_length(s->jointree->fromlist) != 1 ||
        !IsA(linitial(s->jointree->fromlist), RangeTblRef)) {
        return 0;
    }
    const int index = castNode(RangeTblRef, linitial(s->jointree->fromlist))->rtindex;
    const auto* t = rt_fetch(static_cast<Index>(index), s->rtable);
    if (t->rtekind != RTE_RELATION || t->tablesample != nullptr) {
        return 0;
    }
    Bitmapset* used = pull_varnos(nullptr, reinterpret_cast<Node*>(s->targetList));
    used = bms_union(used, pull_varnos(nullptr, s->jointree->quals));
    int x = -1;
    while ((x = bms_next_member(used, x)) >= 0) {
        if (x != index) {
            return 0;
        }
    }
    return index;
}

// Where a derived table's WHERE goes when it is read as its table.
enum class Filter { kOn, kTop, kNowhere };

struct Side {
    JoinExpr* join;
    int varno;
    Filter filter;
};

// The join sides holding an entry, from n down; padded: n's rows may be
// NULL-padded by an outer join above.
void sides(Node* n, bool padded, std::vector<Side>& out) {
    if (!IsA(n, JoinExpr)) {
        if (IsA(n, FromExpr)) {
            ListCell* lc;
            foreach (lc, castNode(FromExpr, n)->fromlist) {
                sides(static_cast<Node*>(lfirst(lc)), false, out);
            }
        }
        return;
    }
    auto* j = castNode(JoinExpr, n);
    for (Node* arg : {j->larg, j->rarg}) {
        const bool nullable = j->jointype == JOIN_FULL ||
                              (j->jointype == JOIN_LEFT && arg == j->rarg) ||
                              (j->jointype == JOIN_RIGHT && arg == j->larg);
        if (IsA(arg, RangeTblRef)) {
            // Rows of the inner join's side or of the nullable side are
            // filtered by the ON; a preserved side's rows only above it,
            // where nothing pads them.
            const Filter f = j->jointype == JOIN_FULL                ? Filter::kNowhere
                             : j->jointype == JOIN_INNER || nullable ? Filter::kOn
                             : !padded                               ? Filter::kTop
                                                                     : Filter::kNowhere;
            out.push_back({j, castNode(RangeTblRef, arg)->rtindex, f});
        } else {
            sides(arg, padded || nullable, out);
        }
    }
}

// The names of an entry's columns, with their numbers (dropped ones left
// out, as a join leaves them out).
void columns_of(const RangeTblEntry* rte, List** attnos, List** names) {
    int attno = 0;
    ListCell* lc;
    foreach (lc, rte->eref->colnames) {
        attno++;
        const char* name = strVal(lfirst(lc));
        if (name[0] != '\0') {
            *attnos = lappend_int(*attnos, attno);
            *names = lappend(*names, makeString(pstrdup(name)));
        }
    }
}

int input_index(const Node* n) {
    return IsA(n, RangeTblRef) ? castNode(RangeTblRef, n)->rtindex : castNode(JoinExpr, n)->rtindex;
}

// Inputs first, so a join's list follows its rebuilt inputs.
void rebuild_join_columns(Query* q, Node* n) {
    if (IsA(n, FromExpr)) {
        ListCell* lc;
        foreach (lc, castNode(FromExpr, n)->fromlist) {
            rebuild_join_columns(q, static_cast<Node*>(lfirst(lc)));
        }
        return;
    }
    if (!IsA(n, JoinExpr)) {
        return;
    }
    auto* j = castNode(JoinExpr, n);
    rebuild_join_columns(q, j->larg);
    rebuild_join_columns(q, j->rarg);
    RangeTblEntry* jrte = rt_fetch(static_cast<Index>(j->rtindex), q->rtable);
    List* left = NIL;
    List* right = NIL;
    List* names = NIL;
    columns_of(rt_fetch(static_cast<Index>(input_index(j->larg)), q->rtable), &left, &names);
    columns_of(rt_fetch(static_cast<Index>(input_index(j->rarg)), q->rtable), &right, &names);
    jrte->joinleftcols = left;
    jrte->joinrightcols = right;
    jrte->joinmergedcols = 0;
    jrte->joinaliasvars = NIL;
    for (int i = 0; i < list_length(names); i++) {
        // Nothing reads through them any more: placeholders, not columns.
        jrte->joinaliasvars = lappend(jrte->joinaliasvars, makeNullConst(INT4OID, -1, InvalidOid));
    }
    jrte->eref = makeAlias(jrte->eref->aliasname, names);
    jrte->alias = nullptr;
    jrte->join_using_alias = nullptr;
    j->usingClause = NIL;
    j->isNatural = false;
    j->alias = nullptr;
    j->join_using_alias = nullptr;
}

bool collapse(Query* q, const Side& side) {
    RangeTblEntry* rte = rt_fetch(static_cast<Index>(side.varno), q->rtable);
    const int table_index = plain_derived_table(rte) ? one_table(rte->subquery) : 0;
    if (table_index == 0 || !pads_as_null(rte->subquery) || read_as_whole_row(q, side.varno) ||
        (side.filter == Filter::kNowhere && rte->subquery->jointree->quals != nullptr)) {
        return false;
    }
    auto* s = static_cast<Query*>(copyObjectImpl(rte->subquery));
    IncrementVarSublevelsUp(reinterpret_cast<Node*>(s), -1, 1);
    ChangeVarNodes(reinterpret_cast<Node*>(s), table_index, side.varno, 0);
    const int join_index = side.join->rtindex;
    Node* replaced = ReplaceVarsFromTargetList(reinterpret_cast<Node*>(q), side.varno, 0, rte,
                                               s->targetList, REPLACEVARS_REPORT_ERROR, 0, nullptr);
    *q = *castNode(Query, replaced);
    auto* table = static_cast<RangeTblEntry*>(
        copyObjectImpl(rt_fetch(static_cast<Index>(table_index), s->rtable)));
    const char* name = rte->alias != nullptr ? rte->alias->aliasname : rte->eref->aliasname;
    table->alias = makeAlias(name, NIL);
    table->eref = makeAlias(name, table->eref->colnames);
    list_nth_cell(q->rtable, side.varno - 1)->ptr_value = table;
    q->hasSubLinks = q->hasSubLinks || s->hasSubLinks;
    if (s->jointree->quals != nullptr && side.filter == Filter::kTop) {
        q->jointree->quals = conjunction(q->jointree->quals, s->jointree->quals);
    } else if (s->jointree->quals != nullptr) {
        // (the replacement copied the jointree: the join is found again)
        std::vector<Side> now;
        sides(reinterpret_cast<Node*>(q->jointree), false, now);
        for (const Side& n : now) {
            if (n.join->rtindex == join_index) {
                n.join->quals = conjunction(n.join->quals, s->jointree->quals);
            }
        }
    }
    return true;
}

}  // namespace

bool collapse_join_side_tables(Query* q) {
    return pg_call([&] {
        std::vector<Side> found;
        sides(reinterpret_cast<Node*>(q->jointree), false, found);
        bool candidate = false;
        for (const Side& side : found) {
            candidate = candidate ||
                        plain_derived_table(rt_fetch(static_cast<Index>(side.varno), q->rtable));
        }
        if (!candidate) {
            return false;
        }
        // References through join columns become what they stand for before
        // any join's column list changes.
        resolve_join_references(q);
        bool collapsed = false;
        for (bool again = true; again;) {
            again = false;
            found.clear();  // (each collapse makes a new jointree)
            sides(reinterpret_cast<Node*>(q->jointree), false, found);
            for (const Side& side : found) {
                if (collapse(q, side)) {
                    collapsed = again = true;
                    break;
                }
            }
        }
        if (collapsed) {
            rebuild_join_columns(q, reinterpret_cast<Node*>(q->jointree));
        }
        return collapsed;
    });
}

}  // namespace pgt::pg
