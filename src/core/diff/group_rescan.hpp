// DIFFERENTIAL refresh of GROUP BY over one table by recomputing only the
// groups a change touches.
//
//   netted window images (old and new) passing WHERE ─► keys of touched groups
//   source rows of those keys ─► WHERE ─► GROUP BY ─► HAVING ─► fresh rows
//   stream table rows of touched groups: deleted if no fresh row, updated if
//   their values differ, fresh rows without a stored row inserted
//
// Invariant: a group no change touched is neither read nor written; the
// source is read only for the touched keys (an index on the grouping
// columns makes that a lookup), so the cost follows the change.
#pragma once
#include "core/core.hpp"

#include <string>
#include <vector>

#include "core/ir/scan.hpp"

namespace pgt::diff {

// One statement; parameters as in window_predicate; returns one row
// (rows_inserted, rows_deleted, rows_updated).
// The CTEs rows, fresh, f and g of a rescan (for rescan_apply_tail) of the
// groups whose grouping values a CTE `keys` lists (columns __pgt_k1, ...,
// in group_outputs order). Without grouping keys (an aggregate without
// GROUP BY), `keys` has a row (no columns) when the one group is touched.
std::string rescan_keyed_ctes(const ir::GroupRescan& g, const ir::IdentityTarget& target);

// CTE `name`: the rows of `table` (alias a) whose values of exprs equal
// (NULLs matched as values) columns key_cols of some row of CTE `keys`;
// every row when exprs is empty and `keys` has a row. by_array (one
// expression only, see ir::GroupRescan::key_by_array): matched by
// `= ANY (array)` instead of IN.
std::string touched_rows_cte(const std::string& name, const std::string& table,
                             const std::string& a, const std::vector<std::string>& exprs,
                             const std::vector<std::string>& key_cols, bool by_array = false,
                             const std::vector<std::string>& equal = {});

std::string group_rescan_sql(const ir::GroupRescan& g, const ir::IdentityTarget& target);

}  // namespace pgt::diff
