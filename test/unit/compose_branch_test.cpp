// Unit tests of diff::compose_branch: a join region's branch defines each
// table it reads (sql::region_table(i)) as the table now, its kept copy or
// its source's images, and join_region_program composes every branch so.
#include "core/diff/join_region.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/ir/scan.hpp"

namespace {

using pgt::ir::BranchTable;
using pgt::ir::TableRead;

// Three references to two sources: b is read twice (a self-join).
const std::vector<BranchTable> kTables = {
    {0, "public.a"}, {1, "ONLY public.b"}, {1, "ONLY public.b"}};
const std::string kBody = "SELECT x.k AS __pgt_k1 FROM __pgt_rel_0 x, __pgt_rel_1 y, __pgt_rel_2 z";

TEST(ComposeBranch, each_table_is_defined_as_its_read_says) {
    const std::string sql = pgt::diff::compose_branch(
        kBody, kTables, {TableRead::kNow, TableRead::kOld, TableRead::kBoth});
    EXPECT_EQ(sql,
              "WITH __pgt_rel_0 AS NOT MATERIALIZED (SELECT * FROM public.a), "
              "__pgt_rel_1 AS NOT MATERIALIZED (SELECT * FROM __pgt_old_1), "
              "__pgt_rel_2 AS NOT MATERIALIZED (SELECT * FROM __pgt_delta_1) " +
                  kBody);
    EXPECT_NE(pgt::diff::compose_branch(kBody, kTables,
                                        {TableRead::kNew, TableRead::kNow, TableRead::kNow})
                  .find("__pgt_rel_0 AS NOT MATERIALIZED (SELECT * FROM __pgt_new_0)"),
              std::string::npos);
}

TEST(ComposeBranch, a_source_with_a_kept_copy_is_read_from_it_where_read_now) {
    const std::vector<std::string> kept = {"", "pgtrickle_changes.kept_7_1"};
    const std::string now = pgt::diff::compose_branch(
        kBody, kTables, {TableRead::kNew, TableRead::kNow, TableRead::kOld}, kept);
    EXPECT_NE(
        now.find("__pgt_rel_1 AS NOT MATERIALIZED (SELECT * FROM pgtrickle_changes.kept_7_1)"),
        std::string::npos);
    EXPECT_NE(now.find("__pgt_rel_2 AS NOT MATERIALIZED (SELECT * FROM __pgt_old_1)"),
              std::string::npos);
    EXPECT_EQ(now.find("ONLY public.b"), std::string::npos);
}

TEST(ComposeBranch, a_read_per_table_or_an_internal_error) {
    EXPECT_THROW((void)pgt::diff::compose_branch(kBody, kTables, {TableRead::kNow}), pgt::Error);
}

TEST(ComposeBranch, the_program_composes_each_branch_with_its_sources_kept_copies) {
    pgt::ir::JoinRegion j;
    j.sources.resize(2);
    j.sources[1].columns = {{1, "k"}};
    j.sources[1].prefilter = "__pgt_src.k > 0";
    j.sources[1].kept = {
        "pgtrickle_changes.kept_7_1", "ONLY public.b", "k", "OPERATOR(pg_catalog.=)", {"k"}};
    j.tables = kTables;
    j.branches.push_back({kBody, {TableRead::kOld, TableRead::kNow, TableRead::kNow}});
    j.query = "SELECT 1 AS k";
    j.outputs = {"k"};
    j.key_nullable = {false};
    j.key_filtered = {true};
    pgt::ir::IdentityTarget t;
    t.table = "public.st";
    t.columns = {"k"};
    t.keyed = true;
    const pgt::diff::DeltaProgram p = pgt::diff::join_region_program(j, t, true);
    ASSERT_EQ(p.branches.size(), 1u);
    EXPECT_EQ(p.branches[0].old_sources, 1u);  // source 0's before-images
    EXPECT_EQ(p.branches[0].new_sources | p.branches[0].delta_sources, 0u);
    EXPECT_EQ(p.branches[0].sql,
              "WITH __pgt_rel_0 AS NOT MATERIALIZED (SELECT * FROM __pgt_old_0), "
              "__pgt_rel_1 AS NOT MATERIALIZED (SELECT * FROM pgtrickle_changes.kept_7_1), "
              "__pgt_rel_2 AS NOT MATERIALIZED (SELECT * FROM pgtrickle_changes.kept_7_1) " +
                  kBody);
}

}  // namespace
