// Unit tests of the linear rules (src/core/diff/linear): Δ of scan, filter
// and projection composed over the operator tree of a one-table level, as
// the scan and group strategies read them.
#include "core/diff/aggregate.hpp"
#include "core/diff/linear.hpp"
#include "core/diff/plan.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace {

using pgt::diff::delta_filter;
using pgt::diff::delta_project;
using pgt::diff::differentiate_linear;
using pgt::diff::differentiate_one_table;
using pgt::diff::one_table_level;
using pgt::ir::Column;
using pgt::ir::DeltaInput;
using pgt::ir::Node;
using pgt::ir::Op;
using pgt::ir::ScanFilterProject;
using pgt::ir::Tree;

const DeltaInput kBuffer{DeltaInput::Kind::kBufferWindow, "pgtrickle_changes.changes_1"};

int add(Tree& t, Op op, std::vector<int> children) {
    Node n;
    n.op = op;
    n.children = std::move(children);
    return t.add(std::move(n));
}

// SELECT id, val * 2 AS twice FROM t [WHERE val > 0], lowered with images.
Tree one_table(bool where) {
    Tree t;
    int s = add(t, Op::kScan, {});
    t.at(s).relation = "public.t";
    t.at(s).images = true;
    t.at(s).image_columns = {{1, "id", pgt::ir::Sameness::kEqual},
                             {3, "val", pgt::ir::Sameness::kEqualThenImage}};
    int below = s;
    if (where) {
        below = add(t, Op::kFilter, {s});
        t.at(below).condition = "val > 0";
        t.at(below).image_condition = "__pgt_src.val > 0";
        t.at(below).prefilter = "__pgt_src.val > 0";
    }
    int p = add(t, Op::kProject, {below});
    Column id;
    id.name = "id";
    id.image = "__pgt_src.id";
    Column twice;
    twice.name = "Twice";
    twice.image = "__pgt_src.val * 2";
    t.at(p).columns = {id, twice};
    t.root = p;
    return t;
}

TEST(DiffLinear, scan_filter_project_compose_into_one_delta) {
    Tree t = one_table(true);
    std::optional<ScanFilterProject> d = differentiate_linear(t, t.root, kBuffer);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->delta.relation, kBuffer.relation);
    EXPECT_TRUE(d->delta.windowed());
    EXPECT_EQ(d->alias, "__pgt_src");
    ASSERT_EQ(d->columns.size(), 2u);
    EXPECT_EQ(d->columns[1].attnum, 3);
    EXPECT_EQ(d->predicate, "__pgt_src.val > 0");
    EXPECT_EQ(d->prefilter, "__pgt_src.val > 0");
    ASSERT_EQ(d->outputs.size(), 2u);
    EXPECT_EQ(d->outputs[0].expr, "__pgt_src.id");
    EXPECT_EQ(d->outputs[1].name, "\"Twice\"");  // quoted as PostgreSQL would
    EXPECT_FALSE(d->one_pass);                   // a fact of the server, set by the caller
}

TEST(DiffLinear, the_delta_input_is_passed_through_unchanged) {
    Tree t = one_table(false);
    DeltaInput tt{DeltaInput::Kind::kTransitionTables, "(SELECT ...) __pgt_tr"};
    std::optional<ScanFilterProject> d = differentiate_linear(t, t.root, tt);
    ASSERT_TRUE(d);
    EXPECT_FALSE(d->delta.windowed());
    EXPECT_EQ(d->delta.relation, tt.relation);
    EXPECT_EQ(d->predicate, "");
}

TEST(DiffLinear, a_node_without_image_texts_is_refused) {
    Tree t = one_table(true);
    t.at(t.root).columns[1].image.clear();
    EXPECT_FALSE(differentiate_linear(t, t.root, kBuffer));
    Tree u = one_table(true);
    u.at(1).image_condition.clear();
    EXPECT_FALSE(differentiate_linear(u, u.root, kBuffer));
    Tree v = one_table(false);
    v.at(0).images = false;
    EXPECT_FALSE(differentiate_linear(v, v.root, kBuffer));
}

TEST(DiffLinear, filters_and_projections_over_a_projection_are_refused) {
    Tree t = one_table(false);
    ScanFilterProject d = *differentiate_linear(t, t.root, kBuffer);
    Node f;
    f.op = Op::kFilter;
    f.condition = "x";
    f.image_condition = "x";
    EXPECT_FALSE(delta_filter(f, d));
    EXPECT_FALSE(delta_project(t.at(t.root), d));
    // Other operators are not linear.
    int a = add(t, Op::kAggregate, {t.root});
    EXPECT_FALSE(differentiate_linear(t, a, kBuffer));
}

TEST(DiffLinear, stacked_filters_are_one_conjunction) {
    Tree t = one_table(true);
    ScanFilterProject d = *differentiate_linear(t, 1, kBuffer);
    Node f;
    f.op = Op::kFilter;
    f.condition = "id < 9";
    f.image_condition = "__pgt_src.id < 9";
    ASSERT_TRUE(delta_filter(f, d));
    EXPECT_EQ(d.predicate, "(__pgt_src.val > 0) AND (__pgt_src.id < 9)");
    EXPECT_EQ(d.prefilter, "__pgt_src.val > 0");
}

TEST(DiffLinear, a_grouped_level_is_differentiated_below_its_aggregate) {
    // SELECT grp, sum(val) FROM t WHERE val > 0 GROUP BY grp HAVING count(*) > 1
    Tree t = one_table(true);
    Node& p = t.at(t.root);
    p.op = Op::kAggregate;  // reuse the projection slot's position for the tree shape below
    p.columns.clear();
    int agg = t.root;
    int having = add(t, Op::kFilter, {agg});
    t.at(having).condition = "count(*) > 1";
    t.at(having).image_condition = "count(*) > 1";
    int proj = add(t, Op::kProject, {having});
    Column grp;
    grp.name = "grp";
    grp.image = "__pgt_src.grp";
    Column sum;
    sum.name = "sum";
    sum.image = "sum(__pgt_src.val)";
    t.at(proj).columns = {grp, sum};
    t.root = proj;
    std::optional<pgt::diff::OneTableLevel> l = one_table_level(t);
    ASSERT_TRUE(l);
    EXPECT_EQ(l->project, proj);
    EXPECT_EQ(l->having, having);
    EXPECT_EQ(l->aggregate, agg);
    EXPECT_EQ(l->where, 1);
    EXPECT_EQ(l->scan, 0);
    std::optional<ScanFilterProject> d = differentiate_one_table(t, *l, kBuffer);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->predicate, "__pgt_src.val > 0");  // WHERE only: HAVING is the strategy's
    ASSERT_EQ(d->outputs.size(), 2u);
    EXPECT_EQ(d->outputs[1].expr, "sum(__pgt_src.val)");
}

TEST(DiffLinear, a_level_shape_is_found_through_distinct_and_without_where) {
    Tree t = one_table(false);
    int d = add(t, Op::kDistinct, {t.root});
    t.root = d;
    std::optional<pgt::diff::OneTableLevel> l = one_table_level(t);
    ASSERT_TRUE(l);
    EXPECT_EQ(l->project, 1);
    EXPECT_EQ(l->where, -1);
    EXPECT_EQ(l->aggregate, -1);
    EXPECT_EQ(l->scan, 0);
    // A join is not one table.
    Tree j;
    int a = add(j, Op::kScan, {});
    int b = add(j, Op::kScan, {});
    int jn = add(j, Op::kJoin, {a, b});
    j.root = add(j, Op::kProject, {jn});
    EXPECT_FALSE(one_table_level(j));
}

// The plan's label follows the level's operators (and its Aggregate's
// algebraic form), unless analysis built a join region or found a keyed
// pair of tables.
TEST(DiffStrategy, the_level_shape_and_the_facts_label_the_plan) {
    using pgt::diff::PlanFacts;
    using pgt::diff::Strategy;
    auto label = [](const Tree& t, PlanFacts f = {}) -> std::optional<Strategy> {
        std::optional<pgt::diff::DeltaPlan> p = pgt::diff::plan_delta(t, f);
        return p ? std::optional(p->strategy) : std::nullopt;
    };
    Tree scan = one_table(true);
    EXPECT_EQ(label(scan), Strategy::kScan);
    PlanFacts region;
    region.region = true;
    EXPECT_EQ(label(scan, region), Strategy::kJoinRegion);
    region.region_algebraic = true;
    EXPECT_EQ(label(scan, region), Strategy::kAlgebraicJoin);
    region.derived = true;
    EXPECT_EQ(label(scan, region), Strategy::kAlgebraicDerived);
    PlanFacts pair;
    pair.join_pair = true;
    EXPECT_EQ(label(scan, pair), Strategy::kJoinRescan);

    Tree grouped = one_table(false);
    int agg = add(grouped, Op::kAggregate, {0});
    grouped.at(grouped.root).children = {agg};
    EXPECT_EQ(label(grouped), Strategy::kGroupRescan);
    grouped.at(agg).algebraic = true;  // lowering found the aggregates' algebraic form
    EXPECT_EQ(label(grouped), Strategy::kAlgebraicGroup);
    grouped.at(agg).op = Op::kGroupingSets;
    EXPECT_EQ(label(grouped), Strategy::kGroupingSetsRescan);

    // DISTINCT groups unless a source key in the output makes it a no-op.
    Tree distinct = one_table(false);
    int d = add(distinct, Op::kDistinct, {distinct.root});
    distinct.root = d;
    distinct.at(d).identity.domain = pgt::rowid::Domain::kGroupKey;
    EXPECT_EQ(label(distinct), Strategy::kGroupRescan);
    distinct.at(d).identity.domain = pgt::rowid::Domain::kScanKey;
    EXPECT_EQ(label(distinct), Strategy::kScan);

    Tree window = one_table(false);
    int w = add(window, Op::kWindow, {window.root});
    window.root = add(window, Op::kProject, {w});
    EXPECT_FALSE(label(window));
}

// SELECT grp, sum(val) AS s FROM t WHERE val > 0 GROUP BY grp [HAVING ...]:
// the rescan and the algebraic form read the level's nodes.
Tree grouped_level(bool having, bool algebraic) {
    Tree base = one_table(true);  // Scan 0, Filter 1 (WHERE): children first
    Tree t;
    t.add(base.at(0));
    t.add(base.at(1));
    int agg = add(t, Op::kAggregate, {1});
    t.at(agg).key_count = 1;
    Column k;
    k.name = "grp";
    t.at(agg).columns = {k};
    t.at(agg).algebraic = algebraic;
    if (algebraic) {
        pgt::ir::AlgebraicAgg sum;
        sum.kind = pgt::ir::AggKind::kSum;
        sum.output = 1;
        sum.arg = "__pgt_src.val";
        t.at(agg).algebraic_aggs = {sum};
        t.at(agg).output_templates = {"", ""};
    }
    int below = agg;
    if (having) {
        below = add(t, Op::kFilter, {agg});
        t.at(below).condition = "sum(val) > 1";
        t.at(below).image_condition = "sum(__pgt_src.val) > 1";
        Column passed = k;
        passed.ref = pgt::ir::ColumnRef{agg, 0};
        t.at(below).columns = {passed};
    }
    int p = add(t, Op::kProject, {below});
    Column grp;
    grp.name = "grp";
    grp.image = "__pgt_src.grp";
    grp.ref = pgt::ir::ColumnRef{below, 0};
    grp.alike = true;
    Column sum;
    sum.name = "s";
    sum.image = "sum(__pgt_src.val)";
    t.at(p).columns = {grp, sum};
    t.root = p;
    pgt::ir::derive_identities(t);
    return t;
}

TEST(DiffAggregate, a_rescan_reads_the_identity_keys_and_having_from_the_level) {
    Tree t = grouped_level(true, false);
    std::optional<pgt::diff::OneTableLevel> l = one_table_level(t);
    ASSERT_TRUE(l);
    std::optional<ScanFilterProject> d = differentiate_one_table(t, *l, kBuffer);
    ASSERT_TRUE(d);
    pgt::ir::GroupRescan g = pgt::diff::group_rescan(t, *l, *d, "public.t");
    EXPECT_EQ(g.group_outputs, std::vector<int>{0});
    EXPECT_EQ(g.having, "sum(__pgt_src.val) > 1");
    EXPECT_EQ(g.source_table, "public.t");
    EXPECT_EQ(g.scan.predicate, "__pgt_src.val > 0");
    EXPECT_FALSE(pgt::diff::algebraic_group(t, g)) << "no algebraic form";
}

TEST(DiffAggregate, the_algebraic_form_comes_from_the_aggregate_node) {
    Tree t = grouped_level(false, true);
    std::optional<pgt::diff::OneTableLevel> l = one_table_level(t);
    ASSERT_TRUE(l);
    pgt::ir::GroupRescan g =
        pgt::diff::group_rescan(t, *l, *differentiate_one_table(t, *l, kBuffer), "public.t");
    std::optional<pgt::ir::AlgebraicGroup> a = pgt::diff::algebraic_group(t, g);
    ASSERT_TRUE(a);
    ASSERT_EQ(a->aggs.size(), 1u);
    EXPECT_EQ(a->aggs[0].arg, "__pgt_src.val");
    EXPECT_EQ(a->key_alike, std::vector<bool>{true});
    EXPECT_EQ(a->output_templates.size(), 2u);
    EXPECT_EQ(a->group.having, "");
    t.at(t.root).columns[0].alike = false;  // numeric keys: 1.0 = 1.00
    EXPECT_EQ(pgt::diff::keys_alike(t), std::vector<bool>{false});
}

TEST(DiffAggregate, grouping_sets_take_their_arms_from_the_node) {
    Tree t = grouped_level(false, false);
    std::optional<pgt::diff::OneTableLevel> l = one_table_level(t);
    ASSERT_TRUE(l);
    pgt::ir::GroupRescan g =
        pgt::diff::group_rescan(t, *l, *differentiate_one_table(t, *l, kBuffer), "public.t");
    EXPECT_FALSE(pgt::diff::grouping_sets_rescan(t, g)) << "an Aggregate, not grouping sets";
    pgt::ir::Node& sets = t.at(l->aggregate);
    sets.op = Op::kGroupingSets;
    EXPECT_FALSE(pgt::diff::grouping_sets_rescan(t, g)) << "no arms yet (over the branch limit)";
    sets.grouping_keys = {"__pgt_src.grp"};
    sets.arms = {{0, {"__pgt_src.grp", "sum(__pgt_src.val)", "0"}, ""},
                 {1, {"NULL", "sum(__pgt_src.val)", "1"}, ""}};
    std::optional<pgt::ir::GroupingSetsRescan> gs = pgt::diff::grouping_sets_rescan(t, g);
    ASSERT_TRUE(gs);
    EXPECT_EQ(gs->set_column, "__pgt_gset");
    EXPECT_EQ(gs->keys, std::vector<std::string>{"__pgt_src.grp"});
    EXPECT_EQ(gs->arms.size(), 2u);
    EXPECT_EQ(gs->source_table, "public.t");
}

TEST(DiffStrategy, names_round_trip) {
    for (auto s : {pgt::diff::Strategy::kScan, pgt::diff::Strategy::kGroupRescan,
                   pgt::diff::Strategy::kAlgebraicGroup, pgt::diff::Strategy::kGroupingSetsRescan,
                   pgt::diff::Strategy::kJoinRescan, pgt::diff::Strategy::kJoinRegion,
                   pgt::diff::Strategy::kAlgebraicJoin}) {
        EXPECT_EQ(pgt::diff::strategy_named(pgt::diff::strategy_name(s)), s);
    }
    EXPECT_FALSE(pgt::diff::strategy_named("full"));
}

}  // namespace
