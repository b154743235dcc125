// DIFFERENTIAL refresh of an inner join of two tables by recomputing only
// the output rows whose left or right source row changed.
//
//   window of L ─► keys of changed L rows (old and new images) ─┐
//   window of R ─► keys of changed R rows ──────────────────────┤
//   fresh: the defining query restricted to those keys ─► +1 ───┼─► counted apply
//   stored rows carrying those keys ─────────────────────► -1 ───┘
//
// Why it is exact: every output row comes from one (l, r) pair, and both
// sides' unique keys are output columns. A row whose l and r did not change
// is the same before and after, so only rows carrying a changed key can
// differ; those are removed and recomputed (as a multiset difference, so
// unchanged ones are not rewritten).
// Outer join (LEFT/RIGHT, WHERE on the preserved side only): rows are
// grouped by the preserved side's key p. The region is the changed p keys
// plus the p keys of rows, stored or fresh, whose other-side key changed:
// a p row gains or loses a partner (or its NULL-padded row) only through
// a changed partner it had before or has after.
// Invariant: the defining query is run only under the key restriction,
// which PostgreSQL pushes into the join (the restricted side is read by its
// key, the other through the join condition's index).
#pragma once
#include "core/core.hpp"

#include <string>
#include <vector>

#include "core/ir/scan.hpp"

namespace pgt::diff {

struct JoinSide {
    ir::DeltaInput delta;                  // its Δ
    std::vector<int> key_attnums;          // the unique key's source columns
    std::vector<std::string> key_outputs;  // quoted output columns holding them (same order)
};

struct JoinRescan {
    std::vector<JoinSide> sides;       // in window-parameter order: side i uses $(5i+1)..$(5i+5)
    std::string query;                 // the effective defining query
    std::vector<std::string> outputs;  // quoted output columns, in order
    // Outer join: index in `sides` of the preserved side (its key is never
    // NULL in the output, so rows are grouped by it); -1 for an inner join.
    int preserved = -1;
};

// One statement; returns one row (rows_inserted, rows_deleted, rows_updated).
std::string join_rescan_sql(const JoinRescan& j, const ir::IdentityTarget& target);

}  // namespace pgt::diff
