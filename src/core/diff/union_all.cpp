// Δ of UNION ALL (see union_all.hpp).
#include "core/diff/union_all.hpp"

#include <string>
#include <utility>
#include <vector>

#include "core/diff/apply.hpp"
#include "core/diff/linear.hpp"
#include "core/diff/scan_delta.hpp"
#include "core/error.hpp"
#include "core/sql/names.hpp"

namespace pgt::diff {

namespace {

const std::string kSign = sql::kSignColumn;

// Appends the arms under node i (UNION ALL nodes are walked through);
// false when an arm is no level the linear rules differentiate.
bool collect_arms(const ir::Tree& t, int i, std::vector<int>& arms) {
    const ir::Node& n = t.at(i);
    if (n.op == ir::Op::kSetOp) {
        if (n.set_op != ir::SetOpKind::kUnion || !n.all) {
            return false;
        }
        for (int c : n.children) {
            if (!collect_arms(t, c, arms)) {
                return false;
            }
        }
        return true;
    }
    if (n.op != ir::Op::kProject || !differentiate_linear(t, i, {})) {
        return false;
    }
    arms.push_back(i);
    return true;
}

// The scan an arm reads (differentiate_linear found it).
const ir::Node& arm_scan(const ir::Tree& t, int arm) {
    int i = arm;
    while (t.at(i).op != ir::Op::kScan) {
        i = t.at(i).children.at(0);
    }
    return t.at(i);
}

// Arm k's signed rows: its netted images (CTE src<k>) through its WHERE,
// evaluated by its select list.
std::string signed_rows(const ir::ScanFilterProject& s, std::size_t k) {
    std::vector<std::string> cols{s.alias + ".__pgt_seq", s.alias + "." + kSign};
    for (const ir::OutputColumn& o : s.outputs) {
        cols.push_back(o.expr + " AS " + o.name);
    }
    return "SELECT " + join(cols, ", ") + " FROM src" + std::to_string(k) + " " + s.alias +
           (s.predicate.empty() ? "" : " WHERE " + s.predicate);
}

}  // namespace

std::optional<std::vector<int>> union_all_arms(const ir::Tree& t) {
    if (t.root < 0 || t.at(t.root).op != ir::Op::kSetOp) {
        return std::nullopt;
    }
    std::vector<int> arms;
    if (!collect_arms(t, t.root, arms)) {
        return std::nullopt;
    }
    return arms;
}

std::optional<std::vector<UnionArm>> differentiate_union_all(
    const ir::Tree& t, const std::function<UnionInput(uint32_t)>& input,
    const std::vector<std::string>& names) {
    std::optional<std::vector<int>> roots = union_all_arms(t);
    if (!roots) {
        return std::nullopt;
    }
    std::vector<UnionArm> out;
    for (int arm : *roots) {
        const UnionInput in = input(arm_scan(t, arm).relid);
        std::optional<ir::ScanFilterProject> d = differentiate_linear(t, arm, in.delta);
        if (!d || d->outputs.size() != names.size()) {
            return std::nullopt;
        }
        for (std::size_t c = 0; c < names.size(); c++) {
            d->outputs[c].name = names[c];
        }
        out.push_back({std::move(*d), in.base});
    }
    return out;
}

std::string union_all_sql(const std::vector<UnionArm>& arms, const ir::IdentityTarget& target) {
    if (arms.empty() || target.keyed) {
        throw Error(sqlstate::kInternalError,
                    "a UNION ALL delta needs arms and a counted (keyless) stream table");
    }
    std::vector<std::string> ctes, rows, outs, ids;
    for (std::size_t k = 0; k < arms.size(); k++) {
        ctes.push_back(window_source_cte_list(arms[k].scan, std::to_string(k), arms[k].base));
        rows.push_back(signed_rows(arms[k].scan, k));
    }
    for (const ir::OutputColumn& o : arms[0].scan.outputs) {
        outs.push_back(o.name);
    }
    for (const std::string& c : target.columns) {
        ids.push_back("d." + c);
    }
    return "WITH " + join(ctes, ", ") + ", d AS (" + join(rows, " UNION ALL ") +
           "), e AS (SELECT d.*, " + row_id_expression(target.domain, ids) +
           " AS __pgt_id FROM d)" + apply_tail(outs, target);
}

}  // namespace pgt::diff
