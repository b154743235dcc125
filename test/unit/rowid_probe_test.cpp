// Bounded probe v1 and static boundedness of row identity V2. Invariant:
// a probe never exceeds 272 bytes, equals the identity up to 256 bytes, and a
// schema called bounded never produces an identity above its computed bound.
#include "core/rowid/bound.hpp"
#include "core/rowid/decimal.hpp"
#include "core/rowid/encoder.hpp"
#include "core/rowid/probe.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace pgt::rowid;
using Bytes = std::vector<std::uint8_t>;

Bytes copy(std::span<const std::uint8_t> s) {
    return {s.begin(), s.end()};
}

Bytes text_identity(const std::string& text) {
    Encoder e;
    e.begin(Domain::kKeylessRow, 1);
    e.text(text);
    return copy(e.end());
}

Bytes probe_of(const Bytes& id) {
    const Probe probe = row_probe_v1(id);
    return copy(probe.bytes());
}

int byte_order(const Bytes& a, const Bytes& b) {
    if (std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end())) {
        return -1;
    }
    return a == b ? 0 : 1;
}

// --- probe -------------------------------------------------------------------

RC_GTEST_PROP(RowIdProbe, ProbeIsTheIdentityUpTo256BytesAndBoundedAbove, ()) {
    const auto length = *rc::gen::inRange<std::size_t>(0, 700);
    const Bytes id = text_identity(std::string(length, *rc::gen::arbitrary<char>()));
    const Probe probe = row_probe_v1(id);
    RC_ASSERT(probe.size() <= kProbeMaxBytes);
    if (id.size() <= kProbePrefixBytes) {
        RC_ASSERT(copy(probe.bytes()) == id);
        RC_ASSERT(probe_is_identity(id.size()));
    } else {
        RC_ASSERT(probe.size() == kProbeMaxBytes);
        RC_ASSERT(std::equal(id.begin(), id.begin() + kProbePrefixBytes, probe.bytes().begin()));
        RC_ASSERT(!probe_is_identity(id.size()));
    }
}

TEST(RowIdProbe, BoundaryBetweenInlineAndDigestIsAt256Bytes) {
    // Identity size = 4 header + 2 field framing + n text + 2 terminator + 1 end.
    const Bytes at_limit = text_identity(std::string(247, 'a'));
    const Bytes over_limit = text_identity(std::string(248, 'a'));
    ASSERT_EQ(at_limit.size(), 256u);
    ASSERT_EQ(over_limit.size(), 257u);
    EXPECT_EQ(probe_of(at_limit), at_limit);
    EXPECT_EQ(row_probe_v1(over_limit).size(), 272u);
}

TEST(RowIdProbe, DigestIsXxh3CanonicalBigEndianHighHalfFirst) {
    const Bytes id = text_identity(std::string(500, 'q'));
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits(id.data(), id.size()));
    const Bytes probe = probe_of(id);
    EXPECT_TRUE(std::equal(std::begin(canonical.digest), std::end(canonical.digest),
                           probe.begin() + kProbePrefixBytes));
}

// Prefix-free identities differing within their first 256 bytes keep their order.
RC_GTEST_PROP(RowIdProbe, ProbeOrderFollowsIdentityOrderWithinThePrefix, ()) {
    const auto text_gen = rc::gen::container<std::string>(*rc::gen::inRange<std::size_t>(0, 600),
                                                          rc::gen::element<char>('\0', 'a', 'b'));
    const Bytes a = text_identity(*text_gen);
    const Bytes b = text_identity(*text_gen);
    const auto mismatch = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
    RC_PRE(mismatch.first - a.begin() < static_cast<std::ptrdiff_t>(kProbePrefixBytes));
    RC_ASSERT(byte_order(probe_of(a), probe_of(b)) == byte_order(a, b));
}

TEST(RowIdProbe, ForcedDigestCollisionLeavesTheFullIdentitiesDistinct) {
    const std::string prefix(300, 'p');
    const Bytes a = text_identity(prefix + "a");
    const Bytes b = text_identity(prefix + "b");
    const Digest128 same{0x0123456789abcdefull, 0xfedcba9876543210ull};
    const Probe pa = row_probe_v1_with_digest(a, same);
    const Probe pb = row_probe_v1_with_digest(b, same);
    // The index would return both rows as candidates; only the full id decides.
    EXPECT_EQ(copy(pa.bytes()), copy(pb.bytes()));
    EXPECT_NE(a, b);
    // Without forcing, the real digests separate them.
    EXPECT_NE(probe_of(a), probe_of(b));
}

TEST(RowIdProbe, LongCommonPrefixIdentitiesGetDistinctProbes) {
    const std::string prefix(400, 'k');
    std::set<Bytes> probes;
    for (int i = 0; i < 1000; ++i) {
        probes.insert(probe_of(text_identity(prefix + std::to_string(i))));
    }
    EXPECT_EQ(probes.size(), 1000u);
}

// --- static boundedness ---------------------------------------------------------

TypeDesc base(std::uint32_t oid, std::int32_t typmod = -1) {
    TypeDesc t;
    t.oid = oid;
    t.typmod = typmod;
    return t;
}

constexpr std::uint32_t kInt4 = 23, kInt8 = 20, kText = 25, kVarchar = 1043, kBpchar = 1042,
                        kNumeric = 1700, kBit = 1560, kUuid = 2950, kJsonb = 3802, kPoint = 600;

std::int32_t numeric_typmod(int precision, int scale) {
    return ((precision << 16) | (scale & 0x7FF)) + 4;
}

TEST(RowIdBound, FixedWidthKeysAreBoundedAndProbeIsTheIdentity) {
    const TypeDesc fields[] = {base(kInt4), base(kInt8), base(kUuid)};
    const IdentityBound b = identity_bound(Domain::kScanKey, fields);
    ASSERT_TRUE(b.bounded);
    EXPECT_EQ(b.max_bytes, 5u + (2 + 4) + (2 + 8) + (2 + 16));
    EXPECT_TRUE(probe_always_identity(b));
    EXPECT_TRUE(unique_probe_index_allowed(Domain::kScanKey, b));
}

TEST(RowIdBound, UnboundedTypesMakeTheWholeSchemaUnbounded) {
    for (const TypeDesc& t : {base(kText), base(kVarchar), base(kNumeric), base(kJsonb),
                              base(kBpchar), base(kBit), base(kPoint)}) {
        const TypeDesc fields[] = {base(kInt4), t};
        const IdentityBound b = identity_bound(Domain::kScanKey, fields);
        EXPECT_FALSE(b.bounded) << t.oid;
        EXPECT_FALSE(unique_probe_index_allowed(Domain::kScanKey, b)) << t.oid;
    }
    TypeDesc element = base(kInt4);
    TypeDesc array;
    array.kind = TypeKind::kArray;
    array.inner = &element;
    TypeDesc range = array;
    range.kind = TypeKind::kRange;
    EXPECT_FALSE(identity_bound(Domain::kScanKey, std::span(&array, 1)).bounded);
    EXPECT_FALSE(identity_bound(Domain::kScanKey, std::span(&range, 1)).bounded);
}

TEST(RowIdBound, TypmodsBoundVarcharBpcharBitAndNumeric) {
    EXPECT_EQ(max_payload_bytes(base(kVarchar, 10 + 4)), 2u * 10 * 4 + 2);
    EXPECT_EQ(max_payload_bytes(base(kBpchar, 3 + 4), 1), 2u * 3 + 2);
    EXPECT_EQ(max_payload_bytes(base(kBit, 16)), 4u + 2 * 2 + 2);
    EXPECT_EQ(max_payload_bytes(base(kNumeric, numeric_typmod(10, 2))), 1u + 2 + 2 * 4 + 2);
    EXPECT_FALSE(max_payload_bytes(base(kVarchar)).has_value());
}

TEST(RowIdBound, WideBoundedSchemaIsNotInline) {
    const TypeDesc fields[] = {base(kVarchar, 100 + 4)};
    const IdentityBound b = identity_bound(Domain::kScanKey, fields);
    EXPECT_TRUE(b.bounded);
    EXPECT_FALSE(probe_always_identity(b));
    EXPECT_FALSE(unique_probe_index_allowed(Domain::kScanKey, b));
}

TEST(RowIdBound, KeylessRowsNeverGetAUniqueProbeIndex) {
    const TypeDesc fields[] = {base(kInt4)};
    const IdentityBound b = identity_bound(Domain::kKeylessRow, fields);
    EXPECT_TRUE(probe_always_identity(b));
    EXPECT_FALSE(unique_probe_index_allowed(Domain::kKeylessRow, b));
}

TEST(RowIdBound, CompositesDomainsEnumsAndSyntheticHeadersAreCounted) {
    TypeDesc parts[] = {base(kInt4), base(kVarchar, 5 + 4)};
    TypeDesc composite;
    composite.kind = TypeKind::kComposite;
    composite.fields = parts;
    composite.field_count = 2;
    EXPECT_EQ(max_payload_bytes(composite), 2u + (2 + 4) + (2 + 42) + 1);
    TypeDesc domain;
    domain.kind = TypeKind::kDomain;
    domain.inner = &parts[1];
    EXPECT_EQ(max_payload_bytes(domain), 42u);
    TypeDesc mood;
    mood.kind = TypeKind::kEnum;
    EXPECT_EQ(max_payload_bytes(mood), 128u);
    EXPECT_EQ(identity_bound(Domain::kSynthetic, {}).max_bytes, 6u);
    parts[1] = base(kText);
    EXPECT_FALSE(max_payload_bytes(composite).has_value());
}

// The bound really is an upper bound: worst-case values never exceed it.
RC_GTEST_PROP(RowIdBound, EncodedVarcharAndBitNeverExceedTheirBound, ()) {
    const auto chars = *rc::gen::inRange(0, 40);
    const auto bits = *rc::gen::inRange(0, 80);
    const std::string text = *rc::gen::container<std::string>(
        static_cast<std::size_t>(chars) * kUtf8MaxCharBytes, rc::gen::element<char>('\0', 'x'));
    const std::vector<std::uint8_t> packed(static_cast<std::size_t>(bits + 7) / 8, 0);
    const TypeDesc fields[] = {base(kVarchar, chars + 4), base(kBit, bits)};
    Encoder e;
    e.begin(Domain::kScanKey, 2);
    e.varchar(text);
    e.bit(static_cast<std::uint32_t>(bits), packed);
    RC_ASSERT(e.end().size() <= identity_bound(Domain::kScanKey, fields).max_bytes);
}

RC_GTEST_PROP(RowIdBound, EncodedNumericNeverExceedsItsTypmodBound, ()) {
    const int precision = *rc::gen::inRange(1, 40);
    const int scale = *rc::gen::inRange(0, precision + 1);
    const auto digit = rc::gen::element<char>('0', '1', '9');
    const std::string whole = *rc::gen::container<std::string>(precision - scale, digit);
    const std::string frac = *rc::gen::container<std::string>(scale, digit);
    const DecimalNumeric value = parse_decimal("-" + (whole.empty() ? "0" : whole) + "." + frac);
    const TypeDesc fields[] = {base(kNumeric, numeric_typmod(precision, scale))};
    Encoder e;
    e.begin(Domain::kScanKey, 1);
    e.numeric(value.view());
    RC_ASSERT(e.end().size() <= identity_bound(Domain::kScanKey, fields).max_bytes);
}

}  // namespace
