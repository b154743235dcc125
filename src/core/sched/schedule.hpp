// Schedule strings of a stream table: 'calculated', a duration such as '1h30m',
// or a cron expression, parsed into a Schedule plus the cron fire-time search.
// Invariant: every accepted text yields a canonical text that parses back to an
// identical Schedule, and every rejection throws pgt::Error with SQLSTATE 22023.
#pragma once
#include "core/core.hpp"

#include <bitset>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace pgt::sched {

enum class Kind {
    Calculated,  // the text 'calculated'; timing is decided outside this module
    Duration,    // fixed interval, Schedule::interval
    Cron,        // wall-clock times in UTC, Schedule::cron
};

// A cron expression as sets of allowed values. Bit i set means value i is
// allowed; dom bit 0 and month bit 0 are never set; dow 7 is stored as 0
// (Sunday). Five-field expressions get seconds = {0}.
struct CronSpec {
    std::bitset<60> seconds;
    std::bitset<60> minutes;
    std::bitset<24> hours;
    std::bitset<32> dom;    // day of month, 1-31
    std::bitset<13> month;  // 1-12
    std::bitset<7> dow;     // day of week, 0-6, 0 = Sunday
    // True when the field was literally "*". When both are false a day
    // matches if its day-of-month OR its day-of-week matches; otherwise both
    // must match. Unlike Vixie cron, "*/2" counts as restricted.
    bool dom_star = false;
    bool dow_star = false;

    bool operator==(const CronSpec&) const = default;
};

struct Schedule {
    Kind kind = Kind::Calculated;
    std::chrono::milliseconds interval{0};  // Kind::Duration only; 0 for "0s"
    CronSpec cron;                          // Kind::Cron only
    // Normalized text for the catalog: "calculated"; a duration rebuilt from
    // the interval in w/d/h/m/s/ms ("90m" -> "1h30m", "1500ms" -> "1s500ms",
    // zero -> "0s"); a cron expression with
    // single spaces and upper-case names; an alias in its primary spelling
    // ("@annually" -> "@yearly", "@midnight" -> "@daily").
    std::string canonical;
};

// Parses a schedule string; surrounding whitespace and letter case are
// ignored.
//  - Duration: groups "<integer><unit>", unit one of w, d, h, m, s, ms,
//    each unit at most once and in that order; whitespace is allowed between
//    groups ("2h 15m") but not inside one ("2 h"). A group may be zero only
//    when it is the only one ("0s": due as soon as a change is pending).
//    The total must be at most 9223372036854 seconds, so its microseconds
//    fit PostgreSQL's interval.
//  - Cron: 5 fields (minute hour day-of-month month day-of-week) or 6
//    (leading seconds); or @yearly, @annually, @monthly, @weekly, @daily,
//    @midnight, @hourly.
// Text whose every word starts with a digit, and that has a letter or is a
// single word, is read as a duration ("30" fails for its missing unit); any
// other text not 'calculated' or '@...' is read as cron.
// Throws pgt::Error (22023) naming the input on any rejection, including a
// day-of-month that exists in none of the allowed months (e.g. Feb 30).
Schedule parse_schedule(std::string_view text);

// The first instant (unix seconds, UTC) strictly after unix_seconds_utc at
// which spec fires. Searches at most 9 years ahead (enough for Feb 29 across
// a skipped century leap year); throws pgt::Error (22023) when nothing fires
// in that window or the instant lies outside years 0001-9999.
std::int64_t next_fire_after(const CronSpec& spec, std::int64_t unix_seconds_utc);

}  // namespace pgt::sched
