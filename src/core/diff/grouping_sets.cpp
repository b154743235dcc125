// Grouping-sets rescan SQL (see grouping_sets.hpp for the picture).
// Invariant: the NULL of an absent expression is typed like the
// expression (CASE WHEN false THEN k END), so identities computed from the
// keys equal those computed from stored and fresh rows.
#include "core/diff/grouping_sets.hpp"
#include "core/sql/names.hpp"

#include <string>
#include <vector>

#include "core/diff/apply.hpp"
#include "core/diff/group_rescan.hpp"
#include "core/diff/scan_delta.hpp"
#include "core/error.hpp"

namespace pgt::diff {

namespace {

bool absent(const ir::GroupingSetsRescan& g, const ir::GroupingSetArm& arm, std::size_t j) {
    return ((arm.grouping >> (g.keys.size() - 1 - j)) & 1U) != 0;
}

std::string rows_name(std::size_t a) {
    return "__pgt_rows" + std::to_string(a);
}

// The arm's fresh rows: its outputs (and set value) over its touched rows.
std::string arm_select(const ir::GroupingSetsRescan& g, std::size_t a,
                       const std::vector<std::string>& names) {
    const ir::GroupingSetArm& arm = g.arms[a];
    std::vector<std::string> cols, groups;
    for (std::size_t p = 0; p < arm.outputs.size(); p++) {
        cols.push_back(arm.outputs[p] + " AS " + names[p]);
    }
    for (std::size_t j = 0; j < g.keys.size(); j++) {
        if (!absent(g, arm, j)) {
            groups.push_back(g.keys[j]);
        }
    }
    std::string having = arm.having.empty() ? "" : "(" + arm.having + ")";
    std::string tail =
        groups.empty()
            ? " HAVING EXISTS (SELECT 1 FROM keys)" + (having.empty() ? "" : " AND " + having)
            : " GROUP BY " + join(groups, ", ") + (having.empty() ? "" : " HAVING " + having);
    return "SELECT " + join(cols, ", ") + " FROM " + rows_name(a) + " " + g.scan.alias +
           (g.scan.predicate.empty() ? "" : " WHERE " + g.scan.predicate) + tail;
}

}  // namespace

std::string grouping_sets_rescan_sql(const ir::GroupingSetsRescan& g,
                                     const ir::IdentityTarget& target) {
    const std::size_t n = g.keys.size();
    if (target.domain != rowid::Domain::kGroupKey || n == 0 || n > 31 ||
        target.columns.size() != n + 1 || g.arms.empty()) {
        throw Error(sqlstate::kInternalError,
                    "grouping sets need a group_key identity over the keys and the set column");
    }
    std::vector<std::string> names;
    for (const ir::OutputColumn& o : g.scan.outputs) {
        names.push_back(o.name);
    }
    names.push_back(g.set_column);
    std::vector<std::string> keys, ctes, arms, touched;
    for (std::size_t j = 0; j < n; j++) {
        keys.push_back(g.keys[j] + " AS " + sql::key_column(j));
    }
    ctes.push_back("keys AS (SELECT DISTINCT " + join(keys, ", ") + " FROM src " + g.scan.alias +
                   (g.scan.predicate.empty() ? "" : " WHERE " + g.scan.predicate) + ")");
    for (std::size_t a = 0; a < g.arms.size(); a++) {
        const ir::GroupingSetArm& arm = g.arms[a];
        if (arm.outputs.size() != names.size()) {
            throw Error(sqlstate::kInternalError, "a grouping-set arm has the wrong column count");
        }
        std::vector<std::string> exprs, cols, fields;
        for (std::size_t j = 0; j < n; j++) {
            if (absent(g, arm, j)) {
                fields.push_back("CASE WHEN false THEN k." + sql::key_column(j) + " END");
            } else {
                exprs.push_back(g.keys[j]);
                cols.push_back(sql::key_column(j));
                fields.push_back("k." + sql::key_column(j));
            }
        }
        fields.push_back(std::to_string(arm.grouping));
        ctes.push_back(touched_rows_cte(rows_name(a), g.source_table, g.scan.alias, exprs, cols));
        arms.push_back(arm_select(g, a, names));
        touched.push_back("SELECT " + row_id_expression(target.domain, fields) +
                          " AS __pgt_id FROM keys k");
    }
    std::vector<std::string> id_fields;
    for (const std::string& c : target.columns) {
        id_fields.push_back("r." + c);
    }
    ctes.push_back("fresh AS (" + join(arms, " UNION ALL ") + ")");
    ctes.push_back("f AS (SELECT r.*, " + row_id_expression(target.domain, id_fields) +
                   " AS __pgt_id FROM fresh r)");
    ctes.push_back("g AS (SELECT DISTINCT t.__pgt_id FROM (" + join(touched, " UNION ALL ") +
                   ") t)");
    return window_source_ctes(g.scan) + ", " + join(ctes, ", ") + rescan_apply_tail(names, target);
}

}  // namespace pgt::diff
