// Group-rescan delta SQL (see group_rescan.hpp for the picture).
// Invariant: touched keys are matched with the type's equality (`=` via IN
// for keys without NULLs, IS NOT DISTINCT FROM for keys with a NULL), the
// same equality GROUP BY uses, so a touched group is recomputed whole.
#include "core/diff/group_rescan.hpp"
#include "core/sql/names.hpp"

#include <string>
#include <vector>

#include "core/diff/apply.hpp"
#include "core/diff/scan_delta.hpp"
#include "core/error.hpp"

namespace pgt::diff {

namespace {

std::string group_expr(const ir::GroupRescan& g, std::size_t j) {
    return g.scan.outputs.at(static_cast<std::size_t>(g.group_outputs.at(j))).expr;
}

// keys: the grouping values of every netted image (old or new) that passes
// WHERE, i.e. of every group whose contents may have changed.
std::string keys_cte(const ir::GroupRescan& g) {
    std::vector<std::string> cols;
    for (std::size_t j = 0; j < g.group_outputs.size(); j++) {
        cols.push_back(group_expr(g, j) + " AS " + sql::key_column(j));
    }
    return "keys AS (SELECT DISTINCT " + join(cols, ", ") + " FROM src " + g.scan.alias +
           (g.scan.predicate.empty() ? "" : " WHERE " + g.scan.predicate) + ")";
}

std::string rows_cte(const ir::GroupRescan& g) {
    std::vector<std::string> exprs, keys;
    for (std::size_t j = 0; j < g.group_outputs.size(); j++) {
        exprs.push_back(group_expr(g, j));
        keys.push_back(sql::key_column(j));
    }
    return touched_rows_cte("rows", g.source_table, g.scan.alias, exprs, keys, g.key_by_array,
                            g.key_equal);
}

// fresh: the defining query over the touched groups' rows, with identities.
std::string fresh_cte(const ir::GroupRescan& g, const ir::IdentityTarget& t) {
    std::vector<std::string> cols, groups, id_fields;
    for (const ir::OutputColumn& o : g.scan.outputs) {
        cols.push_back(o.expr + " AS " + o.name);
    }
    for (std::size_t j = 0; j < g.group_outputs.size(); j++) {
        groups.push_back(group_expr(g, j));
    }
    for (const std::string& c : t.columns) {
        id_fields.push_back("r." + c);
    }
    const std::string& a = g.scan.alias;
    // One group: its one row only when it was touched.
    std::string grouping = groups.empty() ? " HAVING EXISTS (SELECT 1 FROM keys)"
                                          : " GROUP BY " + join(groups, ", ") +
                                                (g.having.empty() ? "" : " HAVING " + g.having);
    return "fresh AS (SELECT " + join(cols, ", ") + " FROM rows " + a +
           (g.scan.predicate.empty() ? "" : " WHERE " + g.scan.predicate) + grouping +
           "), f AS (SELECT r.*, " + row_id_expression(t.domain, id_fields) +
           " AS __pgt_id FROM fresh r)";
}

// g: identities of the touched groups (the key values in identity order).
std::string touched_cte(const ir::GroupRescan& g, const ir::IdentityTarget& t) {
    std::vector<std::string> fields;
    for (std::size_t j = 0; j < g.group_outputs.size(); j++) {
        fields.push_back("k." + sql::key_column(j));
    }
    return "g AS (SELECT DISTINCT " + row_id_expression(t.domain, fields) +
           " AS __pgt_id FROM keys k)";
}

}  // namespace

// Source rows of the touched groups: keys without NULLs through IN (an
// index on the grouping columns serves it), or by_array through `= ANY
// (array)` (ir::GroupRescan::key_by_array), keys with a NULL through
// IS NOT DISTINCT FROM, a branch skipped whole when no such key exists.
// A key whose equality a bare `=` would not find (`equal[j]` set) is
// matched with it, the keys through EXISTS instead of IN.
// Without grouping keys (one group), every row when `keys` has a row.
std::string touched_rows_cte(const std::string& name, const std::string& table,
                             const std::string& a, const std::vector<std::string>& exprs,
                             const std::vector<std::string>& key_cols, bool by_array,
                             const std::vector<std::string>& equal) {
    if (exprs.empty()) {
        return name + " AS (SELECT " + a + ".* FROM " + table + " " + a +
               " WHERE EXISTS (SELECT 1 FROM keys))";
    }
    std::vector<std::string> keys, not_null, any_null, same, equals;
    bool qualified = false;
    for (std::size_t j = 0; j < exprs.size(); j++) {
        const std::string k = "k." + key_cols[j];
        const std::string eq = j < equal.size() ? equal[j] : "";
        qualified = qualified || !eq.empty();
        keys.push_back(k);
        not_null.push_back(k + " IS NOT NULL");
        any_null.push_back(k + " IS NULL");
        same.push_back(eq.empty() ? k + " IS NOT DISTINCT FROM " + exprs[j]
                                  : "((" + k + " IS NULL AND (" + exprs[j] + ") IS NULL) OR " + k +
                                        " " + eq + " (" + exprs[j] + "))");
        equals.push_back(k + " " + (eq.empty() ? "=" : eq) + " (" + exprs[j] + ")");
    }
    std::string null_keys = "SELECT 1 FROM keys k WHERE (" + join(any_null, " OR ") + ")";
    std::string touched;
    if (qualified) {
        touched = "EXISTS (SELECT 1 FROM keys k WHERE " + join(not_null, " AND ") + " AND " +
                  join(equals, " AND ") + ")";
    } else if (by_array && exprs.size() == 1) {
        touched = exprs[0] + kEq + "ANY (ARRAY(SELECT DISTINCT " + keys[0] + " FROM keys k WHERE " +
                  not_null[0] + "))";
    } else {
        touched = "(" + join(exprs, ", ") + ") IN (SELECT " + join(keys, ", ") +
                  " FROM keys k WHERE " + join(not_null, " AND ") + ")";
    }
    // The one-time gate keeps the source unread when no group is touched.
    return name + " AS (SELECT " + a + ".* FROM " + table + " " + a + " WHERE " + touched +
           " AND (SELECT EXISTS (SELECT 1 FROM keys)) UNION ALL SELECT " + a + ".* FROM " + table +
           " " + a + " WHERE (SELECT EXISTS (" + null_keys + ")) AND EXISTS (" + null_keys +
           " AND " + join(same, " AND ") + "))";
}

std::string rescan_keyed_ctes(const ir::GroupRescan& g, const ir::IdentityTarget& target) {
    return rows_cte(g) + ", " + fresh_cte(g, target) + ", " + touched_cte(g, target);
}

std::string group_rescan_sql(const ir::GroupRescan& g, const ir::IdentityTarget& target) {
    if (target.domain != rowid::Domain::kGroupKey || g.group_outputs.empty() ||
        target.columns.size() != g.group_outputs.size()) {
        throw Error(sqlstate::kInternalError,
                    "group rescan needs a group_key identity over the grouping keys");
    }
    std::vector<std::string> outs;
    for (const ir::OutputColumn& o : g.scan.outputs) {
        outs.push_back(o.name);
    }
    return window_source_ctes(g.scan) + ", " + keys_cte(g) + ", " + rescan_keyed_ctes(g, target) +
           rescan_apply_tail(outs, target);
}

}  // namespace pgt::diff
