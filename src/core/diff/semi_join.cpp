#include "core/diff/semi_join.hpp"

#include <string>
#include <vector>

#include "core/diff/apply.hpp"
#include "core/sql/names.hpp"

namespace pgt::diff {

std::string term_weight(const SignedTerm& term, const std::string& alias) {
    std::string weight = std::to_string(term.sign) + "::pg_catalog.int8";
    int member = 0;
    for (TableRead read : term.tables) {
        if (read != TableRead::kNow) {
            weight += " OPERATOR(pg_catalog.*) " + alias + ".__pgt_sg" + std::to_string(++member);
        }
    }
    return weight;
}

std::string signed_branch_sql(const SignedTerm& term, std::size_t entries,
                              const std::string& inner) {
    std::string columns;
    for (std::size_t k = 0; k < entries; k++) {
        columns += ", b." + sql::key_column(k);
    }
    return "SELECT " + term_weight(term, "b") + " AS " + sql::kWeightColumn + columns + " FROM (" +
           inner + ") b";
}

std::string image_branch_sql(const SignedTerm& term, const std::string& inner) {
    return "SELECT " + std::to_string(term.sign) + "::pg_catalog.int8 AS " + sql::kWeightColumn +
           ", b.* FROM (" + inner + ") b";
}

namespace {

// The net count of s's changed rows per x, where it is not 0, as d.
std::string net_changes(const CountedSemiJoin& j, const std::string& images) {
    std::vector<std::string> keys, group;
    for (std::size_t p = 0; p < j.inner.size(); p++) {
        keys.push_back(std::string(sql::kImageAlias) + "." + j.inner[p] + " AS __pgt_e" +
                       std::to_string(p + 1));
        group.push_back(std::to_string(p + 1));
    }
    std::string sign = std::string(sql::kImageAlias) + "." + sql::kSignColumn;
    return "SELECT " + join(keys, ", ") + ", pg_catalog.sum(" + sign +
           ")::pg_catalog.int8 AS __pgt_net FROM " + images + " " + sql::kImageAlias +
           (j.i_filter.empty() ? "" : " WHERE " + join(j.i_filter, " AND ")) + " GROUP BY " +
           join(group, ", ") + " HAVING pg_catalog.sum(" + sign + ") OPERATOR(pg_catalog.<>) 0";
}

// The flip of one row's y for semi-join j joined as d: whether s has a row
// with x now, minus whether it had one before (now − net), from s's rows
// now with x counted up to net + 1. NOT EXISTS compares with 0 instead.
std::string flip(const CountedSemiJoin& j, const std::string& d, const std::string& f) {
    std::vector<std::string> probe;
    for (std::size_t p = 0; p < j.inner.size(); p++) {
        probe.push_back("s." + j.inner[p] + " " + j.equal[p] + " " + d + ".__pgt_e" +
                        std::to_string(p + 1));
    }
    probe.insert(probe.end(), j.s_filter.begin(), j.s_filter.end());
    std::string now = "z.__pgt_c", had = "z.__pgt_c OPERATOR(pg_catalog.-) " + d + ".__pgt_net";
    std::string cmp = j.anti ? " OPERATOR(pg_catalog.=) 0" : " OPERATOR(pg_catalog.>) 0";
    return ", (SELECT (" + now + cmp + ")::pg_catalog.int4 OPERATOR(pg_catalog.-) (" + had + cmp +
           ")::pg_catalog.int4 FROM (SELECT pg_catalog.count(*) AS __pgt_c FROM (SELECT 1 FROM " +
           j.from + " s WHERE " + join(probe, " AND ") + " LIMIT GREATEST(" + d +
           ".__pgt_net, 0) OPERATOR(pg_catalog.+) 1) x) z) AS " + f;
}

}  // namespace

std::string semi_join_branch_sql(const SignedTerm& term, std::size_t entries,
                                 const std::string& inner,
                                 const std::vector<const CountedSemiJoin*>& in,
                                 const std::vector<std::string>& images) {
    std::string from = "(" + inner + ") b", flips, nonzero, cols;
    std::string weight = term_weight(term, "y");
    std::size_t base = entries;
    for (std::size_t m = 0; m < in.size(); m++) {
        const CountedSemiJoin& j = *in[m];
        std::string d = "__pgt_d" + std::to_string(m + 1);
        std::string f = "__pgt_f" + std::to_string(m + 1);
        std::vector<std::string> on;
        for (std::size_t p = 0; p < j.inner.size(); p++) {
            on.push_back(d + ".__pgt_e" + std::to_string(p + 1) + " " + j.equal[p] + " b." +
                         sql::key_column(base + p));
        }
        from += " JOIN (" + net_changes(j, images[m]) + ") " + d + " ON " + join(on, " AND ");
        flips += flip(j, d, f);
        nonzero += (nonzero.empty() ? "" : " AND ") + ("y." + f + " OPERATOR(pg_catalog.<>) 0");
        weight += " OPERATOR(pg_catalog.*) y." + f;
        base += j.inner.size();
    }
    for (std::size_t k = 0; k < entries; k++) {
        cols += ", y." + sql::key_column(k);
    }
    // OFFSET 0: each flip is counted once, after the join found its rows.
    return "SELECT " + weight + " AS " + sql::kWeightColumn + cols + " FROM (SELECT b.*" + flips +
           " FROM " + from + " OFFSET 0) y WHERE " + nonzero;
}

}  // namespace pgt::diff
