// The operator tree of a defining query: what the query computes, one node
// per relational operator, with typed column references between nodes and
// the row identity of every node's output (seed 000 domains). The analyzer
// lowers PostgreSQL's analysed Query to it (src/pg/analyze/lower_tree);
// identity rules and the explain text live in core (tree.cpp).
//
//   Project (id, total)            identity SCAN_KEY (id)
//     Filter (t.total > 0)
//       Scan public.t              unique keys (id)
//
// Invariant: a node's children are computed before it (indexes into
// Tree::nodes smaller than its own), and a ColumnRef names a column of one
// of the node's own children.
#pragma once
#include "core/core.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ir/scan.hpp"
#include "core/rowid/format.hpp"

namespace pgt::ir {

enum class Op : std::uint8_t {
    kScan,            // a table, view or other relation, by name
    kValues,          // VALUES (...)
    kFunctionScan,    // a function in FROM (also ROWS FROM, TABLE functions)
    kCteScan,         // a WITH query read by name (its tree is the child)
    kSubquery,        // a derived table: FROM (SELECT ...) alias
    kFilter,          // WHERE or HAVING
    kProject,         // the select list
    kProjectSet,      // a select list with set-returning functions
    kJoin,            // JOIN ... ON, comma lists (inner, no condition)
    kAggregate,       // GROUP BY keys and aggregates (no keys: one row)
    kGroupingSets,    // GROUPING SETS / ROLLUP / CUBE
    kDistinct,        // DISTINCT, DISTINCT ON
    kWindow,          // window functions
    kSetOp,           // UNION / INTERSECT / EXCEPT [ALL]
    kRecursiveUnion,  // WITH RECURSIVE: the non-recursive and recursive terms
    kLimit,           // ORDER BY ... LIMIT / OFFSET
};

enum class JoinKind : std::uint8_t { kInner, kLeft, kRight, kFull, kSemi, kAnti };

enum class SetOpKind : std::uint8_t { kUnion, kIntersect, kExcept };

// A column of a child node's output.
struct ColumnRef {
    int node = -1;    // index in Tree::nodes
    int column = -1;  // position in that node's columns
    bool operator==(const ColumnRef&) const = default;
};

struct Column {
    std::string name;              // as PostgreSQL names it (not quoted)
    uint32_t type = 0;             // type OID
    std::string expr;              // deparsed expression, "" when unknown or a plain reference
    std::optional<ColumnRef> ref;  // the child column it is, when it is one unchanged
    // The expression deparsed over kImageAlias (schema-qualified, every
    // column prefixed), so it can be evaluated over change images; set on
    // the nodes of a level that reads one table (Node::images).
    std::string image;
    // Equal values of its type always look the same (numeric 1.0 = 1.00 do
    // not); set with image.
    bool alike = false;
    // The equality of its type's default B-tree class, written
    // OPERATOR(schema.=), when that is not pg_catalog's (a user-defined
    // type's): a refresh resolves a bare `=` through its pinned search_path,
    // which holds pg_catalog only. "" otherwise; set with image.
    std::string equal = {};
};

// The row identity of a node's output: the domain, and for keys, the
// candidate keys (columns of this node), the one used first. A keyed
// identity proves at most one row per key value.
struct Identity {
    rowid::Domain domain = rowid::Domain::kKeylessRow;
    std::vector<std::vector<int>> keys;
    // Grouping sets: the hidden set column belongs to the key.
    bool set_column = false;
    bool keyed() const { return domain != rowid::Domain::kKeylessRow; }
};

struct Node {
    Op op = Op::kScan;
    std::vector<int> children;    // relational inputs, in order
    std::vector<Column> columns;  // the output
    // kScan: relation name (quoted, schema-qualified); kFunctionScan: the
    // function; kCteScan: the WITH query's name.
    std::string relation;
    uint32_t relid = 0;  // kScan
    // kScan: every proven unique key (primary key first, then NOT NULL
    // unique indexes), as column positions.
    std::vector<std::vector<int>> unique_keys;
    bool sampled = false;   // kScan: TABLESAMPLE
    std::string condition;  // kFilter: predicate; kJoin: ON ("" for a cross join)
    // A level that reads one table has its expressions deparsed a second
    // time, over the scan's change images (Column::image):
    //   kScan:   images is true, image_columns the columns the level reads
    //            (attnum order), each as the table's change images carry it;
    //   kFilter: image_condition is the condition over the images, and
    //            prefilter (WHERE) its conjuncts that cannot raise on any
    //            row ("" none): they may drop images before netting.
    bool images = false;
    std::vector<SourceColumn> image_columns;
    std::string image_condition;
    std::string prefilter;
    // kAggregate of a one-table level whose every output is a grouping key,
    // an aggregate kept algebraically (core/diff/algebraic) or an expression
    // over such aggregates, without HAVING: algebraic is true, the
    // aggregates' arguments are over the images, and output_templates has
    // per output of the level's Project "" or its expression over
    // ir::agg_slot(i).
    bool algebraic = false;
    std::vector<AlgebraicAgg> algebraic_aggs;
    std::vector<std::string> output_templates;
    // kGroupingSets of a one-table level DIFFERENTIAL maintains (set by
    // analysis once the sets are within the branch limit): the grouping
    // expressions over the images, in GROUPING order, and one arm per set.
    std::vector<std::string> grouping_keys;
    std::vector<GroupingSetArm> arms;
    // kJoin and kFilter: conjuncts of the condition `a = b` between two of
    // the node's columns, by their type's default equality (a deterministic
    // collation): every row the node passes has a and b equal, not NULL.
    std::vector<std::pair<int, int>> equalities;
    JoinKind join = JoinKind::kInner;
    SetOpKind set_op = SetOpKind::kUnion;
    bool all = false;  // kSetOp: ALL
    // kAggregate/kGroupingSets: columns [0, key_count) are the grouping
    // keys, the aggregates follow.
    int key_count = 0;
    bool keyed_sets = false;  // kGroupingSets: every row unique by (keys, set)
    // kDistinct with DISTINCT ON: the output positions of its expressions
    // (-1 for one not selected); empty for plain DISTINCT.
    std::vector<int> distinct_on;
    bool on = false;     // kDistinct: DISTINCT ON
    std::string detail;  // shown by explain: ORDER BY, LIMIT, the aggregates
    Identity identity;   // set by derive_identities
    std::string rule;    // the differentiation rule chosen for this node ("" none)
    // Printed under the node, one per line: the terms of its rule (a join's
    // branches, as diff::describe_plan writes them).
    std::vector<std::string> rule_terms;
};

struct Tree {
    std::vector<Node> nodes;
    int root = -1;

    int add(Node n) {
        nodes.push_back(std::move(n));
        return static_cast<int>(nodes.size()) - 1;
    }
    const Node& at(int i) const { return nodes.at(static_cast<std::size_t>(i)); }
    Node& at(int i) { return nodes.at(static_cast<std::size_t>(i)); }
};

const char* op_name(Op op);
const char* join_kind_name(JoinKind kind);

// Decides every node's identity, children first (the rules: tree.cpp).
void derive_identities(Tree& t);

// The root's identity as the stream table uses it: domain and output
// positions of its key (keyless: empty; grouping sets: the hidden set
// column, position columns.size(), last).
struct RootIdentity {
    rowid::Domain domain = rowid::Domain::kKeylessRow;
    std::vector<int> columns;
};
RootIdentity root_identity(const Tree& t);

// The table (relid) whose unique key the root's identity is, when it is one
// table's key carried up unchanged (scan_key through filters, projections
// and joins) and that table is read once in the whole query; 0 otherwise.
// Rows of the result then each derive from one row of that table.
// columns: per column of the root's identity key (root_identity order),
// the table column it is (its position in the scan's columns).
struct IdentitySource {
    uint32_t relid = 0;
    std::vector<int> columns;  // positions in the scan's columns (attnum - 1)
};
IdentitySource identity_source(const Tree& t);
uint32_t identity_relation(const Tree& t);

// The scan column that column `column` of node `node` is, followed through
// unchanged references (ColumnRef); nullopt when it is computed.
std::optional<ColumnRef> scan_column(const Tree& t, int node, int column);

// The tree for explain_st: one node per line, children indented under
// their parent, each with its identity and rule; a line wider than
// sql::kPlanWidth continues on the next (sql::wrap_lines).
std::string format_tree(const Tree& t);

}  // namespace pgt::ir
