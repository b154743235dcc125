// The delta strategy of a stream table: which composition of rules its
// program is made by, chosen from the operator tree (with the Aggregate
// node's algebraic form) and what analysis found that the tree does not
// show (a join region it could build, a pair of keyed tables).
//
//   aggregate over a grouped   → algebraic_derived
//   derived table's change
//   join region built          → algebraic_join | join_region
//   two keyed tables joined    → join_rescan
//   one-table level:
//     GroupingSets             → grouping_sets_rescan
//     Aggregate (or DISTINCT   → algebraic_group when every output is a key
//     read as GROUP BY)          or an algebraic aggregate, else group_rescan
//     Filter/Project only      → scan
// Invariant: the names are what pgt_stream_tables.delta_strategy stores and
// explain_st shows; a strategy is chosen only for a query DIFFERENTIAL can
// maintain (the caller checked the blockers).
#pragma once
#include "core/core.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/ir/tree.hpp"

namespace pgt::diff {

enum class Strategy : std::uint8_t {
    kScan,
    kGroupRescan,
    kAlgebraicGroup,
    kGroupingSetsRescan,
    kJoinRescan,
    kJoinRegion,
    kAlgebraicJoin,
    kAlgebraicDerived,
};

const char* strategy_name(Strategy s) noexcept;
std::optional<Strategy> strategy_named(std::string_view name) noexcept;

struct StrategyFacts {
    bool region = false;            // analysis built a join region
    bool region_algebraic = false;  // ... keeping its aggregates algebraically
    bool join_pair = false;         // two tables whose keys are both selected
    bool derived = false;           // ... over a grouped derived table's change
};

// nullopt when neither the facts nor a one-table level (one_table_level)
// give one.
std::optional<Strategy> choose_strategy(const ir::Tree& t, const StrategyFacts& f);

}  // namespace pgt::diff
