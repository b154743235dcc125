// Facts about PostgreSQL types that generated SQL relies on: whether equal
// values look alike, which equality serves an index or an `= ANY` filter.
// Invariant: each reads PostgreSQL's caches only; the *_be forms aside,
// they run inside pg_call.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/ir/scan.hpp"

extern "C" {
#include "postgres.h"
}

namespace pgt::pg {

// Whether equal values of the type always look the same (MIN/MAX keep the
// stored extreme on a tie only then: 1.0 = 1.00 and 0 = -0 do not). Runs
// under pg_call.
bool ties_look_alike(Oid type, int32 typmod, Oid collation);

// Whether a query can be filtered on a value of the type with
// `x OPERATOR(pg_catalog.=) ANY (ARRAY(...))`: nullopt when it can, else
// the type's name.
std::optional<std::string> unmatchable_type(Oid type);

// The equality of the type's default btree opclass, schema-qualified
// ("OPERATOR(pg_catalog.=)"); "" when it has none. Runs under pg_call.
const char* btree_equality(Oid type);

// The given live columns of a table (attnums), in attnum order, as its
// change images carry them: quoted name and how an unchanged value is told
// (ir::Sameness).
std::vector<ir::SourceColumn> source_columns(Oid relid, const std::vector<int>& attnums);

}  // namespace pgt::pg
