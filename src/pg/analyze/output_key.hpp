// The unique keys PostgreSQL's metadata proves for a table, and which of
// them a query level selects; the operator tree's identity rules
// (core/ir/tree.cpp) build a stream table's row identity from them.
// Invariant: a key is claimed only when an index proves every row unique
// on it (immediate, not partial, plain NOT NULL columns or the primary key).
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

// A unique key (primary key first, then NOT NULL unique indexes) of the
// table at rtindex whose columns are all selected as plain columns: their
// output positions and attribute numbers, in key order.
// Every proven unique key of a table as attribute numbers: the primary
// key first, then immediate, non-partial, plain-column unique indexes on
// NOT NULL columns.
std::vector<std::vector<int>> unique_keys(Oid relid);

struct SelectedKey {
    std::vector<int> outputs;
    std::vector<int> attnums;
};
std::optional<SelectedKey> selected_unique_key(Query* q, Index rtindex);

}  // namespace pgt::pg
