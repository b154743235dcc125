// Unit tests of refresh-mode resolution and status parsing (src/core).
// Invariant: every row of the mode table has a test here.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/policy/auto_mode.hpp"
#include "core/refresh_mode.hpp"

namespace {

std::string sqlstate_of(auto&& fn) {
    try {
        fn();
    } catch (const pgt::Error& e) {
        return e.sqlstate();
    }
    return "no error";
}

TEST(RefreshMode, full_is_full_without_notice) {
    auto m = pgt::resolve_refresh_mode("full", "");
    EXPECT_STREQ(pgt::mode_name(m.requested), "FULL");
    EXPECT_STREQ(pgt::mode_name(m.effective), "FULL");
    EXPECT_TRUE(m.notice.empty());
}

TEST(RefreshMode, auto_picks_differential_when_supported) {
    auto m = pgt::resolve_refresh_mode(" Auto ", "");
    EXPECT_STREQ(pgt::mode_name(m.requested), "AUTO");
    EXPECT_STREQ(pgt::mode_name(m.effective), "DIFFERENTIAL");
    EXPECT_TRUE(m.notice.empty());
}

TEST(RefreshMode, auto_falls_back_to_full_and_names_the_construct) {
    auto m = pgt::resolve_refresh_mode("AUTO", "a join");
    EXPECT_STREQ(pgt::mode_name(m.effective), "FULL");
    EXPECT_NE(m.notice.find("a join"), std::string::npos) << m.notice;
}

TEST(RefreshMode, differential_when_supported_else_rejected_naming_the_construct) {
    EXPECT_STREQ(pgt::mode_name(pgt::resolve_refresh_mode("differential", "").effective),
                 "DIFFERENTIAL");
    try {
        pgt::resolve_refresh_mode("DIFFERENTIAL", "aggregates");
        FAIL() << "no error";
    } catch (const pgt::Error& e) {
        EXPECT_EQ(e.sqlstate(), "0A000");
        EXPECT_NE(std::string(e.message()).find("aggregates"), std::string::npos);
    }
}

TEST(RefreshMode, immediate_resolves_unless_something_blocks_it) {
    auto m = pgt::resolve_refresh_mode(" Immediate ", "", "", false, "");
    EXPECT_EQ(m.requested, pgt::RefreshMode::kImmediate);
    EXPECT_EQ(m.effective, pgt::RefreshMode::kImmediate);
    try {
        pgt::resolve_refresh_mode("IMMEDIATE", "", "", false, "a query over more than one table");
        FAIL() << "IMMEDIATE over a join must be refused";
    } catch (const pgt::Error& e) {
        EXPECT_EQ(e.sqlstate(), "0A000");
        EXPECT_NE(std::string(e.message()).find("more than one table"), std::string::npos);
    }
    // Without a verdict on the query, never accepted.
    EXPECT_EQ(sqlstate_of([] { pgt::resolve_refresh_mode("immediate", ""); }), "0A000");
}

TEST(RefreshMode, unknown_mode_is_invalid_parameter) {
    EXPECT_EQ(sqlstate_of([] { pgt::resolve_refresh_mode("sometimes", ""); }), "22023");
    EXPECT_EQ(sqlstate_of([] { pgt::resolve_refresh_mode("", ""); }), "22023");
}

TEST(Status, active_and_suspended_only) {
    EXPECT_EQ(pgt::parse_status("active"), pgt::sched::Status::Active);
    EXPECT_EQ(pgt::parse_status("SUSPENDED"), pgt::sched::Status::Suspended);
    EXPECT_EQ(pgt::parse_status(" paused "), pgt::sched::Status::Suspended);
    EXPECT_EQ(sqlstate_of([] { pgt::parse_status("ERROR"); }), "22023");
}

}  // namespace

namespace {

TEST(AutoChoice, differential_when_changes_are_few_and_nothing_is_measured) {
    pgt::AutoInputs in;
    in.changes = 10;
    in.source_rows = 1000;
    EXPECT_FALSE(pgt::choose_auto(in).full);
    in.changes = 250;
    EXPECT_FALSE(pgt::choose_auto(in).full) << "a quarter is still DIFFERENTIAL";
    in.changes = 251;
    pgt::AutoChoice c = pgt::choose_auto(in);
    EXPECT_TRUE(c.full);
    EXPECT_EQ(pgt::auto_change_limit(in), 250);
    EXPECT_EQ(c.reason,
              "AUTO: more than 250 changes (a quarter of about 1000 source rows): recomputed");
}

// One FULL time may be a cold cache's (the first, at creation): while
// only one is known and DIFFERENTIAL cost more than half of it, a refresh
// with changes measures FULL again (once: two FULL times are enough).
TEST(AutoChoice, full_is_measured_again_while_few_full_times_are_known) {
    pgt::AutoInputs in;
    in.source_rows = 100000;
    in.full_ms = 250;  // a cold first FULL refresh
    in.diff_ms = 209;
    in.diff_changes = 1000;
    in.changes = 1000;
    in.full_samples = 1;
    pgt::AutoChoice c = pgt::choose_auto(in);
    EXPECT_TRUE(c.full);
    EXPECT_EQ(c.reason,
              "AUTO: FULL measured again (the best of 1 FULL refresh took 250 ms, the last "
              "DIFFERENTIAL refresh 209 ms)");
    in.full_samples = 2;  // enough: the limit decides (1000 * 250 / 209 changes)
    EXPECT_FALSE(pgt::choose_auto(in).full);
    in.full_samples = 1;
    in.changes = 10;  // a trickle: 209 ms scaled to 10 of 1000 changes, no reason to measure
    EXPECT_FALSE(pgt::choose_auto(in).full);
    in.changes = 1000;
    in.full_samples = 1;
    in.diff_ms = 125;  // half of FULL: DIFFERENTIAL is clearly cheaper
    EXPECT_FALSE(pgt::choose_auto(in).full);
    in.diff_ms = 209;
    in.changes = 0;  // nothing to apply: never a FULL refresh for that
    EXPECT_FALSE(pgt::choose_auto(in).full);
}

TEST(AutoChoice, measured_costs_decide_once_both_exist) {
    pgt::AutoInputs in;
    in.source_rows = 1000;
    in.full_ms = 200;
    in.diff_ms = 40;
    in.diff_changes = 100;
    in.changes = 500;  // estimate 200 ms: not more than FULL
    EXPECT_FALSE(pgt::choose_auto(in).full);
    in.changes = 501;
    pgt::AutoChoice c = pgt::choose_auto(in);
    EXPECT_TRUE(c.full);
    EXPECT_EQ(pgt::auto_change_limit(in), 500);
    EXPECT_EQ(
        c.reason,
        "AUTO: more than 500 changes (the last DIFFERENTIAL refresh applied 100 in 40 ms, FULL "
        "took 200 ms at best): recomputed");
    in.changes = 900;  // more than a quarter of the rows, but cheap by measurement
    in.diff_ms = 10;
    EXPECT_FALSE(pgt::choose_auto(in).full);
}

TEST(AutoChoice, two_measurements_separate_fixed_and_per_change_cost) {
    pgt::AutoInputs in;
    in.source_rows = 1000000;
    in.full_ms = 300;
    in.diff_ms = 250;  // 100 changes: mostly fixed cost
    in.diff_changes = 100;
    in.prev_diff_ms = 340;  // 1,000 changes: 0.1 ms each, 240 ms fixed
    in.prev_diff_changes = 1000;
    EXPECT_EQ(pgt::auto_change_limit(in), 600);  // (300 - 240) / 0.1
    in.changes = 601;
    pgt::AutoChoice c = pgt::choose_auto(in);
    EXPECT_TRUE(c.full);
    EXPECT_EQ(c.reason,
              "AUTO: more than 600 changes (the last two DIFFERENTIAL refreshes cost about 240 "
              "ms + 100.0 µs per change, FULL took 300 ms at best): recomputed");
    // The one-point rule would have allowed 120 changes at most here.
    in.prev_diff_changes = 100;
    EXPECT_EQ(pgt::auto_change_limit(in), 120) << "same change count: no fit";
    in.prev_diff_changes = 199;
    EXPECT_EQ(pgt::auto_change_limit(in), 120) << "less than twice as many changes: no fit";
}

// Two RF cycles of the TPC-H bench (q05 at SF 1): nearly the same change
// count, 64 ms apart. A fit would make 0.63 ms per change and send a
// 270,000-change window to FULL (6 s instead of 0.5 s).
TEST(AutoChoice, two_refreshes_of_about_the_same_size_are_no_fit) {
    pgt::AutoInputs in;
    in.full_ms = 6067;
    in.prev_diff_ms = 472;
    in.prev_diff_changes = 270864;
    in.diff_ms = 408;
    in.diff_changes = 270762;
    in.changes = 270392;
    EXPECT_EQ(pgt::auto_change_limit(in), 4026257);  // 6067 * 270762 / 408
    EXPECT_FALSE(pgt::choose_auto(in).full);
}

TEST(AutoChoice, a_fixed_cost_above_full_means_full_until_a_reprobe) {
    pgt::AutoInputs in;
    in.full_ms = 100;
    in.diff_ms = 130;
    in.diff_changes = 10;
    in.prev_diff_ms = 120;
    in.prev_diff_changes = 5;  // 2 ms per change, 110 ms fixed
    in.changes = 1;
    EXPECT_EQ(pgt::auto_change_limit(in), 0);
    pgt::AutoChoice c = pgt::choose_auto(in);
    EXPECT_TRUE(c.full);
    EXPECT_EQ(c.reason,
              "AUTO: a DIFFERENTIAL refresh costs more than FULL at any size (the last two cost "
              "about 110 ms fixed, FULL took 100 ms at best): recomputed");
    in.since_diff = pgt::kAutoReprobe;  // measure DIFFERENTIAL again, per-change limit
    EXPECT_EQ(pgt::auto_change_limit(in), 7);
    EXPECT_FALSE(pgt::choose_auto(in).full);
    in.prev_diff_ms = 140;  // cost fell as changes grew: noise, no fit
    in.since_diff = 0;
    EXPECT_EQ(pgt::auto_change_limit(in), 7);
}

TEST(AutoChoice, nothing_known_means_no_limit) {
    pgt::AutoInputs in;
    in.changes = 1000000;
    EXPECT_EQ(pgt::auto_change_limit(in), -1);
    EXPECT_FALSE(pgt::choose_auto(in).full);
}

TEST(AutoChoice, a_differential_without_changes_is_no_measurement) {
    pgt::AutoInputs in;
    in.source_rows = 100;
    in.full_ms = 5;
    in.diff_ms = 50;
    in.diff_changes = 0;
    in.changes = 10;
    EXPECT_FALSE(pgt::choose_auto(in).full) << "falls back to the source-size rule";
}

}  // namespace

namespace {

TEST(RefreshMode, auto_takes_full_when_differential_would_recompute_everything) {
    auto m = pgt::resolve_refresh_mode("AUTO", "", "the whole aggregate without GROUP BY");
    EXPECT_STREQ(pgt::mode_name(m.effective), "FULL");
    EXPECT_EQ(m.notice,
              "refresh_mode AUTO resolved to FULL: DIFFERENTIAL would recompute the whole "
              "aggregate without GROUP BY on every change");
    auto d = pgt::resolve_refresh_mode("DIFFERENTIAL", "", "the whole aggregate without GROUP BY");
    EXPECT_STREQ(pgt::mode_name(d.effective), "DIFFERENTIAL") << "an explicit request is honoured";
}

}  // namespace

namespace {

TEST(RefreshMode, a_configured_limit_is_54000_under_differential_and_full_under_auto) {
    const std::string blocker =
        "GROUPING SETS, CUBE or ROLLUP expanding to more than 64 grouping sets "
        "(pg_trickle.max_grouping_set_branches)";
    EXPECT_EQ(sqlstate_of([&] { pgt::resolve_refresh_mode("DIFFERENTIAL", blocker, "", true); }),
              "54000");
    EXPECT_EQ(sqlstate_of([&] { pgt::resolve_refresh_mode("DIFFERENTIAL", blocker, "", false); }),
              "0A000");
    auto m = pgt::resolve_refresh_mode("AUTO", blocker, "", true);
    EXPECT_STREQ(pgt::mode_name(m.effective), "FULL");
    EXPECT_EQ(m.notice,
              "refresh_mode AUTO resolved to FULL: DIFFERENTIAL cannot maintain " + blocker);
    EXPECT_STREQ(pgt::mode_name(pgt::resolve_refresh_mode("FULL", blocker, "", true).effective),
                 "FULL");
}

}  // namespace

TEST(RefreshMode, actions_and_statuses_are_spelled_as_the_catalog_stores_them) {
    EXPECT_STREQ(pgt::action_name(pgt::RefreshAction::kFull), "FULL");
    EXPECT_STREQ(pgt::action_name(pgt::RefreshAction::kDifferential), "DIFFERENTIAL");
    EXPECT_STREQ(pgt::action_name(pgt::RefreshAction::kNoData), "NO_DATA");
    for (pgt::sched::Status s :
         {pgt::sched::Status::Active, pgt::sched::Status::Suspended, pgt::sched::Status::Error}) {
        EXPECT_EQ(pgt::sched::status_named(pgt::sched::status_name(s)), s);
    }
}
