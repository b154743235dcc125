// Which output columns identify a stream-table row: the row identity shape
// of a defining query (seed 000: SCAN_KEY, GROUP_KEY, SYNTHETIC singleton,
// or KEYLESS_ROW over every column).
// Invariant: a key is claimed only when PostgreSQL's own metadata proves
// the output rows unique on it; anything unproven is KEYLESS_ROW.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pg/analyze/defining_query.hpp"

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace pgt::pg {

// Derives the identity shape of an analyzed (not rewritten) query whose
// user-visible output columns are cols.
RowIdentityShape derive_row_identity(Query* q, const std::vector<OutputColumn>& cols);

// A unique key (primary key first, then NOT NULL unique indexes) of the
// table at rtindex whose columns are all selected as plain columns: their
// output positions and attribute numbers, in key order.
struct SelectedKey {
    std::vector<int> outputs;
    std::vector<int> attnums;
};
std::optional<SelectedKey> selected_unique_key(Query* q, Index rtindex);

}  // namespace pgt::pg
