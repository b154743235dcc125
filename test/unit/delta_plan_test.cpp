// Unit tests of the delta plan (src/core/diff/plan): per construct, the
// step each operator gets, the form of Δ it hands its parent, a join's
// branches with their reads and signs, and the plan in words, all without
// a server.
#include "core/diff/plan.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/diff/join_terms.hpp"
#include "unit/tree_builder.hpp"

namespace {

using pgt::diff::DeltaForm;
using pgt::diff::DeltaPlan;
using pgt::diff::PlanFacts;
using pgt::diff::Step;
using pgt::diff::Strategy;
using pgt::ir::Op;
using pgt::ir::TableRead;
using pgt::test::Builder;

constexpr TableRead kNow = TableRead::kNow;
constexpr TableRead kOld = TableRead::kOld;
constexpr TableRead kNew = TableRead::kNew;
constexpr TableRead kBoth = TableRead::kBoth;

DeltaPlan plan(const Builder& b, const PlanFacts& f = {}) {
    std::optional<DeltaPlan> p = pgt::diff::plan_delta(b.t, f);
    EXPECT_TRUE(p);
    return p ? *p : DeltaPlan{};
}

std::vector<Step> steps(const DeltaPlan& p) {
    std::vector<Step> out;
    for (const pgt::diff::PlanStep& s : p.steps) {
        out.push_back(s.step);
    }
    return out;
}

std::vector<DeltaForm> forms(const DeltaPlan& p) {
    std::vector<DeltaForm> out;
    for (const pgt::diff::PlanStep& s : p.steps) {
        out.push_back(pgt::diff::form_of(s.step));
    }
    return out;
}

// A one-table level: Project [Aggregate] [Filter] Scan, with image texts.
struct Level {
    Builder b;
    int scan = -1, filter = -1, aggregate = -1, project = -1;
};

Level level(bool where, int group_keys, Op aggregate = Op::kAggregate) {
    Level l;
    l.scan = l.b.scan(2, {{0}});
    l.b.t.at(l.scan).images = true;
    int below = l.scan;
    if (where) {
        below = l.filter = l.b.pass(Op::kFilter, l.scan);
    }
    if (group_keys >= 0) {
        below = l.aggregate = l.b.aggregate(below, group_keys, aggregate);
    }
    l.project = l.b.project(below, group_keys >= 0 ? std::vector<int>{0} : std::vector<int>{0, 1});
    l.b.root(l.project);
    return l;
}

TEST(DeltaPlan, a_scan_keyed_by_its_table_applies_each_keys_last_event) {
    Level l = level(true, -1);
    l.b.t.at(l.scan).relid = 16384;  // the identity is this table's key
    l.b.root(l.project);
    DeltaPlan p = plan(l.b);
    EXPECT_EQ(p.strategy, Strategy::kScan);
    EXPECT_TRUE(p.key_table);
    EXPECT_EQ(steps(p),
              (std::vector<Step>{Step::kImages, Step::kLastEvent, Step::kApplyLastEvent}));
    EXPECT_EQ(forms(p), (std::vector<DeltaForm>{DeltaForm::kImages, DeltaForm::kImages,
                                                DeltaForm::kApplied}));
    // Keyed without a table's key: netted images; keyless: counted.
    Level netted = level(true, -1);
    EXPECT_EQ(plan(netted.b).steps.at(1).step, Step::kNetted);
    EXPECT_EQ(plan(netted.b).steps.at(2).step, Step::kApplyNetted);
    Level counted = level(false, -1);
    counted.b.t.at(counted.scan).unique_keys.clear();
    counted.b.root(counted.project);
    EXPECT_EQ(plan(counted.b).steps.at(1).step, Step::kApplyCounted);
}

TEST(DeltaPlan, an_aggregate_folds_signed_images_into_state_or_recomputes_its_groups) {
    Level rescan = level(true, 1);
    DeltaPlan p = plan(rescan.b);
    EXPECT_EQ(p.strategy, Strategy::kGroupRescan);
    EXPECT_EQ(p.steps.at(2).step, Step::kGroupRescan);
    EXPECT_EQ(pgt::diff::form_of(p.steps.at(2).step), DeltaForm::kTouchedKeys);
    EXPECT_EQ(p.steps.at(3).step, Step::kApplyReplace);

    Level algebraic = level(true, 1);
    pgt::ir::Node& agg = algebraic.b.t.at(algebraic.aggregate);
    agg.algebraic = true;
    agg.algebraic_aggs.push_back({});
    agg.algebraic_aggs.back().kind = pgt::ir::AggKind::kSum;
    p = plan(algebraic.b);
    EXPECT_EQ(p.strategy, Strategy::kAlgebraicGroup);
    EXPECT_EQ(p.steps.at(2).step, Step::kAlgebraic);
    EXPECT_EQ(pgt::diff::form_of(p.steps.at(2).step), DeltaForm::kState);
    EXPECT_FALSE(p.steps.at(2).rereads);
    agg.algebraic_aggs.back().kind = pgt::ir::AggKind::kMax;  // may lose its extreme
    EXPECT_TRUE(plan(algebraic.b).steps.at(2).rereads);

    Level sets = level(false, 2, Op::kGroupingSets);
    p = plan(sets.b);
    EXPECT_EQ(p.strategy, Strategy::kGroupingSetsRescan);
    EXPECT_EQ(p.steps.at(1).step, Step::kSetsRescan);
}

// a JOIN b ON a.c1 = b.c0 under a GROUP BY, kept algebraically: the join's
// branches are the signed sum of the sets of changed tables.
TEST(DeltaPlan, an_algebraic_join_sums_signed_terms_into_the_aggregates_state) {
    Builder b;
    int j = b.join(b.scan(2, {{0}}), b.scan(2, {{0}}), {{1, 2}});
    int a = b.aggregate(j, 1);
    b.t.at(a).algebraic = true;
    b.root(b.project(a, {0}));
    PlanFacts f;
    f.region = f.region_algebraic = true;
    f.tables = {"public.a", "public.b"};
    for (const pgt::diff::SignedTerm& t : pgt::diff::signed_terms(2, 0)) {
        f.branches.push_back({t.tables});
    }
    DeltaPlan p = plan(b, f);
    EXPECT_EQ(p.strategy, Strategy::kAlgebraicJoin);
    EXPECT_EQ(steps(p), (std::vector<Step>{Step::kImages, Step::kImages, Step::kSignedJoin,
                                           Step::kAlgebraic, Step::kApplyReplace}));
    EXPECT_EQ(forms(p), (std::vector<DeltaForm>{DeltaForm::kImages, DeltaForm::kImages,
                                                DeltaForm::kSignedRows, DeltaForm::kState,
                                                DeltaForm::kApplied}));
    const std::vector<pgt::diff::PlanTerm>& terms = p.steps.at(2).terms;
    ASSERT_EQ(terms.size(), 3U);
    EXPECT_EQ(terms[0].reads, (std::vector<TableRead>{kBoth, kNow}));
    EXPECT_EQ(terms[0].sign, 1);
    EXPECT_EQ(terms[1].reads, (std::vector<TableRead>{kNow, kBoth}));
    EXPECT_EQ(terms[1].sign, 1);
    EXPECT_EQ(terms[2].reads, (std::vector<TableRead>{kBoth, kBoth}));
    EXPECT_EQ(terms[2].sign, -1);
}

// The signs the plan gives a term are the signs of the sums the program's
// branches are made from, with signed images and without.
TEST(DeltaPlan, term_signs_agree_with_the_join_sums) {
    for (std::size_t tables = 1; tables <= 4; tables++) {
        for (const pgt::diff::SignedTerm& t : pgt::diff::signed_terms(tables, 0)) {
            EXPECT_EQ(pgt::diff::term_sign(t.tables), t.sign);
        }
        for (const pgt::diff::SignedTerm& t : pgt::diff::image_terms(tables)) {
            EXPECT_EQ(pgt::diff::term_sign(t.tables), t.sign);
        }
    }
    EXPECT_EQ(pgt::diff::term_sign({kOld, kNow}), -1);
    EXPECT_EQ(pgt::diff::term_sign({kNew, kOld}), 1);
}

// A region's branches find keys (no sign); a filter is copied into each;
// the root recomputes the keys found; a keyed pair recomputes its keys.
TEST(DeltaPlan, a_join_region_finds_the_touched_keys_and_recomputes_them) {
    Builder b;
    int j = b.join(b.scan(2, {{0}}), b.scan(2, {{0}}), {{1, 2}});
    int f = b.pass(Op::kFilter, j);
    b.root(b.project(f, {0, 3}));
    PlanFacts facts;
    facts.region = true;
    facts.branches = {{{kBoth, kNow}}, {{kNow, kBoth}}, {{kOld, kOld}}};
    DeltaPlan p = plan(b, facts);
    EXPECT_EQ(p.strategy, Strategy::kJoinRegion);
    EXPECT_EQ(steps(p), (std::vector<Step>{Step::kImages, Step::kImages, Step::kJoinKeys,
                                           Step::kInBranch, Step::kApplyRecomputed}));
    EXPECT_EQ(pgt::diff::form_of(p.steps.at(2).step), DeltaForm::kTouchedKeys);
    ASSERT_EQ(p.steps.at(2).terms.size(), 3U);
    EXPECT_EQ(p.steps.at(2).terms[2].reads, (std::vector<TableRead>{kOld, kOld}));
    for (const pgt::diff::PlanTerm& t : p.steps.at(2).terms) {
        EXPECT_EQ(t.sign, 0);
    }
    // Words for a term that reads an outer join padded and drops a
    // WHERE subquery's conjunct.
    facts.tables = {"public.a", "public.b"};
    facts.branches.push_back(
        {{kNow, kNew}, {pgt::ir::Padding::kPadded}, {pgt::ir::SubqueryRead::kTrue}});
    Builder words = b;
    pgt::diff::describe_plan(words.t, plan(b, facts));
    EXPECT_EQ(words.t.at(j).rule_terms.at(3),
              "branch 4: public.a now, public.b after-images; outer joins: padded; subqueries: "
              "dropped");
    PlanFacts pair;
    pair.join_pair = true;
    p = plan(b, pair);
    EXPECT_EQ(p.strategy, Strategy::kJoinRescan);
    EXPECT_EQ(p.steps.at(2).step, Step::kKeyPair);
    EXPECT_TRUE(p.steps.at(2).terms.empty());
    EXPECT_EQ(p.steps.at(4).step, Step::kApplyReplace);
}

// q13's shape: an aggregate over a grouped derived table D. D's Δ is its
// touched groups now (+1) and before (-1), found by D's own branches, and
// the outer aggregate folds those signed rows into its state.
TEST(DeltaPlan, a_derived_tables_change_composes_as_signed_rows_into_its_parent) {
    Builder b;
    int j = b.join(b.scan(2, {{0}}), b.scan(2, {{0}}), {{0, 3}}, pgt::ir::JoinKind::kLeft);
    int inner = b.aggregate(j, 1);
    int d = b.pass(Op::kSubquery, b.project(inner, {0, -1}));
    int outer = b.aggregate(d, 1);
    b.t.at(outer).algebraic = true;
    b.root(b.project(outer, {0}));
    PlanFacts f;
    f.region = f.derived = true;
    f.branches = {{{kBoth, kNow}}, {{kNow, kBoth}}};
    DeltaPlan p = plan(b, f);
    EXPECT_EQ(p.strategy, Strategy::kAlgebraicDerived);
    EXPECT_EQ(p.steps.at(static_cast<std::size_t>(j)).step, Step::kNone);  // read by D's branches
    EXPECT_EQ(p.steps.at(static_cast<std::size_t>(inner)).step, Step::kDerivedRows);
    EXPECT_EQ(pgt::diff::form_of(p.steps.at(static_cast<std::size_t>(inner)).step),
              DeltaForm::kSignedRows);
    EXPECT_EQ(p.steps.at(static_cast<std::size_t>(inner)).terms.size(), 2U);
    EXPECT_EQ(p.steps.at(static_cast<std::size_t>(outer)).step, Step::kAlgebraic);
    EXPECT_EQ(p.steps.at(static_cast<std::size_t>(b.t.root)).step, Step::kApplyReplace);
}

TEST(DeltaPlan, no_plan_for_what_no_program_builder_maintains) {
    Level window = level(false, -1);
    int w = window.b.pass(Op::kWindow, window.project);
    window.b.root(window.b.project(w, {0}));
    EXPECT_FALSE(pgt::diff::plan_delta(window.b.t, {}));
    Builder join;  // a join without a region or pair from analysis
    join.root(join.project(join.join(join.scan(2, {{0}}), join.scan(2, {{0}})), {0}));
    EXPECT_FALSE(pgt::diff::plan_delta(join.t, {}));
}

// explain_st's words: the root names the label, a join lists its branches
// with their reads and signs, at most eight of them.
TEST(DeltaPlan, explain_names_the_label_the_steps_and_the_branches) {
    Builder b;
    int ab = b.join(b.scan(2, {{0}}), b.scan(2, {{0}}), {{1, 2}});
    int j = b.join(ab, b.scan(2, {{0}}), {{3, 4}});
    int a = b.aggregate(j, 1);
    b.t.at(a).algebraic = true;
    b.root(b.project(a, {0}));
    PlanFacts f;
    f.region = f.region_algebraic = true;
    f.tables = {"public.a", "public.b", "public.c"};
    for (const pgt::diff::SignedTerm& t : pgt::diff::image_terms(3)) {
        f.branches.push_back({t.tables});
    }
    pgt::diff::describe_plan(b.t, plan(b, f));
    EXPECT_EQ(b.t.at(0).rule, "delta: change images (before -1, after +1)");
    EXPECT_EQ(b.t.at(a).rule.rfind("algebraic:", 0), 0U);
    EXPECT_EQ(b.t.at(b.t.root).rule,
              "algebraic_join (apply: replace the rows of the touched identities)");
    // The branches are the outer join's (the inner one is read in them).
    EXPECT_TRUE(b.t.at(ab).rule_terms.empty());
    EXPECT_EQ(b.t.at(ab).rule, "");
    const std::vector<std::string>& terms = b.t.at(j).rule_terms;
    ASSERT_EQ(terms.size(), 9U);  // 8 of image_terms(3)'s 26, then the rest counted
    EXPECT_EQ(terms[0], "branch 1 (-1): public.a before-images, public.b now, public.c now");
    EXPECT_EQ(terms[1], "branch 2 (+1): public.a after-images, public.b now, public.c now");
    EXPECT_EQ(terms[8], "... and 18 more branches");
    const std::string text = pgt::ir::format_tree(b.t);
    EXPECT_NE(text.find("\n        - branch 1 (-1): public.a before-images, public.b now, "
                        "public.c now\n"),
              std::string::npos)
        << text;

    Builder full;
    full.root(full.project(full.scan(2, {{0}}), {0}));
    pgt::diff::describe_plan(full.t, std::nullopt);
    EXPECT_EQ(full.t.at(full.t.root).rule, "recompute (FULL)");
    EXPECT_EQ(full.t.at(0).rule, "");
}

}  // namespace
