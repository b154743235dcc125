// Unit tests of how a rescan reads the source rows of the touched groups
// (src/core/diff/group_rescan: touched_rows_cte) and of following a column
// down to its scan (ir::scan_column), which decides the form.
// Invariant: keys with NULLs are matched as values in every form; the
// array form is used for one indexed key column only.
#include <gtest/gtest.h>

#include <string>

#include "core/diff/group_rescan.hpp"
#include "core/ir/tree.hpp"

namespace {

const std::string kTable = "public.t";

TEST(TouchedRows, one_key_by_array_reads_every_touched_value_in_one_filter) {
    std::string sql = pgt::diff::touched_rows_cte("rows", kTable, "s", {"s.grp"}, {"__pgt_k1"},
                                                  /*by_array=*/true);
    EXPECT_NE(sql.find("s.grp OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT DISTINCT k.__pgt_k1 FROM "
                       "keys k WHERE k.__pgt_k1 IS NOT NULL))"),
              std::string::npos)
        << sql;
    EXPECT_EQ(sql.find(" IN (SELECT"), std::string::npos) << sql;
    // NULL keys: the second branch, as in the IN form.
    EXPECT_NE(sql.find("k.__pgt_k1 IS NOT DISTINCT FROM s.grp"), std::string::npos) << sql;
}

TEST(TouchedRows, without_array_or_with_two_keys_the_keys_are_a_semi_join) {
    std::string one = pgt::diff::touched_rows_cte("rows", kTable, "s", {"s.grp"}, {"__pgt_k1"});
    EXPECT_NE(one.find("(s.grp) IN (SELECT k.__pgt_k1 FROM keys k"), std::string::npos) << one;
    EXPECT_EQ(one.find("ANY (ARRAY("), std::string::npos) << one;
    std::string two = pgt::diff::touched_rows_cte("rows", kTable, "s", {"s.a", "s.b"},
                                                  {"__pgt_k1", "__pgt_k2"}, /*by_array=*/true);
    EXPECT_NE(two.find("(s.a, s.b) IN (SELECT k.__pgt_k1, k.__pgt_k2 FROM keys k"),
              std::string::npos)
        << two;
    EXPECT_EQ(two.find("ANY (ARRAY("), std::string::npos) << two;
}

// scan -> project (grp unchanged, grp % 2 computed) -> aggregate keyed by
// both: the first key is the scan's column 1, the second none.
TEST(TouchedRows, scan_column_follows_unchanged_references_only) {
    auto column = [](const std::string& name, const std::string& expr,
                     std::optional<pgt::ir::ColumnRef> ref) {
        pgt::ir::Column c;
        c.name = name;
        c.type = 23;
        c.expr = expr;
        c.ref = ref;
        return c;
    };
    pgt::ir::Tree t;
    pgt::ir::Node scan;
    scan.op = pgt::ir::Op::kScan;
    scan.columns = {column("id", "", std::nullopt), column("grp", "", std::nullopt)};
    t.nodes.push_back(scan);
    pgt::ir::Node project;
    project.op = pgt::ir::Op::kProject;
    project.children = {0};
    project.columns = {column("grp", "", pgt::ir::ColumnRef{0, 1}),
                       column("half", "(grp % 2)", std::nullopt)};
    t.nodes.push_back(project);
    t.root = 1;
    std::optional<pgt::ir::ColumnRef> at = pgt::ir::scan_column(t, 1, 0);
    ASSERT_TRUE(at.has_value());
    EXPECT_EQ(*at, (pgt::ir::ColumnRef{0, 1}));
    EXPECT_FALSE(pgt::ir::scan_column(t, 1, 1).has_value());
    EXPECT_EQ(pgt::ir::scan_column(t, 0, 0), (pgt::ir::ColumnRef{0, 0}));
}

}  // namespace
