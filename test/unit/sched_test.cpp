// Unit tests for src/core/sched: schedule parsing, canonical text, rejections
// and cron fire times. Invariant: every timestamp literal is a UTC instant
// checked with `date -u -d ... +%s`; its ISO form is in the comment beside it.
#include "core/sched/schedule.hpp"

#include "core/error.hpp"

#include <gtest/gtest.h>

#include <bitset>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace {

using pgt::sched::CronSpec;
using pgt::sched::Kind;
using pgt::sched::next_fire_after;
using pgt::sched::parse_schedule;
using pgt::sched::Schedule;
using std::chrono::seconds;

constexpr std::int64_t kJan1 = 1767225600;  // 2026-01-01T00:00:00Z, a Thursday
constexpr std::int64_t kMinute = 60;
constexpr std::int64_t kHour = 3600;
constexpr std::int64_t kDay = 86400;

const char* const kHint =
    "Use 'calculated', a duration such as '500ms', '30s', '5m', '1h30m', '1d' or '1w', or a cron "
    "expression such as '*/5 * * * *' or '@hourly'.";

// Parses text expecting a rejection; checks the shared error shape and
// returns the detail for the caller to inspect.
std::string rejection_detail(const std::string& text) {
    try {
        parse_schedule(text);
    } catch (const pgt::Error& e) {
        EXPECT_EQ(e.sqlstate(), "22023") << text;
        EXPECT_EQ(std::string(e.message()), "invalid schedule \"" + text + "\"");
        EXPECT_EQ(e.hint(), kHint) << text;
        EXPECT_FALSE(e.detail().empty()) << text;
        EXPECT_EQ(e.detail().back(), '.') << e.detail();
        return e.detail();
    }
    ADD_FAILURE() << "accepted: " << text;
    return {};
}

CronSpec cron_of(const std::string& text) {
    const Schedule s = parse_schedule(text);
    EXPECT_EQ(s.kind, Kind::Cron) << text;
    return s.cron;
}

std::int64_t next_of(const std::string& text, std::int64_t after) {
    return next_fire_after(cron_of(text), after);
}

template <std::size_t N>
std::bitset<N> bits(std::initializer_list<int> values) {
    std::bitset<N> out;
    for (int v : values)
        out.set(static_cast<std::size_t>(v));
    return out;
}

// ---- calculated -------------------------------------------------------------

TEST(Schedule, calculated_is_case_insensitive_and_trimmed) {
    for (const char* text : {"calculated", "CALCULATED", "  Calculated\t\n"}) {
        const Schedule s = parse_schedule(text);
        EXPECT_EQ(s.kind, Kind::Calculated) << text;
        EXPECT_EQ(s.canonical, "calculated") << text;
    }
}

// ---- durations --------------------------------------------------------------

TEST(Schedule, duration_single_units) {
    const std::vector<std::pair<const char*, std::int64_t>> cases{
        {"30s", 30}, {"5m", 300}, {"1h", 3600}, {"1d", 86400}, {"1w", 604800}};
    for (const auto& [text, secs] : cases) {
        const Schedule s = parse_schedule(text);
        EXPECT_EQ(s.kind, Kind::Duration) << text;
        EXPECT_EQ(s.interval, seconds{secs}) << text;
        EXPECT_EQ(s.canonical, text);
    }
}

TEST(Schedule, duration_hours_and_minutes_sum) {
    const Schedule s = parse_schedule("1h30m");
    EXPECT_EQ(s.kind, Kind::Duration);
    EXPECT_EQ(s.interval, seconds{5400});
    EXPECT_EQ(s.canonical, "1h30m");
}

TEST(Schedule, duration_all_units_in_descending_order) {
    const Schedule s = parse_schedule("1w2d3h4m5s");
    EXPECT_EQ(s.interval, seconds{604800 + 2 * 86400 + 3 * 3600 + 4 * 60 + 5});
    EXPECT_EQ(s.canonical, "1w2d3h4m5s");
}

TEST(Schedule, duration_units_are_case_insensitive) {
    const Schedule s = parse_schedule("1H30M");
    EXPECT_EQ(s.interval, seconds{5400});
    EXPECT_EQ(s.canonical, "1h30m");
}

TEST(Schedule, duration_allows_whitespace_between_groups) {
    const Schedule s = parse_schedule("  2h 15m\t10s ");
    EXPECT_EQ(s.interval, seconds{2 * 3600 + 15 * 60 + 10});
    EXPECT_EQ(s.canonical, "2h15m10s");
}

TEST(Schedule, duration_canonical_is_rebuilt_from_the_interval) {
    const std::vector<std::pair<const char*, const char*>> cases{
        {"90m", "1h30m"}, {"7d", "1w"},    {"0090s", "1m30s"},
        {"1d24h", "2d"},  {"3600s", "1h"}, {"10d", "1w3d"},
    };
    for (const auto& [text, canonical] : cases) {
        EXPECT_EQ(parse_schedule(text).canonical, canonical) << text;
    }
}

TEST(Schedule, duration_accepts_the_largest_microsecond_interval) {
    EXPECT_EQ(parse_schedule("9223372036854s").interval, seconds{9223372036854});
    EXPECT_NE(rejection_detail("9223372036855s").find("exceeds the maximum"), std::string::npos);
}

TEST(Schedule, rejects_unknown_text) {
    const std::string detail = rejection_detail("10 parsecs");
    EXPECT_NE(detail.find("5 or 6"), std::string::npos) << detail;
    rejection_detail("hourly");
    rejection_detail("-5m");
}

TEST(Schedule, rejects_empty_and_blank) {
    EXPECT_EQ(rejection_detail(""), "The schedule is empty.");
    EXPECT_EQ(rejection_detail("  \t "), "The schedule is empty.");
}

TEST(Schedule, a_lone_zero_is_as_soon_as_possible_other_zero_groups_are_rejected) {
    for (const char* text : {"0s", "0ms", "00s"}) {
        const Schedule s = parse_schedule(text);
        EXPECT_EQ(s.kind, Kind::Duration) << text;
        EXPECT_EQ(s.interval.count(), 0) << text;
        EXPECT_EQ(s.canonical, "0s") << text;
    }
    EXPECT_EQ(rejection_detail("0h0m"), "Only a duration of one group may be zero, but \"0h\" is.");
    EXPECT_EQ(rejection_detail("1h0m"), "Only a duration of one group may be zero, but \"0m\" is.");
}

TEST(Schedule, milliseconds_after_seconds) {
    const std::vector<std::pair<const char*, const char*>> cases{
        {"500ms", "500ms"}, {"1500ms", "1s500ms"}, {"2m 30s 250ms", "2m30s250ms"},
        {"1000ms", "1s"},   {"1MS", "1ms"},
    };
    for (const auto& [text, canonical] : cases) {
        const Schedule s = parse_schedule(text);
        EXPECT_EQ(s.canonical, canonical) << text;
        EXPECT_EQ(parse_schedule(s.canonical).interval, s.interval) << text;
    }
    EXPECT_EQ(parse_schedule("2m 30s 250ms").interval, std::chrono::milliseconds{150250});
    EXPECT_EQ(rejection_detail("5ms1s"), "Unit \"s\" must come before unit \"ms\".");
}

TEST(Schedule, rejects_unknown_unit) {
    EXPECT_EQ(rejection_detail("5x"), "Unit \"x\" is not one of w, d, h, m, s or ms.");
    EXPECT_EQ(rejection_detail("5min"), "Unit \"min\" is not one of w, d, h, m, s or ms.");
}

TEST(Schedule, rejects_number_without_unit) {
    EXPECT_EQ(rejection_detail("30"), "The number \"30\" has no unit.");
    EXPECT_EQ(rejection_detail("1h30"), "The number \"30\" has no unit.");
}

TEST(Schedule, rejects_units_out_of_order) {
    EXPECT_EQ(rejection_detail("1m1h"), "Unit \"h\" must come before unit \"m\".");
    EXPECT_EQ(rejection_detail("1s 1w"), "Unit \"w\" must come before unit \"s\".");
}

TEST(Schedule, rejects_repeated_unit) {
    EXPECT_EQ(rejection_detail("1h1h"), "Unit \"h\" appears more than once.");
}

TEST(Schedule, rejects_overflow_instead_of_wrapping) {
    for (const char* text : {"99999999999999w", "99999999999999999999999s", "1w9223372036854s"}) {
        EXPECT_NE(rejection_detail(text).find("exceeds the maximum"), std::string::npos) << text;
    }
}

TEST(Schedule, rejects_garbage_inside_duration) {
    EXPECT_EQ(rejection_detail("1h-5m"), "Expected a number at \"-5m\".");
}

// ---- cron: accepted forms ----------------------------------------------------

TEST(Schedule, cron_every_five_minutes_sets_bits) {
    const CronSpec c = cron_of("*/5 * * * *");
    EXPECT_EQ(c.seconds, bits<60>({0}));
    EXPECT_EQ(c.minutes, bits<60>({0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55}));
    EXPECT_TRUE(c.hours.all());
    EXPECT_EQ(c.dom.count(), 31u);
    EXPECT_FALSE(c.dom[0]);
    EXPECT_EQ(c.month.count(), 12u);
    EXPECT_FALSE(c.month[0]);
    EXPECT_TRUE(c.dow.all());
    EXPECT_TRUE(c.dom_star);
    EXPECT_TRUE(c.dow_star);
}

TEST(Schedule, cron_lists_ranges_and_steps) {
    const CronSpec c = cron_of("0,30 9-11 1-15/7 */5 1-5");
    EXPECT_EQ(c.minutes, bits<60>({0, 30}));
    EXPECT_EQ(c.hours, bits<24>({9, 10, 11}));
    EXPECT_EQ(c.dom, bits<32>({1, 8, 15}));
    EXPECT_EQ(c.month, bits<13>({1, 6, 11}));
    EXPECT_EQ(c.dow, bits<7>({1, 2, 3, 4, 5}));
    EXPECT_FALSE(c.dom_star);
    EXPECT_FALSE(c.dow_star);
}

TEST(Schedule, cron_names_are_case_insensitive_and_canonical_upper_case) {
    const Schedule s = parse_schedule("0 9 * jan-Mar,DEC mon-fri");
    EXPECT_EQ(s.cron, cron_of("0 9 * 1-3,12 1-5"));
    EXPECT_EQ(s.canonical, "0 9 * JAN-MAR,DEC MON-FRI");
    EXPECT_EQ(cron_of("0 0 * * SUN,sat").dow, bits<7>({0, 6}));
}

TEST(Schedule, cron_day_of_week_seven_is_sunday) {
    EXPECT_EQ(cron_of("0 0 * * 7").dow, bits<7>({0}));
    EXPECT_EQ(cron_of("0 0 * * 5-7").dow, bits<7>({0, 5, 6}));
    EXPECT_TRUE(cron_of("0 0 * * 0-7").dow.all());
}

TEST(Schedule, cron_six_fields_lead_with_seconds) {
    const Schedule s = parse_schedule("*/15 30 2 * * *");
    EXPECT_EQ(s.cron.seconds, bits<60>({0, 15, 30, 45}));
    EXPECT_EQ(s.cron.minutes, bits<60>({30}));
    EXPECT_EQ(s.cron.hours, bits<24>({2}));
    EXPECT_EQ(s.canonical, "*/15 30 2 * * *");
}

TEST(Schedule, cron_canonical_collapses_whitespace) {
    EXPECT_EQ(parse_schedule("  */5   *\t* *  * ").canonical, "*/5 * * * *");
}

TEST(Schedule, cron_star_flags_only_for_literal_star) {
    EXPECT_TRUE(cron_of("0 0 * * 1").dom_star);
    EXPECT_FALSE(cron_of("0 0 * * 1").dow_star);
    EXPECT_FALSE(cron_of("0 0 13 * *").dom_star);
    EXPECT_TRUE(cron_of("0 0 13 * *").dow_star);
    EXPECT_FALSE(cron_of("0 0 */2 * *").dom_star);
}

TEST(Schedule, cron_aliases_expand_and_keep_primary_spelling) {
    const std::vector<std::vector<const char*>> cases{
        {"@yearly", "0 0 1 1 *", "@yearly"},   {"@annually", "0 0 1 1 *", "@yearly"},
        {"@monthly", "0 0 1 * *", "@monthly"}, {"@weekly", "0 0 * * 0", "@weekly"},
        {"@daily", "0 0 * * *", "@daily"},     {"@midnight", "0 0 * * *", "@daily"},
        {"@hourly", "0 * * * *", "@hourly"},   {" @HOURLY ", "0 * * * *", "@hourly"},
    };
    for (const auto& c : cases) {
        const Schedule s = parse_schedule(c[0]);
        EXPECT_EQ(s.kind, Kind::Cron) << c[0];
        EXPECT_EQ(s.cron, cron_of(c[1])) << c[0];
        EXPECT_EQ(s.canonical, c[2]) << c[0];
    }
}

TEST(Schedule, canonical_text_parses_back_to_the_same_schedule) {
    for (const char* text : {"Calculated", "90M", "2h 15m", "1D24H", " */5  * * * * ",
                             "0 9 * jan-mar mon-fri", "*/15 * * * * *", "@Annually"}) {
        const Schedule first = parse_schedule(text);
        const Schedule again = parse_schedule(first.canonical);
        EXPECT_EQ(again.kind, first.kind) << text;
        EXPECT_EQ(again.interval, first.interval) << text;
        EXPECT_EQ(again.cron, first.cron) << text;
        EXPECT_EQ(again.canonical, first.canonical) << text;
    }
}

TEST(Schedule, cron_feb_29_and_or_rule_days_are_possible) {
    EXPECT_EQ(cron_of("0 0 29 2 *").dom, bits<32>({29}));
    EXPECT_EQ(cron_of("0 0 30 2 1").dom, bits<32>({30}));  // Mondays in February
    EXPECT_EQ(cron_of("0 0 30,31 2,3 *").month, bits<13>({2, 3}));
}

TEST(Schedule, words_starting_with_digits_and_a_letter_are_a_duration) {
    const Schedule spaced = parse_schedule("1w 1d 1h 1m 1s");  // five words, not cron
    EXPECT_EQ(spaced.kind, Kind::Duration);
    EXPECT_EQ(spaced.canonical, "1w1d1h1m1s");
    const Schedule numeric = parse_schedule("0 0 1 1 0");  // all digits: cron
    EXPECT_EQ(numeric.kind, Kind::Cron);
    EXPECT_EQ(numeric.canonical, "0 0 1 1 0");
}

// ---- cron: rejections ----------------------------------------------------------

TEST(Schedule, rejects_wrong_cron_field_count) {
    EXPECT_NE(rejection_detail("* * * *").find("found 4 fields"), std::string::npos);
    EXPECT_NE(rejection_detail("* * * * * * *").find("found 7 fields"), std::string::npos);
}

TEST(Schedule, rejects_out_of_range_field_naming_it) {
    const std::vector<std::pair<const char*, const char*>> cases{
        {"0 25 * * *", "The hour field \"25\" is out of range 0-23."},
        {"60 * * * *", "The minute field \"60\" is out of range 0-59."},
        {"0 0 0 * *", "The day-of-month field \"0\" is out of range 1-31."},
        {"0 0 32 * *", "The day-of-month field \"32\" is out of range 1-31."},
        {"0 0 * 13 *", "The month field \"13\" is out of range 1-12."},
        {"0 0 * * 8", "The day-of-week field \"8\" is out of range 0-7."},
        {"60 0 0 * * *", "The second field \"60\" is out of range 0-59."},
        {"0 1,2,99 * * *", "The hour field \"99\" is out of range 0-23."},
        {"0 99999999999 * * *", "The hour field \"99999999999\" is out of range 0-23."},
    };
    for (const auto& [text, detail] : cases)
        EXPECT_EQ(rejection_detail(text), detail);
}

TEST(Schedule, rejects_bad_step) {
    EXPECT_EQ(rejection_detail("*/0 * * * *"),
              "The minute field \"*/0\" has step \"0\", but a step must be 1-60.");
    rejection_detail("*/61 * * * *");
    rejection_detail("*/x * * * *");
    rejection_detail("*/ * * * *");
}

TEST(Schedule, rejects_reversed_range) {
    EXPECT_EQ(rejection_detail("5-1 * * * *"),
              "The minute field \"5-1\" is a range whose start is after its end.");
    rejection_detail("0 0 * DEC-JAN *");
}

TEST(Schedule, rejects_step_without_range) {
    EXPECT_EQ(rejection_detail("5/15 * * * *"),
              "The minute field \"5/15\" has a step without a range; write \"5-59/15\".");
}

TEST(Schedule, rejects_bad_values_and_names) {
    EXPECT_EQ(rejection_detail("0 0 * FOO *"),
              "The month field \"FOO\" is not a number or a month name such as JAN.");
    EXPECT_EQ(rejection_detail("0 0 * * jan"),
              "The day-of-week field \"jan\" is not a number or a day name such as MON.");
    EXPECT_EQ(rejection_detail("MON * * * *"), "The minute field \"MON\" is not a number.");
    EXPECT_EQ(rejection_detail("5x * * * *"), "The minute field \"5x\" is not a number.");
    EXPECT_EQ(rejection_detail("1,,2 * * * *"),
              "The minute field \"1,,2\" has an empty list item.");
    EXPECT_EQ(rejection_detail("1- * * * *"), "The minute field \"1-\" is missing a value.");
    rejection_detail("1-2-3 * * * *");
}

TEST(Schedule, rejects_day_that_never_exists) {
    EXPECT_EQ(rejection_detail("0 0 30 2 *"),
              "The day-of-month field \"30\" names no day that exists in month field \"2\".");
    rejection_detail("0 0 31 4,6,9,11 *");
    rejection_detail("0 0 30-31 FEB *");
}

TEST(Schedule, rejects_unknown_alias) {
    EXPECT_NE(rejection_detail("@reboot").find("Unknown cron alias \"@reboot\""),
              std::string::npos);
    rejection_detail("@");
}

// ---- next_fire_after -----------------------------------------------------------

TEST(NextFireAfter, every_five_minutes_is_strictly_after) {
    EXPECT_EQ(next_of("*/5 * * * *", kJan1), kJan1 + 5 * kMinute);
    EXPECT_EQ(next_of("*/5 * * * *", kJan1 - 1), kJan1);
    EXPECT_EQ(next_of("*/5 * * * *", 1767226033), kJan1 + 10 * kMinute);  // from 00:07:13
}

TEST(NextFireAfter, hourly_at_boundary_moves_to_next_hour) {
    EXPECT_EQ(next_of("@hourly", kJan1 + kHour), kJan1 + 2 * kHour);
    EXPECT_EQ(next_of("@hourly", kJan1 + kHour - 1), kJan1 + kHour);
    EXPECT_EQ(next_of("@hourly", kJan1 + 23 * kHour), kJan1 + kDay);  // crosses midnight
}

TEST(NextFireAfter, day_of_month_or_day_of_week_when_both_restricted) {
    // 13th of the month OR any Friday.
    EXPECT_EQ(next_of("0 0 13 * 5", kJan1), 1767312000);       // Fri 2026-01-02
    EXPECT_EQ(next_of("0 0 13 * 5", 1768003200), 1768262400);  // Sat 01-10 -> Tue 01-13
    EXPECT_EQ(next_of("0 0 */10 * FRI", kJan1), 1767312000);   // step counts as restricted
}

TEST(NextFireAfter, day_of_month_and_day_of_week_when_one_is_star) {
    EXPECT_EQ(next_of("0 0 13 * *", kJan1), 1768262400);  // 2026-01-13
    EXPECT_EQ(next_of("0 0 * * 5", kJan1), 1767312000);   // Fri 2026-01-02
    EXPECT_EQ(next_of("0 0 * * 7", kJan1), 1767484800);   // Sun 2026-01-04
    // Weekdays at 09:00, from Fri 2026-01-02T10:00Z to Mon 2026-01-05T09:00Z.
    EXPECT_EQ(next_of("0 9 * * MON-FRI", 1767348000), 1767603600);
}

TEST(NextFireAfter, month_and_year_rollover) {
    EXPECT_EQ(next_of("0 0 1 * *", 1769860800), 1769904000);  // 01-31T12:00 -> 02-01
    EXPECT_EQ(next_of("@yearly", 1798761599), 1798761600);    // 2026-12-31T23:59:59 -> 2027
}

TEST(NextFireAfter, leap_day_waits_for_a_leap_year) {
    EXPECT_EQ(next_of("0 0 29 2 *", kJan1), 1835395200);       // 2028-02-29
    EXPECT_EQ(next_of("0 0 29 2 *", 3981398400), 4233686400);  // 2096-03-01 -> 2104-02-29
}

TEST(NextFireAfter, six_field_expression_fires_on_seconds) {
    EXPECT_EQ(next_of("*/15 * * * * *", kJan1), kJan1 + 15);
    EXPECT_EQ(next_of("*/15 * * * * *", kJan1 + 59), kJan1 + kMinute);
    EXPECT_EQ(next_of("30 15 10 * * *", kJan1), 1767262530);  // 2026-01-01T10:15:30Z
    EXPECT_EQ(next_of("30 15 10 * * *", 1767262530), 1767262530 + kDay);
}

TEST(NextFireAfter, works_before_the_epoch) {
    EXPECT_EQ(next_of("@yearly", -1), 0);
    EXPECT_EQ(next_of("*/5 * * * *", -301), -300);  // 1969-12-31T23:55:00Z
}

TEST(NextFireAfter, impossible_hand_built_spec_throws) {
    CronSpec spec = cron_of("0 0 * * *");
    spec.dom = bits<32>({30});
    spec.month = bits<13>({2});
    spec.dom_star = false;
    try {
        next_fire_after(spec, kJan1);
        FAIL() << "expected an error";
    } catch (const pgt::Error& e) {
        EXPECT_EQ(e.sqlstate(), "22023");
        EXPECT_EQ(std::string(e.message()),
                  "cron schedule has no fire time after unix time 1767225600");
    }
}

TEST(NextFireAfter, empty_time_field_throws_without_searching) {
    CronSpec spec = cron_of("* * * * *");
    spec.minutes.reset();
    EXPECT_THROW(next_fire_after(spec, kJan1), pgt::Error);
}

TEST(NextFireAfter, out_of_range_instant_throws) {
    const CronSpec spec = cron_of("@daily");
    EXPECT_THROW(next_fire_after(spec, 253402300800), pgt::Error);  // year 10000
    EXPECT_THROW(next_fire_after(spec, -62135596801), pgt::Error);  // before year 1
    EXPECT_EQ(next_fire_after(spec, 253402300799 - kDay), 253402300800 - kDay);
}

}  // namespace
