// UNION ALL of one-table levels (see union_all.hpp).
#include "pg/analyze/union_all.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "core/diff/union_all.hpp"
#include "core/sql/names.hpp"
#include "pg/analyze/derived_aggregate.hpp"
#include "pg/analyze/scan_shape.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"
#include "pg/common/quote.hpp"

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
#include "parser/parsetree.h"
#include "utils/ruleutils.h"
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
    std::vector<int> attnums;
    return image_columns_blocker(arm, rte->relid, attnums);
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

namespace {

// The union q aggregates: its one FROM item (aggregated_subquery), when
// that is a set operation without ORDER BY, LIMIT or WITH of its own.
RangeTblEntry* union_in_from(Query* q, const AnalyzedQuery& out) {
    RangeTblEntry* rte = aggregated_subquery(q, out);
    if (rte == nullptr) {
        return nullptr;
    }
    const Query* u = rte->subquery;
    return u->setOperations != nullptr && u->cteList == NIL && u->sortClause == NIL &&
                   u->limitCount == nullptr && u->limitOffset == nullptr
               ? rte
               : nullptr;
}

}  // namespace

void derive_union_aggregate(Query* q, AnalyzedQuery& out) {
    RangeTblEntry* rte = union_in_from(q, out);
    if (rte == nullptr) {
        return;
    }
    Query* u = rte->subquery;
    if (diff::aggregated_union(out.operators) < 0 || !arms_blocker(u, u->setOperations).empty()) {
        return;
    }
    RegionShape region;
    if (!outer_algebraic_form(q, out, region)) {
        return;
    }
    ListCell* lc;
    foreach (lc, rte->eref->colnames) {
        const std::string name = quote_ident(strVal(lfirst(lc)));
        // The refresh names the union's columns in a column list.
        if (std::find(region.union_columns.begin(), region.union_columns.end(), name) !=
            region.union_columns.end()) {
            return;
        }
        region.union_columns.push_back(name);
    }
    const std::string u_sql = with_pinned_search_path(
        [&] { return std::string(pg_call([&] { return pg_get_querydef(u, false); })); });
    region.row_query = "WITH " + sql::region_table(0) + " AS NOT MATERIALIZED (" + u_sql + ") " +
                       region.derived_select;
    region.union_aggregate = true;
    out.region = std::move(region);
    out.differential_blocker.clear();
}

}  // namespace pgt::pg
