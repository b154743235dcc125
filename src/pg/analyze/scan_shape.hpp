// Can DIFFERENTIAL maintain this query, and if so its scan/filter/project
// shape with expressions deparsed for evaluation over change images.
// Invariant: anything not proven to be a plain scan → filter → project of
// one table is a blocker with a name a user recognises ("a join", ...).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pg/analyze/defining_query.hpp"

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
#include "nodes/primnodes.h"
}

namespace pgt::pg {

// The construct DIFFERENTIAL names when WITH queries stay (they could not
// be inlined, or the inlined query is not incremental either).
inline constexpr const char* kWithQueries = "WITH queries";

// Sets out.differential_blocker, or out.scan when there is none.
void derive_scan_shape(Query* q, AnalyzedQuery& out);

// Columns of range-table entry rtindex (table relid) that q's own level
// reads (all of them for a whole-row reference), ascending.
// read_target_list false: q is the subquery of an EXISTS whose selected
// values are never looked at, so its select list does not count.
// system_column: set to the name of a system column read (ctid, xmin, ...),
// if any (change images have none). row_value: set when the whole row is
// read other than by IS [NOT] NULL of it (a change image is a row of the
// same columns, but not of the table's row type).
std::vector<int> referenced_attnums(Query* q, Index rtindex, Oid relid,
                                    bool read_target_list = true,
                                    const char** system_column = nullptr,
                                    bool* row_value = nullptr);

// The DIFFERENTIAL blocker for such a read of relid's whole row.
std::string row_value_blocker(Oid relid);

// The columns of relid that one-table level q (its range-table entry 1)
// reads, into attnums; the reason they are not plain user columns, as
// change images carry them (a system column, the row read as a value),
// or "" when they are.
std::string image_columns_blocker(Query* q, Oid relid, std::vector<int>& attnums);

// Calls fn(a, b) for every `a = b` between plain columns of two different
// range-table entries at the top level of the AND in quals (mergejoinable
// equality: what an index on either column serves). Runs inside pg_call.
void for_each_column_equality(Node* quals, const std::function<void(const Var*, const Var*)>& fn);

// fn(op, left, right) for every conjunct of quals that is a two-argument
// operator (quals: an expression or an implicit-AND list).
void for_each_binary_conjunct(Node* quals, const std::function<void(OpExpr*, Node*, Node*)>& fn);

// The conjuncts of quals (its top-level AND) that read only range-table
// entry rtindex (table relid), only user columns, and cannot raise on any
// row (operators of btree families, leakproof functions; constants aside),
// deparsed against kScanAlias and joined by AND; "" when there are none.
// Such conjuncts may filter change images before netting.
std::string image_prefilter(Node* quals, Index rtindex, Oid relid);

// `arg opno ANY (values)`, values the array parameter ir::key_slot(slot)
// of type `element`'s array (collation `collation`): a condition narrowing
// a query to identity key `slot`'s touched values. Null when `element` has
// no array type. Runs under pg_call.
Expr* among_touched_keys(Expr* arg, Oid opno, Oid inputcollid, Oid element, Oid collation,
                         int slot);

// What keeps a FROM item from being a DIFFERENTIAL source, or nullptr.
const char* relation_blocker(const RangeTblEntry* rte);

// Volatile functions block DIFFERENTIAL (named); stable ones are listed for
// the WARNING. Returns false when a blocker was set.
bool check_functions(Query* q, AnalyzedQuery& out);

// One aggregate kept algebraically and the aggregate call it is.
struct AlgebraicOutput {
    ir::AlgebraicAgg agg;
    const Aggref* aggref;
};

struct AlgebraicOutputs {
    // Bare aggregate outputs and the aggregates inside output expressions
    // (agg.output -1), in select-list order.
    std::vector<AlgebraicOutput> aggs;
    std::vector<std::string> templates;  // per output, ir::AlgebraicGroup's
};

// q's aggregates when every output is a grouping key or an algebraic
// aggregate and there is no HAVING (core/diff/algebraic), in output order;
// arguments deparsed with ctx (left empty without one).
std::optional<AlgebraicOutputs> algebraic_outputs(Query* q, List* ctx);

// Per output position in key_columns: whether equal values of its type
// always look the same (numeric 1.0 = 1.00 do not).
std::vector<bool> keys_look_alike(Query* q, const std::vector<int>& key_columns);

}  // namespace pgt::pg
