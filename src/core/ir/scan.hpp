// IR of the one operator chain DIFFERENTIAL maintains today: a scan of one
// source table, an optional filter, a projection (SELECT exprs FROM t WHERE p).
// Invariant: every string here is already valid, quoted SQL (expressions
// are deparsed by PostgreSQL and schema-qualified); core only assembles it.
#pragma once
#include "core/core.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/rowid/format.hpp"
#include "core/sql/names.hpp"

namespace pgt::ir {

// The alias source-row expressions are deparsed against (one table: the
// scan; a join: each table's prefilter).
using sql::kImageAlias;

// How an update is told to leave a column's stored value as it was
// (buffer columns o<attnum> and n<attnum>): kEqual, `IS NOT DISTINCT FROM`
// proves it (equal values of the type are stored alike); kEqualThenImage,
// equality first (cheap, false for most changed values), then the stored
// bytes (1.0 = 1.00 but looks different); kImage, the stored bytes only
// (the type may have no equality operator).
enum class Sameness : char { kEqual = 'e', kEqualThenImage = 'p', kImage = 'i' };

struct SourceColumn {
    int attnum;        // attribute number in the source table
    std::string name;  // quoted column name
    Sameness same = Sameness::kImage;
};

struct OutputColumn {
    std::string expr;  // deparsed expression over `alias`.column references
    std::string name;  // quoted output column name
};

// The Δ of a base relation, the input of the differentiation rules: a
// FROM item of buffer-shaped rows (seq, action, xid, o<attnum>...,
// n<attnum>...), of one of two kinds.
struct DeltaInput {
    enum class Kind : std::uint8_t {
        // A quoted, schema-qualified change buffer, read through its
        // frontier window (DIFFERENTIAL; window parameters $1..$5).
        kBufferWindow,
        // Every row of a FROM item over a statement's transition tables
        // (diff::transition_rows; IMMEDIATE): they hold committed states only.
        kTransitionTables,
    };
    Kind kind = Kind::kBufferWindow;
    std::string relation;
    bool windowed() const { return kind == Kind::kBufferWindow; }
};

struct ScanFilterProject {
    DeltaInput delta;                   // where the scan's Δ comes from
    std::string alias;                  // quoted alias the expressions use for the source
    std::vector<SourceColumn> columns;  // every live source column
    std::string predicate;              // deparsed WHERE, empty when none
    std::vector<OutputColumn> outputs;  // in stream-table column order
    // Conjuncts of WHERE that cannot raise on any row (comparisons,
    // leakproof functions; over alias kScanAlias): images failing them are
    // dropped before netting, since they can never reach the output.
    std::string prefilter;
    // The prefilter keeps few rows (the planner's estimate, at creation):
    // both images of a buffer row are read in one scan of the buffer.
    bool one_pass = false;
    // The source columns (quoted, in the identity's order) that the stream
    // table's identity encodes, when it is keyed by a unique key of the
    // source the outputs select as plain columns; empty otherwise. A
    // window is then reduced to each identity's last event
    // (diff::apply_sql).
    std::vector<std::string> key_columns;
};

// How the stream table's rows are identified (docs/row-identity-v2.md).
// SELECT <keys and aggregates> FROM <one table> [WHERE p] GROUP BY <keys>
// [HAVING h], maintained by recomputing the groups a change touches. `scan`
// holds the source, its columns, the WHERE predicate and the outputs (the
// aggregate expressions deparsed as written).
struct GroupRescan {
    ScanFilterProject scan;
    std::string source_table;        // quoted, schema-qualified source table
    std::vector<int> group_outputs;  // output positions of the grouping keys, in GROUP BY order
    std::string having;              // deparsed HAVING, empty when none
    // One grouping key, a column of the source that leads one of its
    // indexes, of a type with a pg_catalog equality and an array type: the
    // touched groups' rows are read by `= ANY (array)`, one index scan
    // over every touched value (a bitmap reads each page once), not one
    // scan per value.
    bool key_by_array = false;
    // Per grouping key: its equality when a bare `=` would not find it
    // (ir::Column::equal), "" otherwise.
    std::vector<std::string> key_equal;
};

// GROUP BY GROUPING SETS/ROLLUP/CUBE over one table: per set (an arm) a
// plain GROUP BY whose outputs read absent grouping expressions as NULL,
// maintained by recomputing the touched groups of every set
// (core/diff/grouping_sets). The identity is (keys..., set column).
struct GroupingSetArm {
    uint32_t grouping = 0;  // GROUPING(every key): bit n-1-j set when key j is absent
    // Per output column, then the set column: deparsed over the scan alias
    // for this set (absent keys NULL outside aggregates, GROUPING() constant).
    std::vector<std::string> outputs;
    std::string having;  // deparsed for this set, "" when none
};

struct GroupingSetsRescan {
    ScanFilterProject scan;         // source, WHERE, prefilter; outputs name the user columns
    std::string source_table;       // quoted, schema-qualified source table
    std::string set_column;         // quoted name of the hidden set column
    std::vector<std::string> keys;  // grouping expressions over the scan alias, GROUPING order
    std::vector<GroupingSetArm> arms;
};

// An aggregate the stream table keeps algebraically: from its stored value,
// hidden auxiliary columns and the change's images, never the group's rows
// (core/diff/algebraic).
enum class AggKind { kCountStar, kCount, kSum, kAvg, kMin, kMax };

struct AlgebraicAgg {
    AggKind kind = AggKind::kCountStar;
    // Position in the outputs, or -1 for an aggregate inside an output
    // expression (100 * sum(a) / sum(b)): its value is kept in __pgt_v<i>
    // (COUNT, MIN, MAX; SUM/AVG from their sums) of type value_type.
    int output = 0;
    std::string value_type;
    // The argument over the scan alias with FILTER folded in (CASE WHEN
    // filter THEN arg END; count(*) FILTER: CASE WHEN filter THEN 1 END);
    // "" for an unfiltered count(*).
    std::string arg;
    bool numeric = false;  // kSum/kAvg over numeric: display scale tracked
    // kSum/kAvg over numeric: the display scale every finite input shows
    // whatever its value (a numeric(p,s) column, a constant, +, -, * of
    // such), so the sum's scale needs no per-row state; -1 when it depends
    // on the values.
    int fixed_scale = -1;
    std::string result_type;  // kSum/kAvg: the output type, schema-qualified
    bool exact_ties = true;   // kMin/kMax: equal values always look the same
};

// GROUP BY over one table without HAVING (or an aggregate without GROUP
// BY: no grouping keys, exactly one row) whose every output is a grouping
// key or an AlgebraicAgg.
struct AlgebraicGroup {
    GroupRescan group;  // group.having is empty; group_outputs may be empty
    std::vector<AlgebraicAgg> aggs;
    // Per grouping key: equal values always look the same (else a group
    // whose rows show the key differently, 1.0 and 1.00, is recomputed).
    std::vector<bool> key_alike;
    // Per output: "" (a grouping key or a bare aggregate), or its
    // expression over aggregates (no columns outside them) with aggregate i
    // written as agg_slot(i).
    std::vector<std::string> output_templates;
};

// Parameter numbers of the slots below (the analyzer writes them as Params,
// which deparse as $<number>).
inline constexpr int kAggSlotBase = 1000001;
inline constexpr int kKeySlotBase = 1000501;

// How an output template names aggregate i: a parameter reference no
// deparsed defining query contains ($1000001, ...).
inline std::string agg_slot(std::size_t i) {
    return "$" + std::to_string(kAggSlotBase + static_cast<int>(i));
}

// How a join region's query names the list of identity key j's touched
// values (an array; see JoinRegion::query).
inline std::string key_slot(std::size_t j) {
    return "$" + std::to_string(kKeySlotBase + static_cast<int>(j));
}

// Touched keys below which a join region reads its narrowed query even
// when the stream table has fewer rows (JoinRegion::whole_query).
inline constexpr int kWholeQueryKeys = 1000;

// A kept copy of one source of a join region: the rows of the table that
// pass its prefilter, only the columns the query reads, in a table of our
// own with an index on each column another table is probed by. The
// branches read it instead of the table where they read the table as it
// is now (a probe into a copy of 1% of lineitem instead of lineitem).
// Invariant: after a DIFFERENTIAL refresh the copy holds exactly those
// rows of the table at the refresh snapshot (a multiset); any other
// refresh leaves it invalid, and the next DIFFERENTIAL refresh that reads
// it refills it.
struct KeptCopy {
    std::string table;         // quoted, schema-qualified copy ("": none)
    std::string from;          // the table as the query reads it ("ONLY "?, qualified)
    std::string probe_column;  // quoted column the copy is searched by (indexed)
    std::string probe_equal;   // its equality, OPERATOR(schema.=)
    // Every column another table is joined to it by (quoted; probe_column
    // first): each gets an index.
    std::vector<std::string> index_columns;
};

// An inner join of several tables (optionally GROUP BY or DISTINCT),
// maintained by recomputing the region of output rows whose identity key
// some changed source row touches. The branches are the defining query's
// FROM/WHERE with some tables replaced by the images of their changed rows
// (CTEs __pgt_old_<i> and __pgt_new_<i>, i = index in `sources`), each
// selecting the identity key expressions.
struct RegionSource {
    DeltaInput delta;                   // its Δ
    int window = 0;                     // parameter block: $(5*window+1)..$(5*window+5)
    std::vector<SourceColumn> columns;  // every live column (the images' columns)
    std::string prefilter;              // as ScanFilterProject::prefilter, for this table
    KeptCopy kept;                      // table "" when the branches read the table itself
};

// How a branch of a join region reads one of its tables.
enum class TableRead : char {
    kNow,   // the table as it is now (or its kept copy)
    kOld,   // its before-images
    kNew,   // its after-images
    kBoth,  // both kinds (with their sign where the branch selects it)
};

// How a branch reads one WHERE subquery (of a region's FROM).
enum class SubqueryRead : char {
    kTrue,    // its conjunct dropped (a superset)
    kImages,  // its images condition added (its tables' images, or those of a
              // subquery nested in it)
};

// How a branch reads one outer join.
enum class Padding : char {
    kKeep,       // as written (LEFT/RIGHT/FULL)
    kInner,      // as an inner join (the nullable table reads images)
    kPadded,     // as an inner join, keys as the NULL-padded row would have
    kPreserved,  // ON false: the preserved rows, all padded
    // FULL JOIN (larg L, rarg R):
    kLeftAlone,   // LEFT JOIN ON false: every L row, padded (R not read)
    kRightAlone,  // RIGHT JOIN ON false: every R row, padded (L not read)
    kLeftGone,    // inner join, keys as R's padded row would have (L NULL)
    kRightGone,   // inner join, keys as L's padded row would have (R NULL)
};

// A table of a join region, once per reference in the query (a table read
// twice is two): its source, and the table as the query reads it.
struct BranchTable {
    std::size_t source = 0;  // index into the region's sources
    std::string from;        // "ONLY "? quoted, schema-qualified
};

// A branch: the query's FROM/WHERE (as the analyzer rendered it for one
// term) selecting the identity key expressions, reading table i as the
// relation sql::region_table(i), which diff::compose_branch defines as
// `reads` says.
struct RegionBranch {
    std::string sql;               // SELECT <key expressions> FROM ... WHERE ...
    std::vector<TableRead> reads;  // per table (JoinRegion::tables)
    // The term it renders (diff::RegionTerm): per outer join, per WHERE
    // subquery; empty for a signed term (inner joins, semi-joins as reads).
    std::vector<Padding> padding = {};
    std::vector<SubqueryRead> subqueries = {};
};

struct JoinRegion {
    std::vector<RegionSource> sources;
    std::vector<BranchTable> tables;
    std::vector<RegionBranch> branches;
    // The effective defining query; key_slot(j) in it stands for the
    // array of identity key j's touched values (a subquery narrowed to the
    // groups those rows can read).
    std::string query;
    // "" or the same rows as `query` read in one pass (no key_slot): what
    // the region reads instead when the touched keys outnumber both
    // kWholeQueryKeys and the stream table's estimated rows. A query that
    // reaches each key by itself (an index probe per key inside, or a
    // subquery per row) costs that many probes; PostgreSQL plans it for
    // a few keys, since it cannot know how many the refresh touches.
    std::string whole_query;
    std::vector<std::string> outputs;  // quoted output columns, in order
    // Per identity key column (IdentityTarget::columns order): whether it
    // can be NULL (then NULL keys are matched too), and whether the query
    // can be filtered on it with `= ANY (array)` (its type has a default
    // equality in pg_catalog and an array type).
    std::vector<bool> key_nullable;
    std::vector<bool> key_filtered;
    // Images carry their multiplicity (a netted image of weight ±w is w
    // rows); finding keys needs each image once, summing needs them all.
    bool image_multiplicity = false;
    // The identity is the key of the table at source position key_source
    // (-1: none), read once in the FROM, and every output row derives from
    // one of its rows. key_rows: the query's select list (as
    // region_key(k), in output order) with that table read from
    // region_new_images(key_source) and every other table as it is.
    int key_source = -1;
    std::string key_rows;
    // That table's key columns (quoted, in the identity's order).
    std::vector<std::string> key_columns;
};

// An inner join kept algebraically: branches (in `region`) select
// (weight, grouping keys, arguments) from the signed change of the join,
// Σ over non-empty table sets S of ± ⋈(images of S, tables now);
// `row_query` selects (keys, arguments) of the join as it is now (columns
// in that order). shape's aggregate arguments read r.__pgt_x<i>.
struct AlgebraicJoin {
    JoinRegion region;  // region.query is unused (the full query is built)
    AlgebraicGroup shape;
    std::string row_query;
};

// An aggregate kept algebraically over one grouped derived table D whose
// aggregated columns it reads (TPC-H q13: `SELECT c_count, count(*) FROM
// (SELECT c_custkey, count(o_orderkey) FROM customer LEFT JOIN orders ...
// GROUP BY c_custkey) c_orders (c_custkey, c_count) GROUP BY c_count`).
// D's change is its rows of the touched keys as they are now (+1) and as
// they were before the change (-1); the outer aggregate takes them as the
// signed rows of an algebraic join.
struct DerivedAggregate {
    // D's sources (their images), the branches selecting the keys of D's
    // groups a change touches (region_key(k)), over `region.tables`.
    JoinRegion region;
    // D's query with source s read as sql::derived_source(s).
    std::string rows;
    // D's key columns (quoted, as `rows` names them), in the order the
    // branches select them; narrow[k]: D may be narrowed by key k with
    // `= ANY (array)` (never NULL, a pg_catalog equality). D narrowed to a
    // superset of the touched keys gives the same change: an untouched
    // group's rows cancel.
    std::vector<std::string> keys;
    std::vector<bool> narrow;
    // Per source: a unique key of the table (quoted columns), by which the
    // table before the change is the table now without the rows of its
    // after-images, with its before-images.
    std::vector<std::vector<std::string>> source_keys;
    // The outer query's (keys, arguments) over D read as region_table(0).
    std::string select;
    AlgebraicGroup shape;   // its arguments read r.__pgt_x<i>
    std::string row_query;  // (keys, arguments) of the outer query now
    // Per identity key of the stream table: as JoinRegion::key_nullable and
    // key_filtered (the rescan of a group the stored state cannot give).
    std::vector<bool> key_nullable;
    std::vector<bool> key_filtered;
};

struct IdentityTarget {
    std::string table;  // quoted, schema-qualified storage table
    rowid::Domain domain = rowid::Domain::kKeylessRow;
    std::vector<std::string> columns;  // quoted output columns the identity encodes
    bool keyed;                        // at most one row per identity (else counted)
    // Keyed: a row is deleted only while it shows the values the change's
    // before-image gives it. IMMEDIATE applies the events of one statement
    // (a writable CTE deleting a key and inserting it again) in an order
    // that need not be the order of their writes.
    bool delete_only_same = false;
};

}  // namespace pgt::ir
