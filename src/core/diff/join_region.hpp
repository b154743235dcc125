// DIFFERENTIAL refresh of an inner join of several tables (plain, GROUP BY
// or DISTINCT) by recomputing the region of output rows whose identity key
// a change touches.
//
//   windows ─► netted images per source, kept by the refresh as two
//              relations with exact row counts (ephemeral named relations):
//              __pgt_old_i (before), __pgt_new_i (after)
//   keys = ∪ branches: identity keys of join rows that contain a changed row
//            • new rows: one table's after-images × the other tables now
//            • old rows: a non-empty subset of the tables' before-images ×
//              the other tables now (every mix of before-images, so a row
//              whose partner was changed or deleted in the same window is
//              found: EC-01)
//   (a table "now" is read from its kept copy where it has one,
//    ir::KeptCopy: its filtered rows, kept exact by kept_steps; each
//    branch defines what it reads, compose_branch)
//   fresh: the defining query restricted to those keys (pushed down into
//          the join and below GROUP BY by PostgreSQL)
//   keyed (GROUP BY, DISTINCT): rescan apply of the touched identities
//   counted (plain join):      fresh (+1) ∪ stored rows of the keys (−1)
//
// Why the keys are enough: an output row can differ only if a join row it
// comes from contains a changed source row, before or after. A join row of
// the old state is a choice per table of an unchanged row (present now) or
// a before-image; one of the subsets enumerates it (unchanged rows are in
// the current tables). The branches may also find keys of rows that never
// existed (a before-image next to a current row); recomputing an extra
// region is exact, only wasted work.
// Invariant: the stored rows of a region and its fresh rows are both
// selected by the same identity, so the region is replaced whole.
#pragma once
#include "core/core.hpp"

#include <string>
#include <vector>

#include "core/diff/program.hpp"
#include "core/ir/scan.hpp"

namespace pgt::diff {

// CTEs g, fr and f over a CTE `keys` (columns region_key(k)): g the
// identities of the keys, f the rows of j.query with those identities
// (the query narrowed by a filter PostgreSQL pushes down; not run at all
// when keys is empty).
std::string region_rescan_ctes(const ir::JoinRegion& j, const ir::IdentityTarget& target);

// The image steps (one per source) and the main statement; see program.hpp.
// Unless netted_only, the image steps read every captured image (no sort
// to net them) and the netted ones are the fallback image steps: the
// branches compute on captured states that a later change in the window
// replaced, and such a state may make an expression raise.
DeltaProgram join_region_program(const ir::JoinRegion& j, const ir::IdentityTarget& target,
                                 bool netted_only = false);

// IMMEDIATE, j.key_source >= 0: a statement that wrote only the table at
// that source position changed exactly the rows of the keys in its
// transition tables (every row of the result derives from one row of that
// table, by its key): f is j.key_rows over the new rows (the other tables
// as they are), s the identities j.key_rows gives over the old rows (the
// other tables are as the statement found them), which are the ones of f
// already stored (the stream table equals its query at the statement's
// start): the apply reads s instead of probing the stream table for every
// new row. Columns of each transition relation are the table's own.
std::string key_table_statement(const ir::JoinRegion& j, const ir::IdentityTarget& target);

// DIFFERENTIAL, j.key_source >= 0, for a refresh whose only changes are in
// the window of that table (the others' windows are empty, so they are as
// they were at the last refresh): each key's last event in the window
// (last_event_ctes, the table's key is unique and checked at once) says
// what the key's row is now, so f is j.key_rows over the after-images of
// the keys that arrive, with the other tables as they are, and every key
// with an event is probed for its stored row (stored_apply_tail). The
// statement takes every window's parameters (5 per window, as main).
std::string key_window_statement(const ir::JoinRegion& j, const ir::IdentityTarget& target);

// The image statement of one source: its netted window (parameters
// $1..$5), as (is_old, every live column); with multiplicity, an image of
// net weight ±w as w rows, else once.
std::string region_images_sql(const ir::RegionSource& s, bool multiplicity = false);
// The same relation unnetted: every captured image once, each of weight ±1,
// as paired_images rows (one pass over the buffer).
std::string region_images_unnetted_sql(const ir::RegionSource& s);

// A branch's text with the tables it reads defined: `body` reads table i
// as sql::region_table(i); each is defined, as `reads` says, as the table
// now (the kept copy kept[source] where that is not ""), or its source's
// before-, after- or signed images. Inlined by PostgreSQL (NOT MATERIALIZED),
// so the branch is planned as if it named them itself.
std::string compose_branch(const std::string& body, const std::vector<ir::BranchTable>& tables,
                           const std::vector<ir::TableRead>& reads,
                           const std::vector<std::string>& kept = {});

// j's branches with the tables they read defined (compose_branch), and
// which sources' images each reads (Branch).
std::vector<Branch> composed_branches(const ir::JoinRegion& j);

// The statements that keep each kept copy of j's sources (KeptStep).
std::vector<KeptStep> kept_steps(const ir::JoinRegion& j);

// Names of the image CTEs the branches read.
std::string region_old_images(std::size_t source);
std::string region_new_images(std::size_t source);
// Both kinds of images, then a column __pgt_sign (int8: -1 before, +1 after).
std::string region_delta_images(std::size_t source);

// Name of the j-th key column a branch must select (0-based).
std::string region_key(std::size_t j);

}  // namespace pgt::diff
