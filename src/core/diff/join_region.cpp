// Join-region delta SQL (see join_region.hpp for why it is exact).
// Invariant: keys are matched by the identity encoding (one value per key,
// NULLs included), never by text; the pushed-down filter on the query is a
// superset of the region that the identity then narrows exactly.
#include "core/diff/join_region.hpp"
#include "core/sql/names.hpp"

#include <string>
#include <vector>

#include "core/diff/apply.hpp"
#include "core/diff/scan_delta.hpp"
#include "core/diff/slots.hpp"
#include "core/error.hpp"

namespace pgt::diff {

namespace {
// Names of sql/names.hpp the statements below use.
const std::string kIsOld = sql::kIsOldColumn;
const std::string kRowId = sql::kRowIdColumn;
const std::string kSign = sql::kSignColumn;
}  // namespace

std::string region_old_images(std::size_t source) {
    return sql::old_images(source);
}

std::string region_new_images(std::size_t source) {
    return sql::new_images(source);
}

std::string region_delta_images(std::size_t source) {
    return sql::delta_images(source);
}

std::string region_key(std::size_t j) {
    return sql::key_column(j);
}

std::string compose_branch(const std::string& body, const std::vector<ir::BranchTable>& tables,
                           const std::vector<ir::TableRead>& reads,
                           const std::vector<std::string>& kept) {
    if (reads.size() != tables.size()) {
        throw Error(sqlstate::kInternalError, "a branch reads a table the region does not have");
    }
    std::vector<std::string> ctes;
    for (std::size_t i = 0; i < tables.size(); i++) {
        const std::size_t s = tables[i].source;
        const std::string from = reads[i] == ir::TableRead::kOld       ? region_old_images(s)
                                 : reads[i] == ir::TableRead::kNew     ? region_new_images(s)
                                 : reads[i] == ir::TableRead::kBoth    ? region_delta_images(s)
                                 : s < kept.size() && !kept[s].empty() ? kept[s]
                                                                       : tables[i].from;
        ctes.push_back(sql::region_table(i) + " AS NOT MATERIALIZED (SELECT * FROM " + from + ")");
    }
    return ctes.empty() ? body : "WITH " + join(ctes, ", ") + " " + body;
}

namespace {

ir::ScanFilterProject region_scan(const ir::RegionSource& s) {
    ir::ScanFilterProject scan;
    scan.delta = s.delta;
    scan.columns = s.columns;
    scan.prefilter = s.prefilter;
    return scan;
}

// (is_old, columns...) from the CTE src.
std::string images_select(const ir::RegionSource& s) {
    std::vector<std::string> cols{"v." + kSign + " < 0 AS " + kIsOld};
    for (const ir::SourceColumn& c : s.columns) {
        cols.push_back("v." + c.name);
    }
    return " SELECT " + join(cols, ", ") + " FROM src v";
}

}  // namespace

std::string region_images_sql(const ir::RegionSource& s, bool multiplicity) {
    return "WITH " + window_source_cte_list(region_scan(s), "", 0) + images_select(s) +
           (multiplicity ? " CROSS JOIN LATERAL pg_catalog.generate_series(1, "
                           "pg_catalog.abs(v." +
                               kSign + ")) AS __pgt_copy"
                         : "");
}

std::string region_images_unnetted_sql(const ir::RegionSource& s) {
    return paired_images(region_scan(s));
}

namespace {

// Rows of the query whose key columns each hold a touched value (or NULL
// when a touched key has NULL there): a superset of the region, in a form
// PostgreSQL pushes into the join and below GROUP BY/DISTINCT.
std::string fresh_filter(const ir::JoinRegion& j, const ir::IdentityTarget& t) {
    std::vector<std::string> conj;
    for (std::size_t k = 0; k < t.columns.size(); k++) {
        if (!j.key_filtered[k]) {
            continue;  // narrowed by the identity only
        }
        std::string col = "q." + t.columns[k];
        std::string key = "k." + region_key(k);
        std::string in = col + kEq + "ANY (ARRAY(SELECT DISTINCT " + key + " FROM keys k WHERE " +
                         key + " IS NOT NULL))";
        conj.push_back(j.key_nullable[k] ? "(" + in + " OR (" + col +
                                               " IS NULL AND EXISTS (SELECT 1 FROM keys k WHERE " +
                                               key + " IS NULL)))"
                                         : in);
    }
    return conj.empty() ? "true" : join(conj, " AND ");
}

}  // namespace

std::vector<KeptStep> kept_steps(const ir::JoinRegion& j) {
    std::vector<KeptStep> out;
    for (std::size_t i = 0; i < j.sources.size(); i++) {
        const ir::RegionSource& s = j.sources[i];
        const ir::KeptCopy& k = s.kept;
        if (k.table.empty()) {
            continue;
        }
        if (s.columns.empty() || s.prefilter.empty() || k.from.empty() || k.probe_column.empty() ||
            k.probe_equal.empty()) {
            throw Error(sqlstate::kInternalError, "kept copy without columns, filter or probe");
        }
        auto cols = [&](const std::string& alias) {
            std::vector<std::string> out_cols;
            for (const ir::SourceColumn& c : s.columns) {
                out_cols.push_back(alias + c.name);
            }
            return join(out_cols, ", ");
        };
        auto image = [&](const std::string& alias) {
            return "ROW(" + cols(alias + ".") + ")::pg_catalog.text COLLATE pg_catalog.\"C\"";
        };
        const std::string src = ir::kImageAlias;
        KeptStep step;
        step.source = i;
        step.table = k.table;
        step.rebuild = "INSERT INTO " + k.table + " (" + cols("") + ") SELECT " + cols(src + ".") +
                       " FROM " + k.from + " " + src + " WHERE " + s.prefilter;
        // Net count per distinct image (its text: 1.0 and 1.00 differ);
        // that many copies go (found through the probe column's index,
        // NULL apart) or come. `ok`: every copy to delete was there.
        std::string found = "SELECT c.ctid, n.__pgt_img, -n.__pgt_n AS __pgt_want FROM n JOIN " +
                            k.table + " c ON ";
        std::string match = " AND " + image("c") + " = n.__pgt_img";
        step.apply =
            "WITH d AS (SELECT x.*, pg_catalog.sum(x." + kSign +
            ") OVER (PARTITION BY "
            "x.__pgt_img) AS __pgt_n, pg_catalog.row_number() OVER (PARTITION BY x.__pgt_img) "
            "AS __pgt_rn FROM (SELECT " +
            cols(src + ".") + ", " + src + "." + kSign + ", " + image(src) + " AS __pgt_img FROM " +
            region_delta_images(i) + " " + src + " WHERE " + s.prefilter +
            ") x), n AS (SELECT d.* FROM d WHERE d.__pgt_rn = 1 AND d.__pgt_n <> 0), "
            "gone AS (DELETE FROM " +
            k.table +
            " t WHERE t.ctid = ANY (ARRAY(SELECT y.ctid FROM (SELECT m.ctid, m.__pgt_want, "
            "pg_catalog.row_number() OVER (PARTITION BY m.__pgt_img ORDER BY m.ctid) AS __pgt_k "
            "FROM (" +
            found + "c." + k.probe_column + " " + k.probe_equal + " n." + k.probe_column +
            " WHERE n.__pgt_n < 0" + match + " UNION ALL " + found + "c." + k.probe_column +
            " IS NULL WHERE n.__pgt_n < 0 AND n." + k.probe_column + " IS NULL" + match +
            ") m) y WHERE y.__pgt_k <= y.__pgt_want)) RETURNING 1), ins AS (INSERT INTO " +
            k.table + " (" + cols("") + ") SELECT " + cols("n.") +
            " FROM n CROSS JOIN LATERAL pg_catalog.generate_series(1, n.__pgt_n) AS __pgt_copy "
            "WHERE n.__pgt_n > 0 RETURNING 1) SELECT (SELECT pg_catalog.count(*) FROM gone) "
            "OPERATOR(pg_catalog.=) (SELECT COALESCE(pg_catalog.sum(-n.__pgt_n), 0) FROM n "
            "WHERE n.__pgt_n < 0) AS ok, (SELECT pg_catalog.count(*) FROM ins) AS added";
        out.push_back(step);
    }
    return out;
}

std::string region_rescan_ctes(const ir::JoinRegion& j, const ir::IdentityTarget& target) {
    std::vector<std::string> key_fields, out_fields;
    for (std::size_t k = 0; k < target.columns.size(); k++) {
        key_fields.push_back("k." + region_key(k));
    }
    for (const std::string& c : target.columns) {
        out_fields.push_back("r." + c);
    }
    // Subqueries narrowed to the touched keys' values (see key_slot).
    std::string query = fill_slots(j.query, ir::key_slot, target.columns.size(), [](std::size_t k) {
        return "ARRAY(SELECT DISTINCT k." + region_key(k) + " FROM keys k WHERE k." +
               region_key(k) + " IS NOT NULL)";
    });
    // The query runs only when some key was touched (a one-time gate);
    // with a whole query, one of the two runs, by the number of keys.
    const std::string filter = fresh_filter(j, target);
    std::string rows = "SELECT q.* FROM (" + query + ") q WHERE " + filter +
                       " AND (SELECT EXISTS (SELECT 1 FROM keys))";
    if (!j.whole_query.empty()) {
        std::string table;  // the storage table's name as a literal
        for (char c : target.table) {
            table += c == '\'' ? "''" : std::string(1, c);
        }
        const std::string many =
            "(SELECT pg_catalog.count(*) FROM g)::pg_catalog.float8 OPERATOR(pg_catalog.>) "
            "GREATEST(" +
            std::to_string(ir::kWholeQueryKeys) +
            "::pg_catalog.float8, (SELECT c.reltuples::pg_catalog.float8 FROM pg_catalog.pg_class "
            "c WHERE c.oid OPERATOR(pg_catalog.=) '" +
            table + "'::pg_catalog.regclass))";
        rows += " AND NOT " + many + " UNION ALL SELECT q.* FROM (" + j.whole_query + ") q WHERE " +
                filter + " AND " + many;
    }
    return "g AS (SELECT DISTINCT " + row_id_expression(target.domain, key_fields) +
           " AS __pgt_id FROM keys k), fr AS (SELECT r.*, " +
           row_id_expression(target.domain, out_fields) + " AS __pgt_id FROM (" + rows +
           ") r), f AS (SELECT fr.* FROM fr WHERE fr.__pgt_id IN (SELECT g.__pgt_id FROM g))";
}

namespace {

// "f AS (...)": j.key_rows's rows (the key table read from
// region_new_images(key_source), which the caller defines) as the stream
// table's columns, with their identity.
std::string key_rows_fresh(const ir::JoinRegion& j, const ir::IdentityTarget& target) {
    if (j.key_source < 0 || j.key_rows.empty() || !target.keyed) {
        throw Error(sqlstate::kInternalError, "key table statement without a key table");
    }
    std::vector<std::string> outs, new_key;
    for (std::size_t k = 0; k < j.outputs.size(); k++) {
        outs.push_back("x." + region_key(k) + " AS " + j.outputs[k]);
    }
    for (const std::string& c : target.columns) {
        new_key.push_back("y." + c);
    }
    return "f AS (SELECT y.*, " + row_id_expression(target.domain, new_key) +
           " AS __pgt_id FROM (SELECT " + join(outs, ", ") + " FROM (" + j.key_rows + ") x) y)";
}

}  // namespace

std::string key_table_statement(const ir::JoinRegion& j, const ir::IdentityTarget& target) {
    const std::string fresh = key_rows_fresh(j, target);
    const auto i = static_cast<std::size_t>(j.key_source);
    auto rows = [&](TransitionSlot a, TransitionSlot b) {
        return "SELECT * FROM " + source_transition_name(i, a) + " UNION ALL SELECT * FROM " +
               source_transition_name(i, b);
    };
    std::vector<std::string> stored_key;
    for (const std::string& c : target.columns) {
        for (std::size_t o = 0; o < j.outputs.size(); o++) {
            if (j.outputs[o] == c) {
                stored_key.push_back("x." + region_key(o));
            }
        }
    }
    if (stored_key.size() != target.columns.size()) {
        throw Error(sqlstate::kInternalError, "identity column missing from the join's outputs");
    }
    return "WITH " + region_new_images(i) + " AS (" +
           rows(TransitionSlot::kUpdateNew, TransitionSlot::kInserted) + "), " + fresh +
           ", s AS (WITH " + region_new_images(i) + " AS (" +
           rows(TransitionSlot::kUpdateOld, TransitionSlot::kDeleted) + ") SELECT DISTINCT " +
           row_id_expression(target.domain, stored_key) + " AS __pgt_id FROM (" + j.key_rows +
           ") x)" + stored_apply_tail(j.outputs, target, "s");
}

std::string key_window_statement(const ir::JoinRegion& j, const ir::IdentityTarget& target) {
    const std::string fresh = key_rows_fresh(j, target);
    const auto i = static_cast<std::size_t>(j.key_source);
    if (i >= j.sources.size() || !j.sources[i].delta.windowed() ||
        j.key_columns.size() != target.columns.size()) {
        throw Error(sqlstate::kInternalError, "key window statement without a key table window");
    }
    const ir::RegionSource& src = j.sources[i];
    ir::ScanFilterProject scan;
    scan.delta = src.delta;
    scan.columns = src.columns;
    scan.prefilter = src.prefilter;
    scan.key_columns = j.key_columns;
    std::vector<std::string> cols;
    for (const ir::SourceColumn& c : src.columns) {
        cols.push_back("l." + c.name);
    }
    // Every key with an event is probed (s): one whose last event leaves,
    // or arrives as a row the query drops, is deleted if stored.
    return "WITH " + last_event_ctes(scan, target, 5 * src.window) + ", " + region_new_images(i) +
           " AS (SELECT " + join(cols, ", ") + " FROM l WHERE l." + kSign + " > 0), " + fresh +
           ", s AS (SELECT l.__pgt_id FROM l)" + stored_apply_tail(j.outputs, target, "s");
}

std::vector<Branch> composed_branches(const ir::JoinRegion& j) {
    std::vector<std::string> kept;
    for (const ir::RegionSource& s : j.sources) {
        kept.push_back(s.kept.table);
    }
    std::vector<Branch> branches;
    for (const ir::RegionBranch& b : j.branches) {
        Branch out{0, 0, compose_branch(b.sql, j.tables, b.reads, kept), 0};
        for (std::size_t i = 0; i < b.reads.size(); i++) {
            const uint64_t bit = uint64_t{1} << j.tables[i].source;
            out.old_sources |= b.reads[i] == ir::TableRead::kOld ? bit : 0;
            out.new_sources |= b.reads[i] == ir::TableRead::kNew ? bit : 0;
            out.delta_sources |= b.reads[i] == ir::TableRead::kBoth ? bit : 0;
        }
        branches.push_back(std::move(out));
    }
    return branches;
}

DeltaProgram join_region_program(const ir::JoinRegion& j, const ir::IdentityTarget& target,
                                 bool netted_only) {
    if (j.sources.empty() || j.branches.empty() || j.outputs.empty() ||
        j.key_nullable.size() != target.columns.size() ||
        j.key_filtered.size() != target.columns.size() ||
        (target.columns.empty() && target.domain != rowid::Domain::kSynthetic)) {
        throw Error(sqlstate::kInternalError,
                    "join region needs sources, branches and one nullability per key column");
    }
    DeltaProgram p;
    for (std::size_t i = 0; i < j.sources.size(); i++) {
        ImageStep netted{i, j.sources[i].window,
                         region_images_sql(j.sources[i], j.image_multiplicity)};
        if (netted_only) {
            p.images.push_back(netted);
        } else {
            p.images.push_back({i, j.sources[i].window, region_images_unnetted_sql(j.sources[i])});
            p.fallback_images.push_back(netted);
        }
    }
    p.branches = composed_branches(j);
    p.kept = kept_steps(j);
    std::vector<std::string> ctes;
    ctes.push_back("keys AS (" + kBranchesMarker + ")");  // UNION ALL: g dedups by identity
    ctes.push_back(region_rescan_ctes(j, target));
    std::string sql = "WITH " + join(ctes, ", ");
    if (target.keyed) {
        p.main = sql + rescan_apply_tail(j.outputs, target);
        return p;
    }
    std::string cols = join(j.outputs, ", f.");
    std::string old_cols = join(j.outputs, ", t.");
    p.main = sql + ", e AS (SELECT 1 AS __pgt_seq, 1 AS " + kSign + ", f." + cols +
             ", f.__pgt_id FROM f UNION ALL SELECT 0, -1, t." + old_cols + ", t." + kRowId +
             " FROM " + target.table + " t JOIN g ON " + id_match("t", "g") + ")" +
             apply_tail(j.outputs, target);
    return p;
}

}  // namespace pgt::diff
