// Delta strategy names and choice (see strategy.hpp).
#include "core/diff/strategy.hpp"

#include <array>
#include <utility>

namespace pgt::diff {

namespace {

constexpr std::array<std::pair<Strategy, const char*>, 9> kNames{{
    {Strategy::kScan, "scan"},
    {Strategy::kGroupRescan, "group_rescan"},
    {Strategy::kAlgebraicGroup, "algebraic_group"},
    {Strategy::kGroupingSetsRescan, "grouping_sets_rescan"},
    {Strategy::kJoinRescan, "join_rescan"},
    {Strategy::kJoinRegion, "join_region"},
    {Strategy::kAlgebraicJoin, "algebraic_join"},
    {Strategy::kAlgebraicDerived, "algebraic_derived"},
    {Strategy::kUnionAll, "union_all"},
}};

}  // namespace

const char* strategy_name(Strategy s) noexcept {
    for (const auto& [strategy, name] : kNames) {
        if (strategy == s) {
            return name;
        }
    }
    return "";
}

std::optional<Strategy> strategy_named(std::string_view name) noexcept {
    for (const auto& [strategy, n] : kNames) {
        if (name == n) {
            return strategy;
        }
    }
    return std::nullopt;
}

bool reads_several_tables(Strategy s) noexcept {
    return s == Strategy::kJoinRescan || s == Strategy::kJoinRegion ||
           s == Strategy::kAlgebraicJoin || s == Strategy::kAlgebraicDerived ||
           s == Strategy::kUnionAll;
}

}  // namespace pgt::diff
