// The storage contract of a stream table (seed 000 §10): the user's output
// columns plus __pgt_row_id (the V2 identity) and __pgt_row_probe (its
// bounded probe, generated), with a B-tree on the probe.
// Invariant: the probe index is UNIQUE only when the identity is statically
// bounded (probe == id) and not keyless; never an index over the full id.
#pragma once

#include "core/ir/scan.hpp"

#include <string>
#include <utility>
#include <vector>

#include "pg/analyze/defining_query.hpp"
#include "pg/boundary/spi.hpp"
#include "pg/catalog/catalog.hpp"

namespace pgt::pg {

using sql::kRowIdColumn;
using sql::kRowProbeColumn;

// Adds the identity columns and the probe index to a freshly created
// storage table.
void add_identity_storage(Spi& spi, const std::string& quoted_table, const AnalyzedQuery& q);

// The probe index made again for q's identity (UNIQUE when it may be):
// storage whose identity changed, emptied first.
void replace_identity_index(Spi& spi, Oid relid, const AnalyzedQuery& q);

// SQL expression computing __pgt_row_id of one output row of `alias`.
std::string row_id_expression(const catalog::StreamTableRow& st, const std::string& alias);

// The storage table as the apply statements see it: quoted name, identity
// domain and columns, keyed (at most one row per identity) or counted.
ir::IdentityTarget identity_target(const catalog::StreamTableRow& st);

// User-visible columns of a storage table (no __pgt_* columns), in order.
std::vector<OutputColumn> user_columns(Oid relid);

// True when relid's user-visible columns have exactly these names, types,
// typmods and collations, in order.
bool storage_matches(Oid relid, const std::vector<OutputColumn>& cols);

// The quoted, comma-separated user-visible columns of a storage table.
std::string output_column_list(Oid relid);

// Makes the storage's auxiliary columns (every __pgt_* column but the
// identity's and the grouping-set column) exactly `aux` (name, SQL type): others are dropped,
// missing ones added empty (a DIFFERENTIAL refresh recomputes a group whose state is empty; a FULL
// refresh fills them all).
void sync_aux_columns(Spi& spi, Oid relid,
                      const std::vector<std::pair<std::string, std::string>>& aux);

// Raises 55000 when st was written with identity or probe formats other
// than this library's.
void check_identity_versions(const catalog::StreamTableRow& st);

}  // namespace pgt::pg
