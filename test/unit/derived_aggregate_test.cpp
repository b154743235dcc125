// Unit tests of diff::derived_aggregate_program: an aggregate over a grouped
// derived table D takes D's change as signed rows — D now (+1) and D before
// the change (-1), both narrowed to the keys D's branches find — and each
// source before the change is read from its netted images by its key.
#include "core/diff/derived.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/diff/program.hpp"
#include "core/error.hpp"
#include "core/ir/scan.hpp"

namespace {

using pgt::ir::TableRead;

// TPC-H q13's shape over c (id) and o (id, cid): D = c LEFT JOIN o grouped
// by c.id; the outer query counts customers per count.
pgt::ir::DerivedAggregate q13() {
    pgt::ir::DerivedAggregate da;
    da.region.sources.resize(2);
    da.region.sources[0].columns = {{1, "id"}};
    da.region.sources[1].columns = {{1, "id"}, {2, "cid"}};
    da.region.sources[1].window = 1;
    da.region.tables = {{0, "public.c"}, {1, "public.o"}};
    // The key branches: each table's signed images, the other now.
    da.region.branches = {
        {"SELECT c.id AS __pgt_k1 FROM __pgt_rel_0 c", {TableRead::kBoth, TableRead::kNow}},
        {"SELECT o.cid AS __pgt_k1 FROM __pgt_rel_1 o", {TableRead::kNow, TableRead::kBoth}}};
    da.rows =
        "SELECT c.id, count(o.id) AS n FROM __pgt_tab_0 c LEFT JOIN __pgt_tab_1 o ON o.cid = c.id "
        "GROUP BY c.id";
    da.keys = {"id"};
    da.narrow = {true};
    da.source_keys = {{"id"}, {"id"}};
    da.select = "SELECT n AS __pgt_k1 FROM __pgt_rel_0 d(id, n)";
    da.row_query = "WITH __pgt_rel_0 AS NOT MATERIALIZED (SELECT 1) " + da.select;
    da.shape.group.group_outputs = {0};
    da.shape.group.scan.outputs = {{"r.__pgt_k1", "n"}, {"", "customers"}};
    pgt::ir::AlgebraicAgg count;
    count.output = 1;
    count.value_type = "int8";
    da.shape.aggs = {count};
    da.shape.key_alike = {true};
    da.shape.output_templates = {"", ""};
    da.key_nullable = {true};
    da.key_filtered = {true};
    return da;
}

pgt::ir::IdentityTarget target() {
    pgt::ir::IdentityTarget t;
    t.table = "public.st";
    t.domain = pgt::rowid::Domain::kGroupKey;
    t.columns = {"n"};
    t.keyed = true;
    return t;
}

TEST(DerivedAggregate, the_program_reads_netted_images_and_both_states_of_every_source) {
    const pgt::diff::DeltaProgram p = pgt::diff::derived_aggregate_program(q13(), target());
    ASSERT_EQ(p.images.size(), 2u);
    EXPECT_EQ(p.images[1].window, 1);
    EXPECT_TRUE(p.fallback_images.empty());  // netted only: the state before is read from them
    EXPECT_EQ(p.main_old, 3u);
    EXPECT_EQ(p.main_new, 3u);
    // The branches only find keys: one per table, each reading its source's signed images.
    ASSERT_EQ(p.branches.size(), 2u);
    EXPECT_EQ(p.branches[0].delta_sources, 1u);
    EXPECT_EQ(p.branches[1].delta_sources, 2u);
    EXPECT_EQ(p.branches[0].old_sources | p.branches[0].new_sources, 0u);
    // The full query aggregates the row query, with the hidden count.
    EXPECT_NE(p.full_query.find(q13().row_query), std::string::npos);
    EXPECT_EQ(p.full_aux, std::vector<std::string>{"__pgt_count"});
}

TEST(DerivedAggregate, its_change_is_d_now_plus_one_and_d_before_minus_one_narrowed_by_key) {
    const pgt::diff::DeltaProgram p = pgt::diff::derived_aggregate_program(q13(), target());
    const std::string& m = p.main;
    EXPECT_EQ(m.rfind("WITH __pgt_dk AS (" + pgt::diff::kBranchesMarker + "), __pgt_dn AS (", 0),
              0u);
    // Now: each source is the table as it is.
    EXPECT_NE(m.find("__pgt_tab_1 AS NOT MATERIALIZED (SELECT id, cid FROM public.o)"),
              std::string::npos);
    // Before: the table without its after-images' keys, with its before-images.
    EXPECT_NE(
        m.find("__pgt_tab_1 AS NOT MATERIALIZED (" + pgt::diff::source_before(q13(), 1) + ")"),
        std::string::npos);
    EXPECT_EQ(
        pgt::diff::source_before(q13(), 1),
        "SELECT t.id, t.cid FROM public.o t WHERE NOT t.id OPERATOR(pg_catalog.=) ANY (SELECT "
        "i.id FROM __pgt_new_1 i) UNION ALL SELECT i.id, i.cid FROM __pgt_old_1 i");
    // Both states narrowed to the touched keys, then signed.
    const std::string narrow =
        "WHERE r.id OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT DISTINCT k.__pgt_k1 FROM __pgt_dk k "
        "WHERE k.__pgt_k1 IS NOT NULL))";
    ASSERT_NE(m.find(narrow), std::string::npos);
    EXPECT_NE(m.find(narrow, m.find(narrow) + 1), std::string::npos);
    EXPECT_NE(m.find("d (__pgt_w, __pgt_k1) AS (SELECT 1::pg_catalog.int8, s.* FROM (WITH "
                     "__pgt_rel_0 AS NOT MATERIALIZED (SELECT * FROM __pgt_dn) " +
                     q13().select +
                     ") s UNION ALL SELECT -1::pg_catalog.int8, s.* FROM (WITH "
                     "__pgt_rel_0 AS NOT MATERIALIZED (SELECT * FROM __pgt_do) " +
                     q13().select + ") s)"),
              std::string::npos);
}

TEST(DerivedAggregate, d_before_the_change_is_read_one_key_at_a_time_while_keys_are_few) {
    const std::string m = pgt::diff::derived_aggregate_program(q13(), target()).main;
    const std::string before = m.substr(m.find("__pgt_do AS ("));
    // Few keys: each key's rows, the key a LATERAL parameter PostgreSQL
    // pushes into both arms of a table before the change.
    EXPECT_EQ(before.rfind("__pgt_do AS (SELECT x.* FROM (SELECT DISTINCT k.__pgt_k1 FROM __pgt_dk "
                           "k WHERE k.__pgt_k1 IS NOT NULL) kk, LATERAL (WITH ",
                           0),
              0u);
    EXPECT_NE(before.find("r WHERE r.id OPERATOR(pg_catalog.=) kk.__pgt_k1) x WHERE NOT (SELECT "
                          "pg_catalog.count(*) FROM __pgt_dk) OPERATOR(pg_catalog.>) 1000 UNION "
                          "ALL (WITH "),
              std::string::npos);
    // Many: the set form, gated the other way.
    EXPECT_NE(before.find("IS NOT NULL)) AND (SELECT pg_catalog.count(*) FROM __pgt_dk) "
                          "OPERATOR(pg_catalog.>) 1000)"),
              std::string::npos);
    // D now is read in the set form only.
    const std::string now = m.substr(0, m.find("__pgt_do AS ("));
    EXPECT_EQ(now.find("LATERAL"), std::string::npos);
}

TEST(DerivedAggregate, a_key_that_may_be_null_does_not_narrow_and_multi_column_keys_compare_rows) {
    pgt::ir::DerivedAggregate da = q13();
    da.narrow = {false};
    da.source_keys[1] = {"id", "cid"};
    const pgt::diff::DeltaProgram p = pgt::diff::derived_aggregate_program(da, target());
    EXPECT_EQ(p.main.find("ANY (ARRAY(SELECT DISTINCT k.__pgt_k1 FROM __pgt_dk"),
              std::string::npos);
    EXPECT_NE(pgt::diff::source_before(da, 1).find(
                  "WHERE NOT ROW(t.id, t.cid) OPERATOR(pg_catalog.=) ANY (SELECT i.id, i.cid FROM "
                  "__pgt_new_1 i)"),
              std::string::npos);
}

TEST(DerivedAggregate, a_source_without_a_key_is_an_internal_error) {
    pgt::ir::DerivedAggregate da = q13();
    da.source_keys[0].clear();
    EXPECT_THROW((void)pgt::diff::derived_aggregate_program(da, target()), pgt::Error);
    da = q13();
    da.region.branches.clear();
    EXPECT_THROW((void)pgt::diff::derived_aggregate_program(da, target()), pgt::Error);
}

TEST(DerivedAggregate, main_reads_round_trip_and_register_the_images_main_reads) {
    const pgt::diff::DeltaProgram p = pgt::diff::derived_aggregate_program(q13(), target());
    const std::string text = pgt::diff::encode_program(p);
    EXPECT_NE(text.find(R"("main_reads": {"old": 3, "new": 3})"), std::string::npos);
    const pgt::diff::DeltaProgram back = pgt::diff::decode_program(text);
    EXPECT_EQ(back.main_old, 3u);
    EXPECT_EQ(back.main_new, 3u);
    EXPECT_EQ(pgt::diff::encode_program(pgt::diff::one_statement("SELECT 1")).find("main_reads"),
              std::string::npos);
}

}  // namespace
