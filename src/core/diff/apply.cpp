// Keyed and counted apply of signed events, shared by DIFFERENTIAL (scan
// delta) and the FULL refresh that writes only what changed.
// Invariant: rows are matched on (__pgt_row_probe, __pgt_row_id), so each
// lookup uses the probe index; unchanged rows are never rewritten.
#include "core/diff/apply.hpp"
#include "core/sql/names.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace pgt::diff {

namespace {
// Names of sql/names.hpp the statements below use.
const std::string kRowId = sql::kRowIdColumn;
const std::string kRowProbe = sql::kRowProbeColumn;
const std::string kSign = sql::kSignColumn;
}  // namespace

std::string id_match(const std::string& t, const std::string& src) {
    return t + "." + kRowProbe + kEq + "pgtrickle.row_probe_v1(" + src + ".__pgt_id) AND " + t +
           "." + kRowId + kEq + src + ".__pgt_id";
}

namespace {

std::string output_list(const std::vector<std::string>& outs, const std::string& prefix) {
    std::vector<std::string> cols;
    for (const std::string& o : outs) {
        cols.push_back(prefix + o);
    }
    return join(cols, ", ");
}

std::string insert_columns(const std::vector<std::string>& outs) {
    std::string cols = output_list(outs, "");
    return "(" + cols + (cols.empty() ? "" : ", ") + kRowId + ")";
}

std::string insert_values(const std::vector<std::string>& outs, const std::string& src) {
    std::string cols = output_list(outs, src + ".");
    return cols + (cols.empty() ? "" : ", ") + src + ".__pgt_id";
}

// Text form of the output row: exact as users see it (numeric scale, case of
// a case-insensitive type, float signed zero), unlike equality operators.
std::string image(const std::vector<std::string>& outs, const std::string& prefix) {
    return "ROW(" + output_list(outs, prefix) + ")::pg_catalog.text";
}

// Whether stored row t shows other values than the fresh row `src`.
std::string changed_values(const std::vector<std::string>& outs, const std::string& src = "f") {
    return outs.empty() ? "false"
                        : image(outs, "t.") + " IS DISTINCT FROM " + image(outs, src + ".");
}

std::string keyed_apply(const std::vector<std::string>& outs, const ir::IdentityTarget& t) {
    std::vector<std::string> sets;
    for (const std::string& o : outs) {
        sets.push_back(o + " = f." + o);
    }
    std::string upd = sets.empty()
                          ? "SELECT 1 WHERE false"
                          : "UPDATE " + t.table + " t SET " + join(sets, ", ") +
                                " FROM f WHERE f." + kSign + " > 0 AND " + id_match("t", "f") +
                                " AND " + changed_values(outs) + " RETURNING 1";
    return ", f AS (SELECT DISTINCT ON (e.__pgt_id) e.* FROM e ORDER BY e.__pgt_id, "
           "e.__pgt_seq DESC, e." +
           kSign + " DESC), del AS (DELETE FROM " + t.table + " t USING f WHERE f." + kSign +
           " < 0 AND " + id_match("t", "f") +
           (t.delete_only_same ? " AND NOT (" + changed_values(outs) + ")" : "") +
           " RETURNING 1), upd AS (" + upd + "), ins AS (INSERT INTO " + t.table + " " +
           insert_columns(outs) + " SELECT " + insert_values(outs, "f") + " FROM f WHERE f." +
           kSign + " > 0 AND NOT EXISTS (SELECT 1 FROM " + t.table + " t WHERE " +
           id_match("t", "f") +
           ") RETURNING 1) SELECT (SELECT pg_catalog.count(*) FROM ins), "
           "(SELECT pg_catalog.count(*) FROM del), (SELECT pg_catalog.count(*) FROM upd)";
}

// ei: e's rows with their exact image. Rows equal as values can differ
// as shown (0 and 0.00 share an identity): counts are kept per identity
// *and* exact image.
std::string counted_images(const std::vector<std::string>& outs) {
    return "SELECT e.*, " + (outs.empty() ? std::string("''") : image(outs, "e.")) +
           " AS __pgt_img FROM e";
}

// n: per identity and exact image, how many copies to add (> 0) or
// remove (< 0), from ei's rows (CTE ei).
std::string counted_net(const std::vector<std::string>& outs) {
    std::string cols = output_list(outs, "e.");
    return "SELECT DISTINCT ON (e.__pgt_id, e.__pgt_img) " + cols + (cols.empty() ? "" : ", ") +
           "e.__pgt_id, e.__pgt_img, pg_catalog.sum(e." + kSign +
           ") OVER (PARTITION BY e.__pgt_id, e.__pgt_img) AS __pgt_n FROM ei e ORDER BY "
           "e.__pgt_id, e.__pgt_img";
}

// The writes of a counted apply from CTE n (counted_net's rows).
std::string counted_writes(const std::vector<std::string>& outs, const ir::IdentityTarget& t) {
    return ", del AS (DELETE FROM " + t.table +
           " t WHERE t.ctid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT x.ctid FROM n CROSS JOIN "
           "LATERAL (SELECT t2.ctid FROM " +
           t.table + " t2 WHERE " + id_match("t2", "n") + " AND " +
           (outs.empty() ? "true" : image(outs, "t2.") + kEq + "n.__pgt_img") +
           " LIMIT (- n.__pgt_n)) x WHERE n.__pgt_n < 0)) RETURNING 1), ins AS (INSERT INTO " +
           t.table + " " + insert_columns(outs) + " SELECT " + insert_values(outs, "n") +
           " FROM n CROSS JOIN LATERAL pg_catalog.generate_series(1, n.__pgt_n) WHERE n.__pgt_n > 0"
           " RETURNING 1) SELECT (SELECT pg_catalog.count(*) FROM ins), "
           "(SELECT pg_catalog.count(*) FROM del), 0::pg_catalog.int8";
}

std::string counted_apply(const std::vector<std::string>& outs, const ir::IdentityTarget& t) {
    return ", ei AS (" + counted_images(outs) + "), n AS (" + counted_net(outs) + ")" +
           counted_writes(outs, t);
}

}  // namespace

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
    std::string out;
    for (std::size_t i = 0; i < parts.size(); i++) {
        out += (i ? sep : "") + parts[i];
    }
    return out;
}

std::string apply_tail(const std::vector<std::string>& outs, const ir::IdentityTarget& target) {
    return target.keyed ? keyed_apply(outs, target) : counted_apply(outs, target);
}

namespace {

// upd and ins of a rescan: stored rows of f showing other values are
// updated in place, rows of f not stored are inserted.
std::string upsert_ctes(const std::vector<std::string>& outs, const ir::IdentityTarget& t) {
    std::vector<std::string> sets;
    for (const std::string& o : outs) {
        sets.push_back(o + " = f." + o);
    }
    std::string upd = sets.empty() ? "SELECT 1 WHERE false"
                                   : "UPDATE " + t.table + " t SET " + join(sets, ", ") +
                                         " FROM f WHERE " + id_match("t", "f") + " AND " +
                                         changed_values(outs) + " RETURNING 1";
    return "upd AS (" + upd + "), ins AS (INSERT INTO " + t.table + " " + insert_columns(outs) +
           " SELECT " + insert_values(outs, "f") + " FROM f WHERE NOT EXISTS (SELECT 1 FROM " +
           t.table + " t WHERE " + id_match("t", "f") + ") RETURNING 1)";
}

const char* kCounts =
    " SELECT (SELECT pg_catalog.count(*) FROM ins), (SELECT pg_catalog.count(*) FROM del), "
    "(SELECT pg_catalog.count(*) FROM upd)";

}  // namespace

std::string rescan_apply_ctes(const std::vector<std::string>& outs, const ir::IdentityTarget& t) {
    return ", del AS (DELETE FROM " + t.table + " t USING g WHERE " + id_match("t", "g") +
           " AND NOT EXISTS (SELECT 1 FROM f WHERE f.__pgt_id" + kEq +
           "g.__pgt_id) RETURNING 1), " + upsert_ctes(outs, t);
}

std::string rescan_apply_tail(const std::vector<std::string>& outs, const ir::IdentityTarget& t) {
    return rescan_apply_ctes(outs, t) + kCounts;
}

std::string stored_address(const ir::IdentityTarget& t, const std::string& src) {
    return "(SELECT t.ctid FROM " + t.table + " t WHERE " + id_match("t", src) + ")";
}

std::string addressed_apply_tail(const std::vector<std::string>& outs,
                                 const ir::IdentityTarget& t) {
    std::vector<std::string> sets;
    for (const std::string& o : outs) {
        sets.push_back(o + " = ft." + o);
    }
    // Rows are deleted or updated by address: the stream table is read
    // only through the rows ft gives, whatever the planner makes of the
    // change's size (a join on the identity would be planned as a hash of
    // the whole table). Statements writing one identity are serialised by
    // their source rows' locks, so no address changes under a statement.
    auto tids = [&](const std::string& where) {
        return "t.ctid" + kEq + "ANY (ARRAY(SELECT ft.__pgt_tid FROM ft WHERE " + where + "))";
    };
    std::string upd = sets.empty()
                          ? "SELECT 1 WHERE false"
                          : "UPDATE " + t.table + " t SET " + join(sets, ", ") + " FROM ft WHERE " +
                                tids("ft.__pgt_id IS NOT NULL") + " AND t.ctid" + kEq +
                                "ft.__pgt_tid AND " + changed_values(outs, "ft") + " RETURNING 1";
    return ", del AS (DELETE FROM " + t.table + " t WHERE " + tids("ft.__pgt_id IS NULL") +
           " RETURNING 1), upd AS (" + upd + "), ins AS (INSERT INTO " + t.table + " " +
           insert_columns(outs) + " SELECT " + insert_values(outs, "ft") +
           " FROM ft WHERE ft.__pgt_id IS NOT NULL AND ft.__pgt_tid IS NULL RETURNING 1)" + kCounts;
}

namespace {

// Whether stored row t shows other values than the fresh row n: columns of
// a type whose equal values look alike (alike[i]) by equality, the others
// by their text (as changed_values): the text of every row costs more than
// the join that finds it.
std::string changed_full(const std::vector<std::string>& outs, const std::vector<bool>& alike) {
    std::vector<std::string> by_value, by_image;
    for (std::size_t i = 0; i < outs.size(); i++) {
        (i < alike.size() && alike[i] ? by_value : by_image).push_back(outs[i]);
    }
    std::vector<std::string> tests;
    if (!by_value.empty()) {
        tests.push_back("ROW(" + output_list(by_value, "t.") + ") IS DISTINCT FROM ROW(" +
                        output_list(by_value, "n.") + ")");
    }
    if (!by_image.empty()) {
        tests.push_back(image(by_image, "t.") + " IS DISTINCT FROM " + image(by_image, "n."));
    }
    return tests.empty() ? "false" : "(" + join(tests, " OR ") + ")";
}

// The equality of the stored rows (t) and the new ones (n) on the
// identity's columns, when the identity is a source key (never NULL) of
// columns whose equal values look alike: equal values are then the same
// identity. "" otherwise.
std::string key_columns_match(const std::vector<std::string>& outs, const std::vector<bool>& alike,
                              const ir::IdentityTarget& t) {
    if (t.domain != rowid::Domain::kScanKey || t.columns.empty()) {
        return "";
    }
    std::vector<std::string> eqs;
    for (const std::string& c : t.columns) {
        auto at = std::find(outs.begin(), outs.end(), c);
        const auto i = static_cast<std::size_t>(at - outs.begin());
        if (at == outs.end() || i >= alike.size() || !alike[i]) {
            return "";
        }
        eqs.push_back("t." + c + kEq + "n." + c);
    }
    return join(eqs, " AND ");
}

// "SELECT <outs>, <extra> FROM (<query>) q": the query's rows as the
// stream table's columns, then `extra` (over alias q).
std::string query_select(const std::vector<std::string>& outs, const std::string& query,
                         const std::string& extra) {
    return "SELECT " + output_list(outs, "q.") + (outs.empty() ? "" : ", ") + extra + " FROM (" +
           query + ") q";
}

// Keyed FULL: one hash full join of the new contents with the stored rows
// on the identity keeps only the rows to write (ft), which are then
// deleted, updated or inserted by address (addressed_apply_tail). Where
// the identity's columns match by value (key_columns_match), the join is
// on them, and the identity is computed only for the rows to write.
// Returns ft's SELECT.
std::string keyed_full_rows(const std::vector<std::string>& outs, const std::vector<bool>& alike,
                            const ir::IdentityTarget& t, const std::string& query,
                            const std::string& row_id) {
    const std::string by_value = key_columns_match(outs, alike, t);
    const bool late_id = !by_value.empty();
    // Every row of n has `fresh` (not NULL): it is the identity, unless
    // that waits for the rows to write.
    const std::string fresh = late_id ? "__pgt_fresh" : "__pgt_id";
    const std::string id =
        late_id ? "CASE WHEN q.__pgt_fresh THEN " + row_id + " END" : "q.__pgt_id";
    return "SELECT q.__pgt_tid, " + output_list(outs, "q.") + (outs.empty() ? "" : ", ") + id +
           " AS __pgt_id FROM (SELECT t.ctid AS __pgt_tid, n.*, " + changed_full(outs, alike) +
           " AS __pgt_changed FROM (" +
           query_select(outs, query, late_id ? "true AS __pgt_fresh" : row_id + " AS __pgt_id") +
           ") n FULL JOIN " + t.table + " t ON " +
           (late_id ? by_value : "t." + kRowId + kEq + "n.__pgt_id") + ") q WHERE q." + fresh +
           " IS NULL OR q.__pgt_tid IS NULL OR q.__pgt_changed";
}

// Counted FULL: "WITH e AS (...)", every row of the query (+1) and of the
// stream table (-1), for counted_net.
std::string counted_e(const std::vector<std::string>& outs, const ir::IdentityTarget& t,
                      const std::string& query, const std::string& row_id) {
    std::string cols = output_list(outs, "q.");
    std::string old_cols = output_list(outs, "t.");
    std::string sep = cols.empty() ? "" : ", ";
    return "WITH e AS (SELECT 1 AS __pgt_seq, 1 AS " + kSign + sep + cols + ", " + row_id +
           " AS __pgt_id FROM (" + query + ") q UNION ALL SELECT 0, -1" + sep + old_cols + ", t." +
           kRowId + " FROM " + t.table + " t)";
}

// The first population: the query's rows inserted in its order, read
// from relation `rows`.
std::string insert_all(const std::vector<std::string>& outs, const ir::IdentityTarget& t,
                       const std::string& rows) {
    // Rows go in in the query's order (a join would write them in the
    // order of its hash table).
    return "WITH ins AS (INSERT INTO " + t.table + " " + insert_columns(outs) + " SELECT " +
           insert_values(outs, "n") + " FROM " + rows +
           " n RETURNING 1), del AS (SELECT 1 WHERE false), upd AS (SELECT 1 WHERE false)" +
           kCounts;
}

}  // namespace

std::string stored_apply_tail(const std::vector<std::string>& outs, const ir::IdentityTarget& t,
                              const std::string& touched) {
    // ft: f's rows, and the touched identities f lacks (__pgt_id null); a
    // touched identity's stored row is found by one probe of the identity
    // index: one hash join sorts every identity into deleted, updated or
    // inserted.
    return ", ft AS MATERIALIZED (SELECT f.*, CASE WHEN s.__pgt_id IS NOT NULL THEN " +
           stored_address(t, "s") + " END AS __pgt_tid FROM f FULL JOIN " + touched +
           " s ON f.__pgt_id" + kEq + "s.__pgt_id)" + addressed_apply_tail(outs, t);
}

FullDiffSteps full_diff_steps(const std::vector<std::string>& outs,
                              const ir::IdentityTarget& target, const std::string& query,
                              const std::string& row_id, const std::vector<bool>& alike,
                              bool stored_empty, const std::string& relation) {
    if (stored_empty) {
        return FullDiffSteps{query_select(outs, query, row_id + " AS __pgt_id"),
                             insert_all(outs, target, relation)};
    }
    if (!target.keyed) {
        // The net count per identity and image, only those that change.
        return FullDiffSteps{
            counted_e(outs, target, query, row_id) + ", ei AS (" + counted_images(outs) +
                ") SELECT n.* FROM (" + counted_net(outs) +
                ") n WHERE n.__pgt_n OPERATOR(pg_catalog.<>) 0",
            "WITH n AS (SELECT * FROM " + relation + ")" + counted_writes(outs, target)};
    }
    return FullDiffSteps{
        keyed_full_rows(outs, alike, target, query, row_id),
        "WITH ft AS (SELECT * FROM " + relation + ")" + addressed_apply_tail(outs, target)};
}

}  // namespace pgt::diff
