// Order preservation of row identity V2: for random values a, b of one type,
// sign(memcmp(enc(a), enc(b))) == sign(compare(a, b)). Invariant: every
// reference comparator here is written from PostgreSQL's semantics, never
// from the encoder, so a test failure means the bytes are wrong.
#include "core/rowid/encoder.hpp"
#include "core/rowid/payload.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace pgt::rowid;
using Bytes = std::vector<std::uint8_t>;

template <typename Fn>
Bytes encode_field(Fn&& fn) {
    Encoder e;
    e.begin(Domain::kScanKey, 1);
    fn(e);
    const auto id = e.end();
    return {id.begin(), id.end()};
}

int byte_order(const Bytes& a, const Bytes& b) {
    if (std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end())) {
        return -1;
    }
    return a == b ? 0 : 1;
}

template <typename T>
int three_way(const T& a, const T& b) {
    return a < b ? -1 : (b < a ? 1 : 0);
}

// --- integers and plain fixed-width types ----------------------------------

RC_GTEST_PROP(RowIdOrder, Int2ByteOrderIsIntegerOrder, (std::int16_t a, std::int16_t b)) {
    RC_ASSERT(byte_order(encode_field([&](Encoder& e) { e.int2(a); }),
                         encode_field([&](Encoder& e) { e.int2(b); })) == three_way(a, b));
}

RC_GTEST_PROP(RowIdOrder, Int4ByteOrderIsIntegerOrder, (std::int32_t a, std::int32_t b)) {
    RC_ASSERT(byte_order(encode_field([&](Encoder& e) { e.int4(a); }),
                         encode_field([&](Encoder& e) { e.int4(b); })) == three_way(a, b));
}

RC_GTEST_PROP(RowIdOrder, Int8ByteOrderIsIntegerOrder, (std::int64_t a, std::int64_t b)) {
    RC_ASSERT(byte_order(encode_field([&](Encoder& e) { e.int8(a); }),
                         encode_field([&](Encoder& e) { e.int8(b); })) == three_way(a, b));
}

RC_GTEST_PROP(RowIdOrder, OidByteOrderIsUnsignedOrder, (std::uint32_t a, std::uint32_t b)) {
    RC_ASSERT(byte_order(encode_field([&](Encoder& e) { e.oid(a); }),
                         encode_field([&](Encoder& e) { e.oid(b); })) == three_way(a, b));
}

TEST(RowIdOrder, IntegerBoundariesSortInOrder) {
    const std::int64_t values[] = {std::numeric_limits<std::int64_t>::min(), -1, 0, 1,
                                   std::numeric_limits<std::int64_t>::max()};
    for (std::size_t i = 1; i < std::size(values); ++i) {
        EXPECT_LT(byte_order(encode_field([&](Encoder& e) { e.int8(values[i - 1]); }),
                             encode_field([&](Encoder& e) { e.int8(values[i]); })),
                  0);
    }
}

RC_GTEST_PROP(RowIdOrder, DateAndTimestampByteOrderIsTimeOrder,
              (std::int32_t d1, std::int32_t d2, std::int64_t t1, std::int64_t t2)) {
    RC_ASSERT(byte_order(encode_field([&](Encoder& e) { e.date(d1); }),
                         encode_field([&](Encoder& e) { e.date(d2); })) == three_way(d1, d2));
    RC_ASSERT(byte_order(encode_field([&](Encoder& e) { e.timestamp(t1); }),
                         encode_field([&](Encoder& e) { e.timestamp(t2); })) == three_way(t1, t2));
    RC_ASSERT(byte_order(encode_field([&](Encoder& e) { e.timestamptz(t1); }),
                         encode_field([&](Encoder& e) { e.timestamptz(t2); })) ==
              three_way(t1, t2));
}

RC_GTEST_PROP(RowIdOrder, TimeByteOrderIsTimeOfDayOrder, ()) {
    const auto t1 = *rc::gen::inRange<std::int64_t>(0, payload::kUsecsPerDay + 1);
    const auto t2 = *rc::gen::inRange<std::int64_t>(0, payload::kUsecsPerDay + 1);
    RC_ASSERT(byte_order(encode_field([&](Encoder& e) { e.time(t1); }),
                         encode_field([&](Encoder& e) { e.time(t2); })) == three_way(t1, t2));
}

// timetz_cmp_internal: GMT-equivalent instant, then zone (seconds west).
RC_GTEST_PROP(RowIdOrder, TimetzByteOrderIsInstantThenZone, ()) {
    const auto time1 = *rc::gen::inRange<std::int64_t>(0, payload::kUsecsPerDay + 1);
    const auto time2 = *rc::gen::element(time1, std::min(time1 + 3600000000, payload::kUsecsPerDay),
                                         std::int64_t{0});
    const auto zone1 = *rc::gen::inRange<std::int32_t>(-57599, 57600);
    const auto zone2 = *rc::gen::element(zone1, zone1 - 3600, std::int32_t{0}, std::int32_t{-3600});
    const auto key1 = std::make_pair(time1 + std::int64_t{zone1} * 1000000, zone1);
    const auto key2 = std::make_pair(time2 + std::int64_t{zone2} * 1000000, zone2);
    RC_ASSERT(byte_order(encode_field([&](Encoder& e) { e.timetz(time1, zone1); }),
                         encode_field([&](Encoder& e) { e.timetz(time2, zone2); })) ==
              three_way(key1, key2));
}

// --- floats ----------------------------------------------------------------

// PostgreSQL's float8_cmp_internal: NaN == NaN, NaN above everything, -0 == 0.
template <typename F>
int pg_float_cmp(F a, F b) {
    if (std::isnan(a)) {
        return std::isnan(b) ? 0 : 1;
    }
    if (std::isnan(b)) {
        return -1;
    }
    return a < b ? -1 : (a > b ? 1 : 0);
}

template <typename F, typename Bits>
rc::Gen<F> float_gen() {
    using L = std::numeric_limits<F>;
    return rc::gen::oneOf(
        rc::gen::arbitrary<F>(),
        rc::gen::map(rc::gen::arbitrary<Bits>(), [](Bits b) { return std::bit_cast<F>(b); }),
        rc::gen::element<F>(F(0), -F(0), L::infinity(), -L::infinity(), L::quiet_NaN(),
                            -L::quiet_NaN(), L::denorm_min(), -L::denorm_min(), L::max(),
                            L::lowest(), F(1), F(-1)));
}

RC_GTEST_PROP(RowIdOrder, Float4ByteOrderIsPostgresFloatOrder, ()) {
    const float a = *float_gen<float, std::uint32_t>();
    const float b = *float_gen<float, std::uint32_t>();
    RC_ASSERT(byte_order(encode_field([&](Encoder& e) { e.float4(a); }),
                         encode_field([&](Encoder& e) { e.float4(b); })) == pg_float_cmp(a, b));
}

RC_GTEST_PROP(RowIdOrder, Float8ByteOrderIsPostgresFloatOrder, ()) {
    const double a = *float_gen<double, std::uint64_t>();
    const double b = *float_gen<double, std::uint64_t>();
    RC_ASSERT(byte_order(encode_field([&](Encoder& e) { e.float8(a); }),
                         encode_field([&](Encoder& e) { e.float8(b); })) == pg_float_cmp(a, b));
}

TEST(RowIdOrder, FloatSpecialsSortNegInfNegativesZeroPositivesPosInfNaN) {
    using L = std::numeric_limits<double>;
    const double ladder[] = {
        -L::infinity(),  L::lowest(), -1.0,     -L::denorm_min(), 0.0,
        L::denorm_min(), 1.0,         L::max(), L::infinity(),    L::quiet_NaN()};
    for (std::size_t i = 1; i < std::size(ladder); ++i) {
        EXPECT_LT(byte_order(encode_field([&](Encoder& e) { e.float8(ladder[i - 1]); }),
                             encode_field([&](Encoder& e) { e.float8(ladder[i]); })),
                  0)
            << i;
    }
}

// --- numeric -----------------------------------------------------------------

struct Numeric {
    NumericSign sign;
    std::int32_t weight;
    std::vector<std::int16_t> digits;
};

rc::Gen<Numeric> numeric_gen() {
    return rc::gen::exec([] {
        Numeric n;
        n.sign = *rc::gen::weightedElement<NumericSign>({{8, NumericSign::kPositive},
                                                         {8, NumericSign::kNegative},
                                                         {1, NumericSign::kNaN},
                                                         {1, NumericSign::kPosInf},
                                                         {1, NumericSign::kNegInf}});
        n.weight = *rc::gen::inRange<std::int32_t>(-4, 5);
        const auto digit = rc::gen::oneOf(rc::gen::element<std::int16_t>(0, 1, 9999),
                                          rc::gen::inRange<std::int16_t>(0, 10000));
        n.digits = *rc::gen::resize(6, rc::gen::container<std::vector<std::int16_t>>(digit));
        return n;
    });
}

// Digit of base-10000 position p (value digit * 10000^p), 0 outside.
std::int16_t digit_at(const Numeric& n, std::int64_t p) {
    const std::int64_t i = n.weight - p;
    return (i >= 0 && i < static_cast<std::int64_t>(n.digits.size())) ? n.digits[i] : 0;
}

bool is_zero(const Numeric& n) {
    return std::all_of(n.digits.begin(), n.digits.end(), [](std::int16_t d) { return d == 0; });
}

int numeric_class(const Numeric& n) {
    switch (n.sign) {
        case NumericSign::kNegInf:
            return 0;
        case NumericSign::kNegative:
            return is_zero(n) ? 2 : 1;
        case NumericSign::kPositive:
            return is_zero(n) ? 2 : 3;
        case NumericSign::kPosInf:
            return 4;
        case NumericSign::kNaN:
            return 5;
    }
    return -1;
}

// PostgreSQL's cmp_numerics: class, then magnitude (reversed for negatives).
int pg_numeric_cmp(const Numeric& a, const Numeric& b) {
    const int ca = numeric_class(a);
    const int cb = numeric_class(b);
    if (ca != cb || (ca != 1 && ca != 3)) {
        return three_way(ca, cb);
    }
    const std::int64_t hi = std::max(a.weight, b.weight);
    const std::int64_t lo = std::min(a.weight - static_cast<std::int64_t>(a.digits.size()),
                                     b.weight - static_cast<std::int64_t>(b.digits.size()));
    for (std::int64_t p = hi; p >= lo; --p) {
        if (const int c = three_way(digit_at(a, p), digit_at(b, p)); c != 0) {
            return ca == 1 ? -c : c;
        }
    }
    return 0;
}

Bytes encode_numeric(const Numeric& n) {
    return encode_field([&](Encoder& e) { e.numeric({n.sign, n.weight, n.digits}); });
}

RC_GTEST_PROP(RowIdOrder, NumericByteOrderIsPostgresNumericOrder, ()) {
    const Numeric a = *numeric_gen();
    const Numeric b = *numeric_gen();
    RC_ASSERT(byte_order(encode_numeric(a), encode_numeric(b)) == pg_numeric_cmp(a, b));
}

// Extra leading/trailing zero digits (other scale, same value) change nothing.
RC_GTEST_PROP(RowIdOrder, NumericScaleAndPaddingDoNotChangeTheIdentity, ()) {
    const Numeric a = *numeric_gen();
    Numeric padded = a;
    const auto lead = *rc::gen::inRange<std::size_t>(0, 3);
    padded.digits.insert(padded.digits.begin(), lead, 0);
    padded.weight += static_cast<std::int32_t>(lead);
    padded.digits.resize(padded.digits.size() + *rc::gen::inRange<std::size_t>(0, 3), 0);
    RC_ASSERT(encode_numeric(a) == encode_numeric(padded));
}

// --- text and bytes ------------------------------------------------------------

rc::Gen<std::string> byte_string_gen() {
    return rc::gen::oneOf(
        rc::gen::arbitrary<std::string>(),
        rc::gen::container<std::string>(rc::gen::element<char>('\0', '\x01', 'a', '\xff')));
}

int unsigned_order(const std::string& a, const std::string& b) {
    return byte_order(Bytes(a.begin(), a.end()), Bytes(b.begin(), b.end()));
}

RC_GTEST_PROP(RowIdOrder, TextAndByteaByteOrderIsUnsignedByteOrder, ()) {
    const std::string a = *byte_string_gen();
    const std::string b = *byte_string_gen();
    const int expected = unsigned_order(a, b);
    RC_ASSERT(byte_order(encode_field([&](Encoder& e) { e.text(a); }),
                         encode_field([&](Encoder& e) { e.text(b); })) == expected);
    RC_ASSERT(byte_order(encode_field([&](Encoder& e) { e.bytea(a); }),
                         encode_field([&](Encoder& e) { e.bytea(b); })) == expected);
}

RC_GTEST_PROP(RowIdOrder, BpcharOrderIgnoresTrailingSpaces, ()) {
    const std::string a = *byte_string_gen();
    const std::string b = *byte_string_gen();
    const auto strip = [](std::string s) { return s.erase(s.find_last_not_of(' ') + 1); };
    const std::string pad_a = a + std::string(*rc::gen::inRange(0, 4), ' ');
    RC_ASSERT(byte_order(encode_field([&](Encoder& e) { e.bpchar(pad_a); }),
                         encode_field([&](Encoder& e) { e.bpchar(b); })) ==
              unsigned_order(strip(a), strip(b)));
}

// --- interval --------------------------------------------------------------------

rc::Gen<IntervalValue> interval_gen() {
    return rc::gen::exec([] {
        IntervalValue v;
        v.time = *rc::gen::oneOf(rc::gen::arbitrary<std::int64_t>(),
                                 rc::gen::inRange<std::int64_t>(-200000000000, 200000000000));
        v.day = *rc::gen::oneOf(rc::gen::arbitrary<std::int32_t>(),
                                rc::gen::inRange<std::int32_t>(-70, 70));
        v.month = *rc::gen::oneOf(rc::gen::arbitrary<std::int32_t>(),
                                  rc::gen::inRange<std::int32_t>(-3, 3));
        return v;
    });
}

// interval_cmp_value, computed as (whole days, remainder) with floor division.
std::pair<std::int64_t, std::int64_t> interval_days_and_rest(const IntervalValue& v) {
    constexpr std::int64_t kDay = 86400000000;
    std::int64_t days = v.time / kDay;
    std::int64_t rest = v.time % kDay;
    if (rest < 0) {
        rest += kDay;
        --days;
    }
    return {std::int64_t{v.month} * 30 + v.day + days, rest};
}

Bytes encode_interval(const IntervalValue& v) {
    return encode_field([&](Encoder& e) { e.interval(v); });
}

RC_GTEST_PROP(RowIdOrder, IntervalByteOrderIsIntervalCmpValueOrder, ()) {
    const IntervalValue a = *interval_gen();
    const IntervalValue b = *interval_gen();
    RC_ASSERT(byte_order(encode_interval(a), encode_interval(b)) ==
              three_way(interval_days_and_rest(a), interval_days_and_rest(b)));
}

// 1 month == 30 days and 1 day == 24 hours, as interval_cmp_value says.
RC_GTEST_PROP(RowIdOrder, IntervalEquivalentsEncodeIdentically, ()) {
    IntervalValue a;
    a.month = *rc::gen::inRange<std::int32_t>(-100000, 100000);
    a.day = *rc::gen::inRange<std::int32_t>(-100000, 100000);
    a.time = *rc::gen::inRange<std::int64_t>(-100000000000000, 100000000000000);
    const IntervalValue month_as_days{a.time, a.day + 30, a.month - 1};
    const IntervalValue day_as_hours{a.time + 86400000000, a.day - 1, a.month};
    RC_ASSERT(encode_interval(a) == encode_interval(month_as_days));
    RC_ASSERT(encode_interval(a) == encode_interval(day_as_hours));
}

// --- ranges --------------------------------------------------------------------

struct Int4Range {
    RangeFlags flags;
    std::int32_t lo = 0;
    std::int32_t hi = 0;
};

rc::Gen<Int4Range> range_gen() {
    return rc::gen::exec([] {
        Int4Range r;
        r.flags.empty = *rc::gen::weightedElement<bool>({{1, true}, {6, false}});
        r.flags.lower_infinite = *rc::gen::weightedElement<bool>({{1, true}, {4, false}});
        r.flags.upper_infinite = *rc::gen::weightedElement<bool>({{1, true}, {4, false}});
        r.flags.lower_inclusive = *rc::gen::arbitrary<bool>();
        r.flags.upper_inclusive = *rc::gen::arbitrary<bool>();
        r.lo = *rc::gen::inRange(-3, 4);
        r.hi = r.lo + *rc::gen::inRange(0, 4);
        return r;
    });
}

// range_cmp_bounds for two lower (is_lower) or two upper bounds.
int bound_cmp(bool infinite_a, std::int32_t va, bool inc_a, bool infinite_b, std::int32_t vb,
              bool inc_b, bool is_lower) {
    const int outer = is_lower ? -1 : 1;  // where an infinite bound sorts
    if (infinite_a || infinite_b) {
        return infinite_a == infinite_b ? 0 : (infinite_a ? outer : -outer);
    }
    if (va != vb) {
        return three_way(va, vb);
    }
    if (inc_a == inc_b) {
        return 0;
    }
    return (inc_a ? 1 : -1) * outer;  // lower: inclusive first; upper: exclusive first
}

int pg_range_cmp(const Int4Range& a, const Int4Range& b) {
    if (a.flags.empty || b.flags.empty) {
        return a.flags.empty == b.flags.empty ? 0 : (a.flags.empty ? -1 : 1);
    }
    const int lower = bound_cmp(a.flags.lower_infinite, a.lo, a.flags.lower_inclusive,
                                b.flags.lower_infinite, b.lo, b.flags.lower_inclusive, true);
    if (lower != 0) {
        return lower;
    }
    return bound_cmp(a.flags.upper_infinite, a.hi, a.flags.upper_inclusive, b.flags.upper_infinite,
                     b.hi, b.flags.upper_inclusive, false);
}

Bytes encode_range(const Int4Range& r) {
    return encode_field([&](Encoder& e) {
        e.begin_range(TypeTag::kInt4, r.flags);
        if (!r.flags.empty && !r.flags.lower_infinite) {
            e.int4(r.lo);
        }
        if (!r.flags.empty && !r.flags.upper_infinite) {
            e.int4(r.hi);
        }
        e.end_range();
    });
}

RC_GTEST_PROP(RowIdOrder, RangeByteOrderIsRangeCmpOrder, ()) {
    const Int4Range a = *range_gen();
    const Int4Range b = *range_gen();
    RC_ASSERT(byte_order(encode_range(a), encode_range(b)) == pg_range_cmp(a, b));
}

// --- whole tuples ------------------------------------------------------------------

template <typename T>
rc::Gen<std::optional<T>> optional_gen(rc::Gen<T> gen) {
    return rc::gen::exec([gen] {
        if (*rc::gen::weightedElement<bool>({{1, true}, {3, false}})) {
            return std::optional<T>{};
        }
        return std::optional<T>(*gen);
    });
}

// Field by field, NULL before any value.
RC_GTEST_PROP(RowIdOrder, TupleOrderIsFieldByFieldWithNullFirst, ()) {
    using Row = std::pair<std::optional<std::int32_t>, std::optional<std::string>>;
    const auto row_gen = rc::gen::pair(
        optional_gen(rc::gen::inRange(-2, 3)),
        optional_gen(rc::gen::container<std::string>(rc::gen::element<char>('\0', 'a'))));
    const Row a = *row_gen;
    const Row b = *row_gen;
    const auto encode = [](const Row& r) {
        Encoder e;
        e.begin(Domain::kGroupKey, 2);
        r.first ? e.int4(*r.first) : e.null(TypeTag::kInt4);
        r.second ? e.text(*r.second) : e.null(TypeTag::kText);
        const auto id = e.end();
        return Bytes(id.begin(), id.end());
    };
    // std::optional orders nullopt first; strings compare as unsigned bytes.
    const auto key = [](const Row& r) {
        std::optional<Bytes> text;
        if (r.second) {
            text = Bytes(r.second->begin(), r.second->end());
        }
        return std::make_pair(r.first, text);
    };
    RC_ASSERT(byte_order(encode(a), encode(b)) == three_way(key(a), key(b)));
}

}  // namespace
