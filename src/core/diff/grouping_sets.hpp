// DIFFERENTIAL refresh of GROUP BY GROUPING SETS/ROLLUP/CUBE over one table
// by recomputing, in every set, only the groups a change touches.
//
//   netted window images passing WHERE ─► keys: every grouping expression
//   per set s (arm): source rows whose values of s's expressions are among
//     the keys' ─► WHERE ─► GROUP BY s's expressions ─► HAVING ─► fresh rows
//     (the empty set: every row, when any key exists; one row even when
//     none passes WHERE, as PostgreSQL gives it)
//   touched identities: per set, (keys with absent expressions NULL, set)
//   rescan apply: stored rows of touched identities replaced by fresh ones
//
// Invariant: an identity is (grouping expressions..., GROUPING value); the
// arm of set s computes exactly the rows PostgreSQL's grouping-sets
// aggregate gives for s, so a touched group is recomputed whole.
#pragma once
#include "core/core.hpp"

#include <string>

#include "core/ir/scan.hpp"

namespace pgt::diff {

// One statement; parameters as in window_predicate; returns one row
// (rows_inserted, rows_deleted, rows_updated). target: group_key over the
// grouping expressions' output columns then the set column.
std::string grouping_sets_rescan_sql(const ir::GroupingSetsRescan& g,
                                     const ir::IdentityTarget& target);

}  // namespace pgt::diff
