// Schedule-string parser and cron fire-time search (API in schedule.hpp).
// Invariant: helpers report a bad schedule only by throwing BadSchedule with a
// detail sentence; parse_schedule alone turns it into pgt::Error, so every
// rejection has the same message shape, SQLSTATE 22023 and hint.
#include "core/sched/schedule.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace pgt::sched {
namespace {

constexpr std::string_view kHint =
    "Use 'calculated', a duration such as '500ms', '30s', '5m', '1h30m', '1d' or '1w', or a cron "
    "expression such as '*/5 * * * *' or '@hourly'.";
constexpr std::string_view kSpace = " \t\n\r\f\v";

struct BadSchedule {
    std::string detail;
};

[[noreturn]] void bad(std::string detail) {
    throw BadSchedule{std::move(detail)};
}

std::string quoted(std::string_view s) {
    return "\"" + std::string(s) + "\"";
}

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_alpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_space(char c) {
    return kSpace.find(c) != std::string_view::npos;
}

std::string to_case(std::string_view s, bool upper) {
    std::string out(s);
    for (char& c : out) {
        if (upper && c >= 'a' && c <= 'z')
            c = static_cast<char>(c - 'a' + 'A');
        if (!upper && c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}

std::string_view trim(std::string_view s) {
    const std::size_t begin = s.find_first_not_of(kSpace);
    if (begin == std::string_view::npos)
        return {};
    return s.substr(begin, s.find_last_not_of(kSpace) - begin + 1);
}

std::size_t skip_while(std::string_view s, std::size_t pos, bool (*pred)(char)) {
    while (pos < s.size() && pred(s[pos]))
        ++pos;
    return pos;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> parts;
    for (std::size_t pos = 0;;) {
        const std::size_t end = s.find(sep, pos);
        parts.push_back(s.substr(pos, end - pos));
        if (end == std::string_view::npos)
            return parts;
        pos = end + 1;
    }
}

std::vector<std::string_view> split_words(std::string_view s) {
    std::vector<std::string_view> words;
    for (std::size_t pos = skip_while(s, 0, is_space); pos < s.size();) {
        const std::size_t end = skip_while(s, pos, [](char c) { return !is_space(c); });
        words.push_back(s.substr(pos, end - pos));
        pos = skip_while(s, end, is_space);
    }
    return words;
}

// Whole-string decimal; nullopt when not all digits or too large for T.
template <typename T>
std::optional<T> to_number(std::string_view s) {
    T value{};
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || !is_digit(s[0]) || ec != std::errc{} || end != s.data() + s.size()) {
        return std::nullopt;
    }
    return value;
}

// ---- durations --------------------------------------------------------------

struct Unit {
    std::string_view name;
    std::int64_t ms;
};
// Descending: a duration's units must appear in this order.
constexpr std::array<Unit, 6> kUnits{
    {{"w", 604800000}, {"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}}};
// Largest interval whose microseconds fit PostgreSQL's int64 interval.
constexpr std::int64_t kMaxDurationSeconds = std::numeric_limits<std::int64_t>::max() / 1000000;
constexpr std::int64_t kMaxDurationMs = kMaxDurationSeconds * 1000;

std::string too_long() {
    return "The duration exceeds the maximum of " + std::to_string(kMaxDurationSeconds) +
           " seconds.";
}

struct Group {
    std::int64_t ms;
    std::size_t rank;  // index into kUnits
};

// Reads one "<n><unit>" group at pos and advances pos past it.
Group read_group(std::string_view s, std::size_t& pos) {
    const std::size_t start = pos;
    const std::size_t digits_end = skip_while(s, pos, is_digit);
    if (digits_end == start)
        bad("Expected a number at " + quoted(s.substr(start)) + ".");
    const std::size_t unit_end = skip_while(s, digits_end, is_alpha);
    const std::string_view number = s.substr(start, digits_end - start);
    const std::string_view unit = s.substr(digits_end, unit_end - digits_end);
    if (unit.empty())
        bad("The number " + quoted(number) + " has no unit.");
    std::size_t rank = 0;
    while (rank < kUnits.size() && to_case(unit, false) != kUnits[rank].name) {
        ++rank;
    }
    if (rank == kUnits.size())
        bad("Unit " + quoted(unit) + " is not one of w, d, h, m, s or ms.");
    pos = unit_end;
    const std::optional<std::int64_t> amount = to_number<std::int64_t>(number);
    if (!amount || *amount > kMaxDurationMs / kUnits[rank].ms)
        bad(too_long());
    return {*amount * kUnits[rank].ms, rank};
}

std::string duration_text(std::int64_t total_ms) {
    if (total_ms == 0) {
        return "0s";
    }
    std::string out;
    for (const Unit& unit : kUnits) {
        if (total_ms < unit.ms)
            continue;
        out += std::to_string(total_ms / unit.ms);
        out += unit.name;
        total_ms %= unit.ms;
    }
    return out;
}

Schedule parse_duration(std::string_view s) {
    std::int64_t total = 0;
    std::optional<std::size_t> prev;
    std::size_t groups = 0;
    std::string_view zero;
    for (std::size_t pos = 0; pos < s.size(); pos = skip_while(s, pos, is_space)) {
        const std::size_t start = pos;
        const Group group = read_group(s, pos);
        const std::string name(kUnits[group.rank].name);
        if (prev && group.rank == *prev) {
            bad("Unit " + quoted(name) + " appears more than once.");
        }
        if (prev && group.rank < *prev) {
            bad("Unit " + quoted(name) + " must come before unit " +
                quoted(std::string(kUnits[*prev].name)) + ".");
        }
        if (group.ms == 0 && zero.empty()) {
            zero = s.substr(start, pos - start);
        }
        if (group.ms > kMaxDurationMs - total)
            bad(too_long());
        total += group.ms;
        prev = group.rank;
        ++groups;
    }
    // A lone zero ("0s", "0ms") means: as soon as a change is pending.
    if (!zero.empty() && groups > 1) {
        bad("Only a duration of one group may be zero, but " + quoted(zero) + " is.");
    }
    Schedule result;
    result.kind = Kind::Duration;
    result.interval = std::chrono::milliseconds{total};
    result.canonical = duration_text(total);
    return result;
}

// Durations are told from cron by shape: every word starts with a digit and
// the text has a letter or is a single word ("30" -> missing unit). Cron text
// has a "*" or a name word, or is all digits ("0 0 1 1 0").
bool looks_like_duration(std::string_view s) {
    const std::vector<std::string_view> words = split_words(s);
    for (std::string_view word : words) {
        if (!is_digit(word[0]))
            return false;
    }
    return words.size() == 1 || std::ranges::any_of(s, is_alpha);
}

// ---- cron ---------------------------------------------------------------------

using Mask = std::uint64_t;

constexpr std::array<std::string_view, 12> kMonthNames{"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                                       "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<std::string_view, 7> kDayNames{"SUN", "MON", "TUE", "WED",
                                                    "THU", "FRI", "SAT"};

struct Field {
    std::string_view name;
    int lo;
    int hi;
    std::span<const std::string_view> names;  // names[i] means value lo + i
    std::string_view expected;                // what a value may be, for errors
};
// Six-field order; five-field expressions start at index 1.
constexpr std::array<Field, 6> kFields{{
    {"second", 0, 59, {}, "a number"},
    {"minute", 0, 59, {}, "a number"},
    {"hour", 0, 23, {}, "a number"},
    {"day-of-month", 1, 31, {}, "a number"},
    {"month", 1, 12, kMonthNames, "a number or a month name such as JAN"},
    {"day-of-week", 0, 7, kDayNames, "a number or a day name such as MON"},
}};
constexpr std::size_t kDomField = 3;
constexpr std::size_t kMonthField = 4;
constexpr std::size_t kDowField = 5;
// Longest each month can be (February in leap years).
constexpr std::array<int, 13> kMaxMonthDays{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

std::string field_error(const Field& field, std::string_view text, std::string_view problem) {
    return "The " + std::string(field.name) + " field " + quoted(text) + " " +
           std::string(problem) + ".";
}

std::string range_text(const Field& field) {
    return std::to_string(field.lo) + "-" + std::to_string(field.hi);
}

int read_value(std::string_view token, const Field& field, std::string_view item) {
    if (token.empty())
        bad(field_error(field, item, "is missing a value"));
    if (!is_digit(token[0])) {
        const std::string name = to_case(token, true);
        for (std::size_t i = 0; i < field.names.size(); ++i) {
            if (field.names[i] == name)
                return field.lo + static_cast<int>(i);
        }
        bad(field_error(field, token, "is not " + std::string(field.expected)));
    }
    if (skip_while(token, 0, is_digit) != token.size()) {
        bad(field_error(field, token, "is not " + std::string(field.expected)));
    }
    const std::optional<int> value = to_number<int>(token);
    if (!value || *value < field.lo || *value > field.hi) {
        bad(field_error(field, token, "is out of range " + range_text(field)));
    }
    return *value;
}

int read_step(std::string_view token, const Field& field, std::string_view item) {
    const int max_step = field.hi - field.lo + 1;
    const std::optional<int> step = to_number<int>(token);
    if (!step || *step < 1 || *step > max_step) {
        bad(field_error(
            field, item,
            "has step " + quoted(token) + ", but a step must be 1-" + std::to_string(max_step)));
    }
    return *step;
}

// One list item: "*", "a", "a-b", "*/n" or "a-b/n".
Mask parse_item(std::string_view item, const Field& field) {
    const std::size_t slash = item.find('/');
    const std::string_view range = item.substr(0, slash);
    const int step =
        slash == std::string_view::npos ? 1 : read_step(item.substr(slash + 1), field, item);
    int lo = field.lo;
    int hi = field.hi;
    if (range != "*") {
        const std::size_t dash = range.find('-');
        lo = read_value(range.substr(0, dash), field, item);
        hi = dash == std::string_view::npos ? lo : read_value(range.substr(dash + 1), field, item);
        if (dash == std::string_view::npos && slash != std::string_view::npos) {
            bad(field_error(field, item,
                            "has a step without a range; write " +
                                quoted(std::string(range) + "-" + std::to_string(field.hi) +
                                       std::string(item.substr(slash)))));
        }
        if (lo > hi)
            bad(field_error(field, item, "is a range whose start is after its end"));
    }
    Mask mask = 0;
    for (int v = lo; v <= hi; v += step)
        mask |= Mask{1} << v;
    return mask;
}

Mask parse_field(std::string_view text, const Field& field) {
    Mask mask = 0;
    for (std::string_view item : split(text, ',')) {
        if (item.empty())
            bad(field_error(field, text, "has an empty list item"));
        mask |= parse_item(item, field);
    }
    return mask;
}

void check_day_exists(const CronSpec& spec, std::string_view dom, std::string_view month) {
    if (spec.dom_star || !spec.dow_star)
        return;  // some weekday always matches
    for (std::size_t m = 1; m <= 12; ++m) {
        for (int d = 1; spec.month[m] && d <= kMaxMonthDays[m]; ++d) {
            if (spec.dom[static_cast<std::size_t>(d)])
                return;
        }
    }
    bad("The day-of-month field " + quoted(dom) + " names no day that exists in month field " +
        quoted(month) + ".");
}

Schedule parse_cron(std::string_view s) {
    const std::vector<std::string_view> words = split_words(s);
    if (words.size() != 5 && words.size() != 6) {
        bad("Expected a duration, or a cron expression of 5 or 6 space-separated fields, but "
            "found " +
            std::to_string(words.size()) + (words.size() == 1 ? " field." : " fields."));
    }
    const std::size_t skip = kFields.size() - words.size();  // 1: no seconds field
    std::array<Mask, kFields.size()> masks{1};               // seconds = {0}
    for (std::size_t i = skip; i < kFields.size(); ++i) {
        masks[i] = parse_field(words[i - skip], kFields[i]);
    }
    const Mask sunday7 = Mask{1} << 7;
    Schedule result;
    result.kind = Kind::Cron;
    CronSpec& spec = result.cron;
    spec.seconds = masks[0];
    spec.minutes = masks[1];
    spec.hours = masks[2];
    spec.dom = masks[kDomField];
    spec.month = masks[kMonthField];
    spec.dow = (masks[kDowField] & ~sunday7) | ((masks[kDowField] & sunday7) ? 1 : 0);
    spec.dom_star = words[kDomField - skip] == "*";
    spec.dow_star = words[kDowField - skip] == "*";
    check_day_exists(spec, words[kDomField - skip], words[kMonthField - skip]);
    for (std::string_view word : words) {
        result.canonical += (result.canonical.empty() ? "" : " ") + to_case(word, true);
    }
    return result;
}

struct Alias {
    std::string_view name;
    std::string_view expansion;
    std::string_view canonical;
};
constexpr std::array<Alias, 7> kAliases{{
    {"@yearly", "0 0 1 1 *", "@yearly"},
    {"@annually", "0 0 1 1 *", "@yearly"},
    {"@monthly", "0 0 1 * *", "@monthly"},
    {"@weekly", "0 0 * * 0", "@weekly"},
    {"@daily", "0 0 * * *", "@daily"},
    {"@midnight", "0 0 * * *", "@daily"},
    {"@hourly", "0 * * * *", "@hourly"},
}};

Schedule parse_alias(std::string_view s) {
    const std::string name = to_case(s, false);
    for (const Alias& alias : kAliases) {
        if (alias.name != name)
            continue;
        Schedule result = parse_cron(alias.expansion);
        result.canonical = alias.canonical;
        return result;
    }
    bad("Unknown cron alias " + quoted(s) +
        "; the aliases are @yearly, @annually, @monthly, @weekly, @daily, @midnight and "
        "@hourly.");
}

Schedule parse_trimmed(std::string_view s) {
    if (s.empty())
        bad("The schedule is empty.");
    if (to_case(s, false) == "calculated") {
        Schedule result;
        result.canonical = "calculated";  // kind defaults to Calculated
        return result;
    }
    if (s.front() == '@')
        return parse_alias(s);
    if (looks_like_duration(s))
        return parse_duration(s);
    return parse_cron(s);
}

// ---- fire times ---------------------------------------------------------------

constexpr std::int64_t kSecondsPerDay = 86400;
constexpr std::int64_t kMinInstant = -62135596800;  // 0001-01-01T00:00:00Z
constexpr std::int64_t kMaxInstant = 253402300799;  // 9999-12-31T23:59:59Z
// Feb 29 can be 8 years apart (2096 -> 2104); every other valid spec fires
// within a year.
constexpr int kSearchYears = 9;
constexpr std::int64_t kSearchDays = kSearchYears * 366;

template <std::size_t N>
int next_set(const std::bitset<N>& bits, int from) {
    for (std::size_t i = static_cast<std::size_t>(from); i < N; ++i) {
        if (bits[i])
            return static_cast<int>(i);
    }
    return -1;
}

bool day_matches(const CronSpec& spec, std::int64_t day) {
    const std::chrono::sys_days date{std::chrono::days{day}};
    const std::chrono::year_month_day ymd{date};
    if (!spec.month[static_cast<unsigned>(ymd.month())])
        return false;
    const bool dom_ok = spec.dom[static_cast<unsigned>(ymd.day())];
    const bool dow_ok = spec.dow[std::chrono::weekday{date}.c_encoding()];
    return (spec.dom_star || spec.dow_star) ? (dom_ok && dow_ok) : (dom_ok || dow_ok);
}

// First second of the day at or after `from` that the time fields allow, or -1.
std::int64_t first_time_from(const CronSpec& spec, int from) {
    const int from_h = from / 3600;
    const int from_m = from / 60 % 60;
    for (int h = next_set(spec.hours, from_h); h >= 0; h = next_set(spec.hours, h + 1)) {
        const int m0 = h == from_h ? from_m : 0;
        for (int m = next_set(spec.minutes, m0); m >= 0; m = next_set(spec.minutes, m + 1)) {
            const int s = next_set(spec.seconds, (h == from_h && m == from_m) ? from % 60 : 0);
            if (s >= 0)
                return h * 3600 + m * 60 + s;
        }
    }
    return -1;
}

[[noreturn]] void no_fire_time(const std::string& instant) {
    throw Error(sqlstate::kInvalidParameterValue,
                "cron schedule has no fire time after unix time " + instant,
                "No instant in the " + std::to_string(kSearchYears) +
                    " years after it matches every field.",
                "Check that the day-of-month, month and day-of-week fields can occur together.");
}

}  // namespace

Schedule parse_schedule(std::string_view text) {
    try {
        return parse_trimmed(trim(text));
    } catch (BadSchedule& e) {
        throw Error(sqlstate::kInvalidParameterValue, "invalid schedule " + quoted(text),
                    std::move(e.detail), std::string(kHint));
    }
}

std::int64_t next_fire_after(const CronSpec& spec, std::int64_t unix_seconds_utc) {
    const std::string instant = std::to_string(unix_seconds_utc);
    if (unix_seconds_utc < kMinInstant || unix_seconds_utc > kMaxInstant) {
        throw Error(sqlstate::kInvalidParameterValue,
                    "unix time " + instant + " is out of range for cron schedules",
                    "Cron schedules are evaluated for the years 0001 through 9999.");
    }
    if (spec.seconds.none() || spec.minutes.none() || spec.hours.none())
        no_fire_time(instant);  // only a hand-built spec; spares a long futile search
    const std::int64_t start = unix_seconds_utc + 1;
    std::int64_t day = start / kSecondsPerDay - (start % kSecondsPerDay < 0 ? 1 : 0);
    int from = static_cast<int>(start - day * kSecondsPerDay);
    for (std::int64_t i = 0; i < kSearchDays; ++i, ++day, from = 0) {
        if (!day_matches(spec, day))
            continue;
        const std::int64_t time = first_time_from(spec, from);
        if (time >= 0)
            return day * kSecondsPerDay + time;
    }
    no_fire_time(instant);
}

}  // namespace pgt::sched
