// Join-rescan delta SQL (see join_rescan.hpp for why it is exact).
// Invariant: a row is in the recomputed region exactly when one of its key
// column groups is among the changed keys; the region is read the same way
// from the query (fresh) and from the stream table (stored).
#include "core/diff/join_rescan.hpp"
#include "core/sql/names.hpp"

#include <string>
#include <vector>

#include "core/diff/apply.hpp"
#include "core/diff/scan_delta.hpp"
#include "core/error.hpp"

namespace pgt::diff {

namespace {
// Names of sql/names.hpp the statements below use.
const std::string kSign = sql::kSignColumn;
}  // namespace

namespace {

std::string keys_name(std::size_t i) {
    return "__pgt_keys" + std::to_string(i);
}

// Keys of every row version of side i in its window (old images of U/D, new
// images of I/U); the window parameters are the i-th block of five.
std::string keys_cte(const JoinSide& s, std::size_t i) {
    std::vector<std::string> olds, news;
    for (int a : s.key_attnums) {
        olds.push_back("b.o" + std::to_string(a));
        news.push_back("b.n" + std::to_string(a));
    }
    std::string where =
        " FROM " + s.delta.relation + " b WHERE " +
        (s.delta.windowed() ? window_predicate("b", static_cast<int>(5 * i)) : "true") +
        " AND b.action";
    return keys_name(i) + " AS (SELECT " + join(olds, ", ") + where +
           " IN ('U', 'D') UNION SELECT " + join(news, ", ") + where + " IN ('I', 'U'))";
}

std::string tuple(const std::vector<std::string>& cols, const std::string& prefix) {
    std::vector<std::string> out;
    for (const std::string& c : cols) {
        out.push_back(prefix + c);
    }
    return "(" + join(out, ", ") + ")";
}

// Rows of `from` (alias x) carrying a changed key: those of side 0, then
// those of side 1 that do not carry a changed side-0 key (no row twice).
std::string region(const JoinRescan& j, const std::string& from) {
    const JoinSide& a = j.sides[0];
    const JoinSide& b = j.sides[1];
    std::string in_a = tuple(a.key_outputs, "x.") + " IN (SELECT * FROM " + keys_name(0) + ")";
    std::string cols = join(j.outputs, ", x.");
    cols = j.outputs.empty() ? "" : "x." + cols;
    return "SELECT " + cols + " FROM " + from + " x WHERE " + in_a + " UNION ALL SELECT " + cols +
           " FROM " + from + " x WHERE " + tuple(b.key_outputs, "x.") + " IN (SELECT * FROM " +
           keys_name(1) + ") AND NOT " + in_a;
}

// Outer join: reg = the preserved side's changed keys plus the preserved
// keys of rows (stored or fresh) carrying a changed key of the other side.
std::string outer_region_cte(const JoinRescan& j, const ir::IdentityTarget& t) {
    const JoinSide& p = j.sides[static_cast<std::size_t>(j.preserved)];
    const JoinSide& o = j.sides[static_cast<std::size_t>(1 - j.preserved)];
    std::string pk = join(p.key_outputs, ", x.");
    std::string via_other = tuple(o.key_outputs, "x.") + " IN (SELECT * FROM " +
                            keys_name(static_cast<std::size_t>(1 - j.preserved)) + ")";
    return "reg AS (SELECT * FROM " + keys_name(static_cast<std::size_t>(j.preserved)) +
           " UNION SELECT x." + pk + " FROM " + t.table + " x WHERE " + via_other +
           " UNION SELECT x." + pk + " FROM (" + j.query + ") x WHERE " + via_other + ")";
}

std::string outer_region(const JoinRescan& j, const std::string& from) {
    const JoinSide& p = j.sides[static_cast<std::size_t>(j.preserved)];
    return "SELECT x." + join(j.outputs, ", x.") + " FROM " + from + " x WHERE " +
           tuple(p.key_outputs, "x.") + " IN (SELECT * FROM reg)";
}

}  // namespace

std::string join_rescan_sql(const JoinRescan& j, const ir::IdentityTarget& target) {
    if (j.sides.size() != 2 || target.keyed || j.outputs.empty() || j.preserved > 1) {
        throw Error(sqlstate::kInternalError,
                    "join rescan needs two sides and a counted (keyless) identity");
    }
    std::vector<std::string> id_fields;
    for (const std::string& c : target.columns) {
        id_fields.push_back("r." + c);
    }
    std::string id = row_id_expression(target.domain, id_fields);
    std::string cols = "r." + join(j.outputs, ", r.");
    bool outer = j.preserved >= 0;
    std::string regions = outer ? outer_region_cte(j, target) + ", fresh AS (" +
                                      outer_region(j, "(" + j.query + ")") + "), stored AS (" +
                                      outer_region(j, target.table) + ")"
                                : "fresh AS (" + region(j, "(" + j.query + ")") + "), stored AS (" +
                                      region(j, target.table) + ")";
    return "WITH " + keys_cte(j.sides[0], 0) + ", " + keys_cte(j.sides[1], 1) + ", " + regions +
           ", e AS (SELECT 1 AS __pgt_seq, 1 AS " + kSign + ", " + cols + ", " + id +
           " AS __pgt_id FROM fresh r UNION ALL SELECT 0, -1, " + cols + ", " + id +
           " AS __pgt_id FROM stored r)" + apply_tail(j.outputs, target);
}

}  // namespace pgt::diff
