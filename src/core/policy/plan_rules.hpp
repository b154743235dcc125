// Cost rules of how a refresh reads its inputs, decided from the planner's
// estimates at creation and from exact row counts at refresh time.
// Invariant: pure functions of numbers; a rule only changes how much work
// a refresh does, never its result.
#pragma once
#include "core/core.hpp"

#include <cstdint>

namespace pgt::policy {

// A prefilter the planner expects to keep at most this share of its
// table's rows has both images of a buffer row read in one scan of the
// buffer (ir::ScanFilterProject::one_pass).
inline constexpr double kOnePassFraction = 0.1;

// Whether a one-table level's images are read in one pass: the table has
// `rows` rows (the planner's estimate; <= 0 unknown) and its prefilter is
// expected to keep `kept` (< 0 unknown).
bool one_pass_images(double rows, double kept);

// A table under this many rows gets no kept copy unless the configured
// fraction is 1: probing the table itself is cheap already.
inline constexpr double kKeptCopyMinRows = 10000;

// Whether a kept copy of a join source pays: its filter is expected to
// keep at most `fraction` (pg_trickle.kept_copy_fraction) of the table's
// `rows`; with fraction >= 1 every candidate gets one.
bool kept_copy_pays(double rows, double kept, double fraction);

// The size class a statement reading registered relations is planned for,
// per relation: floor(log2(rows + 1)). PostgreSQL takes a registered
// relation's row count when it plans; one plan serves counts within a
// factor of 2 of those it was made for.
int plan_size_class(double rows);

}  // namespace pgt::policy
