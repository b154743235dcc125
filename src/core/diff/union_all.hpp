// Δ of UNION ALL, the sum of its arms' Δ:
//
//   Δ(A UNION ALL B) = Δ(A) UNION ALL Δ(B)
//
// Each arm, a level that reads one table (Project [Filter] Scan), is
// differentiated by the linear rules (linear.hpp) over its table's Δ and
// evaluated on its netted images: rows of the union's output, each with
// the sign of its image. A union of rows proves no key, so the stream
// table is counted: each row's net count adds or removes copies of it.
// Two arms reading one table read its one Δ, each through its own WHERE
// and select list.
// Invariant: the arms keep their order, so the union of their signed rows
// resolves each column's type over the arms as the defining query does.
#pragma once
#include "core/core.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/diff/program.hpp"
#include "core/ir/scan.hpp"
#include "core/ir/tree.hpp"

namespace pgt::diff {

// The arms of node `node` of t (default: the root) when it is UNION ALL
// (nested UNION ALLs included) over levels the linear rules differentiate:
// their roots, left to right; nullopt otherwise.
std::optional<std::vector<int>> union_all_arms(const ir::Tree& t, int node = -1);

// The UNION ALL (as union_all_arms takes it) that t's aggregate level
// reads as its one FROM item — Project, Aggregate, [Filter], Subquery over
// it — when the Aggregate is the level's one: its node; -1 otherwise.
int aggregated_union(const ir::Tree& t);

// An arm differentiated: its Δ with its outputs named as the stream
// table's columns, and its source's window block (parameters
// $(base+1)..$(base+5); unused over transition tables).
struct UnionArm {
    ir::ScanFilterProject scan;
    int base = 0;
    uint32_t relid = 0;  // the table it reads
};

// Where an arm's table's Δ comes from: its input and window block.
struct UnionInput {
    ir::DeltaInput delta;
    int base = 0;
};

// The arms of t's node `node` (union_all_arms; default the root)
// differentiated, each over input(relid of its table), its outputs named
// `names` (quoted: the stream table's columns, or the union's under an
// aggregate); nullopt when that node is no such union.
std::optional<std::vector<UnionArm>> differentiate_union_all(
    const ir::Tree& t, const std::function<UnionInput(uint32_t)>& input,
    const std::vector<std::string>& names, int node = -1);

// The statement: every arm's netted images evaluated through its WHERE
// and select list, their signed rows summed per identity and image, and
// as many copies added or removed. Throws kInternalError for a keyed
// target or no arms.
std::string union_all_sql(const std::vector<UnionArm>& arms, const ir::IdentityTarget& target);

// Aggregates over the union kept algebraically (an aggregate level whose
// FROM is the union: aggregated_union): the arms' signed rows — each netted
// row as many times as its weight — are the union's rows entering (+1)
// and leaving (-1); `select` reads them as sql::region_table(0) (columns
// `columns`) and gives the outer (keys, arguments), which the algebraic
// apply adds into the stored values and state (algebraic_signed_main).
struct UnionAggregate {
    std::vector<UnionArm> arms;        // outputs named `columns`
    std::vector<std::string> columns;  // the union's columns, quoted
    std::string select;                // outer (keys, arguments) over region_table(0)
    std::string row_query;             // the same over the union now
    ir::AlgebraicGroup shape;          // its arguments read r.__pgt_x<i>
    // Per identity key: may be NULL, `= ANY (array)` possible (a group the
    // stored state cannot give is recomputed from row_query).
    std::vector<bool> key_nullable;
    std::vector<bool> key_filtered;
};

// The program: one main statement over every window (no image steps);
// throws kInternalError without arms.
DeltaProgram union_aggregate_program(const UnionAggregate& ua, const ir::IdentityTarget& target);

}  // namespace pgt::diff
