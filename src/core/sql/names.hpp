// The names pg_trickle gives its own columns, aliases, relations and text
// tokens in stored rows and generated SQL, declared once. They all start
// with kReservedPrefix, which a defining query may not use for an output
// column (42939), so none can meet a user's name.
// Invariant: every such name that more than one file relies on (storage
// and its statements, an image step and the code that receives its rows,
// analysis and the rules) is spelled only here; other code refers to these
// constants, or to the functions below for numbered names. A name local to
// one statement builder (a CTE column used within that statement) stays
// there.
#pragma once
#include "core/core.hpp"

#include <cstddef>
#include <string>

namespace pgt::sql {

inline constexpr const char* kReservedPrefix = "__pgt_";

// --- Columns of a stream table's storage -----------------------------------
// The row identity (docs/row-identity-v2.md) and its probe.
inline constexpr const char* kRowIdColumn = "__pgt_row_id";
inline constexpr const char* kRowProbeColumn = "__pgt_row_probe";
// GROUPING of every grouping expression, for grouping-sets queries.
inline constexpr const char* kGroupingSetColumn = "__pgt_gset";

// --- Delta statements ------------------------------------------------------
// The alias a source row's expressions are deparsed against, so they
// evaluate over change images.
inline constexpr const char* kImageAlias = "__pgt_src";
// The sign of an image: -1 before-image, +1 after-image.
inline constexpr const char* kSignColumn = "__pgt_sign";
// A buffer row read once for both images: whether each is in the window.
inline constexpr const char* kKeepOldColumn = "__pgt_keep_old";
inline constexpr const char* kKeepNewColumn = "__pgt_keep_new";
// An image step's first column: the row is a before-image.
inline constexpr const char* kIsOldColumn = "__pgt_is_old";
// A branch's derived table of images that drives the join from the change.
inline constexpr const char* kDriveAlias = "__pgt_drive";
// The weight of a signed term of an algebraic join.
inline constexpr const char* kWeightColumn = "__pgt_w";

// The image relations of source i a join branch reads.
inline std::string old_images(std::size_t source) {
    return "__pgt_old_" + std::to_string(source);
}
inline std::string new_images(std::size_t source) {
    return "__pgt_new_" + std::to_string(source);
}
inline std::string delta_images(std::size_t source) {
    return "__pgt_delta_" + std::to_string(source);
}
// Table i (0-based, in the order the analyzer finds a join region's tables)
// as a branch of the region reads it: a CTE the branch defines as the table
// now, its kept copy or its source's images (diff::compose_branch).
inline constexpr const char* kRegionTablePrefix = "__pgt_rel_";
// The rows a FULL refresh writes, computed by a statement of their own
// (diff::full_diff_steps) and read by the one that writes them.
inline constexpr const char* kFullRowsRelation = "__pgt_full_rows";
inline std::string region_table(std::size_t i) {
    return kRegionTablePrefix + std::to_string(i);
}
// The j-th (0-based) identity key column a branch selects.
inline std::string key_column(std::size_t j) {
    return "__pgt_k" + std::to_string(j + 1);
}
// Source s (0-based) of a grouped derived table as the table's rows are
// computed over it: a CTE defined as the table now or as it was before
// the change (diff::derived_aggregate_program).
inline constexpr const char* kDerivedSourcePrefix = "__pgt_tab_";
inline std::string derived_source(std::size_t s) {
    return kDerivedSourcePrefix + std::to_string(s);
}
// The i-th (0-based) aggregate argument column of an algebraic join's rows.
inline std::string argument_column(std::size_t i) {
    return "__pgt_x" + std::to_string(i + 1);
}

// --- IMMEDIATE: transition tables, registered under these names ------------
// One source: an UPDATE's old and new rows; a DELETE's old rows and an
// INSERT's new rows when one statement has several events.
inline constexpr const char* kTransitionOld = "__pgt_old";
inline constexpr const char* kTransitionNew = "__pgt_new";
inline constexpr const char* kTransitionDeleted = "__pgt_old_del";
inline constexpr const char* kTransitionInserted = "__pgt_new_ins";
// Several sources: source position i's relation of kind (old, new, del, ins).
inline std::string source_transition(std::size_t source, const char* kind) {
    return std::string("__pgt_tr_") + kind + "_" + std::to_string(source);
}

// --- Text tokens -----------------------------------------------------------
// In a stored program's main statement: where the branches that run go.
inline constexpr const char* kBranchesMarker = "/*__pgt_branches__*/";
// Markers around an expression appended to a select list to deparse it in
// its query's context (analysis): `0 AS <open>i, <expr> AS <close>i`.
inline constexpr const char* kDeparseOpen = "__pgt_a";
inline constexpr const char* kDeparseClose = "__pgt_e";

}  // namespace pgt::sql
