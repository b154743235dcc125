// Δ of a grouped derived table composed by the aggregate over it (see
// derived.hpp).
// Invariant: both states of D are the same query text over the same
// columns, so a group no change touched gives equal rows in both.
#include "core/diff/derived.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/diff/algebraic.hpp"
#include "core/diff/apply.hpp"
#include "core/diff/join_region.hpp"
#include "core/error.hpp"
#include "core/sql/names.hpp"

namespace pgt::diff {

namespace {

// Names local to the main statement.
const std::string kKeys = "__pgt_dk";    // the keys the branches find
const std::string kNow = "__pgt_dn";     // D now, narrowed
const std::string kBefore = "__pgt_do";  // D before the change, narrowed

// Source s's table as the region's tables read it (the first of them).
const std::string* source_table(const ir::DerivedAggregate& da, std::size_t s) {
    for (const ir::BranchTable& t : da.region.tables) {
        if (t.source == s) {
            return &t.from;
        }
    }
    return nullptr;
}

void check(const ir::DerivedAggregate& da) {
    const std::size_t n = da.region.sources.size();
    if (n == 0 || n > 62 || da.region.branches.empty() || da.source_keys.size() != n ||
        da.narrow.size() != da.keys.size() || da.rows.empty() || da.select.empty()) {
        throw Error(sqlstate::kInternalError,
                    "a derived aggregate needs sources with keys, key branches and its queries");
    }
    for (std::size_t s = 0; s < n; s++) {
        if (da.source_keys[s].empty() || source_table(da, s) == nullptr) {
            throw Error(sqlstate::kInternalError,
                        "a derived aggregate's source without a key or a table");
        }
    }
}

// "ROW(x.a, x.b)", or "x.a" for one column.
std::string key_tuple(const std::vector<std::string>& cols, const std::string& x) {
    std::vector<std::string> q;
    for (const std::string& c : cols) {
        q.push_back(x + "." + c);
    }
    return q.size() == 1 ? q[0] : "ROW(" + join(q, ", ") + ")";
}

// The sources' CTEs: each table now, or before the change.
std::string source_ctes(const ir::DerivedAggregate& da, bool before) {
    std::vector<std::string> ctes;
    for (std::size_t s = 0; s < da.region.sources.size(); s++) {
        std::vector<std::string> cols;
        for (const ir::SourceColumn& c : da.region.sources[s].columns) {
            cols.push_back(c.name);
        }
        const std::string now = "SELECT " + join(cols, ", ") + " FROM " + *source_table(da, s);
        ctes.push_back(sql::derived_source(s) + " AS NOT MATERIALIZED (" +
                       (before ? source_before(da, s) : now) + ")");
    }
    return "WITH " + join(ctes, ", ");
}

// Whether every key narrows D (then D can be read one touched key at a time).
bool narrows_by_every_key(const ir::DerivedAggregate& da) {
    return std::all_of(da.narrow.begin(), da.narrow.end(), [](bool n) { return n; });
}

// A one-time gate: whether the branches found more than kWholeQueryKeys
// rows (keys, not yet distinct).
std::string many_keys() {
    return "(SELECT pg_catalog.count(*) FROM " + kKeys + ")" + " OPERATOR(pg_catalog.>) " +
           std::to_string(ir::kWholeQueryKeys);
}

// D over its sources as `before` says (each now, or before the change),
// narrowed to the keys the branches found: by `= ANY (array)` over all of
// them, and (before the change, every key narrowing) one key at a time
// while they are few: a table before the change is a union with its
// images, which PostgreSQL reaches by a key's value (a LATERAL parameter)
// but not through a join, so the set form reads such a table whole.
std::string narrowed_rows(const ir::DerivedAggregate& da, bool before) {
    std::vector<std::string> filters, per_key, key_cols;
    for (std::size_t k = 0; k < da.keys.size(); k++) {
        const std::string key = sql::key_column(k);
        if (da.narrow[k]) {
            filters.push_back("r." + da.keys[k] + kEq + "ANY (ARRAY(SELECT DISTINCT k." + key +
                              " FROM " + kKeys + " k WHERE k." + key + " IS NOT NULL))");
        }
        per_key.push_back("r." + da.keys[k] + kEq + "kk." + key);
        key_cols.push_back("k." + key);
    }
    const std::string set_form = source_ctes(da, before) + " SELECT r.* FROM (" + da.rows + ") r" +
                                 (filters.empty() ? "" : " WHERE " + join(filters, " AND "));
    if (!before || !narrows_by_every_key(da)) {
        return set_form;
    }
    std::vector<std::string> not_null;
    for (const std::string& c : key_cols) {
        not_null.push_back(c + " IS NOT NULL");
    }
    return "SELECT x.* FROM (SELECT DISTINCT " + join(key_cols, ", ") + " FROM " + kKeys +
           " k WHERE " + join(not_null, " AND ") + ") kk, LATERAL (" + source_ctes(da, before) +
           " SELECT r.* FROM (" + da.rows + ") r WHERE " + join(per_key, " AND ") +
           ") x WHERE NOT " + many_keys() + " UNION ALL (" + set_form + " AND " + many_keys() + ")";
}

// The outer query's (keys, arguments) over the rows of `rows`, each of
// weight `weight`.
std::string weighted(const ir::DerivedAggregate& da, const std::string& rows, int weight) {
    return "SELECT " + std::to_string(weight) + "::pg_catalog.int8, s.* FROM (WITH " +
           sql::region_table(0) + " AS NOT MATERIALIZED (SELECT * FROM " + rows + ") " + da.select +
           ") s";
}

}  // namespace

std::string source_before(const ir::DerivedAggregate& da, std::size_t s) {
    const ir::RegionSource& src = da.region.sources.at(s);
    std::vector<std::string> table_cols, image_cols;
    for (const ir::SourceColumn& c : src.columns) {
        table_cols.push_back("t." + c.name);
        image_cols.push_back("i." + c.name);
    }
    const std::vector<std::string>& key = da.source_keys.at(s);
    std::vector<std::string> image_key;
    for (const std::string& c : key) {
        image_key.push_back("i." + c);
    }
    // NOT (key = ANY (...)) over a unique key of NOT NULL columns (NOT IN):
    // a hashed subplan, and the arm stays a plain scan of the table that
    // PostgreSQL can filter by index (an anti-join would make it a subquery
    // it cannot reach into).
    const std::string* table = source_table(da, s);
    if (table == nullptr) {
        throw Error(sqlstate::kInternalError, "a derived aggregate's source without a table");
    }
    return "SELECT " + join(table_cols, ", ") + " FROM " + *table + " t WHERE NOT " +
           key_tuple(key, "t") + kEq + "ANY (SELECT " + join(image_key, ", ") + " FROM " +
           region_new_images(s) + " i) UNION ALL SELECT " + join(image_cols, ", ") + " FROM " +
           region_old_images(s) + " i";
}

DeltaProgram derived_aggregate_program(const ir::DerivedAggregate& da,
                                       const ir::IdentityTarget& target) {
    check(da);
    DeltaProgram p;
    for (std::size_t s = 0; s < da.region.sources.size(); s++) {
        // Netted: the state before the change is read from them.
        p.images.push_back(
            {s, da.region.sources[s].window, region_images_sql(da.region.sources[s])});
        p.main_old |= uint64_t{1} << s;
        p.main_new |= uint64_t{1} << s;
    }
    p.branches = composed_branches(da.region);
    const std::string d = "d (" + join(algebraic_d_columns(da.shape), ", ") + ") AS (" +
                          weighted(da, kNow, 1) + " UNION ALL " + weighted(da, kBefore, -1) + ")";
    const std::string ctes = kKeys + " AS (" + kBranchesMarker + "), " + kNow + " AS (" +
                             narrowed_rows(da, false) + "), " + kBefore + " AS (" +
                             narrowed_rows(da, true) + "), " + d;
    ir::JoinRegion fresh;
    fresh.key_nullable = da.key_nullable;
    fresh.key_filtered = da.key_filtered;
    algebraic_signed_main(p, da.shape, target, ctes, da.row_query, fresh);
    return p;
}

}  // namespace pgt::diff
