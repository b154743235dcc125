// Delta SQL for scan → filter → project (see scan_delta.hpp for the picture).
// Invariant: the frontier rule lives in window_predicate() and nowhere else;
// every operator is schema-qualified (generated SQL also runs pinned).
#include "core/diff/scan_delta.hpp"
#include "core/sql/names.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/diff/apply.hpp"
#include "core/error.hpp"

namespace pgt::diff {

namespace {
// Names of sql/names.hpp the statements below use.
const std::string kKeepNew = sql::kKeepNewColumn;
const std::string kKeepOld = sql::kKeepOldColumn;
const std::string kSign = sql::kSignColumn;
}  // namespace

namespace {

// The rows of the scan's Δ among those of its FROM item `b`: the frontier
// window of a buffer; every row of a transition relation.
std::string delta_predicate(const ir::ScanFilterProject& scan, const std::string& b, int base) {
    return scan.delta.windowed() ? window_predicate(b, base) : "true";
}

std::string action_is_not(const std::string& col, const char* a, const char* b) {
    return col + " OPERATOR(pg_catalog.<>) '" + a + "' AND " + col + " OPERATOR(pg_catalog.<>) '" +
           b + "'";
}

// An update row of the buffer that leaves every column the query reads as
// it was: both its images are the same row, so both can be skipped (a
// source updated on columns only other stream tables read).
std::string unchanged_update(const ir::ScanFilterProject& scan) {
    std::vector<std::string> conj{"b.action OPERATOR(pg_catalog.=) 'U'"};
    std::vector<std::string> olds, news;
    for (const ir::SourceColumn& c : scan.columns) {
        std::string o = "b.o" + std::to_string(c.attnum), n = "b.n" + std::to_string(c.attnum);
        if (c.same != ir::Sameness::kImage) {
            conj.push_back(o + " IS NOT DISTINCT FROM " + n);
        }
        if (c.same != ir::Sameness::kEqual) {
            olds.push_back(o);
            news.push_back(n);
        }
    }
    if (!olds.empty()) {
        conj.push_back("ROW(" + join(olds, ", ") +
                       ")::pg_catalog.record OPERATOR(pg_catalog.*=) ROW(" + join(news, ", ") +
                       ")::pg_catalog.record");
    }
    return "NOT (" + join(conj, " AND ") + ")";
}

// A buffer row's before- (prefix 'o') or after-image ('n') columns, named
// as the source's: "b.o2 AS l_partkey", ...
std::vector<std::string> image_columns(const ir::ScanFilterProject& scan, char prefix) {
    std::vector<std::string> cols;
    for (const ir::SourceColumn& c : scan.columns) {
        cols.push_back("b." + std::string(1, prefix) + std::to_string(c.attnum) + " AS " + c.name);
    }
    return cols;
}

// One side (old or new images) of the source rows in the window, signed,
// read from the buffer itself (a CTE shared by both sides would be
// materialized: 0.25 s instead of 0.14 s for 180,000 rows).
std::string image_side(const ir::ScanFilterProject& scan, char prefix, const char* sign,
                       const std::string& actions, int base) {
    std::vector<std::string> cols{"b.seq AS __pgt_seq", std::string(sign) + " AS " + kSign};
    for (std::string& c : image_columns(scan, prefix)) {
        cols.push_back(std::move(c));
    }
    return "SELECT " + join(cols, ", ") + " FROM " + scan.delta.relation + " b WHERE " +
           delta_predicate(scan, "b", base) + " AND " + actions + " AND " + unchanged_update(scan);
}

// Whether a buffer row's old (new) image is to be read: its action has
// one, and it passes the prefilter; `from` is the buffer with the
// LATERALs these read.
struct ImageKeeps {
    std::string from, keep_old, keep_new;
};

ImageKeeps image_keeps(const ir::ScanFilterProject& scan) {
    ImageKeeps k{scan.delta.relation + " b", action_is_not("b.action", "I", "T"),
                 action_is_not("b.action", "D", "T")};
    if (!scan.prefilter.empty()) {
        // The prefilter over each image's columns by name; PostgreSQL pulls
        // these FROM-less subqueries up into the scan's own filter.
        auto side = [&](char prefix, const char* alias) {
            return ", LATERAL (SELECT (" + scan.prefilter + ") AS k FROM (SELECT " +
                   join(image_columns(scan, prefix), ", ") + ") " + ir::kImageAlias + ") " + alias;
        };
        k.from += side('o', "ko") + side('n', "kn");
        k.keep_old += " AND COALESCE(ko.k, false)";
        k.keep_new += " AND COALESCE(kn.k, false)";
    }
    return k;
}

// Both images of each buffer row of the window in one scan of the buffer
// (k.from), split in two by a VALUES list: the before-image (sign -1)
// where keep_old holds, the after-image (+1) where keep_new holds; columns
// __pgt_seq, __pgt_sign, then the source columns. For rows with an image to
// read that are few: splitting costs about 0.8 us a row (for 180,000 rows
// that all pass, 2.7 times the cost of two scans).
std::string split_images(const ir::ScanFilterProject& scan, const ImageKeeps& k,
                         const std::string& keep_old, const std::string& keep_new, int base) {
    std::vector<std::string> olds{"-1"}, news{"1"}, names{kSign},
        cols{"b.seq AS __pgt_seq", "s." + kSign};
    for (const ir::SourceColumn& c : scan.columns) {
        olds.push_back("b.o" + std::to_string(c.attnum));
        news.push_back("b.n" + std::to_string(c.attnum));
        names.push_back(c.name);
        cols.push_back("s." + c.name);
    }
    olds.push_back("(" + keep_old + ")");
    news.push_back("(" + keep_new + ")");
    names.emplace_back("__pgt_keep");
    return "SELECT " + join(cols, ", ") + " FROM " + k.from + ", LATERAL (VALUES (" +
           join(olds, ", ") + "), (" + join(news, ", ") + ")) s(" + join(names, ", ") + ") WHERE " +
           delta_predicate(scan, "b", base) + " AND " + unchanged_update(scan) + " AND ((" +
           keep_old + ") OR (" + keep_new + ")) AND s.__pgt_keep";
}

// Every old image (sign -1) and new image (sign +1) of the window: columns
// __pgt_seq, __pgt_sign, then the source columns. Images that fail a WHERE
// conjunct never reach the output; the conjuncts used here cannot raise,
// so they may see uncommitted states.
std::string signed_images(const ir::ScanFilterProject& scan, int base) {
    if (scan.one_pass && !scan.prefilter.empty()) {
        const ImageKeeps k = image_keeps(scan);
        return split_images(scan, k, k.keep_old, k.keep_new, base);
    }
    // Old images come from U and D rows, new ones from I and U (T is the
    // TRUNCATE marker), written as "not" so the planner, which has no
    // statistics for a fresh buffer, does not guess 1% of the rows per side.
    std::string sides = image_side(scan, 'o', "-1", action_is_not("b.action", "I", "T"), base) +
                        " UNION ALL " +
                        image_side(scan, 'n', "1", action_is_not("b.action", "D", "T"), base);
    if (!scan.prefilter.empty()) {
        sides = std::string("SELECT ") + ir::kImageAlias + ".* FROM (" + sides + ") " +
                ir::kImageAlias + " WHERE " + scan.prefilter;
    }
    return sides;
}

// Source images netted over the window: every exact source row image with
// the sum of its signs (its weight) and its latest sequence number; images
// whose weight is 0 (a row inserted and deleted again, an intermediate
// version of an updated row) are gone before any output expression or
// predicate is evaluated, so only states that were really committed (or are
// this transaction's own current state) are ever computed on.
std::string netted_sources(const ir::ScanFilterProject& scan, const std::string& sfx, int base) {
    std::vector<std::string> cols, image_cols;
    for (const ir::SourceColumn& c : scan.columns) {
        cols.push_back("v." + c.name);
        image_cols.push_back("e." + c.name);
    }
    // Byte-wise ("C") comparison: images only need to be told apart.
    std::string img =
        "ROW(" + join(image_cols, ", ") + ")::pg_catalog.text COLLATE pg_catalog.\"C\"";
    // One pass of window functions over the events sorted by image: no
    // join, so no plan whose cost depends on the planner guessing the
    // window's size (a nested loop over 180,000 events ran for minutes).
    return "ev" + sfx + " AS (" + signed_images(scan, base) + "), net" + sfx +
           " AS (SELECT v.*, pg_catalog.sum(v." + kSign +
           ") OVER (PARTITION BY v.__pgt_src_img) AS "
           "__pgt_n, pg_catalog.row_number() OVER (PARTITION BY v.__pgt_src_img, v." +
           kSign +
           " > 0 "
           "ORDER BY v.__pgt_seq DESC) AS __pgt_rn FROM (SELECT e.*, " +
           img + " AS __pgt_src_img FROM ev" + sfx +
           " e) v), "
           // One representative per surviving image: its latest event with the
           // net's sign ((image, seq, sign) is unique: a buffer row gives one
           // old and one new image).
           "src" +
           sfx + " AS (SELECT v.__pgt_seq, v.__pgt_n AS " + kSign +
           (cols.empty() ? "" : ", " + join(cols, ", ")) + " FROM net" + sfx +
           " v WHERE v.__pgt_n OPERATOR(pg_catalog.<>) 0 AND v.__pgt_rn OPERATOR(pg_catalog.=) 1 "
           "AND (v." +
           kSign + " > 0) OPERATOR(pg_catalog.=) (v.__pgt_n > 0))";
}

std::string signed_outputs(const ir::ScanFilterProject& scan) {
    std::vector<std::string> cols{scan.alias + ".__pgt_seq", scan.alias + "." + kSign};
    for (const ir::OutputColumn& o : scan.outputs) {
        cols.push_back(o.expr + " AS " + o.name);
    }
    return "SELECT " + join(cols, ", ") + " FROM src " + scan.alias +
           (scan.predicate.empty() ? "" : " WHERE " + scan.predicate);
}

// The CTEs shared by both apply shapes: the netted window (src), d (signed
// outputs; the sign is the weight), e (d with its identity).
std::string delta_ctes(const ir::ScanFilterProject& scan, const ir::IdentityTarget& target) {
    std::vector<std::string> id_fields;
    for (const std::string& c : target.columns) {
        id_fields.push_back("d." + c);
    }
    std::string id_expr = row_id_expression(target.domain, id_fields);
    return window_source_ctes(scan) + ", d AS (" + signed_outputs(scan) + "), e AS (SELECT d.*, " +
           id_expr + " AS __pgt_id FROM d)";
}

}  // namespace

std::string window_source_cte_list(const ir::ScanFilterProject& scan, const std::string& sfx,
                                   int base) {
    return netted_sources(scan, sfx, base);
}

std::string window_source_ctes(const ir::ScanFilterProject& scan) {
    return "WITH " + window_source_cte_list(scan, "", 0);
}

std::string window_source_ctes_unnetted(const ir::ScanFilterProject& scan) {
    return "WITH src AS (" + signed_images(scan, 0) + ")";
}

std::string paired_images(const ir::ScanFilterProject& scan) {
    std::vector<std::string> cols = image_columns(scan, 'o');
    for (std::size_t k = 0; k < scan.columns.size(); k++) {
        cols.push_back("b.n" + std::to_string(scan.columns[k].attnum) + " AS __pgt_n" +
                       std::to_string(k + 1));
    }
    ImageKeeps k = image_keeps(scan);
    cols.insert(cols.begin(), {k.keep_old + " AS " + kKeepOld, k.keep_new + " AS " + kKeepNew});
    return "SELECT " + join(cols, ", ") + " FROM " + k.from + " WHERE " +
           delta_predicate(scan, "b", 0) + " AND " + unchanged_update(scan) + " AND ((" +
           k.keep_old + ") OR (" + k.keep_new + "))";
}

namespace {

// The scan's columns as a select list over a transition table aliased t
// ("1" when it reads none, as count(*) does).
std::string transition_columns(const ir::ScanFilterProject& scan) {
    std::vector<std::string> names;
    for (const ir::SourceColumn& c : scan.columns) {
        names.push_back("t." + c.name);
    }
    return names.empty() ? std::string("1") : join(names, ", ");
}

}  // namespace

std::string transition_rows(const ir::ScanFilterProject& scan,
                            const std::vector<std::string>& types, const TransitionTables& tables) {
    if (tables.olds.empty() && tables.news.empty()) {
        throw Error(sqlstate::kInternalError, "a transition relation needs a transition table");
    }
    // One table's rows: its columns as o<attnum> (is_old) or n<attnum>,
    // the other side's as NULLs, each of the type a buffer column has (a
    // domain's base type: a NULL of a NOT NULL domain would raise).
    auto side = [&](const std::string& rel, bool is_old) {
        std::vector<std::string> cols{
            std::string(is_old ? "1" : "2") + "::pg_catalog.int8 AS seq",
            "NULL::pg_catalog.xid8 AS xid",
            std::string("'") + (is_old ? "D" : "I") + "'::pg_catalog.\"char\" AS action"};
        for (int pass = 0; pass < 2; pass++) {
            const bool old_pass = pass == 0;
            for (std::size_t k = 0; k < scan.columns.size(); k++) {
                const ir::SourceColumn& c = scan.columns[k];
                cols.push_back((old_pass == is_old ? "t." + c.name : "NULL") + "::" + types.at(k) +
                               " AS " + (old_pass ? "o" : "n") + std::to_string(c.attnum));
            }
        }
        return "SELECT " + join(cols, ", ") + " FROM " + rel + " t";
    };
    std::vector<std::string> rows;
    for (const std::string& rel : tables.olds) {
        rows.push_back(side(rel, true));
    }
    for (const std::string& rel : tables.news) {
        rows.push_back(side(rel, false));
    }
    return "(" + join(rows, " UNION ALL ") + ")";
}

std::string source_transition_name(std::size_t source, TransitionSlot slot) {
    const char* kind = slot == TransitionSlot::kUpdateOld   ? "old"
                       : slot == TransitionSlot::kUpdateNew ? "new"
                       : slot == TransitionSlot::kDeleted   ? "del"
                                                            : "ins";
    return sql::source_transition(source, kind);
}

TransitionTables source_transition_tables(std::size_t source) {
    using S = TransitionSlot;
    return {{source_transition_name(source, S::kUpdateOld),
             source_transition_name(source, S::kDeleted)},
            {source_transition_name(source, S::kUpdateNew),
             source_transition_name(source, S::kInserted)}};
}

std::string transition_keyed_sql(const ir::ScanFilterProject& scan,
                                 const ir::IdentityTarget& target, const TransitionTables& tables) {
    const std::string cols = transition_columns(scan);
    // The rows of some transition tables under the scan's alias; none: the
    // rows of one of them that are never there (a relation of its shape).
    auto rows_of = [&](const std::vector<std::string>& rels) {
        std::vector<std::string> parts;
        for (const std::string& rel : rels) {
            parts.push_back("SELECT " + cols + " FROM " + rel + " t");
        }
        if (parts.empty()) {
            const std::string& any = tables.olds.empty() ? tables.news.at(0) : tables.olds.at(0);
            parts.push_back("SELECT " + cols + " FROM " + any + " t WHERE false");
        }
        return "(" + join(parts, " UNION ALL ") + ") " + scan.alias;
    };
    const std::string where = scan.predicate.empty() ? "" : " WHERE " + scan.predicate;
    std::vector<std::string> outs, out_names, key_outs, key_fields;
    for (const ir::OutputColumn& o : scan.outputs) {
        outs.push_back(o.expr + " AS " + o.name);
        out_names.push_back(o.name);
    }
    for (const std::string& c : target.columns) {
        key_fields.push_back("x." + c);
        for (const ir::OutputColumn& o : scan.outputs) {
            if (o.name == c) {
                key_outs.push_back(o.expr + " AS " + o.name);
            }
        }
    }
    if (key_outs.size() != target.columns.size()) {
        throw Error(sqlstate::kInternalError, "identity column missing from the outputs");
    }
    const std::string id = row_id_expression(target.domain, key_fields);
    // f: the rows the statement's after-images give their identities now;
    // g: the identities its before-images had (gone unless f has them).
    return "WITH f AS (SELECT x.*, " + id + " AS __pgt_id FROM (SELECT " + join(outs, ", ") +
           " FROM " + rows_of(tables.news) + where + ") x), g AS (SELECT DISTINCT " + id +
           " AS __pgt_id FROM (SELECT " + join(key_outs, ", ") + " FROM " + rows_of(tables.olds) +
           where + ") x)" + stored_apply_tail(out_names, target, "g");
}

std::string identity_locks_sql(const ir::ScanFilterProject& scan, rowid::Domain domain,
                               const std::vector<std::string>& key_exprs,
                               const TransitionTables& tables) {
    const std::string cols = transition_columns(scan);
    std::vector<std::string> sides;
    for (const std::vector<std::string>* rels : {&tables.olds, &tables.news}) {
        for (const std::string& rel : *rels) {
            sides.push_back("SELECT " + cols + " FROM " + rel + " t");
        }
    }
    if (sides.empty()) {
        throw Error(sqlstate::kInternalError, "identity locks need a transition table");
    }
    const std::string hash = "pg_catalog.hashtext(pg_catalog.encode(" +
                             row_id_expression(domain, key_exprs) + ", 'hex'))";
    // Sorted: the caller takes them in this order, so two writers never
    // wait for each other in a cycle of these locks.
    return "SELECT DISTINCT " + hash + " AS k FROM (" + join(sides, " UNION ALL ") + ") " +
           scan.alias + (scan.predicate.empty() ? "" : " WHERE " + scan.predicate) + " ORDER BY 1";
}

std::string row_id_expression(rowid::Domain domain, const std::vector<std::string>& fields) {
    if (domain == rowid::Domain::kSynthetic) {
        return "pgtrickle.encode_row_id_v2('synthetic'::pg_catalog.text, "
               "'scalar_aggregate_singleton'::pg_catalog.text, ROW())";
    }
    // Spellings come from the registry (plain lower-case words).
    const char* spelled = rowid::domain_spelling(domain);
    if (spelled == nullptr) {
        throw Error(sqlstate::kInternalError, "unknown row identity domain");
    }
    return "pgtrickle.encode_row_id_v2('" + std::string(spelled) + "'::pg_catalog.text, ROW(" +
           join(fields, ", ") + "))";
}

std::string frontier_text(const std::string& snap, const std::string& own_xid) {
    const size_t c1 = snap.find(':');
    const size_t c2 = c1 == std::string::npos ? c1 : snap.find(':', c1 + 1);
    if (c2 == std::string::npos) {
        throw Error("XX000", "not a snapshot: " + snap);
    }
    auto number = [&](const std::string& text) {
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
            throw Error("XX000", "not a snapshot: " + snap);
        }
        return std::stoull(text);
    };
    const uint64_t own = number(own_xid);
    uint64_t xmin = number(snap.substr(0, c1));
    const uint64_t xmax = number(snap.substr(c1 + 1, c2 - c1 - 1));
    if (own >= xmax) {
        return snap;  // ids from xmax on are in progress already
    }
    std::vector<uint64_t> xip;
    const std::string list = snap.substr(c2 + 1);
    for (size_t pos = 0; pos < list.size();) {
        const size_t comma = std::min(list.find(',', pos), list.size());
        xip.push_back(number(list.substr(pos, comma - pos)));
        pos = comma + 1;
    }
    if (std::find(xip.begin(), xip.end(), own) != xip.end()) {
        return snap;
    }
    xip.insert(std::upper_bound(xip.begin(), xip.end(), own), own);
    xmin = std::min(xmin, own);
    std::string out = std::to_string(xmin) + ":" + std::to_string(xmax) + ":";
    for (size_t i = 0; i < xip.size(); i++) {
        out += (i == 0 ? "" : ",") + std::to_string(xip[i]);
    }
    return out;
}

std::string window_predicate(const std::string& b, int base) {
    auto p = [base](int n) { return "$" + std::to_string(base + n); };
    const std::string xid = b + ".xid";
    return "((pg_catalog.pg_visible_in_snapshot(" + xid + ", " + p(1) + ") AND NOT " +
           "pg_catalog.pg_visible_in_snapshot(" + xid + ", " + p(2) + ")) OR COALESCE(" + xid +
           kEq + p(3) + ", false)) AND NOT COALESCE(" + xid + kEq + p(4) + " AND " + b +
           ".seq OPERATOR(pg_catalog.<=) " + p(5) + ", false)";
}

namespace {

// The buffer columns of the key's before- ('o') or after-images ('n').
std::vector<std::string> key_images(const ir::ScanFilterProject& scan, char prefix) {
    std::vector<std::string> cols;
    for (const std::string& k : scan.key_columns) {
        auto c = std::find_if(scan.columns.begin(), scan.columns.end(),
                              [&](const ir::SourceColumn& s) { return s.name == k; });
        if (c == scan.columns.end()) {
            throw Error(sqlstate::kInternalError, "a key column the scan does not read");
        }
        cols.push_back("b." + std::string(1, prefix) + std::to_string(c->attnum));
    }
    return cols;
}

}  // namespace

std::string last_event_ctes(const ir::ScanFilterProject& scan, const ir::IdentityTarget& target,
                            int base) {
    const ImageKeeps k = image_keeps(scan);
    // Same key by image (*=): keys equal as values but shown otherwise
    // (numeric 1.0, 1.00) are other identities.
    const std::string same_key = "ROW(" + join(key_images(scan, 'o'), ", ") +
                                 ")::pg_catalog.record OPERATOR(pg_catalog.*=) ROW(" +
                                 join(key_images(scan, 'n'), ", ") + ")::pg_catalog.record";
    const std::string arrive =
        "(" + k.keep_new + ") OR ((" + k.keep_old + ") AND " + same_key + ")";
    const std::string depart =
        "(" + k.keep_old + ") AND (b.action OPERATOR(pg_catalog.=) 'D' OR NOT " + same_key + ")";
    auto side = [&](char prefix, const char* sign, const std::string& keep) {
        std::vector<std::string> cols{"b.seq AS __pgt_seq", std::string(sign) + " AS " + kSign};
        for (std::string& c : image_columns(scan, prefix)) {
            cols.push_back(std::move(c));
        }
        return "SELECT " + join(cols, ", ") + " FROM " + k.from + " WHERE " +
               delta_predicate(scan, "b", base) + " AND " + keep;
    };
    const std::string events =
        scan.one_pass && !scan.prefilter.empty()
            ? split_images(scan, k, depart, arrive, base)
            : side('n', "1", unchanged_update(scan) + " AND (" + arrive + ")") + " UNION ALL " +
                  side('o', "-1", depart);
    std::vector<std::string> id_fields;
    for (const std::string& c : scan.key_columns) {
        id_fields.push_back("e." + c);
    }
    return "ev AS (" + events + "), l AS (SELECT DISTINCT ON (v.__pgt_id) v.* FROM (SELECT e.*, " +
           row_id_expression(target.domain, id_fields) +
           " AS __pgt_id FROM ev e) v ORDER BY v.__pgt_id, v.__pgt_seq DESC, v." + kSign + " DESC)";
}

namespace {

// apply_sql for a stream table keyed by its source's key (see there): f
// is what the last events (last_event_ctes) that arrive and pass WHERE
// store.
std::string last_event_sql(const ir::ScanFilterProject& scan, const ir::IdentityTarget& target) {
    std::vector<std::string> outs, cols;
    // ft, in one pass over l: an output is computed only where the event
    // arrives and passes WHERE (__pgt_keep, computed once below OFFSET 0),
    // so it never runs on a row WHERE keeps out.
    const std::string& a = scan.alias;
    for (const ir::OutputColumn& o : scan.outputs) {
        outs.push_back(o.name);
        cols.push_back("CASE WHEN " + a + ".__pgt_keep THEN " + o.expr + " END AS " + o.name);
    }
    cols.push_back("CASE WHEN " + a + ".__pgt_keep THEN " + a + ".__pgt_id END AS __pgt_id");
    cols.push_back(stored_address(target, a) + " AS __pgt_tid");
    // WHERE runs on arrivals only (a departure's before-image may be a
    // state that never reached a frontier: a row inserted, then given
    // another key), and only on those the prefilter keeps, as when images
    // are netted (an arrival failing it is kept only to remove its row).
    const std::string arrives =
        a + "." + kSign + " > 0" +
        (scan.prefilter.empty() ? "" : " AND COALESCE((" + scan.prefilter + "), false)");
    const std::string keep = scan.predicate.empty()
                                 ? arrives
                                 : "CASE WHEN " + arrives + " THEN COALESCE((" + scan.predicate +
                                       "), false) ELSE false END";
    return "WITH " + last_event_ctes(scan, target, 0) + ", ft AS MATERIALIZED (SELECT " +
           join(cols, ", ") + " FROM (SELECT " + a + ".*, " + keep + " AS __pgt_keep FROM l " + a +
           " OFFSET 0) " + a + ")" + addressed_apply_tail(outs, target);
}

}  // namespace

std::vector<std::string> identity_source_columns(const ir::ScanFilterProject& scan,
                                                 const ir::IdentityTarget& target) {
    std::vector<std::string> cols;
    for (const std::string& id : target.columns) {
        auto o = std::find_if(scan.outputs.begin(), scan.outputs.end(),
                              [&](const ir::OutputColumn& out) { return out.name == id; });
        auto c = o == scan.outputs.end()
                     ? scan.columns.end()
                     : std::find_if(scan.columns.begin(), scan.columns.end(),
                                    [&](const ir::SourceColumn& s) {
                                        return o->expr == scan.alias + "." + s.name;
                                    });
        if (c == scan.columns.end()) {
            return {};
        }
        cols.push_back(c->name);
    }
    return cols;
}

std::string apply_sql(const ir::ScanFilterProject& scan, const ir::IdentityTarget& target) {
    std::vector<std::string> outs;
    for (const ir::OutputColumn& o : scan.outputs) {
        outs.push_back(o.name);
    }
    if (!scan.key_columns.empty() && scan.delta.windowed() && target.keyed) {
        return last_event_sql(scan, target);
    }
    return delta_ctes(scan, target) + apply_tail(outs, target);
}

std::string window_count_sql(const std::string& buffer) {
    return "SELECT (SELECT pg_catalog.count(*) FROM (SELECT 1 FROM " + buffer + " b WHERE " +
           window_predicate("b") + " LIMIT $6) x), EXISTS (SELECT 1 FROM " + buffer +
           " b WHERE b.action OPERATOR(pg_catalog.=) 'T' AND " + window_predicate("b") + ")";
}

}  // namespace pgt::diff
