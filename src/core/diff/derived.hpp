// Δ of a grouped derived table as signed rows, composed by the algebraic
// aggregate over it (ir::DerivedAggregate; TPC-H q13).
//
//   netted images per source of D ─► branches: keys of D's touched groups
//   D now, narrowed to those keys                     ─► rows +1 ┐
//   D before the change (each source: the table now    ─► rows -1 ┴─► d
//     without its after-images' rows, with its before-images), narrowed
//   d: (weight, outer keys, outer arguments) ─► the algebraic apply
//
// Why it is exact: a group of D no change touched has the same rows in
// both states, so its +1 and -1 rows cancel and narrowing to any superset
// of the touched keys gives the same sums; a touched group's rows are its
// rows before (-1) and now (+1), which is D's change. The before-state of a
// table follows from netted images by its unique key: a key with an
// after-image has that image as its row now; every other row now is as it
// was, and the rows a change removed or replaced are its before-images.
// Invariant: main reads every source's netted before- and after-images
// (DeltaProgram::main_old/main_new), the branches only find keys.
#pragma once
#include "core/core.hpp"

#include <string>

#include "core/diff/program.hpp"
#include "core/ir/scan.hpp"

namespace pgt::diff {

// Images, key branches, full query and main statement (program.hpp).
DeltaProgram derived_aggregate_program(const ir::DerivedAggregate& da,
                                       const ir::IdentityTarget& target);

// Source s of da as it was before the change its images hold: a SELECT of
// the images' columns.
std::string source_before(const ir::DerivedAggregate& da, std::size_t s);

}  // namespace pgt::diff
