// Unit tests of diff::region_rescan_ctes: the rows of the touched keys come
// from the region's query narrowed to them, or, when the region has a whole
// query, from whichever of the two a one-time gate on the number of keys
// picks (ir::JoinRegion::whole_query).
#include "core/diff/join_region.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/ir/scan.hpp"

namespace {

pgt::ir::JoinRegion region() {
    pgt::ir::JoinRegion j;
    j.query = "SELECT a.k, a.v FROM s.a WHERE a.k IN (SELECT b.k FROM s.b WHERE b.k = ANY (" +
              pgt::ir::key_slot(0) + "))";
    j.outputs = {"k", "v"};
    j.key_nullable = {false};
    j.key_filtered = {true};
    return j;
}

pgt::ir::IdentityTarget target() {
    pgt::ir::IdentityTarget t;
    t.table = "\"we'ird\".st";
    t.domain = pgt::rowid::Domain::kGroupKey;
    t.columns = {"k"};
    t.keyed = true;
    return t;
}

std::size_t count(const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (std::size_t at = text.find(part); at != std::string::npos;
         at = text.find(part, at + part.size())) {
        n++;
    }
    return n;
}

TEST(RegionRescan, without_a_whole_query_the_narrowed_query_runs_alone) {
    const std::string sql = pgt::diff::region_rescan_ctes(region(), target());
    EXPECT_EQ(count(sql, "FROM s.a"), 1u);
    EXPECT_EQ(count(sql, pgt::ir::key_slot(0)), 0u);  // filled with the touched values
    EXPECT_EQ(count(sql, "UNION ALL"), 0u);
    EXPECT_EQ(count(sql, "pg_class"), 0u);
}

TEST(RegionRescan, a_whole_query_runs_instead_when_the_keys_outnumber_the_rows) {
    pgt::ir::JoinRegion j = region();
    j.whole_query = "SELECT a.k, a.v FROM s.a WHERE a.k IN (SELECT b.k FROM s.whole_b b)";
    const std::string sql = pgt::diff::region_rescan_ctes(j, target());
    EXPECT_EQ(count(sql, "FROM s.a"), 2u);
    EXPECT_EQ(count(sql, "s.whole_b"), 1u);
    EXPECT_EQ(count(sql, "UNION ALL"), 1u);
    // One gate, negated on the narrowed arm; the storage named as a literal.
    const std::string many =
        "(SELECT pg_catalog.count(*) FROM g)::pg_catalog.float8 OPERATOR(pg_catalog.>) "
        "GREATEST(" +
        std::to_string(pgt::ir::kWholeQueryKeys) +
        "::pg_catalog.float8, (SELECT c.reltuples::pg_catalog.float8 FROM pg_catalog.pg_class c "
        "WHERE c.oid OPERATOR(pg_catalog.=) '\"we''ird\".st'::pg_catalog.regclass))";
    EXPECT_EQ(count(sql, "AND NOT " + many + " UNION ALL"), 1u);
    EXPECT_EQ(count(sql, "s.whole_b b)) q WHERE q.k OPERATOR(pg_catalog.=) ANY"), 1u);
    EXPECT_EQ(count(sql, many), 2u);
}

}  // namespace
