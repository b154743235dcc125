// Δ of UNION ALL (see union_all.hpp).
#include "core/diff/union_all.hpp"

#include <string>
#include <utility>
#include <vector>

#include "core/diff/algebraic.hpp"
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

std::optional<std::vector<int>> union_all_arms(const ir::Tree& t, int node) {
    node = node < 0 ? t.root : node;
    if (node < 0 || t.at(node).op != ir::Op::kSetOp) {
        return std::nullopt;
    }
    std::vector<int> arms;
    if (!collect_arms(t, node, arms)) {
        return std::nullopt;
    }
    return arms;
}

int aggregated_union(const ir::Tree& t) {
    auto only_child = [&](int i, ir::Op op) {
        return i >= 0 && t.at(i).children.size() == 1 && t.at(t.at(i).children[0]).op == op
                   ? t.at(i).children[0]
                   : -1;
    };
    if (t.root < 0 || t.at(t.root).op != ir::Op::kProject) {
        return -1;
    }
    const int agg = only_child(t.root, ir::Op::kAggregate);
    const int where = only_child(agg, ir::Op::kFilter);
    const int sub = only_child(where >= 0 ? where : agg, ir::Op::kSubquery);
    const int u = only_child(sub, ir::Op::kSetOp);
    return u >= 0 && union_all_arms(t, u) ? u : -1;
}

std::optional<std::vector<UnionArm>> differentiate_union_all(
    const ir::Tree& t, const std::function<UnionInput(uint32_t)>& input,
    const std::vector<std::string>& names, int node) {
    std::optional<std::vector<int>> roots = union_all_arms(t, node);
    if (!roots) {
        return std::nullopt;
    }
    std::vector<UnionArm> out;
    for (int arm : *roots) {
        const uint32_t relid = arm_scan(t, arm).relid;
        const UnionInput in = input(relid);
        std::optional<ir::ScanFilterProject> d = differentiate_linear(t, arm, in.delta);
        if (!d || d->outputs.size() != names.size()) {
            return std::nullopt;
        }
        for (std::size_t c = 0; c < names.size(); c++) {
            d->outputs[c].name = names[c];
        }
        out.push_back({std::move(*d), in.base, relid});
    }
    return out;
}

namespace {

// Every arm's netted images (ev<k>, net<k>, src<k>) and their signed rows
// summed: CTE `name` (__pgt_seq, __pgt_sign, the union's columns).
std::vector<std::string> summed_arms(const std::vector<UnionArm>& arms, const std::string& name) {
    std::vector<std::string> ctes, rows;
    for (std::size_t k = 0; k < arms.size(); k++) {
        ctes.push_back(window_source_cte_list(arms[k].scan, std::to_string(k), arms[k].base));
        rows.push_back(signed_rows(arms[k].scan, k));
    }
    ctes.push_back(name + " AS (" + join(rows, " UNION ALL ") + ")");
    return ctes;
}

// The union's rows of u whose weight has `sign`, each as many times as
// its weight, read by ua.select as region_table(0), with that sign.
std::string weighted_rows(const UnionAggregate& ua, int sign) {
    std::vector<std::string> cols;
    for (const std::string& c : ua.columns) {
        cols.push_back("u." + c);
    }
    const std::string w = sign > 0 ? "u." + kSign : "(- u." + kSign + ")";
    const std::string rows = "SELECT " + join(cols, ", ") +
                             " FROM u CROSS JOIN LATERAL pg_catalog.generate_series(1, " + w +
                             ") WHERE u." + kSign + (sign > 0 ? " > 0" : " < 0");
    return "SELECT " + std::to_string(sign) + "::pg_catalog.int8, s.* FROM (WITH " +
           sql::region_table(0) + " (" + join(ua.columns, ", ") + ") AS NOT MATERIALIZED (" + rows +
           ") " + ua.select + ") s";
}

}  // namespace

DeltaProgram union_aggregate_program(const UnionAggregate& ua, const ir::IdentityTarget& target) {
    if (ua.arms.empty()) {
        throw Error(sqlstate::kInternalError, "an aggregate over a UNION ALL needs arms");
    }
    std::vector<std::string> ctes = summed_arms(ua.arms, "u");
    ctes.push_back("d (" + join(algebraic_d_columns(ua.shape), ", ") + ") AS (" +
                   weighted_rows(ua, 1) + " UNION ALL " + weighted_rows(ua, -1) + ")");
    ir::JoinRegion fresh;
    fresh.key_nullable = ua.key_nullable;
    fresh.key_filtered = ua.key_filtered;
    DeltaProgram p;
    algebraic_signed_main(p, ua.shape, target, join(ctes, ", "), ua.row_query, fresh);
    return p;
}

std::string union_all_sql(const std::vector<UnionArm>& arms, const ir::IdentityTarget& target) {
    if (arms.empty() || target.keyed) {
        throw Error(sqlstate::kInternalError,
                    "a UNION ALL delta needs arms and a counted (keyless) stream table");
    }
    std::vector<std::string> ctes = summed_arms(arms, "d"), outs, ids;
    for (const ir::OutputColumn& o : arms[0].scan.outputs) {
        outs.push_back(o.name);
    }
    for (const std::string& c : target.columns) {
        ids.push_back("d." + c);
    }
    return "WITH " + join(ctes, ", ") + ", e AS (SELECT d.*, " +
           row_id_expression(target.domain, ids) + " AS __pgt_id FROM d)" +
           apply_tail(outs, target);
}

}  // namespace pgt::diff
