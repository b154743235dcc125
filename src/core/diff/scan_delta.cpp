// Delta SQL for scan → filter → project (see scan_delta.hpp for the picture).
// Invariant: the frontier rule lives in window_predicate() and nowhere else;
// every operator is schema-qualified (generated SQL also runs pinned).
#include "core/diff/scan_delta.hpp"

#include <string>
#include <vector>

#include "core/error.hpp"

namespace pgt::diff {

namespace {

const std::string kEq = " OPERATOR(pg_catalog.=) ";

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
    std::string out;
    for (size_t i = 0; i < parts.size(); i++) {
        out += (i ? sep : "") + parts[i];
    }
    return out;
}

std::string action_is(const std::string& col, const char* a, const char* b = nullptr) {
    std::string s = col + kEq + "'" + a + "'";
    return b ? "(" + s + " OR " + col + kEq + "'" + b + "')" : s;
}

// One side (old or new images) of the source, as the expressions expect it.
std::string image_cte(const ir::ScanFilterProject& scan, char prefix, const std::string& where) {
    std::vector<std::string> cols{"w.seq AS __pgt_seq"};
    for (const ir::SourceColumn& c : scan.columns) {
        cols.push_back("w." + std::string(1, prefix) + std::to_string(c.attnum) + " AS " + c.name);
    }
    return "SELECT " + join(cols, ", ") + " FROM w WHERE " + where;
}

std::string signed_select(const ir::ScanFilterProject& scan, const char* sign, const char* from) {
    std::vector<std::string> cols{scan.alias + ".__pgt_seq", std::string(sign) + " AS __pgt_sign"};
    for (const ir::OutputColumn& o : scan.outputs) {
        cols.push_back(o.expr + " AS " + o.name);
    }
    return "SELECT " + join(cols, ", ") + " FROM " + from + " " + scan.alias +
           (scan.predicate.empty() ? "" : " WHERE " + scan.predicate);
}

// The CTEs shared by both apply shapes: w (window), src_old, src_new, d, e.
std::string delta_ctes(const ir::ScanFilterProject& scan, const ir::IdentityTarget& target) {
    std::vector<std::string> w_cols{"b.seq", "b.action"};
    for (const ir::SourceColumn& c : scan.columns) {
        w_cols.push_back("b.o" + std::to_string(c.attnum));
        w_cols.push_back("b.n" + std::to_string(c.attnum));
    }
    std::vector<std::string> id_fields;
    for (const std::string& c : target.columns) {
        id_fields.push_back("d." + c);
    }
    std::string id_expr = row_id_expression(target.domain, id_fields);
    return "WITH w AS (SELECT " + join(w_cols, ", ") + " FROM " + scan.buffer + " b WHERE " +
           window_predicate("b") + " AND b.action OPERATOR(pg_catalog.<>) 'T'), " + "src_old AS (" +
           image_cte(scan, 'o', action_is("w.action", "U", "D")) + "), " + "src_new AS (" +
           image_cte(scan, 'n', action_is("w.action", "I", "U")) + "), " + "d AS (" +
           signed_select(scan, "-1", "src_old") + " UNION ALL " +
           signed_select(scan, "1", "src_new") + "), " + "e AS (SELECT d.*, " + id_expr +
           " AS __pgt_id FROM d)";
}

std::string id_match(const std::string& t, const std::string& src) {
    return t + ".__pgt_row_probe" + kEq + "pgtrickle.row_probe_v1(" + src + ".__pgt_id) AND " + t +
           ".__pgt_row_id" + kEq + src + ".__pgt_id";
}

std::string output_list(const ir::ScanFilterProject& scan, const std::string& prefix) {
    std::vector<std::string> cols;
    for (const ir::OutputColumn& o : scan.outputs) {
        cols.push_back(prefix + o.name);
    }
    return join(cols, ", ");
}

std::string insert_columns(const ir::ScanFilterProject& scan) {
    std::string outs = output_list(scan, "");
    return "(" + outs + (outs.empty() ? "" : ", ") + "__pgt_row_id)";
}

std::string insert_values(const ir::ScanFilterProject& scan, const std::string& src) {
    std::string outs = output_list(scan, src + ".");
    return outs + (outs.empty() ? "" : ", ") + src + ".__pgt_id";
}

// Text form of the output row: exact as users see it (numeric scale, case of
// a case-insensitive type, float signed zero), unlike equality operators.
std::string image(const ir::ScanFilterProject& scan, const std::string& prefix) {
    return "ROW(" + output_list(scan, prefix) + ")::pg_catalog.text";
}

std::string changed_values(const ir::ScanFilterProject& scan) {
    return scan.outputs.empty() ? "false"
                                : image(scan, "t.") + " IS DISTINCT FROM " + image(scan, "f.");
}

std::string keyed_apply(const ir::ScanFilterProject& scan, const ir::IdentityTarget& t) {
    std::vector<std::string> sets;
    for (const ir::OutputColumn& o : scan.outputs) {
        sets.push_back(o.name + " = f." + o.name);
    }
    std::string upd = sets.empty()
                          ? "SELECT 1 WHERE false"
                          : "UPDATE " + t.table + " t SET " + join(sets, ", ") +
                                " FROM f WHERE f.__pgt_sign > 0 AND " + id_match("t", "f") +
                                " AND " + changed_values(scan) + " RETURNING 1";
    return ", f AS (SELECT DISTINCT ON (e.__pgt_id) e.* FROM e ORDER BY e.__pgt_id, "
           "e.__pgt_seq DESC, e.__pgt_sign DESC), del AS (DELETE FROM " +
           t.table + " t USING f WHERE f.__pgt_sign < 0 AND " + id_match("t", "f") +
           " RETURNING 1), upd AS (" + upd + "), ins AS (INSERT INTO " + t.table + " " +
           insert_columns(scan) + " SELECT " + insert_values(scan, "f") +
           " FROM f WHERE f.__pgt_sign > 0 AND NOT EXISTS (SELECT 1 FROM " + t.table + " t WHERE " +
           id_match("t", "f") +
           ") RETURNING 1) SELECT (SELECT pg_catalog.count(*) FROM ins), "
           "(SELECT pg_catalog.count(*) FROM del), (SELECT pg_catalog.count(*) FROM upd)";
}

std::string counted_apply(const ir::ScanFilterProject& scan, const ir::IdentityTarget& t) {
    // Rows equal as values can differ as shown (0 and 0.00 share an
    // identity): counts are kept per identity *and* exact image.
    std::string outs = output_list(scan, "e.");
    std::string img = scan.outputs.empty() ? "''" : image(scan, "e.");
    return ", ei AS (SELECT e.*, " + img +
           " AS __pgt_img FROM e), n AS (SELECT DISTINCT ON "
           "(e.__pgt_id, e.__pgt_img) " +
           output_list(scan, "e.") + (outs.empty() ? "" : ", ") +
           "e.__pgt_id, e.__pgt_img, pg_catalog.sum(e.__pgt_sign) OVER (PARTITION BY e.__pgt_id, "
           "e.__pgt_img) AS __pgt_n FROM ei e ORDER BY e.__pgt_id, e.__pgt_img), del AS (DELETE "
           "FROM " +
           t.table +
           " t WHERE t.ctid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT x.ctid FROM n CROSS JOIN "
           "LATERAL (SELECT t2.ctid FROM " +
           t.table + " t2 WHERE " + id_match("t2", "n") + " AND " +
           (scan.outputs.empty() ? "true" : image(scan, "t2.") + kEq + "n.__pgt_img") +
           " LIMIT (- n.__pgt_n)) x WHERE n.__pgt_n < 0)) RETURNING 1), ins AS (INSERT INTO " +
           t.table + " " + insert_columns(scan) + " SELECT " + insert_values(scan, "n") +
           " FROM n CROSS JOIN LATERAL pg_catalog.generate_series(1, n.__pgt_n) WHERE n.__pgt_n > 0"
           " RETURNING 1) SELECT (SELECT pg_catalog.count(*) FROM ins), "
           "(SELECT pg_catalog.count(*) FROM del), 0::pg_catalog.int8";
}

}  // namespace

std::string row_id_expression(const std::string& domain, const std::vector<std::string>& fields) {
    if (domain == "synthetic") {
        return "pgtrickle.encode_row_id_v2('synthetic'::pg_catalog.text, "
               "'scalar_aggregate_singleton'::pg_catalog.text, ROW())";
    }
    // Domains come from a fixed registry; refuse anything that would need quoting.
    if (domain.empty() ||
        domain.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") != std::string::npos) {
        throw Error(sqlstate::kInternalError, "unknown row identity domain \"" + domain + "\"");
    }
    return "pgtrickle.encode_row_id_v2('" + domain + "'::pg_catalog.text, ROW(" +
           join(fields, ", ") + "))";
}

std::string window_predicate(const std::string& b) {
    const std::string xid = b + ".xid";
    return "((pg_catalog.pg_visible_in_snapshot(" + xid + ", $1) AND NOT " +
           "pg_catalog.pg_visible_in_snapshot(" + xid + ", $2)) OR COALESCE(" + xid + kEq +
           "$3, false)) AND NOT COALESCE(" + xid + kEq + "$4 AND " + b +
           ".seq OPERATOR(pg_catalog.<=) $5, false)";
}

std::string apply_sql(const ir::ScanFilterProject& scan, const ir::IdentityTarget& target) {
    return delta_ctes(scan, target) +
           (target.keyed ? keyed_apply(scan, target) : counted_apply(scan, target));
}

std::string window_has_rows_sql(const std::string& buffer) {
    return "SELECT EXISTS (SELECT 1 FROM " + buffer + " b WHERE " + window_predicate("b") + ")";
}

std::string window_has_truncate_sql(const std::string& buffer) {
    return "SELECT EXISTS (SELECT 1 FROM " + buffer + " b WHERE " + window_predicate("b") +
           " AND b.action OPERATOR(pg_catalog.=) 'T')";
}

}  // namespace pgt::diff
