// Unit tests of Δ(UNION ALL) (src/core/diff/union_all) and its plan: which
// trees are a sum of one-table arms, each arm over its own table's Δ and
// window block, and the statement's parts, without a server.
#include "core/diff/union_all.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/diff/plan.hpp"
#include "core/error.hpp"
#include "unit/tree_builder.hpp"

namespace {

using pgt::diff::DeltaPlan;
using pgt::diff::Step;
using pgt::diff::UnionArm;
using pgt::diff::UnionInput;
using pgt::ir::DeltaInput;
using pgt::ir::Op;
using pgt::test::Builder;

// SELECT c0, c1 * 2 FROM <relid> [WHERE c1 > 0], lowered with image texts.
int arm(Builder& b, uint32_t relid, bool where) {
    int s = b.scan(2, {{0}});
    pgt::ir::Node& scan = b.t.at(s);
    scan.relid = relid;
    scan.relation = "public.t" + std::to_string(relid);
    scan.images = true;
    scan.image_columns = {{1, "c0", pgt::ir::Sameness::kEqual},
                          {2, "c1", pgt::ir::Sameness::kEqual}};
    int below = s;
    if (where) {
        below = b.pass(Op::kFilter, s);
        b.t.at(below).condition = "c1 > 0";
        b.t.at(below).image_condition = "__pgt_src.c1 > 0";
    }
    int p = b.project(below, {0, -1});
    b.t.at(p).columns[0].name = "a";
    b.t.at(p).columns[0].image = "__pgt_src.c0";
    b.t.at(p).columns[1].name = "b";
    b.t.at(p).columns[1].image = "__pgt_src.c1 * 2";
    return p;
}

int set_op(Builder& b, int left, int right, bool all = true,
           pgt::ir::SetOpKind kind = pgt::ir::SetOpKind::kUnion) {
    int n = b.pass(Op::kSetOp, left);
    b.t.at(n).children = {left, right};
    b.t.at(n).set_op = kind;
    b.t.at(n).all = all;
    return n;
}

const std::map<uint32_t, UnionInput> kInputs = {
    {10, {{DeltaInput::Kind::kBufferWindow, "pgtrickle_changes.changes_1"}, 0}},
    {20, {{DeltaInput::Kind::kBufferWindow, "pgtrickle_changes.changes_2"}, 5}},
};

std::optional<std::vector<UnionArm>> arms_of(const Builder& b) {
    return pgt::diff::differentiate_union_all(b.t, [](uint32_t relid) { return kInputs.at(relid); },
                                              {"x", "\"Y\""});
}

// (t10 UNION ALL t20 WHERE ...) UNION ALL t10: three arms, two over one
// table's one Δ, left to right.
TEST(UnionAll, nested_union_alls_are_one_sum_of_arms_left_to_right) {
    Builder b;
    int a0 = arm(b, 10, false), a1 = arm(b, 20, true), a2 = arm(b, 10, true);
    b.root(set_op(b, set_op(b, a0, a1), a2));
    EXPECT_EQ(pgt::diff::union_all_arms(b.t), (std::vector<int>{a0, a1, a2}));
    std::optional<std::vector<UnionArm>> arms = arms_of(b);
    ASSERT_TRUE(arms);
    ASSERT_EQ(arms->size(), 3U);
    EXPECT_EQ((*arms)[0].scan.delta.relation, "pgtrickle_changes.changes_1");
    EXPECT_EQ((*arms)[1].scan.delta.relation, "pgtrickle_changes.changes_2");
    EXPECT_EQ((*arms)[1].base, 5);
    EXPECT_EQ((*arms)[1].scan.predicate, "__pgt_src.c1 > 0");
    EXPECT_EQ((*arms)[2].base, 0);
    EXPECT_EQ((*arms)[2].scan.outputs.at(1).name, "\"Y\"");  // the stream table's names
    EXPECT_EQ((*arms)[2].scan.outputs.at(1).expr, "__pgt_src.c1 * 2");

    DeltaPlan p = *pgt::diff::plan_delta(b.t, {});
    EXPECT_EQ(p.strategy, pgt::diff::Strategy::kUnionAll);
    EXPECT_EQ(p.steps.at(static_cast<std::size_t>(b.t.root)).step, Step::kApplyUnion);
    EXPECT_EQ(p.steps.at(static_cast<std::size_t>(b.t.at(b.t.root).children[0])).step,
              Step::kUnionAll);
    EXPECT_EQ(p.steps.at(static_cast<std::size_t>(a1)).step, Step::kEvaluated);
    EXPECT_EQ(p.steps.at(static_cast<std::size_t>(a1)).form, pgt::diff::DeltaForm::kSignedRows);
    EXPECT_EQ(p.steps.at(static_cast<std::size_t>(a1 - 1)).step, Step::kNetted);
}

// Only UNION ALL sums its arms, and only arms the linear rules
// differentiate.
TEST(UnionAll, other_set_operations_and_arms_are_no_sum) {
    for (auto kind : {pgt::ir::SetOpKind::kUnion, pgt::ir::SetOpKind::kIntersect,
                      pgt::ir::SetOpKind::kExcept}) {
        for (bool all : {false, true}) {
            if (kind == pgt::ir::SetOpKind::kUnion && all) {
                continue;
            }
            Builder b;
            b.root(set_op(b, arm(b, 10, false), arm(b, 20, false), all, kind));
            EXPECT_FALSE(pgt::diff::union_all_arms(b.t));
            EXPECT_FALSE(pgt::diff::plan_delta(b.t, {}));
        }
    }
    Builder grouped;
    int g = grouped.aggregate(arm(grouped, 20, false), 1);
    grouped.root(set_op(grouped, arm(grouped, 10, false), grouped.project(g, {0})));
    EXPECT_FALSE(pgt::diff::union_all_arms(grouped.t));
    Builder lone;  // an arm without image texts (a system column, a subquery)
    int a = arm(lone, 10, false);
    lone.t.at(a).columns[1].image.clear();
    lone.root(set_op(lone, a, arm(lone, 20, false)));
    EXPECT_FALSE(arms_of(lone));
    Builder one;
    one.root(arm(one, 10, false));
    EXPECT_FALSE(pgt::diff::union_all_arms(one.t));
}

// The statement nets each arm's images in its own window block, sums the
// arms' signed rows and applies them by count; a keyed target is an error.
TEST(UnionAll, the_statement_nets_each_arm_in_its_window_and_applies_by_count) {
    Builder b;
    b.root(set_op(b, arm(b, 10, false), arm(b, 20, true)));
    std::vector<UnionArm> arms = *arms_of(b);
    pgt::ir::IdentityTarget target;
    target.table = "public.st";
    target.columns = {"x", "\"Y\""};
    target.keyed = false;
    const std::string sql = pgt::diff::union_all_sql(arms, target);
    EXPECT_EQ(sql.rfind("WITH ev0 AS (", 0), 0U) << sql;
    EXPECT_NE(sql.find("src1 AS ("), std::string::npos);
    EXPECT_NE(sql.find("$6"), std::string::npos) << "arm 1 reads window block 1";
    EXPECT_NE(sql.find(" FROM src0 __pgt_src UNION ALL SELECT "), std::string::npos) << sql;
    EXPECT_NE(sql.find("__pgt_src.c1 * 2 AS \"Y\" FROM src1 __pgt_src WHERE __pgt_src.c1 > 0"),
              std::string::npos)
        << sql;
    EXPECT_NE(sql.find("generate_series(1, n.__pgt_n)"), std::string::npos) << "counted";
    target.keyed = true;
    EXPECT_THROW((void)pgt::diff::union_all_sql(arms, target), pgt::Error);
    target.keyed = false;
    EXPECT_THROW((void)pgt::diff::union_all_sql({}, target), pgt::Error);
}

}  // namespace
