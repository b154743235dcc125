// UNION ALL of one-table levels (see union_all.hpp).
#include "pg/analyze/union_all.hpp"

#include <string>

#include "core/diff/union_all.hpp"
#include "pg/analyze/scan_shape.hpp"

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
#include "parser/parsetree.h"
}

namespace pgt::pg {

namespace {

constexpr const char* kSetOperations =
    "UNION, INTERSECT or EXCEPT other than a UNION ALL of SELECTs that each read one table "
    "(a WHERE and a select list, no grouping, DISTINCT, window or LIMIT)";

// The first reason an arm's table is not read as plain columns of a table
// capture follows; "" when there is none.
std::string arm_blocker(Query* arm) {
    if (list_length(arm->rtable) != 1) {
        return "";  // not one table: the tree already refused it
    }
    const RangeTblEntry* rte = static_cast<RangeTblEntry*>(linitial(arm->rtable));
    if (const char* b = relation_blocker(rte)) {
        return b;
    }
    const char* system_column = nullptr;
    bool row_value = false;
    (void)referenced_attnums(arm, 1, rte->relid, true, &system_column, &row_value);
    if (system_column != nullptr) {
        return std::string("the system column ") + system_column;
    }
    return row_value ? row_value_blocker(rte->relid) : "";
}

// The first blocker among the arms under n (a set operation's tree).
std::string arms_blocker(Query* q, Node* n) {
    if (IsA(n, RangeTblRef)) {
        RangeTblEntry* rte = rt_fetch(castNode(RangeTblRef, n)->rtindex, q->rtable);
        return rte->subquery != nullptr ? arm_blocker(rte->subquery) : "";
    }
    SetOperationStmt* s = castNode(SetOperationStmt, n);
    std::string b = arms_blocker(q, s->larg);
    return b.empty() ? arms_blocker(q, s->rarg) : b;
}

}  // namespace

void derive_union_all(Query* q, AnalyzedQuery& out) {
    // An arm's own blocker first: a system column leaves the arm without
    // image texts, which the tree would only report as no sum of arms.
    const std::string b = arms_blocker(q, q->setOperations);
    if (!b.empty()) {
        out.differential_blocker = b + " (in an arm of a set operation)";
    } else if (!diff::union_all_arms(out.operators)) {
        out.differential_blocker = kSetOperations;
    }
}

}  // namespace pgt::pg
