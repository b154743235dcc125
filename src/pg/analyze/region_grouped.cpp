// Grouped derived tables inside a join region: `SELECT d.category,
// avg(d.final) FROM (SELECT a.id, a.category, max(b.price) AS final FROM
// auction a JOIN bid b ON ... GROUP BY a.id, a.category) d GROUP BY
// d.category` (Nexmark q4), an aggregate over an aggregate whose keys pass
// through; likewise a SELECT DISTINCT derived table, whose columns are all
// keys (`count(*)` over `SELECT DISTINCT category, bidder`: distinct
// bidders per category).
// Why the region stays exact: a branch selects the query's key expressions
// with some tables read from change images. Where those expressions, and
// every condition of the query outside the derived table, read only the
// derived table's grouping columns, their value on a group's row is the
// value of the source rows that form it, so the images give the keys of
// exactly the groups that contain a changed row, in either state. The
// derived table's aggregates, computed over images in a branch, are wrong
// there, so nothing but the query's own aggregates may read them, and its
// HAVING is dropped in branches (a superset of groups). The recompute runs
// the query as written, narrowed by PostgreSQL, which pushes a condition
// on grouping columns below the GROUP BY.
// The same holds for a grouped derived table in a WHERE or scalar
// subquery's FROM (TPC-H q15: `(SELECT max(total_revenue) FROM revenue0)`):
// the subquery's condition over images reads its grouping columns only.
// Invariant: a grouped derived table is a region part only in the FROM of
// the query or of one of its subqueries, not under an outer join, next to
// no subquery of that level.
#include "pg/analyze/region_parts.hpp"

#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
}

namespace pgt::pg::region {
namespace {

// Whether target entry te of s is one of its GROUP BY expressions (of a
// SELECT DISTINCT: one of its columns, each a key of its rows).
bool grouping_column(Query* s, TargetEntry* te) {
    return te->ressortgroupref != 0 &&
           get_sortgroupref_clause_noerr(
               te->ressortgroupref, s->groupClause != NIL ? s->groupClause : s->distinctClause) !=
               nullptr;
}

struct ReadsAggregates {
    Index rtindex;
    Query* derived;
    int levels = 0;  // queries entered below the level the derived table is in
};

// Whether n reads a column of the derived table that is not a grouping
// column (or its whole row) outside an aggregate of the query.
bool reads_aggregates(Node* n, void* ctx) {
    if (n == nullptr) {
        return false;
    }
    auto* r = static_cast<ReadsAggregates*>(ctx);
    auto walker = reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(reads_aggregates));
    if (IsA(n, Aggref) && static_cast<int>(castNode(Aggref, n)->agglevelsup) == r->levels) {
        return false;  // the query's own aggregate: its arguments may read anything
    }
    if (IsA(n, Var)) {
        Var* v = castNode(Var, n);
        if (static_cast<int>(v->varlevelsup) != r->levels ||
            static_cast<Index>(v->varno) != r->rtindex) {
            return false;
        }
        if (v->varattno < 1) {
            return true;
        }
        TargetEntry* te = get_tle_by_resno(r->derived->targetList, v->varattno);
        return te == nullptr || !grouping_column(r->derived, te);
    }
    if (IsA(n, Query)) {
        r->levels++;
        bool found = query_tree_walker(castNode(Query, n), walker, ctx, 0);
        r->levels--;
        return found;
    }
    return expression_tree_walker(n, walker, ctx);
}

// GROUP BY or aggregates, or a SELECT DISTINCT (not DISTINCT ON) without
// them: rows that stand for groups of source rows, keyed by columns.
bool grouped(const Query* s) {
    const bool plain_distinct =
        s->distinctClause != NIL && !s->hasDistinctOn && !s->hasAggs && s->groupClause == NIL;
    return s->hasAggs || s->groupClause != NIL || plain_distinct;
}

}  // namespace

bool grouped_derived(const RangeTblEntry* rte) {
    return rte->rtekind == RTE_SUBQUERY && grouped(rte->subquery);
}

const char* grouped_table_blocker(Query* q, Index rtindex) {
    RangeTblEntry* rte = rt_fetch(rtindex, q->rtable);
    Query* s = rte->subquery;
    if (rte->lateral || s->setOperations != nullptr || s->cteList != NIL ||
        s->groupingSets != NIL || s->hasWindowFuncs ||
        (s->distinctClause != NIL && (s->hasDistinctOn || s->hasAggs || s->groupClause != NIL)) ||
        s->hasTargetSRFs || s->hasSubLinks || s->limitCount != nullptr ||
        s->limitOffset != nullptr || s->rowMarks != NIL) {
        return "a subquery in FROM with aggregates and grouping sets, DISTINCT ON, DISTINCT "
               "over groups, LIMIT, set operations, window functions or subqueries";
    }
    if (q->hasSubLinks || outer_join(reinterpret_cast<Node*>(q->jointree)) != nullptr ||
        outer_join(reinterpret_cast<Node*>(s->jointree)) != nullptr) {
        return "a subquery in FROM with aggregates next to an outer join or a subquery";
    }
    ReadsAggregates r{rtindex, s};
    const bool reads = pg_call([&] {
        auto walker = reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(reads_aggregates));
        return expression_tree_walker(reinterpret_cast<Node*>(q->targetList), walker, &r) ||
               expression_tree_walker(q->havingQual, walker, &r) ||
               expression_tree_walker(reinterpret_cast<Node*>(q->jointree), walker, &r);
    });
    if (reads) {
        return "a subquery in FROM with aggregates whose aggregated columns are read outside an "
               "aggregate (in WHERE, a join condition, GROUP BY or the select list)";
    }
    return nullptr;
}

bool inside_grouped(Query* q, const RegionTable& t) {
    if (t.sublink >= 0) {
        return false;
    }
    Query* level = q;
    for (std::size_t d = 0; d + 1 < t.path.size(); d++) {
        RangeTblEntry* rte = rt_fetch(t.path[d], level->rtable);
        if (grouped_derived(rte)) {
            return true;
        }
        level = rte->subquery;
    }
    return false;
}

void drop_grouped_having(Query* c) {
    ListCell* lc;
    foreach (lc, c->rtable) {
        RangeTblEntry* rte = lfirst_node(RangeTblEntry, lc);
        if (rte->rtekind == RTE_SUBQUERY) {
            if (grouped(rte->subquery)) {
                rte->subquery->havingQual = nullptr;
            }
            drop_grouped_having(rte->subquery);
        }
    }
}

}  // namespace pgt::pg::region
