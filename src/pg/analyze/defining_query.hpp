// The defining query of a stream table, through PostgreSQL's own parser,
// analyzer and rewriter: validated, deparsed schema-qualified, with its
// output columns and source relations.
// Invariant: analyze_defining_query() either returns a query every later
// step can run, or throws; it creates nothing.
#pragma once

#include <string>
#include <vector>

#include "core/ir/scan.hpp"
#include "core/ir/tree.hpp"

extern "C" {
#include "postgres.h"
}

namespace pgt::pg {

struct OutputColumn {
    std::string name;
    Oid type;
    int32 typmod;
    Oid collation;
};

struct SourceRelation {
    Oid relid;
    char relkind;
};

// A relation the query reads and the SELECT right that takes, as
// PostgreSQL checks it when the query runs (ExecCheckRTPerms): on the
// relation, or else on every column read; a view's own references are
// checked as the view's owner.
struct ReadRight {
    Oid relid;
    Oid check_as;              // InvalidOid: the stream table's owner
    std::vector<int> attnums;  // columns read, ascending; 0 is the whole row
};

// How rows of the stream table are identified (docs/row-identity-v2.md).
struct RowIdentityShape {
    rowid::Domain domain = rowid::Domain::kKeylessRow;
    std::vector<int> key_columns;  // indexes into AnalyzedQuery::columns
};

// A query over one table: what its strategy needs beyond the operator
// tree, whose nodes hold the expressions deparsed over the change images
// (ir::Column::image; core/diff/linear differentiates them).
struct ScanShape {
    Oid source_relid = InvalidOid;
    std::vector<int> referenced_attnums;  // source columns the query reads, ascending
    // GROUP BY over the one table (maintained by recomputing the groups a
    // change touches): the grouping keys are the identity's key columns
    // (output positions, group clause order).
    bool grouped = false;
    // Grouped, when every grouping key is a plain source column: their
    // attribute numbers (GROUP BY order), for the index advice.
    std::vector<int> group_attnums;
    // Grouped without HAVING (or an aggregate without GROUP BY), when every
    // output is a grouping key or a COUNT/SUM/AVG/MIN/MAX kept algebraically
    // (the level's Aggregate node has the algebraic form: diff::algebraic_group).
    bool algebraic = false;
};
inline constexpr const char* kScanAlias = ir::kImageAlias;

// An inner join of two tables whose unique keys are both selected
// (maintained by recomputing the rows of changed keys).
struct JoinShape {
    bool present = false;
    Oid relids[2] = {InvalidOid, InvalidOid};
    std::vector<int> key_outputs[2];   // output positions of each side's key
    std::vector<int> key_attnums[2];   // the same key's source columns
    int preserved = -1;                // LEFT/RIGHT JOIN: the side whose rows all appear
    std::vector<int> equi_attnums[2];  // columns of `x = y` conditions between the sides
};

// An inner join of 2..kMaxRegionTables tables, plain, GROUP BY (every key
// selected) or DISTINCT, maintained by recomputing the region of output
// rows whose identity key a changed row touches (core/diff/join_region).
inline constexpr int kMaxRegionTables = 8;
inline constexpr std::size_t kMaxRegionBranches = 1024;  // branch queries stored per stream table
struct RegionShape {
    bool present = false;
    std::vector<Oid> relids;                 // distinct source tables, in range-table order
    std::vector<std::vector<int>> attnums;   // per source: the columns the query reads
    std::vector<ir::BranchTable> tables;     // per table reference (branches read __pgt_rel_<i>)
    std::vector<ir::RegionBranch> branches;  // deparsed, per term (ir::RegionBranch)
    std::vector<bool> key_nullable;          // per identity key column
    std::vector<bool> key_filtered;          // per key: `= ANY (array)` filter possible
    // Plain-column equalities between tables (a.x = b.y in ON or WHERE):
    // per source (relids order), the columns it is probed by.
    std::vector<std::vector<int>> equi_attnums;
    // An inner join whose outputs are grouping keys and algebraic
    // aggregates (no HAVING): branches select (weight, keys, arguments) of
    // the join's signed change instead of keys (ir::AlgebraicJoin).
    std::vector<std::string> prefilters;  // per source (relids order), see ir::RegionSource
    // Per source (relids order): a kept copy the branches may read instead
    // of the table (ir::KeptCopy, its table not yet named: `from` is ""
    // when the source cannot have one). Maintenance decides which get one;
    // the branches read it where they read the table now.
    std::vector<ir::KeptCopy> kept;
    bool algebraic = false;
    std::vector<ir::AlgebraicAgg> aggs;         // arguments read r.__pgt_x<i>
    std::vector<bool> key_alike;                // per grouping key (ir::AlgebraicGroup)
    std::vector<std::string> output_templates;  // per output (ir::AlgebraicGroup)
    std::string row_query;                      // (keys, arguments) of the join now
    // Grouping sets: the query as the UNION ALL of one GROUP BY per set
    // (a key filter reaches below each one); "" otherwise.
    std::string query;
    // Where `query` reaches each touched key on its own (narrowed inside,
    // or a subquery per row): refreshes that touch many keys read
    // `effective` instead, in one pass (ir::JoinRegion::whole_query).
    bool whole_when_many = false;
    // An aggregate over one grouped derived table whose aggregated columns
    // it reads (ir::DerivedAggregate): relids, attnums (the columns it reads
    // and a unique key), tables and branches are the derived table's (its
    // branches select its keys); aggs, key_alike, output_templates and
    // row_query the outer aggregate's, key_nullable and key_filtered its
    // identity's.
    bool derived = false;
    std::string derived_rows;                           // sources as sql::derived_source(s)
    std::vector<std::string> derived_keys;              // its key columns, quoted
    std::vector<bool> derived_narrow;                   // per key: `= ANY` may narrow it
    std::vector<std::vector<std::string>> source_keys;  // per source: a unique key, quoted
    std::string derived_select;                         // outer (keys, args) over region_table(0)
    // An aggregate over one UNION ALL (diff::union_all_arms below its
    // Subquery node): aggs, key_alike, output_templates, derived_select,
    // row_query, key_nullable and key_filtered are the outer aggregate's
    // as for `derived`; union_columns the union's columns (quoted) as
    // derived_select reads them from sql::region_table(0). present stays
    // false: the union's sources are its arms' scans.
    bool union_aggregate = false;
    std::vector<std::string> union_columns;
    // The identity is the key of one table of the FROM, read once (see
    // ir::JoinRegion::key_source): its source index and the query over its
    // new images; -1 otherwise.
    int key_source = -1;
    std::string key_rows;
    std::vector<std::string> key_columns;  // that table's key columns, quoted, identity order
};

// The hidden storage column of a grouping-sets query (GROUPING of every
// grouping expression): identity key index AnalyzedQuery::columns.size().
using sql::kGroupingSetColumn;

struct AnalyzedQuery {
    std::string original;                 // as the user wrote it
    std::string effective;                // deparsed, every object schema-qualified
    std::vector<OutputColumn> columns;    // user-visible output columns, in order
    std::vector<SourceRelation> sources;  // views and base relations read, no duplicates
    std::vector<ReadRight> reads;         // one per reference in the rewritten query
    std::vector<Oid> functions;           // functions it calls (operators' too), no duplicates
    std::vector<Oid> types;               // types of its expressions, their elements and bases
    // The analysed query (nodeToString) `effective` deparses; with views
    // expanded (expand_views.hpp), the query as written, naming the views.
    std::string tree;
    bool selects_star = false;  // its select list has * or t.* (seed EC-15)
    // Its result is a function of the rows it reads alone: no function
    // that is not IMMUTABLE, no CURRENT_TIMESTAMP and the like, no
    // nextval, no TABLESAMPLE (change notes, pg/cdc/change_notes).
    bool deterministic = false;
    RowIdentityShape identity;         // the proven key, or keyless_row of every column
    ir::Tree operators;                // the operator tree, identity per node
    std::string differential_blocker;  // "" when DIFFERENTIAL can maintain the query
    bool blocker_is_limit = false;     // the blocker is pg_trickle.max_grouping_set_branches
    std::string auto_full_reason;      // DIFFERENTIAL would recompute it all: AUTO picks FULL
    ScanShape scan;                    // filled when differential_blocker is "" (one table)
    JoinShape join;                    // or this, for a two-table inner join
    RegionShape region;                // or this, for other inner joins
};

// stored: sql is a stream table's effective query (which selects the
// hidden grouping-set column; user queries may not name it).
AnalyzedQuery analyze_defining_query(const std::string& sql, bool stored = false);

// The query a stored AnalyzedQuery::tree holds, deparsed now (every object
// schema-qualified): renamed relations, columns, functions and schemas
// appear under their new names, as a view's definition does.
std::string deparse_stored_query(const std::string& tree);

// Output column i of q; i == q.columns.size() is the hidden grouping-set
// column (int4) of a grouping-sets query.
OutputColumn column_at(const AnalyzedQuery& q, int i);

// Whether q's identity includes the hidden grouping-set column.
bool has_grouping_set_column(const AnalyzedQuery& q);

}  // namespace pgt::pg
