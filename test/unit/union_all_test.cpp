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
    EXPECT_EQ(pgt::diff::form_of(p.steps.at(static_cast<std::size_t>(a1)).step),
              pgt::diff::DeltaForm::kSignedRows);
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

// SELECT k0, <aggregates> FROM (t10 UNION ALL t20) u WHERE ... GROUP BY
// k0: the union under the aggregate level is found, and the plan folds
// its signed rows into the aggregate's state.
TEST(UnionAll, an_aggregate_over_the_union_folds_its_signed_rows_into_state) {
    Builder b;
    const int a0 = arm(b, 10, false), a1 = arm(b, 20, false);
    const int u = set_op(b, a0, a1);
    const int sub = b.pass(Op::kSubquery, u);
    const int where = b.pass(Op::kFilter, sub);
    const int agg = b.aggregate(where, 1);
    b.root(b.project(agg, {0}));
    EXPECT_EQ(pgt::diff::aggregated_union(b.t), u);
    EXPECT_FALSE(pgt::diff::union_all_arms(b.t));  // the root is no union
    EXPECT_EQ(pgt::diff::union_all_arms(b.t, u), (std::vector<int>{a0, a1}));
    EXPECT_FALSE(pgt::diff::plan_delta(b.t, {}));  // analysis found no algebraic form
    pgt::diff::PlanFacts f;
    f.union_aggregate = true;
    DeltaPlan p = *pgt::diff::plan_delta(b.t, f);
    EXPECT_EQ(p.strategy, pgt::diff::Strategy::kUnionAll);
    auto step = [&](int i) { return p.steps.at(static_cast<std::size_t>(i)).step; };
    EXPECT_EQ(step(a0), Step::kEvaluated);
    EXPECT_EQ(step(u), Step::kUnionAll);
    EXPECT_EQ(step(sub), Step::kNone);
    EXPECT_EQ(step(where), Step::kRowFilter);
    EXPECT_EQ(step(agg), Step::kAlgebraic);
    EXPECT_EQ(step(b.t.root), Step::kApplyReplace);
    EXPECT_TRUE(pgt::diff::keeps_state(p));

    pgt::diff::UnionAggregate ua;
    ua.arms = *pgt::diff::differentiate_union_all(
        b.t, [](uint32_t relid) { return kInputs.at(relid); }, {"x", "\"Y\""}, u);
    ua.columns = {"x", "\"Y\""};
    ua.select = "SELECT r.x, r.\"Y\" AS __pgt_x1 FROM __pgt_rel_0 r WHERE r.x > 0";
    ua.row_query = "SELECT 1, 2";
    ua.shape.group.group_outputs = {0};
    ua.shape.group.scan.outputs = {{"r.__pgt_k1", "k"}, {"", "s"}};
    ua.shape.aggs.push_back({});
    ua.shape.aggs.back().kind = pgt::ir::AggKind::kSum;
    ua.shape.aggs.back().output = 1;
    ua.shape.aggs.back().arg = "r.__pgt_x1";
    ua.shape.aggs.back().result_type = "pg_catalog.int8";
    ua.shape.key_alike = {true};
    ua.shape.output_templates = {"", ""};
    ua.key_nullable = {true};
    ua.key_filtered = {true};
    pgt::ir::IdentityTarget target;
    target.table = "public.st";
    target.columns = {"k"};
    target.keyed = true;
    target.domain = pgt::rowid::Domain::kGroupKey;
    const pgt::diff::DeltaProgram prog = pgt::diff::union_aggregate_program(ua, target);
    EXPECT_TRUE(prog.images.empty());
    EXPECT_TRUE(prog.branches.empty());
    EXPECT_FALSE(prog.full_query.empty());
    // Entering rows +1, leaving -1, each as many times as its weight.
    EXPECT_NE(prog.main.find("SELECT 1::pg_catalog.int8, s.* FROM (WITH __pgt_rel_0 (x, \"Y\") "
                             "AS NOT MATERIALIZED (SELECT u.x, u.\"Y\" FROM u CROSS JOIN LATERAL "
                             "pg_catalog.generate_series(1, u.__pgt_sign) WHERE u.__pgt_sign > 0)"),
              std::string::npos)
        << prog.main;
    EXPECT_NE(prog.main.find("SELECT -1::pg_catalog.int8, s.*"), std::string::npos);
    EXPECT_NE(prog.main.find("generate_series(1, (- u.__pgt_sign)) WHERE u.__pgt_sign < 0"),
              std::string::npos);
    ua.arms.clear();
    EXPECT_THROW((void)pgt::diff::union_aggregate_program(ua, target), pgt::Error);
}

}  // namespace
