// The delta strategy of a stream table: the label of its delta plan
// (diff::plan_delta, which chooses it), naming which program builder makes
// its program:
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
//   UNION ALL of one-table     → union_all
//   levels (or COUNT/SUM/AVG/
//   MIN/MAX over one)
// Invariant: the names are what pgt_stream_tables.delta_strategy stores and
// explain_st shows; a strategy is chosen only for a query DIFFERENTIAL can
// maintain (the caller checked the blockers).
#pragma once
#include "core/core.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

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
    kUnionAll,
};

const char* strategy_name(Strategy s) noexcept;
std::optional<Strategy> strategy_named(std::string_view name) noexcept;

// Its program reads the changes of several tables, each captured with a
// window of its own (a join region, a keyed pair, a derived table's
// sources), not one table's.
bool reads_several_tables(Strategy s) noexcept;

}  // namespace pgt::diff
