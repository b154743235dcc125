// Delta strategy names and choice (see strategy.hpp).
#include "core/diff/strategy.hpp"

#include <array>
#include <utility>

#include "core/diff/aggregate.hpp"
#include "core/diff/linear.hpp"

namespace pgt::diff {

namespace {

constexpr std::array<std::pair<Strategy, const char*>, 8> kNames{{
    {Strategy::kScan, "scan"},
    {Strategy::kGroupRescan, "group_rescan"},
    {Strategy::kAlgebraicGroup, "algebraic_group"},
    {Strategy::kGroupingSetsRescan, "grouping_sets_rescan"},
    {Strategy::kJoinRescan, "join_rescan"},
    {Strategy::kJoinRegion, "join_region"},
    {Strategy::kAlgebraicJoin, "algebraic_join"},
    {Strategy::kAlgebraicDerived, "algebraic_derived"},
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

std::optional<Strategy> choose_strategy(const ir::Tree& t, const StrategyFacts& f) {
    if (f.region && f.derived) {
        return Strategy::kAlgebraicDerived;
    }
    if (f.region) {
        return f.region_algebraic ? Strategy::kAlgebraicJoin : Strategy::kJoinRegion;
    }
    if (f.join_pair) {
        return Strategy::kJoinRescan;
    }
    std::optional<OneTableLevel> level = one_table_level(t);
    if (!level) {
        return std::nullopt;
    }
    if (level->aggregate >= 0 && t.at(level->aggregate).op == ir::Op::kGroupingSets) {
        return Strategy::kGroupingSetsRescan;
    }
    // DISTINCT is GROUP BY every output, unless a key of the source in the
    // output makes it a no-op (the root's identity then is that key).
    const bool distinct_groups = t.at(t.root).op == ir::Op::kDistinct &&
                                 t.at(t.root).identity.domain == rowid::Domain::kGroupKey;
    if (level->aggregate >= 0 || distinct_groups) {
        return algebraic_aggregate(t) != nullptr ? Strategy::kAlgebraicGroup
                                                 : Strategy::kGroupRescan;
    }
    return Strategy::kScan;
}

}  // namespace pgt::diff
