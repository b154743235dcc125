// GROUP BY GROUPING SETS / ROLLUP / CUBE: the expanded sets, the hidden
// column that tells them apart, and the per-set queries DIFFERENTIAL
// maintains.
//
// A grouping-sets query is the UNION ALL of one plain GROUP BY per set: in
// set s, a grouping expression absent from s reads as NULL outside the
// aggregates and GROUPING(...) is a constant. Its rows are identified by
// the grouping expressions plus GROUPING(every grouping expression), kept in
// the hidden column __pgt_gset (a real NULL key and the NULL of a rolled-up
// key then differ). The sets must be distinct (GROUP BY DISTINCT removes
// duplicates) and there are at most 31 grouping expressions (GROUPING's
// limit).
// Invariant: set values use GROUPING's bit order (expression j of the
// group clause is bit n-1-j, set when absent), the same in the identity,
// in the stored column and in every generated branch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pg/analyze/defining_query.hpp"

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace pgt::pg {

// Identity expansion bound: more sets than this are keyless (recomputed by
// FULL only); the setting pg_trickle.max_grouping_set_branches cannot
// exceed it.
inline constexpr int kMaxGroupingSets = 65536;

enum class GroupingSetsVerdict {
    kNone,        // no GROUPING SETS
    kKeyed,       // distinct sets, every expression selected, 1..31 expressions
    kTooMany,     // expands to more than the bound given
    kDuplicate,   // two sets equal (no GROUP BY DISTINCT)
    kUnselected,  // a grouping expression is not in the select list
    kTooWide,     // no grouping expression, or more than 31
};

struct GroupingSets {
    GroupingSetsVerdict verdict = GroupingSetsVerdict::kNone;
    std::vector<uint32_t> values;  // GROUPING(every expression) per set, expansion order
};

// q's grouping sets expanded with at most `limit` sets.
GroupingSets grouping_sets_of(Query* q, int limit);

// Why DIFFERENTIAL cannot keep q's grouping sets ("" when it can, given
// the setting's limit); sets *over_limit when only the limit is the reason.
std::string grouping_sets_blocker(Query* q, int limit, bool* over_limit);

// Appends the hidden output GROUPING(every grouping expression) AS
// __pgt_gset to q (call after every other analysis step, before deparsing).
void append_grouping_set_column(Query* q);

// Whether q's grouping sets include the empty one (a grand total, which
// DIFFERENTIAL recomputes from every row when anything changed).
bool has_empty_grouping_set(Query* q);
inline constexpr const char* kEmptySetReason =
    "the empty grouping set (the grand total) over all rows";

// A branch selecting the n grouping expressions (__pgt_k1..n) turned into
// one row per set: its projection (absent expressions NULL) and the set
// value as __pgt_k<n+1>.
std::string each_grouping_set(const std::string& branch, std::size_t n,
                              const std::vector<uint32_t>& sets);

// q (with the hidden set column) as the UNION ALL of one plain GROUP BY
// per set, deparsed.
std::string grouping_sets_union(Query* q, const std::vector<uint32_t>& sets);

// Removes the hidden column appended by append_grouping_set_column (a
// GROUPING() named __pgt_gset, last in the select list), if present.
void drop_grouping_set_column(Query* q);

// Fills the grouping keys and arms of the GroupingSets node of a
// single-table query whose sets are kKeyed (deparsed over kScanAlias, the
// table relid).
void derive_scan_grouping_sets(Query* q, Oid relid, ir::Node& sets);

}  // namespace pgt::pg
