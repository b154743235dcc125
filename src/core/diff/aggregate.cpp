// Δ(γ) of a one-table level (see aggregate.hpp).
#include "core/diff/aggregate.hpp"

#include <utility>

#include "core/sql/names.hpp"

namespace pgt::diff {

ir::GroupRescan group_rescan(const ir::Tree& t, const OneTableLevel& level,
                             ir::ScanFilterProject scan, std::string source_table) {
    ir::GroupRescan g;
    g.scan = std::move(scan);
    g.source_table = std::move(source_table);
    g.group_outputs = ir::root_identity(t).columns;
    g.having = level.having >= 0 ? t.at(level.having).image_condition : "";
    for (int k : g.group_outputs) {
        const std::vector<ir::Column>& cols = t.at(level.project).columns;
        const auto at = static_cast<std::size_t>(k);
        g.key_equal.push_back(at < cols.size() ? cols[at].equal : "");
    }
    return g;
}

const ir::Node* algebraic_aggregate(const ir::Tree& t) {
    std::optional<OneTableLevel> level = one_table_level(t);
    if (!level || level->aggregate < 0 || !t.at(level->aggregate).algebraic) {
        return nullptr;
    }
    return &t.at(level->aggregate);
}

std::optional<ir::GroupingSetsRescan> grouping_sets_rescan(const ir::Tree& t,
                                                           const ir::GroupRescan& g) {
    std::optional<OneTableLevel> level = one_table_level(t);
    if (!level || level->aggregate < 0) {
        return std::nullopt;
    }
    const ir::Node& sets = t.at(level->aggregate);
    if (sets.op != ir::Op::kGroupingSets || sets.arms.empty()) {
        return std::nullopt;
    }
    return ir::GroupingSetsRescan{g.scan, g.source_table, sql::kGroupingSetColumn,
                                  sets.grouping_keys, sets.arms};
}

std::vector<bool> keys_alike(const ir::Tree& t) {
    std::vector<bool> out;
    std::optional<OneTableLevel> level = one_table_level(t);
    const std::vector<ir::Column>* cols = level ? &t.at(level->project).columns : nullptr;
    for (int k : ir::root_identity(t).columns) {
        const auto at = static_cast<std::size_t>(k);
        out.push_back(cols != nullptr && at < cols->size() && (*cols)[at].alike);
    }
    return out;
}

std::optional<ir::AlgebraicGroup> algebraic_group(const ir::Tree& t, ir::GroupRescan g) {
    const ir::Node* a = algebraic_aggregate(t);
    if (a == nullptr) {
        return std::nullopt;
    }
    return ir::AlgebraicGroup{std::move(g), a->algebraic_aggs, keys_alike(t), a->output_templates};
}

}  // namespace pgt::diff
