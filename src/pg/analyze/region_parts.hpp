// The parts of join-region analysis (join_region.cpp) shared between its
// files: the tables and outer joins of a region, WHERE subqueries and
// semi-joins, branch deparsing, algebraic regions, prefilters and kept
// copies. Internal to src/pg/analyze.
// Invariant: every function here runs on the analysed query without
// changing it (branches are deparsed from copies).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/diff/join_terms.hpp"
#include "core/diff/semi_join.hpp"
#include "core/ir/scan.hpp"
#include "pg/analyze/defining_query.hpp"

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
#include "nodes/primnodes.h"
}

namespace pgt::pg::region {

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

// A subquery in the query's expressions that a region follows: in a WHERE
// conjunct (conjunct >= 0), or in the select list or HAVING (-1).
// form 'i': the conjunct is exactly `x IN (it)`, 'n': `x NOT IN (it)`
// (one column, `=`, a subquery whose selected values are its rows' own:
// no LIMIT, window functions or DISTINCT ON, under GROUP BY a grouping
// key); 'g': anything else (EXISTS, NOT EXISTS, scalar subqueries).
// parent: the site whose subquery's WHERE holds this one (conjunct then
// counts that WHERE's conjuncts), or -1 for the query's own. rank: its
// place among the sites of its parent, those whose tables hold more rows
// (by the planner's estimates) first (the query's own: in order, unused): a branch through a nested
// site keeps its later siblings' conditions as written (region_branch.cpp, subquery_conditions), so
// the one whose tables change most prunes most.
struct SubquerySite {
    SubLink* link;
    int conjunct;
    char form;
    int parent = -1;
    int rank = 0;
};

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
    int conjunct;                   // in the query's top-level WHERE
    std::size_t table;              // index in the region's tables of s
    std::vector<Expr*> outer;       // each y, over the query's range table
    diff::CountedSemiJoin counted;  // the rest, as text
};

// region_subquery.cpp

// The subqueries of q's WHERE conjuncts, select list and HAVING, in that
// order (pointers into q's own tree; the same order for a copy of q).
std::vector<SubquerySite> subquery_sites(Query* q);

// The subqueries a region follows: q's own (subquery_sites), then those of
// each one's subquery, at any depth, each after the one holding it
// (parent). The same order for a copy of q.
std::vector<SubquerySite> region_sites(Query* q);

// An EXISTS whose select list is never evaluated for its result: no
// aggregate, grouping, DISTINCT, window function, set-returning function or
// LIMIT for it to take part in. Its tables' images need not carry the
// columns only the select list reads (`EXISTS (SELECT * ...)`).
bool selects_nothing_read(const SubLink* link);

// Why a region cannot follow this subquery ("" when it can): its FROM
// must be tables and inner joins (no set operations or WITH), subqueries
// of its own only in its WHERE conjuncts, and it may not use the query's
// aggregates.
std::string subquery_blocker(const SubquerySite& site);

// A subquery's condition in a branch that reads its tables' images:
// which rows of the query a changed subquery row can concern. 'g': those
// for which the subquery's FROM/WHERE over the images finds a row (it
// correlates with them; every row when uncorrelated); 'i': those whose
// value it selects (without GROUP BY/HAVING: the changed row's group);
// 'n' also every row when the changed row selects NULL, and rows whose own
// value is NULL (both flip when the subquery's result does). Runs under
// pg_call; changes the site's subquery.
Node* images_condition(const SubquerySite& site);

// Every subquery as a semi-join, in subquery order; nullopt when one is
// not.
std::optional<std::vector<SemiJoin>> semi_joins_of(Query* q,
                                                   const std::vector<SubquerySite>& sublinks,
                                                   const std::vector<RegionTable>& tables,
                                                   const RegionShape& region);

// q with each WHERE term `x IN (subquery)` whose x is identity key j
// narrowed inside: the subquery also requires its selected expression to
// be among key j's touched values (ir::key_slot(j)). The recompute keeps
// only rows whose key j is touched, and for those the subquery's rows with
// that value are all kept (under GROUP BY the selected expression is a
// key: whole groups), so their IN is unchanged; the subquery then reads a
// few groups instead of all (TPC-H q18). "" when no term qualifies. (Not
// for NOT IN: a NULL the filter drops would change its result.)
std::string narrowed_query(Query* q, const std::vector<TargetEntry*>& keys);

// region_branch.cpp

// The conjuncts (a top-level AND's list) but those at the positions in
// `dropped`. Runs under pg_call.
List* conjuncts_without(List* conjuncts, const std::vector<int>& dropped);

// The defining query's FROM/WHERE selecting the key expressions, for a
// term whose tables are read as `states` says (diff::TableRead): the outer
// joins as `padding` says (one entry per outer join), the WHERE subqueries
// as `sublinks` says (none: as written), a join driven from a lone changed
// table's images. Table i is read as the relation sql::region_table(i)
// (diff::compose_branch defines it). With signs, each kBoth table's sign is
// selected after the keys, as __pgt_sg1, __pgt_sg2, ... in table order
// (tables of the FROM, also inside derived tables: see sign_reaches_top).
std::string deparse_branch(Query* q, const std::vector<TargetEntry*>& keys,
                           const std::vector<RegionTable>& tables,
                           const std::vector<diff::TableRead>& states,
                           const std::vector<OuterJoin>& outer = {},
                           const std::vector<diff::Padding>& padding = {},
                           const std::vector<diff::SubqueryRead>& sublinks = {},
                           bool signs = false);

// Table `varno` of `level` read from the relation `name` (a CTE the
// statement defines) carrying the table's live columns by their own names
// (a derived table: its columns). Runs under pg_call.
void read_table_as(Query* level, Index varno, const char* name);

// An aggregate's argument with its FILTER folded in (CASE WHEN filter THEN
// arg END; count(*) FILTER: CASE WHEN filter THEN 1 END); nullptr for an
// unfiltered count(*). Runs under pg_call.
Expr* aggregate_argument(const Aggref* a);

// The region's tables as branches read them (ir::BranchTable), in the
// order of `tables`.
std::vector<ir::BranchTable> branch_tables(Query* q, const std::vector<RegionTable>& tables,
                                           const std::vector<SubquerySite>& sites);

// Whether a column added to the select list of each derived table on the
// way to t (a table of the FROM) is that derived table's next column: no
// derived table there has junk entries, whose numbers come first.
bool sign_reaches_top(Query* q, const RegionTable& t);

// region_algebraic.cpp

// Fills the algebraic form of an inner join's region (see RegionShape):
// false when the outputs are not all keys and algebraic aggregates or the
// signed change needs more branches than a region may store.
bool algebraic_region(Query* q, const std::vector<TargetEntry*>& keys,
                      const std::vector<bool>& key_alike, const std::vector<RegionTable>& tables,
                      const std::optional<std::vector<SemiJoin>>& semi_joins, RegionShape& region);

// region_kept.cpp

// Per source, the conditions its change images must meet to reach any
// output row (tables read once at the top level only).
std::vector<std::string> region_prefilters(Query* q, const std::vector<RegionTable>& tables,
                                           const RegionShape& region,
                                           const std::vector<SubquerySite>& sublinks);

// Per source: the kept copy it may have (ir::KeptCopy without a table;
// `from` "" for none). A candidate is a table read once, in the FROM of
// a query without outer joins, grouping sets or subqueries other than
// semi-joins (SemiJoin) (or of a
// derived table of it, a plain inner join), whose
// prefilter is not empty and whose own conditions are all immutable (the
// copy must not go stale while the table stands still), and which another
// table is probed by on a column with a btree equality (the copy's index).
std::vector<ir::KeptCopy> kept_candidates(Query* q, const std::vector<RegionTable>& tables,
                                          const RegionShape& region, bool plain);

// join_region.cpp

// The first join that is not inner (JOIN ... ON, comma lists, CROSS JOIN,
// USING and NATURAL are inner), named; nullptr when there is none.
const char* outer_join(Node* n);

// A key column can be NULL unless it is a NOT NULL column of a joined
// table (inner joins never pad with NULLs).
bool nullable(Query* q, Expr* e);

// The tables of q's FROM, through derived tables; false (with the blocker
// set) when a FROM item is neither a table nor such a derived table.
bool collect_tables(Query* q, const std::vector<Index>& prefix, std::vector<RegionTable>& tables,
                    RegionShape& region, AnalyzedQuery& out, int sublink = -1,
                    bool read_target_list = true);

// The plain-column equalities between the region's tables (ON and WHERE):
// per source, the columns it is probed by (region.equi_attnums).
void collect_equi_attnums(Query* q, const std::vector<RegionTable>& tables, RegionShape& region);

// region_grouped.cpp

// A derived table with GROUP BY or aggregates.
bool grouped_derived(const RangeTblEntry* rte);

// Why the grouped derived table at rtindex of q's FROM cannot be a part of
// q's region, nullptr when it can: a plain GROUP BY over inner joins (no
// grouping sets, DISTINCT, LIMIT, window function, set operation or
// subquery; HAVING allowed), no outer join or WHERE subquery in q, and q
// reads its non-grouping columns only inside q's own aggregates. Runs on
// the analysed query without changing it.
const char* grouped_table_blocker(Query* q, Index rtindex);

// Whether table t is read through a grouped derived table.
bool inside_grouped(Query* q, const RegionTable& t);

// Every grouped derived table of c without its HAVING (a branch's
// superset of groups: its aggregates are computed over images there).
// Runs under pg_call.
void drop_grouped_having(Query* c);

}  // namespace pgt::pg::region
