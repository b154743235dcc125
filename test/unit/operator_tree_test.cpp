// Unit tests of the operator tree (src/core/ir/tree): the row identity
// each operator proves from its children, as the stream table then uses
// it, and the explain text.
#include "core/ir/tree.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "unit/tree_builder.hpp"

namespace {

using pgt::ir::Column;
using pgt::ir::ColumnRef;
using pgt::ir::Node;
using pgt::ir::Op;
using pgt::ir::Tree;
using pgt::rowid::Domain;
using pgt::test::Builder;

TEST(OperatorTree, scan_key_survives_filter_and_projection_of_the_key) {
    Builder b;
    int s = b.scan(3, {{0}});
    int p = b.project(b.pass(Op::kFilter, s), {2, 0});
    pgt::ir::RootIdentity id = b.root(p);
    EXPECT_EQ(id.domain, Domain::kScanKey);
    EXPECT_EQ(id.columns, std::vector<int>{1});
}

TEST(OperatorTree, a_key_not_selected_leaves_rows_keyless_unless_another_key_is) {
    Builder b;
    int s = b.scan(3, {{0}, {1, 2}});
    EXPECT_EQ(b.root(b.project(s, {1, 2})).columns, (std::vector<int>{0, 1}));
    EXPECT_EQ(b.t.at(b.t.root).identity.domain, Domain::kScanKey);
    Builder c;
    int s2 = c.scan(3, {{0}});
    pgt::ir::RootIdentity id = c.root(c.project(s2, {1, -1}));
    EXPECT_EQ(id.domain, Domain::kKeylessRow);
    EXPECT_EQ(id.columns, (std::vector<int>{0, 1}));  // every column
}

TEST(OperatorTree, tablesample_and_cross_joins_prove_no_key) {
    Builder b;
    int s = b.scan(2, {{0}});
    b.t.at(s).sampled = true;
    EXPECT_EQ(b.root(b.project(s, {0})).domain, Domain::kKeylessRow);
    Builder c;
    int j = c.join(c.scan(2, {{0}}), c.scan(2, {{0}}));
    EXPECT_EQ(c.root(c.project(j, {0, 2})).domain, Domain::kKeylessRow);
}

using pgt::ir::JoinKind;

// t(id, grp) JOIN d(grp, name) ON d.grp = t.grp: d's key is matched, so
// each t row meets one d row at most and t.id stays a key.
TEST(OperatorTree, a_join_on_the_other_sides_unique_key_keeps_this_sides_key) {
    Builder b;
    int j = b.join(b.scan(2, {{0}}), b.scan(2, {{0}}), {{1, 2}});
    pgt::ir::RootIdentity id = b.root(b.project(j, {0, 3}));
    EXPECT_EQ(id.domain, Domain::kScanKey);
    EXPECT_EQ(id.columns, std::vector<int>{0});
    // d's key (grp) is not a key of the join: several t rows share a grp.
    Builder c;
    int j2 = c.join(c.scan(2, {{0}}), c.scan(2, {{0}}), {{1, 2}});
    EXPECT_EQ(c.root(c.project(j2, {2, 3})).domain, Domain::kKeylessRow);
}

TEST(OperatorTree, a_composite_key_must_be_matched_whole) {
    Builder b;  // d(a, b, name) keyed by (a, b), matched on a only
    int j = b.join(b.scan(3, {{0}}), b.scan(3, {{0, 1}}), {{1, 3}});
    EXPECT_EQ(b.root(b.project(j, {0, 5})).domain, Domain::kKeylessRow);
    Builder c;  // matched on a and b
    int j2 = c.join(c.scan(3, {{0}}), c.scan(3, {{0, 1}}), {{1, 3}, {2, 4}});
    EXPECT_EQ(c.root(c.project(j2, {0, 5})).domain, Domain::kScanKey);
}

TEST(OperatorTree, outer_joins_keep_the_preserved_sides_key_only) {
    auto root_of = [](JoinKind kind, const std::vector<int>& picks) {
        Builder b;
        int j = b.join(b.scan(2, {{0}}), b.scan(2, {{0}}), {{1, 2}, {0, 3}}, kind);
        return b.root(b.project(j, picks)).domain;
    };
    // Both keys matched (1:1 on t.grp = d.grp and t.id = d.name).
    EXPECT_EQ(root_of(JoinKind::kLeft, {0}), Domain::kScanKey);
    EXPECT_EQ(root_of(JoinKind::kLeft, {2}), Domain::kKeylessRow);  // nullable side
    EXPECT_EQ(root_of(JoinKind::kRight, {2}), Domain::kScanKey);
    EXPECT_EQ(root_of(JoinKind::kRight, {0}), Domain::kKeylessRow);
    EXPECT_EQ(root_of(JoinKind::kFull, {0, 2}), Domain::kKeylessRow);
    EXPECT_EQ(root_of(JoinKind::kInner, {2}), Domain::kScanKey);
}

// FROM t, d, e WHERE t.g = d.g AND t.h = e.h: the WHERE's equalities reach
// the joins below it.
TEST(OperatorTree, a_where_over_comma_joins_keys_them) {
    Builder b;
    int td = b.join(b.scan(3, {{0}}), b.scan(2, {{0}}));  // t(id, g, h), d(g, x)
    int tde = b.join(td, b.scan(2, {{0}}));               // e(h, y)
    int f = b.pass(Op::kFilter, tde);
    b.t.at(f).equalities = {{1, 3}, {2, 5}};
    pgt::ir::RootIdentity id = b.root(b.project(f, {0, 4, 6}));
    EXPECT_EQ(id.domain, Domain::kScanKey);
    EXPECT_EQ(id.columns, std::vector<int>{0});
    // Without e's key matched, e's rows multiply t's.
    Builder c;
    int td2 = c.join(c.scan(3, {{0}}), c.scan(2, {{0}}));
    int f2 = c.pass(Op::kFilter, c.join(td2, c.scan(2, {{0}})));
    c.t.at(f2).equalities = {{1, 3}, {2, 6}};
    EXPECT_EQ(c.root(c.project(f2, {0, 4})).domain, Domain::kKeylessRow);
}

TEST(OperatorTree, group_by_is_keyed_by_its_selected_keys) {
    Builder b;
    int g = b.aggregate(b.scan(3), 2);
    pgt::ir::RootIdentity id = b.root(b.project(b.pass(Op::kFilter, g), {-1, 1, 0}));
    EXPECT_EQ(id.domain, Domain::kGroupKey);
    EXPECT_EQ(id.columns, (std::vector<int>{2, 1}));
    Builder c;
    int g2 = c.aggregate(c.scan(3), 2);
    EXPECT_EQ(c.root(c.project(g2, {0, -1})).domain, Domain::kKeylessRow);
}

TEST(OperatorTree, an_aggregate_without_keys_is_one_synthetic_row) {
    Builder b;
    int g = b.aggregate(b.scan(3), 0);
    pgt::ir::RootIdentity id = b.root(b.project(g, {-1, -1}));
    EXPECT_EQ(id.domain, Domain::kSynthetic);
    EXPECT_TRUE(id.columns.empty());
}

TEST(OperatorTree, distinct_rows_are_their_own_key_unless_the_input_has_one) {
    Builder b;
    int d = b.pass(Op::kDistinct, b.project(b.scan(3), {1, 2}));
    pgt::ir::RootIdentity id = b.root(d);
    EXPECT_EQ(id.domain, Domain::kGroupKey);
    EXPECT_EQ(id.columns, (std::vector<int>{0, 1}));
    Builder c;
    int d2 = c.pass(Op::kDistinct, c.project(c.scan(3, {{0}}), {0, 2}));
    EXPECT_EQ(c.root(d2).domain, Domain::kScanKey);
    // Over groups whose key is not selected: nothing proves the rows apart.
    Builder e;
    int d3 = e.pass(Op::kDistinct, e.project(e.aggregate(e.scan(2), 1), {-1}));
    EXPECT_EQ(e.root(d3).domain, Domain::kKeylessRow);
}

TEST(OperatorTree, distinct_on_is_keyed_by_its_selected_expressions) {
    Builder b;
    int d = b.pass(Op::kDistinct, b.project(b.scan(3, {{0}}), {0, 1}));
    b.t.at(d).on = true;
    b.t.at(d).distinct_on = {1};
    pgt::ir::RootIdentity id = b.root(d);
    EXPECT_EQ(id.domain, Domain::kGroupKey);
    EXPECT_EQ(id.columns, std::vector<int>{1});
    b.t.at(d).distinct_on = {-1};
    EXPECT_EQ(b.root(d).domain, Domain::kKeylessRow);
}

TEST(OperatorTree, keyed_grouping_sets_add_the_hidden_set_column) {
    Builder b;
    int g = b.aggregate(b.scan(3), 2, Op::kGroupingSets);
    b.t.at(g).keyed_sets = true;
    int p = b.project(g, {0, 1, -1});
    pgt::ir::RootIdentity id = b.root(p);
    EXPECT_EQ(id.domain, Domain::kGroupKey);
    EXPECT_EQ(id.columns, (std::vector<int>{0, 1, 3}));
    // DISTINCT over the sets would read the hidden column: no key.
    int d = b.pass(Op::kDistinct, p);
    EXPECT_EQ(b.root(d).domain, Domain::kKeylessRow);
}

TEST(OperatorTree, set_returning_select_lists_prove_no_key) {
    Builder b;
    int p = b.project(b.scan(2, {{0}}), {0, -1}, Op::kProjectSet);
    EXPECT_EQ(b.root(b.pass(Op::kDistinct, p)).domain, Domain::kKeylessRow);
}

TEST(OperatorTree, explain_text_indents_children_under_their_parent) {
    Builder b;
    int s = b.scan(2, {{0}});
    int f = b.pass(Op::kFilter, s);
    b.t.at(f).condition = "(t.c1 > 0)";
    int p = b.project(f, {0});
    b.root(p);
    b.t.at(p).rule = "scan";
    EXPECT_EQ(pgt::ir::format_tree(b.t),
              "Project  [SCAN_KEY (o)]  rule: scan\n"
              "  Filter (t.c1 > 0)  [SCAN_KEY (c0)]\n"
              "    Scan public.t  [SCAN_KEY (c0)]");
}

}  // namespace
