// Injectivity, framing, prefix freedom, domain separation and equality
// agreement of row identity V2. Invariant: two inputs get the same bytes
// exactly when PostgreSQL would call them equal — checked on random nested
// values (NULLs, arrays, composites, strings containing 0x00, jsonb trees).
#include "core/rowid/decimal.hpp"
#include "core/rowid/encoder.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace pgt::rowid;
using Bytes = std::vector<std::uint8_t>;

Bytes copy(std::span<const std::uint8_t> s) {
    return {s.begin(), s.end()};
}

bool proper_prefix(const Bytes& a, const Bytes& b) {
    return a.size() < b.size() && std::equal(a.begin(), a.end(), b.begin());
}

template <typename T>
rc::Gen<std::optional<T>> optional_gen(rc::Gen<T> gen) {
    return rc::gen::exec([gen] {
        if (*rc::gen::weightedElement<bool>({{1, true}, {3, false}})) {
            return std::optional<T>{};
        }
        return std::optional<T>(*gen);
    });
}

// Short strings over an alphabet that makes framing collisions likely.
rc::Gen<std::string> tricky_string() {
    return rc::gen::resize(
        4, rc::gen::container<std::string>(rc::gen::element<char>('\0', 'a', '\xff', ' ')));
}

// --- a nested row model: (int4, text, text[], ROW(int4, text)) -------------

using Composite = std::pair<std::optional<std::int32_t>, std::optional<std::string>>;
struct Row {
    std::optional<std::int32_t> a;
    std::optional<std::string> b;
    std::optional<std::vector<std::optional<std::string>>> arr;
    std::optional<Composite> comp;
    bool operator==(const Row&) const = default;
};

rc::Gen<Row> row_gen() {
    return rc::gen::exec([] {
        Row r;
        r.a = *optional_gen(rc::gen::inRange(0, 3));
        r.b = *optional_gen(tricky_string());
        r.arr = *optional_gen(
            rc::gen::resize(3, rc::gen::container<std::vector<std::optional<std::string>>>(
                                   optional_gen(tricky_string()))));
        r.comp = *optional_gen(
            rc::gen::pair(optional_gen(rc::gen::inRange(0, 3)), optional_gen(tricky_string())));
        return r;
    });
}

void put_int(Encoder& e, const std::optional<std::int32_t>& v) {
    v ? e.int4(*v) : e.null(TypeTag::kInt4);
}
void put_text(Encoder& e, const std::optional<std::string>& v) {
    v ? e.text(*v) : e.null(TypeTag::kText);
}

Bytes encode_row(Encoder& e, const Row& r) {
    e.begin(Domain::kKeylessRow, 4);
    put_int(e, r.a);
    put_text(e, r.b);
    if (r.arr) {
        const ArrayDim dim{static_cast<std::int32_t>(r.arr->size()), 1};
        e.begin_array(TypeTag::kText, std::span(&dim, 1));
        for (const auto& element : *r.arr) {
            put_text(e, element);
        }
        e.end_array();
    } else {
        e.null(TypeTag::kArray);
    }
    if (r.comp) {
        e.begin_composite(2);
        put_int(e, r.comp->first);
        put_text(e, r.comp->second);
        e.end_composite();
    } else {
        e.null(TypeTag::kComposite);
    }
    return copy(e.end());
}

RC_GTEST_PROP(RowIdIdentity, NestedRowsEncodeEquallyExactlyWhenEqual, ()) {
    const Row x = *row_gen();
    const Row y = *rc::gen::oneOf(rc::gen::just(x), row_gen());
    Encoder e;
    const Bytes ex = encode_row(e, x);
    const Bytes ey = encode_row(e, y);
    RC_ASSERT((ex == ey) == (x == y));
}

RC_GTEST_PROP(RowIdIdentity, NoIdentityIsAProperPrefixOfAnother, ()) {
    const Row x = *row_gen();
    const Row y = *row_gen();
    Encoder e;
    const Bytes ex = encode_row(e, x);
    const Bytes ey = encode_row(e, y);
    RC_ASSERT(!proper_prefix(ex, ey));
    RC_ASSERT(!proper_prefix(ey, ex));
}

RC_GTEST_PROP(RowIdIdentity, TextPairFramingIsUnambiguous, ()) {
    const auto a = std::make_pair(*tricky_string(), *tricky_string());
    const auto b = std::make_pair(*tricky_string(), *tricky_string());
    const auto encode = [](const std::pair<std::string, std::string>& p) {
        Encoder e;
        e.begin(Domain::kScanKey, 2);
        e.text(p.first);
        e.text(p.second);
        return copy(e.end());
    };
    RC_ASSERT((encode(a) == encode(b)) == (a == b));
}

TEST(RowIdIdentity, StringBoundariesInsideFieldsAreFramed) {
    const auto pair = [](std::string_view x, std::string_view y) {
        Encoder e;
        e.begin(Domain::kScanKey, 2);
        e.text(x);
        e.text(y);
        return copy(e.end());
    };
    using namespace std::string_view_literals;
    EXPECT_NE(pair("a\0"sv, "b"), pair("a", "\0b"sv));
    EXPECT_NE(pair("1", "23"), pair("12", "3"));
    EXPECT_NE(pair("", "a"), pair("a", ""));
}

TEST(RowIdIdentity, NullCompositeDiffersFromCompositeOfNulls) {
    Encoder e;
    e.begin(Domain::kScanKey, 1);
    e.null(TypeTag::kComposite);
    const Bytes null_row = copy(e.end());
    e.begin(Domain::kScanKey, 1);
    e.begin_composite(1);
    e.null(TypeTag::kInt4);
    e.end_composite();
    EXPECT_NE(null_row, copy(e.end()));
}

TEST(RowIdIdentity, ArrayLowerBoundsAndShapeArePartOfTheIdentity) {
    const auto array = [](std::vector<ArrayDim> dims, int count) {
        Encoder e;
        e.begin(Domain::kScanKey, 1);
        e.begin_array(TypeTag::kInt4, dims);
        for (int i = 0; i < count; ++i) {
            e.int4(1);
        }
        e.end_array();
        return copy(e.end());
    };
    EXPECT_NE(array({{2, 1}}, 2), array({{2, 0}}, 2));
    EXPECT_NE(array({{4, 1}}, 4), array({{2, 1}, {2, 1}}, 4));
    // PostgreSQL has one empty array: zero-length dimensions collapse to 0-D.
    EXPECT_EQ(array({}, 0), array({{0, 1}}, 0));
    EXPECT_EQ(array({}, 0), array({{0, 5}, {3, 1}}, 0));
}

// --- domain separation --------------------------------------------------------

constexpr Domain kDomains[] = {Domain::kScanKey, Domain::kKeylessRow, Domain::kGroupKey,
                               Domain::kJoinKey, Domain::kSetKey,     Domain::kWindowKey};

RC_GTEST_PROP(RowIdIdentity, SameFieldsInDifferentDomainsNeverCollide, ()) {
    const auto value = *rc::gen::arbitrary<std::int64_t>();
    const auto text = *tricky_string();
    const auto encode = [&](Domain d) {
        Encoder e;
        e.begin(d, 2);
        e.int8(value);
        e.text(text);
        return copy(e.end());
    };
    for (Domain a : kDomains) {
        for (Domain b : kDomains) {
            RC_ASSERT((encode(a) == encode(b)) == (a == b));
        }
    }
}

TEST(RowIdIdentity, SyntheticIdentitiesDifferFromEachOtherAndFromEveryDomain) {
    std::vector<Bytes> all;
    Encoder e;
    for (Domain d : kDomains) {
        e.begin(d, 0);
        all.push_back(copy(e.end()));
    }
    e.begin_synthetic(Synthetic::kScalarAggregateSingleton);
    all.push_back(copy(e.end()));
    e.begin_synthetic(Synthetic::kLateralInnerDummy);
    all.push_back(copy(e.end()));
    for (std::size_t i = 0; i < all.size(); ++i) {
        for (std::size_t j = i + 1; j < all.size(); ++j) {
            EXPECT_NE(all[i], all[j]) << i << " vs " << j;
        }
    }
}

// --- equality agreement ----------------------------------------------------------

template <typename Fn>
Bytes one_field(Fn&& fn) {
    Encoder e;
    e.begin(Domain::kScanKey, 1);
    fn(e);
    return copy(e.end());
}

RC_GTEST_PROP(RowIdIdentity, FloatsEqualInPostgresEncodeIdentically, (std::uint64_t payload)) {
    const double nan = std::bit_cast<double>(0x7FF0000000000000ull | (payload | 1));
    const double neg_nan = std::bit_cast<double>(0xFFF0000000000000ull | (payload | 1));
    const Bytes canonical = one_field([](Encoder& e) { e.float8(std::nan("")); });
    RC_ASSERT(one_field([&](Encoder& e) { e.float8(nan); }) == canonical);
    RC_ASSERT(one_field([&](Encoder& e) { e.float8(neg_nan); }) == canonical);
    const float nan4 =
        std::bit_cast<float>(0x7F800000u | (static_cast<std::uint32_t>(payload) | 1));
    RC_ASSERT(one_field([&](Encoder& e) { e.float4(nan4); }) ==
              one_field([](Encoder& e) { e.float4(std::nanf("")); }));
}

TEST(RowIdIdentity, SignedZeroEncodesLikeZero) {
    EXPECT_EQ(one_field([](Encoder& e) { e.float8(-0.0); }),
              one_field([](Encoder& e) { e.float8(0.0); }));
    EXPECT_EQ(one_field([](Encoder& e) { e.float4(-0.0f); }),
              one_field([](Encoder& e) { e.float4(0.0f); }));
}

TEST(RowIdIdentity, NumericScaleDoesNotMatterButValueDoes) {
    const auto n = [](const char* literal) {
        return one_field([&](Encoder& e) { e.numeric(parse_decimal(literal).view()); });
    };
    EXPECT_EQ(n("1.0"), n("1.00"));
    EXPECT_EQ(n("1"), n("1.000000000"));
    EXPECT_EQ(n("0"), n("-0.00"));
    EXPECT_EQ(n("120"), n("1.2e2"));
    EXPECT_NE(n("1"), n("1.0001"));
    EXPECT_NE(n("1"), n("-1"));
    EXPECT_NE(n("10000"), n("1"));
    EXPECT_NE(n("NaN"), n("Infinity"));
}

TEST(RowIdIdentity, CidrHostBitsDoNotMatterButInetHostBitsDo) {
    const std::uint8_t a[] = {10, 1, 2, 3};
    const std::uint8_t b[] = {10, 0, 0, 0};
    EXPECT_EQ(one_field([&](Encoder& e) {
                  e.cidr({IpFamily::kIpv4, 8, a});
              }),
              one_field([&](Encoder& e) {
                  e.cidr({IpFamily::kIpv4, 8, b});
              }));
    EXPECT_NE(one_field([&](Encoder& e) {
                  e.inet({IpFamily::kIpv4, 8, a});
              }),
              one_field([&](Encoder& e) {
                  e.inet({IpFamily::kIpv4, 8, b});
              }));
    EXPECT_NE(one_field([&](Encoder& e) {
                  e.inet({IpFamily::kIpv4, 8, b});
              }),
              one_field([&](Encoder& e) {
                  e.inet({IpFamily::kIpv4, 16, b});
              }));
}

TEST(RowIdIdentity, TimetzEqualsOnlyWithTheSameZone) {
    // '13:00+01' and '12:00+00' are the same instant but not equal in PostgreSQL.
    EXPECT_NE(one_field([](Encoder& e) { e.timetz(46800000000, -3600); }),
              one_field([](Encoder& e) { e.timetz(43200000000, 0); }));
}

TEST(RowIdIdentity, SameValueUnderDifferentTypesHasDifferentTags) {
    EXPECT_NE(one_field([](Encoder& e) { e.int4(1); }), one_field([](Encoder& e) { e.int8(1); }));
    EXPECT_NE(one_field([](Encoder& e) { e.text("a"); }),
              one_field([](Encoder& e) { e.bytea("a"); }));
    EXPECT_NE(one_field([](Encoder& e) { e.timestamp(0); }),
              one_field([](Encoder& e) { e.timestamptz(0); }));
}

// --- jsonb -------------------------------------------------------------------------

struct Json {
    JsonKind kind = JsonKind::kNull;
    bool boolean = false;
    int number = 0;
    std::string string;
    std::vector<Json> items;
    std::vector<std::pair<std::string, Json>> members;  // unique keys, sorted
    bool operator==(const Json&) const = default;
};

rc::Gen<Json> json_gen(int depth) {
    return rc::gen::exec([depth] {
        Json j;
        j.kind = *rc::gen::element(JsonKind::kNull, JsonKind::kBool, JsonKind::kString,
                                   JsonKind::kNumber, JsonKind::kArray, JsonKind::kObject);
        if (depth == 0 && (j.kind == JsonKind::kArray || j.kind == JsonKind::kObject)) {
            j.kind = JsonKind::kNull;
        }
        j.boolean = j.kind == JsonKind::kBool && *rc::gen::arbitrary<bool>();
        j.number = j.kind == JsonKind::kNumber ? *rc::gen::inRange(-2, 3) : 0;
        j.string = j.kind == JsonKind::kString ? *tricky_string() : "";
        const int n = (j.kind == JsonKind::kArray || j.kind == JsonKind::kObject)
                          ? *rc::gen::inRange(0, 3)
                          : 0;
        for (int i = 0; i < n; ++i) {
            if (j.kind == JsonKind::kArray) {
                j.items.push_back(*json_gen(depth - 1));
            } else {
                j.members.emplace_back(*tricky_string(), *json_gen(depth - 1));
            }
        }
        std::sort(j.members.begin(), j.members.end(),
                  [](const auto& a, const auto& b) { return a.first < b.first; });
        j.members.erase(
            std::unique(j.members.begin(), j.members.end(),
                        [](const auto& a, const auto& b) { return a.first == b.first; }),
            j.members.end());
        return j;
    });
}

// Builds the encoder's tree; `variant` permutes members and rescales numbers.
struct JsonArena {
    std::deque<std::vector<JsonNode>> items;
    std::deque<std::vector<JsonMember>> members;
    std::deque<DecimalNumeric> numbers;
};

JsonNode build(const Json& j, JsonArena& arena, std::uint32_t variant) {
    switch (j.kind) {
        case JsonKind::kBool:
            return json_bool(j.boolean);
        case JsonKind::kString:
            return json_string(j.string);
        case JsonKind::kNumber: {
            const char* scale[] = {"", ".0", ".000", "e0"};
            arena.numbers.push_back(parse_decimal(std::to_string(j.number) + scale[variant % 4]));
            return json_number(arena.numbers.back().view());
        }
        case JsonKind::kArray: {
            auto& items = arena.items.emplace_back();
            for (const Json& item : j.items) {
                items.push_back(build(item, arena, variant));
            }
            return json_array(items);
        }
        case JsonKind::kObject: {
            auto& members = arena.members.emplace_back();
            for (const auto& [key, value] : j.members) {
                members.push_back({key, build(value, arena, variant)});
            }
            std::shuffle(members.begin(), members.end(), std::mt19937(variant));
            return json_object(members);
        }
        case JsonKind::kNull:
            break;
    }
    return json_null();
}

Bytes encode_json(const Json& j, std::uint32_t variant) {
    JsonArena arena;
    const JsonNode root = build(j, arena, variant);
    return one_field([&](Encoder& e) { e.jsonb(root); });
}

RC_GTEST_PROP(RowIdIdentity, JsonbKeyOrderAndNumberScaleNeverChangeTheIdentity, ()) {
    const Json j = *json_gen(3);
    const auto variant = *rc::gen::arbitrary<std::uint32_t>();
    RC_ASSERT(encode_json(j, 0) == encode_json(j, variant));
}

RC_GTEST_PROP(RowIdIdentity, JsonbEncodesEquallyExactlyWhenEqual, ()) {
    const Json a = *json_gen(2);
    const Json b = *rc::gen::oneOf(rc::gen::just(a), json_gen(2));
    RC_ASSERT((encode_json(a, 1) == encode_json(b, 2)) == (a == b));
}

TEST(RowIdIdentity, JsonbScalarDiffersFromOneElementArray) {
    const DecimalNumeric value = parse_decimal("1");
    const JsonNode one = json_number(value.view());
    const JsonNode items[] = {one};
    EXPECT_NE(one_field([&](Encoder& e) { e.jsonb(one); }),
              one_field([&](Encoder& e) { e.jsonb(json_array(items)); }));
}

// --- encoder reuse ---------------------------------------------------------------

RC_GTEST_PROP(RowIdIdentity, ReusedEncoderWritesTheSameBytesAsAFreshOne, ()) {
    const std::vector<Row> rows =
        *rc::gen::resize(8, rc::gen::container<std::vector<Row>>(row_gen()));
    Encoder reused;
    for (const Row& r : rows) {
        Encoder fresh;
        RC_ASSERT(encode_row(reused, r) == encode_row(fresh, r));
    }
}

TEST(RowIdIdentity, WarmEncoderReusesItsBufferForEveryRow) {
    Encoder e;
    const std::string wide(1000, 'x');
    e.begin(Domain::kKeylessRow, 1);
    e.text(wide);
    const std::uint8_t* buffer = e.end().data();
    for (int i = 0; i < 1000; ++i) {
        e.begin(Domain::kKeylessRow, 3);
        e.int8(i);
        e.text(std::string_view(wide).substr(0, static_cast<std::size_t>(i)));
        e.float8(i * 0.5);
        EXPECT_EQ(e.end().data(), buffer);
    }
}

}  // namespace
