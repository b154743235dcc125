// Golden vectors of row identity V2: every type, domain, NULL state and
// boundary, byte for byte. Invariant: kVectors and the tables of
// docs/row-identity-v2.md hold the same ids and the same bytes (a test parses
// the document); an existing vector is never edited — V2 bytes are frozen.
#include "core/rowid/decimal.hpp"
#include "core/rowid/encoder.hpp"
#include "core/rowid/hex.hpp"
#include "core/rowid/probe.hpp"

#include <gtest/gtest.h>

#include "common/golden_doc.hpp"

#include <cstdint>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace pgt::rowid;
using namespace std::string_view_literals;

using I16 = std::numeric_limits<std::int16_t>;
using I32 = std::numeric_limits<std::int32_t>;
using I64 = std::numeric_limits<std::int64_t>;
using F4 = std::numeric_limits<float>;
using F8 = std::numeric_limits<double>;

// kField: one field of a SCAN_KEY identity; hex is the FIELD bytes only
//         (the identity is 02 01 0001 FIELD 00).
// kIdentity: the lambda calls begin*(); hex is the complete identity.
// kProbe: the lambda builds an identity longer than 256 bytes; hex is the
//         16-byte digest after its 256-byte prefix.
// kDigest: hex is xxh3_128 of the empty string in probe byte order.
enum class Kind { kField, kIdentity, kProbe, kDigest };

struct Vector {
    Kind kind;
    const char* id;
    const char* input;
    void (*encode)(Encoder&);
    const char* hex;
};

void num(Encoder& e, std::string_view literal) {
    e.numeric(parse_decimal(literal).view());
}

float f4(std::uint32_t bits) {
    return std::bit_cast<float>(bits);
}
double f8(std::uint64_t bits) {
    return std::bit_cast<double>(bits);
}

constexpr std::uint8_t kV4Host[] = {192, 168, 0, 1};
constexpr std::uint8_t kV4Net[] = {10, 1, 2, 3};
constexpr std::uint8_t kV4Odd[] = {192, 168, 255, 255};
constexpr std::uint8_t kV6Loopback[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
constexpr std::uint8_t kUuidSample[] = {0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3,
                                        0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00};
constexpr std::uint8_t kUuidNil[16] = {};
constexpr std::uint8_t kUuidMax[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
constexpr std::uint8_t kMac[] = {0x08, 0x00, 0x2b, 0x01, 0x02, 0x03};
constexpr std::uint8_t kMac8[] = {0x08, 0x00, 0x2b, 0x01, 0x02, 0x03, 0x04, 0x05};

void int4_array(Encoder& e, std::initializer_list<ArrayDim> dims,
                std::initializer_list<std::int32_t> values) {
    e.begin_array(TypeTag::kInt4, std::span<const ArrayDim>(dims.begin(), dims.size()));
    for (std::int32_t v : values) {
        e.int4(v);
    }
    e.end_array();
}

void int4_range(Encoder& e, RangeFlags flags, std::int32_t lo, std::int32_t hi) {
    e.begin_range(TypeTag::kInt4, flags);
    if (!flags.empty && !flags.lower_infinite) {
        e.int4(lo);
    }
    if (!flags.empty && !flags.upper_infinite) {
        e.int4(hi);
    }
    e.end_range();
}

void json_object_in_order(Encoder& e, bool b_first) {
    static const DecimalNumeric one = parse_decimal("1");
    static const JsonNode items[2] = {json_bool(true), json_null()};
    const JsonMember b{"b", json_number(one.view())};
    const JsonMember a{"a", json_array(items)};
    const JsonMember members[2] = {b_first ? b : a, b_first ? a : b};
    e.jsonb(json_object(members));
}

void child_identity(Encoder& e, std::string& out, void (*fields)(Encoder&)) {
    e.begin(Domain::kScanKey, 1);
    fields(e);
    const auto id = e.end();
    out.assign(reinterpret_cast<const char*>(id.data()), id.size());
}

void text_identity(Encoder& e, std::size_t n) {
    static std::string text;
    text.assign(n, 'a');
    e.begin(Domain::kScanKey, 1);
    e.text(text);
}

// clang-format off
const std::vector<Vector> kVectors = {
    // --- bool -----------------------------------------------------------
    {Kind::kField, "bool.null", "NULL::bool", [](Encoder& e) { e.null(TypeTag::kBool); }, "01 01"},
    {Kind::kField, "bool.false", "false", [](Encoder& e) { e.boolean(false); }, "01 02 00"},
    {Kind::kField, "bool.true", "true", [](Encoder& e) { e.boolean(true); }, "01 02 01"},
    // --- integers ---------------------------------------------------------
    {Kind::kField, "int2.min", "-32768::int2", [](Encoder& e) { e.int2(I16::min()); }, "02 02 00 00"},
    {Kind::kField, "int2.minus_one", "-1::int2", [](Encoder& e) { e.int2(-1); }, "02 02 7f ff"},
    {Kind::kField, "int2.zero", "0::int2", [](Encoder& e) { e.int2(0); }, "02 02 80 00"},
    {Kind::kField, "int2.one", "1::int2", [](Encoder& e) { e.int2(1); }, "02 02 80 01"},
    {Kind::kField, "int2.max", "32767::int2", [](Encoder& e) { e.int2(I16::max()); }, "02 02 ff ff"},
    {Kind::kField, "int4.null", "NULL::int4", [](Encoder& e) { e.null(TypeTag::kInt4); }, "03 01"},
    {Kind::kField, "int4.min", "-2147483648::int4", [](Encoder& e) { e.int4(I32::min()); }, "03 02 00 00 00 00"},
    {Kind::kField, "int4.minus_one", "-1::int4", [](Encoder& e) { e.int4(-1); }, "03 02 7f ff ff ff"},
    {Kind::kField, "int4.zero", "0::int4", [](Encoder& e) { e.int4(0); }, "03 02 80 00 00 00"},
    {Kind::kField, "int4.one", "1::int4", [](Encoder& e) { e.int4(1); }, "03 02 80 00 00 01"},
    {Kind::kField, "int4.max", "2147483647::int4", [](Encoder& e) { e.int4(I32::max()); }, "03 02 ff ff ff ff"},
    {Kind::kField, "int8.min", "-9223372036854775808::int8", [](Encoder& e) { e.int8(I64::min()); }, "04 02 00 00 00 00 00 00 00 00"},
    {Kind::kField, "int8.minus_one", "-1::int8", [](Encoder& e) { e.int8(-1); }, "04 02 7f ff ff ff ff ff ff ff"},
    {Kind::kField, "int8.zero", "0::int8", [](Encoder& e) { e.int8(0); }, "04 02 80 00 00 00 00 00 00 00"},
    {Kind::kField, "int8.one", "1::int8", [](Encoder& e) { e.int8(1); }, "04 02 80 00 00 00 00 00 00 01"},
    {Kind::kField, "int8.max", "9223372036854775807::int8", [](Encoder& e) { e.int8(I64::max()); }, "04 02 ff ff ff ff ff ff ff ff"},
    {Kind::kField, "oid.zero", "0::oid", [](Encoder& e) { e.oid(0); }, "05 02 00 00 00 00"},
    {Kind::kField, "oid.one", "1::oid", [](Encoder& e) { e.oid(1); }, "05 02 00 00 00 01"},
    {Kind::kField, "oid.max", "4294967295::oid", [](Encoder& e) { e.oid(0xFFFFFFFFu); }, "05 02 ff ff ff ff"},
    // --- float4 ----------------------------------------------------------
    {Kind::kField, "float4.neg_inf", "'-Infinity'::float4", [](Encoder& e) { e.float4(-F4::infinity()); }, "06 02 00 7f ff ff"},
    {Kind::kField, "float4.minus_1_5", "-1.5::float4", [](Encoder& e) { e.float4(-1.5f); }, "06 02 40 3f ff ff"},
    {Kind::kField, "float4.neg_zero", "'-0'::float4 (= 0)", [](Encoder& e) { e.float4(-0.0f); }, "06 02 80 00 00 00"},
    {Kind::kField, "float4.zero", "0::float4", [](Encoder& e) { e.float4(0.0f); }, "06 02 80 00 00 00"},
    {Kind::kField, "float4.denorm_min", "1.4e-45::float4 (bits 00000001)", [](Encoder& e) { e.float4(F4::denorm_min()); }, "06 02 80 00 00 01"},
    {Kind::kField, "float4.one_5", "1.5::float4", [](Encoder& e) { e.float4(1.5f); }, "06 02 bf c0 00 00"},
    {Kind::kField, "float4.pos_inf", "'Infinity'::float4", [](Encoder& e) { e.float4(F4::infinity()); }, "06 02 ff 80 00 00"},
    {Kind::kField, "float4.nan", "'NaN'::float4 (bits 7fc00000)", [](Encoder& e) { e.float4(f4(0x7FC00000u)); }, "06 02 ff c0 00 00"},
    {Kind::kField, "float4.nan_payload", "NaN with bits 7fc00001 (= NaN)", [](Encoder& e) { e.float4(f4(0x7FC00001u)); }, "06 02 ff c0 00 00"},
    {Kind::kField, "float4.nan_negative", "NaN with bits ffc00000 (= NaN)", [](Encoder& e) { e.float4(f4(0xFFC00000u)); }, "06 02 ff c0 00 00"},
    // --- float8 ----------------------------------------------------------
    {Kind::kField, "float8.neg_inf", "'-Infinity'::float8", [](Encoder& e) { e.float8(-F8::infinity()); }, "07 02 00 0f ff ff ff ff ff ff"},
    {Kind::kField, "float8.minus_one", "-1::float8", [](Encoder& e) { e.float8(-1.0); }, "07 02 40 0f ff ff ff ff ff ff"},
    {Kind::kField, "float8.neg_zero", "'-0'::float8 (= 0)", [](Encoder& e) { e.float8(-0.0); }, "07 02 80 00 00 00 00 00 00 00"},
    {Kind::kField, "float8.zero", "0::float8", [](Encoder& e) { e.float8(0.0); }, "07 02 80 00 00 00 00 00 00 00"},
    {Kind::kField, "float8.one", "1::float8", [](Encoder& e) { e.float8(1.0); }, "07 02 bf f0 00 00 00 00 00 00"},
    {Kind::kField, "float8.max", "1.7976931348623157e308::float8", [](Encoder& e) { e.float8(F8::max()); }, "07 02 ff ef ff ff ff ff ff ff"},
    {Kind::kField, "float8.pos_inf", "'Infinity'::float8", [](Encoder& e) { e.float8(F8::infinity()); }, "07 02 ff f0 00 00 00 00 00 00"},
    {Kind::kField, "float8.nan", "'NaN'::float8 (bits 7ff8000000000000)", [](Encoder& e) { e.float8(f8(0x7FF8000000000000ull)); }, "07 02 ff f8 00 00 00 00 00 00"},
    {Kind::kField, "float8.nan_payload", "NaN with bits 7ff0000000000001 (= NaN)", [](Encoder& e) { e.float8(f8(0x7FF0000000000001ull)); }, "07 02 ff f8 00 00 00 00 00 00"},
    {Kind::kField, "float8.nan_negative", "NaN with bits fff8000000000000 (= NaN)", [](Encoder& e) { e.float8(f8(0xFFF8000000000000ull)); }, "07 02 ff f8 00 00 00 00 00 00"},
    // --- numeric ---------------------------------------------------------
    {Kind::kField, "numeric.neg_inf", "'-Infinity'::numeric", [](Encoder& e) { num(e, "-Infinity"); }, "08 02 01"},
    {Kind::kField, "numeric.minus_one", "-1::numeric", [](Encoder& e) { num(e, "-1"); }, "08 02 02 7f ff ff fd ff ff"},
    {Kind::kField, "numeric.minus_small", "-0.0001::numeric", [](Encoder& e) { num(e, "-0.0001"); }, "08 02 02 80 00 ff fd ff ff"},
    {Kind::kField, "numeric.zero", "0::numeric", [](Encoder& e) { num(e, "0"); }, "08 02 03"},
    {Kind::kField, "numeric.zero_scaled", "0.000::numeric (= 0)", [](Encoder& e) { num(e, "0.000"); }, "08 02 03"},
    {Kind::kField, "numeric.small", "0.0001::numeric", [](Encoder& e) { num(e, "0.0001"); }, "08 02 04 7f ff 00 02 00 00"},
    {Kind::kField, "numeric.half", "0.5::numeric", [](Encoder& e) { num(e, "0.5"); }, "08 02 04 7f ff 13 89 00 00"},
    {Kind::kField, "numeric.one", "1::numeric", [](Encoder& e) { num(e, "1"); }, "08 02 04 80 00 00 02 00 00"},
    {Kind::kField, "numeric.one_0", "1.0::numeric (= 1)", [](Encoder& e) { num(e, "1.0"); }, "08 02 04 80 00 00 02 00 00"},
    {Kind::kField, "numeric.one_00", "1.00::numeric (= 1)", [](Encoder& e) { num(e, "1.00"); }, "08 02 04 80 00 00 02 00 00"},
    {Kind::kField, "numeric.one_unnormalized", "weight 1, digits {0,1,0} (= 1)",
     [](Encoder& e) { const std::int16_t d[] = {0, 1, 0}; e.numeric({NumericSign::kPositive, 1, d}); }, "08 02 04 80 00 00 02 00 00"},
    {Kind::kField, "numeric.ten_thousand", "10000::numeric", [](Encoder& e) { num(e, "10000"); }, "08 02 04 80 01 00 02 00 00"},
    {Kind::kField, "numeric.mixed", "12345.6789::numeric", [](Encoder& e) { num(e, "12345.6789"); }, "08 02 04 80 01 00 02 09 2a 1a 86 00 00"},
    {Kind::kField, "numeric.pos_inf", "'Infinity'::numeric", [](Encoder& e) { num(e, "Infinity"); }, "08 02 05"},
    {Kind::kField, "numeric.nan", "'NaN'::numeric", [](Encoder& e) { num(e, "NaN"); }, "08 02 06"},
    // --- text, varchar, bpchar, bytea, enum -------------------------------
    {Kind::kField, "text.empty", "''::text", [](Encoder& e) { e.text(""); }, "09 02 00 00"},
    {Kind::kField, "text.a", "'a'::text", [](Encoder& e) { e.text("a"); }, "09 02 61 00 00"},
    {Kind::kField, "text.nul", "bytes 00 (framing only: PostgreSQL text never holds NUL)", [](Encoder& e) { e.text("\0"sv); }, "09 02 00 ff 00 00"},
    {Kind::kField, "text.nul_inside", "bytes 61 00 62", [](Encoder& e) { e.text("a\0b"sv); }, "09 02 61 00 ff 62 00 00"},
    {Kind::kField, "text.byte_ff", "bytes ff", [](Encoder& e) { e.text("\xff"); }, "09 02 ff 00 00"},
    {Kind::kField, "text.utf8", "'é' (UTF-8 c3 a9)", [](Encoder& e) { e.text("\xc3\xa9"); }, "09 02 c3 a9 00 00"},
    {Kind::kField, "varchar.abc", "'abc'::varchar", [](Encoder& e) { e.varchar("abc"); }, "0a 02 61 62 63 00 00"},
    {Kind::kField, "bpchar.padded", "'ab   '::char(5) (= 'ab')", [](Encoder& e) { e.bpchar("ab   "); }, "0b 02 61 62 00 00"},
    {Kind::kField, "bpchar.unpadded", "'ab'::bpchar", [](Encoder& e) { e.bpchar("ab"); }, "0b 02 61 62 00 00"},
    {Kind::kField, "bpchar.blank", "'   '::char(3) (= '')", [](Encoder& e) { e.bpchar("   "); }, "0b 02 00 00"},
    {Kind::kField, "bytea.empty", "''::bytea", [](Encoder& e) { e.bytea(""); }, "0c 02 00 00"},
    {Kind::kField, "bytea.zero_ff", "'\\x00ff'::bytea", [](Encoder& e) { e.bytea("\0\xff"sv); }, "0c 02 00 ff ff 00 00"},
    {Kind::kField, "bytea.ab", "'\\x6162'::bytea", [](Encoder& e) { e.bytea("ab"); }, "0c 02 61 62 00 00"},
    {Kind::kField, "enum.sad", "'sad'::mood (label bytes, never the OID)", [](Encoder& e) { e.enum_label("sad"); }, "1a 02 73 61 64 00 00"},
    {Kind::kField, "name.ab", "'ab'::name (bytes up to the first NUL)", [](Encoder& e) { e.name("ab\0\0\0"sv); }, "1c 02 61 62 00 00"},
    {Kind::kField, "char.x", "'x'::\"char\"", [](Encoder& e) { e.pg_char('x'); }, "1d 02 78 00 00"},
    {Kind::kField, "char.zero", "''::\"char\" (the byte 0)", [](Encoder& e) { e.pg_char(0); }, "1d 02 00 ff 00 00"},
    {Kind::kField, "image.bytes", "a type with bytea's storage holding the bytes 01 00 00 00", [](Encoder& e) { e.image("\x01\0\0\0"sv); }, "1e 02 01 00 ff 00 ff 00 ff 00 00"},
    // --- uuid, network, bit strings --------------------------------------
    {Kind::kField, "uuid.nil", "'00000000-0000-0000-0000-000000000000'", [](Encoder& e) { e.uuid(kUuidNil); }, "0d 02 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"},
    {Kind::kField, "uuid.sample", "'123e4567-e89b-12d3-a456-426614174000'", [](Encoder& e) { e.uuid(kUuidSample); }, "0d 02 12 3e 45 67 e8 9b 12 d3 a4 56 42 66 14 17 40 00"},
    {Kind::kField, "uuid.max", "'ffffffff-ffff-ffff-ffff-ffffffffffff'", [](Encoder& e) { e.uuid(kUuidMax); }, "0d 02 ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff"},
    {Kind::kField, "inet.v4_host", "'192.168.0.1/32'::inet", [](Encoder& e) { e.inet({IpFamily::kIpv4, 32, kV4Host}); }, "14 02 04 20 c0 a8 00 01"},
    {Kind::kField, "inet.v4_host_bits_kept", "'10.1.2.3/8'::inet", [](Encoder& e) { e.inet({IpFamily::kIpv4, 8, kV4Net}); }, "14 02 04 08 0a 01 02 03"},
    {Kind::kField, "inet.v6_loopback", "'::1/128'::inet", [](Encoder& e) { e.inet({IpFamily::kIpv6, 128, kV6Loopback}); }, "14 02 06 80 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 01"},
    {Kind::kField, "cidr.v4_host_bits_zeroed", "10.1.2.3 with prefix 8 as cidr (= '10.0.0.0/8')", [](Encoder& e) { e.cidr({IpFamily::kIpv4, 8, kV4Net}); }, "15 02 04 08 0a 00 00 00"},
    {Kind::kField, "cidr.v4_partial_byte", "192.168.255.255 with prefix 20 as cidr", [](Encoder& e) { e.cidr({IpFamily::kIpv4, 20, kV4Odd}); }, "15 02 04 14 c0 a8 f0 00"},
    {Kind::kField, "macaddr.sample", "'08:00:2b:01:02:03'::macaddr", [](Encoder& e) { e.macaddr(kMac); }, "16 02 08 00 2b 01 02 03"},
    {Kind::kField, "macaddr8.sample", "'08:00:2b:01:02:03:04:05'::macaddr8", [](Encoder& e) { e.macaddr8(kMac8); }, "17 02 08 00 2b 01 02 03 04 05"},
    {Kind::kField, "bit.empty", "B'' (zero bits)", [](Encoder& e) { e.bit(0, {}); }, "18 02 00 00 00 00 00 00"},
    {Kind::kField, "bit.one", "B'1'", [](Encoder& e) { const std::uint8_t b[] = {0x80}; e.bit(1, b); }, "18 02 00 00 00 01 80 00 00"},
    {Kind::kField, "bit.101", "B'101'", [](Encoder& e) { const std::uint8_t b[] = {0xa0}; e.bit(3, b); }, "18 02 00 00 00 03 a0 00 00"},
    {Kind::kField, "bit.101_pad_bits_ignored", "B'101' stored with pad bits 00111", [](Encoder& e) { const std::uint8_t b[] = {0xa7}; e.bit(3, b); }, "18 02 00 00 00 03 a0 00 00"},
    {Kind::kField, "bit.zero_byte", "B'00000000' (packed byte 00 is escaped)", [](Encoder& e) { const std::uint8_t b[] = {0x00}; e.bit(8, b); }, "18 02 00 00 00 08 00 ff 00 00"},
    {Kind::kField, "varbit.one", "B'1'::varbit", [](Encoder& e) { const std::uint8_t b[] = {0x80}; e.varbit(1, b); }, "19 02 00 00 00 01 80 00 00"},
    // --- date and time ---------------------------------------------------
    {Kind::kField, "date.neg_inf", "'-infinity'::date", [](Encoder& e) { e.date(I32::min()); }, "0e 02 00 00 00 00"},
    {Kind::kField, "date.1999_12_31", "'1999-12-31'::date (day -1)", [](Encoder& e) { e.date(-1); }, "0e 02 7f ff ff ff"},
    {Kind::kField, "date.2000_01_01", "'2000-01-01'::date (day 0)", [](Encoder& e) { e.date(0); }, "0e 02 80 00 00 00"},
    {Kind::kField, "date.2024_02_29", "'2024-02-29'::date (day 8825)", [](Encoder& e) { e.date(8825); }, "0e 02 80 00 22 79"},
    {Kind::kField, "date.pos_inf", "'infinity'::date", [](Encoder& e) { e.date(I32::max()); }, "0e 02 ff ff ff ff"},
    {Kind::kField, "time.midnight", "'00:00'::time", [](Encoder& e) { e.time(0); }, "0f 02 00 00 00 00 00 00 00 00"},
    {Kind::kField, "time.noon", "'12:00'::time", [](Encoder& e) { e.time(43200000000); }, "0f 02 00 00 00 0a 0e eb b0 00"},
    {Kind::kField, "time.end_of_day", "'24:00'::time", [](Encoder& e) { e.time(86400000000); }, "0f 02 00 00 00 14 1d d7 60 00"},
    {Kind::kField, "timestamp.neg_inf", "'-infinity'::timestamp", [](Encoder& e) { e.timestamp(I64::min()); }, "10 02 00 00 00 00 00 00 00 00"},
    {Kind::kField, "timestamp.before_2000", "'1999-12-31 23:59:59.999999'::timestamp", [](Encoder& e) { e.timestamp(-1); }, "10 02 7f ff ff ff ff ff ff ff"},
    {Kind::kField, "timestamp.2000", "'2000-01-01 00:00'::timestamp", [](Encoder& e) { e.timestamp(0); }, "10 02 80 00 00 00 00 00 00 00"},
    {Kind::kField, "timestamp.2024", "'2024-01-01 00:00'::timestamp", [](Encoder& e) { e.timestamp(757382400000000); }, "10 02 80 02 b0 d5 d4 e9 40 00"},
    {Kind::kField, "timestamp.pos_inf", "'infinity'::timestamp", [](Encoder& e) { e.timestamp(I64::max()); }, "10 02 ff ff ff ff ff ff ff ff"},
    {Kind::kField, "timestamptz.2024", "'2024-01-01 00:00+00'::timestamptz (any TimeZone)", [](Encoder& e) { e.timestamptz(757382400000000); }, "11 02 80 02 b0 d5 d4 e9 40 00"},
    {Kind::kField, "timetz.noon_utc", "'12:00+00'::timetz", [](Encoder& e) { e.timetz(43200000000, 0); }, "12 02 80 00 00 0a 0e eb b0 00 80 00 00 00"},
    {Kind::kField, "timetz.13_plus_01", "'13:00+01'::timetz (same instant, zone -3600)", [](Encoder& e) { e.timetz(46800000000, -3600); }, "12 02 80 00 00 0a 0e eb b0 00 7f ff f1 f0"},
    {Kind::kField, "interval.zero", "'0'::interval", [](Encoder& e) { e.interval({0, 0, 0}); }, "13 02 80 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"},
    {Kind::kField, "interval.one_month", "'1 mon'::interval", [](Encoder& e) { e.interval({0, 0, 1}); }, "13 02 80 00 00 00 00 00 00 00 00 00 02 5b 7f 3d 40 00"},
    {Kind::kField, "interval.thirty_days", "'30 days'::interval (= '1 mon')", [](Encoder& e) { e.interval({0, 30, 0}); }, "13 02 80 00 00 00 00 00 00 00 00 00 02 5b 7f 3d 40 00"},
    {Kind::kField, "interval.one_day", "'1 day'::interval", [](Encoder& e) { e.interval({0, 1, 0}); }, "13 02 80 00 00 00 00 00 00 00 00 00 00 14 1d d7 60 00"},
    {Kind::kField, "interval.24_hours", "'24 hours'::interval (= '1 day')", [](Encoder& e) { e.interval({86400000000, 0, 0}); }, "13 02 80 00 00 00 00 00 00 00 00 00 00 14 1d d7 60 00"},
    {Kind::kField, "interval.minus_1us", "'-1 microsecond'::interval", [](Encoder& e) { e.interval({-1, 0, 0}); }, "13 02 7f ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff"},
    {Kind::kField, "interval.max_fields", "time, day, month all at their maximum (beyond int64)", [](Encoder& e) { e.interval({I64::max(), I32::max(), I32::max()}); }, "13 02 80 00 00 00 00 00 01 38 4e 8a 4d 90 62 eb 5f ff"},
    {Kind::kField, "interval.min_fields", "time, day, month all at their minimum", [](Encoder& e) { e.interval({I64::min(), I32::min(), I32::min()}); }, "13 02 7f ff ff ff ff ff fe c7 b1 75 b0 00 00 00 00 00"},
    // --- jsonb -----------------------------------------------------------
    {Kind::kField, "jsonb.null", "'null'::jsonb", [](Encoder& e) { e.jsonb(json_null()); }, "1b 02 01"},
    {Kind::kField, "jsonb.false", "'false'::jsonb", [](Encoder& e) { e.jsonb(json_bool(false)); }, "1b 02 04"},
    {Kind::kField, "jsonb.true", "'true'::jsonb", [](Encoder& e) { e.jsonb(json_bool(true)); }, "1b 02 05"},
    {Kind::kField, "jsonb.string", "'\"a\"'::jsonb", [](Encoder& e) { e.jsonb(json_string("a")); }, "1b 02 02 61 00 00"},
    {Kind::kField, "jsonb.number", "'1'::jsonb", [](Encoder& e) { e.jsonb(json_number(parse_decimal("1").view())); }, "1b 02 03 04 80 00 00 02 00 00"},
    {Kind::kField, "jsonb.number_scaled", "'1.0'::jsonb (= '1')", [](Encoder& e) { e.jsonb(json_number(parse_decimal("1.0").view())); }, "1b 02 03 04 80 00 00 02 00 00"},
    {Kind::kField, "jsonb.empty_array", "'[]'::jsonb", [](Encoder& e) { e.jsonb(json_array({})); }, "1b 02 06 00"},
    {Kind::kField, "jsonb.empty_object", "'{}'::jsonb", [](Encoder& e) { e.jsonb(json_object({})); }, "1b 02 07 00"},
    {Kind::kField, "jsonb.object_b_first", "'{\"b\":1,\"a\":[true,null]}'::jsonb", [](Encoder& e) { json_object_in_order(e, true); }, "1b 02 07 01 61 00 00 06 05 01 00 01 62 00 00 03 04 80 00 00 02 00 00 00"},
    {Kind::kField, "jsonb.object_a_first", "'{\"a\":[true,null],\"b\":1}'::jsonb (same)", [](Encoder& e) { json_object_in_order(e, false); }, "1b 02 07 01 61 00 00 06 05 01 00 01 62 00 00 03 04 80 00 00 02 00 00 00"},
    // --- arrays ----------------------------------------------------------
    {Kind::kField, "array.null", "NULL::int4[]", [](Encoder& e) { e.null(TypeTag::kArray); }, "40 01"},
    {Kind::kField, "array.empty", "'{}'::int4[] (0 dimensions)", [](Encoder& e) { int4_array(e, {}, {}); }, "40 02 03 00"},
    {Kind::kField, "array.int4_1_2", "'{1,2}'::int4[]", [](Encoder& e) { int4_array(e, {{2, 1}}, {1, 2}); }, "40 02 03 01 00 00 00 02 80 00 00 01 02 80 00 00 01 02 80 00 00 02"},
    {Kind::kField, "array.lower_bound_0", "'[0:1]={1,2}'::int4[]", [](Encoder& e) { int4_array(e, {{2, 0}}, {1, 2}); }, "40 02 03 01 00 00 00 02 80 00 00 00 02 80 00 00 01 02 80 00 00 02"},
    {Kind::kField, "array.int4_1_null", "'{1,NULL}'::int4[]",
     [](Encoder& e) { const ArrayDim d[] = {{2, 1}}; e.begin_array(TypeTag::kInt4, d); e.int4(1); e.null(TypeTag::kInt4); e.end_array(); },
     "40 02 03 01 00 00 00 02 80 00 00 01 02 80 00 00 01 01"},
    {Kind::kField, "array.two_dims", "'{{1,2},{3,4}}'::int4[]", [](Encoder& e) { int4_array(e, {{2, 1}, {2, 1}}, {1, 2, 3, 4}); },
     "40 02 03 02 00 00 00 02 80 00 00 01 00 00 00 02 80 00 00 01 02 80 00 00 01 02 80 00 00 02 02 80 00 00 03 02 80 00 00 04"},
    {Kind::kField, "array.text_nul", "ARRAY[bytes 61 00, '']::text[]",
     [](Encoder& e) { const ArrayDim d[] = {{2, 1}}; e.begin_array(TypeTag::kText, d); e.text("a\0"sv); e.text(""); e.end_array(); },
     "40 02 09 01 00 00 00 02 80 00 00 01 02 61 00 ff 00 00 02 00 00"},
    // --- composites ------------------------------------------------------
    {Kind::kField, "composite.null", "NULL::record", [](Encoder& e) { e.null(TypeTag::kComposite); }, "41 01"},
    {Kind::kField, "composite.empty", "ROW()", [](Encoder& e) { e.begin_composite(0); e.end_composite(); }, "41 02 00 00 00"},
    {Kind::kField, "composite.int4_text", "ROW(1, 'a')", [](Encoder& e) { e.begin_composite(2); e.int4(1); e.text("a"); e.end_composite(); },
     "41 02 00 02 03 02 80 00 00 01 09 02 61 00 00 00"},
    {Kind::kField, "composite.all_null", "ROW(NULL::int4, NULL::text)", [](Encoder& e) { e.begin_composite(2); e.null(TypeTag::kInt4); e.null(TypeTag::kText); e.end_composite(); },
     "41 02 00 02 03 01 09 01 00"},
    {Kind::kField, "composite.nested", "ROW(ROW(1))", [](Encoder& e) { e.begin_composite(1); e.begin_composite(1); e.int4(1); e.end_composite(); e.end_composite(); },
     "41 02 00 01 41 02 00 01 03 02 80 00 00 01 00 00"},
    // --- ranges and multiranges --------------------------------------------
    {Kind::kField, "range.empty", "'empty'::int4range", [](Encoder& e) { int4_range(e, {.empty = true}, 0, 0); }, "42 02 03 00"},
    {Kind::kField, "range.int4_1_5", "'[1,5)'::int4range", [](Encoder& e) { int4_range(e, {}, 1, 5); }, "42 02 03 01 01 80 00 00 01 00 01 80 00 00 05 00"},
    {Kind::kField, "range.lower_infinite", "'(,5)'::int4range", [](Encoder& e) { int4_range(e, {.lower_infinite = true}, 0, 5); }, "42 02 03 01 00 01 80 00 00 05 00"},
    {Kind::kField, "range.upper_infinite", "'[1,)'::int4range", [](Encoder& e) { int4_range(e, {.upper_infinite = true}, 1, 0); }, "42 02 03 01 01 80 00 00 01 00 02"},
    {Kind::kField, "range.unbounded", "'(,)'::int4range", [](Encoder& e) { int4_range(e, {.lower_infinite = true, .upper_infinite = true}, 0, 0); }, "42 02 03 01 00 02"},
    {Kind::kField, "range.numeric_inclusive", "'[1.0,2.0]'::numrange",
     [](Encoder& e) { e.begin_range(TypeTag::kNumeric, {.upper_inclusive = true}); num(e, "1.0"); num(e, "2.0"); e.end_range(); },
     "42 02 08 01 01 04 80 00 00 02 00 00 00 01 04 80 00 00 03 00 00 01"},
    {Kind::kField, "range.numeric_exclusive_lower", "'(1.0,2.0)'::numrange",
     [](Encoder& e) { e.begin_range(TypeTag::kNumeric, {.lower_inclusive = false}); num(e, "1.0"); num(e, "2.0"); e.end_range(); },
     "42 02 08 01 01 04 80 00 00 02 00 00 01 01 04 80 00 00 03 00 00 00"},
    {Kind::kField, "multirange.empty", "'{}'::int4multirange", [](Encoder& e) { e.begin_multirange(TypeTag::kInt4); e.end_multirange(); }, "43 02 03 00"},
    {Kind::kField, "multirange.two", "'{[1,3),[5,7)}'::int4multirange",
     [](Encoder& e) { e.begin_multirange(TypeTag::kInt4); int4_range(e, {}, 1, 3); int4_range(e, {}, 5, 7); e.end_multirange(); },
     "43 02 03 01 01 80 00 00 01 00 01 80 00 00 03 00 01 01 80 00 00 05 00 01 80 00 00 07 00 00"},
    // --- complete identities: domains, framing, synthetic ------------------
    {Kind::kIdentity, "id.scan_key", "SCAN_KEY (1::int4)", [](Encoder& e) { e.begin(Domain::kScanKey, 1); e.int4(1); }, "02 01 00 01 03 02 80 00 00 01 00"},
    {Kind::kIdentity, "id.keyless_row", "KEYLESS_ROW (1::int4)", [](Encoder& e) { e.begin(Domain::kKeylessRow, 1); e.int4(1); }, "02 02 00 01 03 02 80 00 00 01 00"},
    {Kind::kIdentity, "id.group_key", "GROUP_KEY (1::int4)", [](Encoder& e) { e.begin(Domain::kGroupKey, 1); e.int4(1); }, "02 03 00 01 03 02 80 00 00 01 00"},
    {Kind::kIdentity, "id.join_key", "JOIN_KEY (1::int4)", [](Encoder& e) { e.begin(Domain::kJoinKey, 1); e.int4(1); }, "02 04 00 01 03 02 80 00 00 01 00"},
    {Kind::kIdentity, "id.set_key", "SET_KEY (1::int4)", [](Encoder& e) { e.begin(Domain::kSetKey, 1); e.int4(1); }, "02 05 00 01 03 02 80 00 00 01 00"},
    {Kind::kIdentity, "id.window_key", "WINDOW_KEY (1::int4)", [](Encoder& e) { e.begin(Domain::kWindowKey, 1); e.int4(1); }, "02 06 00 01 03 02 80 00 00 01 00"},
    {Kind::kIdentity, "id.synthetic.scalar_aggregate_singleton", "SYNTHETIC scalar_aggregate_singleton ()",
     [](Encoder& e) { e.begin_synthetic(Synthetic::kScalarAggregateSingleton); }, "02 07 01 00 00 00"},
    {Kind::kIdentity, "id.synthetic.lateral_inner_dummy", "SYNTHETIC lateral_inner_dummy ()",
     [](Encoder& e) { e.begin_synthetic(Synthetic::kLateralInnerDummy); }, "02 07 02 00 00 00"},
    {Kind::kIdentity, "id.no_fields", "SCAN_KEY ()", [](Encoder& e) { e.begin(Domain::kScanKey, 0); }, "02 01 00 00 00"},
    {Kind::kIdentity, "id.group_key.nulls", "GROUP_KEY (NULL::int4, NULL::text)",
     [](Encoder& e) { e.begin(Domain::kGroupKey, 2); e.null(TypeTag::kInt4); e.null(TypeTag::kText); }, "02 03 00 02 03 01 09 01 00"},
    {Kind::kIdentity, "id.framing.a0_b", "SCAN_KEY (bytes 61 00, 'b')",
     [](Encoder& e) { e.begin(Domain::kScanKey, 2); e.text("a\0"sv); e.text("b"); }, "02 01 00 02 09 02 61 00 ff 00 00 09 02 62 00 00 00"},
    {Kind::kIdentity, "id.framing.a_0b", "SCAN_KEY ('a', bytes 00 62)",
     [](Encoder& e) { e.begin(Domain::kScanKey, 2); e.text("a"); e.text("\0b"sv); }, "02 01 00 02 09 02 61 00 00 09 02 00 ff 62 00 00 00"},
    {Kind::kIdentity, "id.framing.1_23", "SCAN_KEY ('1', '23')",
     [](Encoder& e) { e.begin(Domain::kScanKey, 2); e.text("1"); e.text("23"); }, "02 01 00 02 09 02 31 00 00 09 02 32 33 00 00 00"},
    {Kind::kIdentity, "id.framing.12_3", "SCAN_KEY ('12', '3')",
     [](Encoder& e) { e.begin(Domain::kScanKey, 2); e.text("12"); e.text("3"); }, "02 01 00 02 09 02 31 32 00 00 09 02 33 00 00 00"},
    {Kind::kIdentity, "id.join_key.children", "JOIN_KEY (id.scan_key, SCAN_KEY ('x')) as bytea fields",
     [](Encoder& e) {
         static std::string left, right;
         child_identity(e, left, [](Encoder& c) { c.int4(1); });
         child_identity(e, right, [](Encoder& c) { c.text("x"); });
         e.begin(Domain::kJoinKey, 2);
         e.bytea(left);
         e.bytea(right);
     },
     "02 04 00 02 0c 02 02 01 00 ff 01 03 02 80 00 ff 00 ff 01 00 ff 00 00 0c 02 02 01 00 ff 01 09 02 78 00 ff 00 ff 00 ff 00 00 00"},
    // --- probe v1 ----------------------------------------------------------
    {Kind::kDigest, "probe.digest.empty", "xxh3_128 of the empty string, high half then low half", nullptr,
     "99 aa 06 d3 01 47 98 d8 60 01 c3 24 46 8d 49 7f"},
    {Kind::kProbe, "probe.overflow.257", "SCAN_KEY (text of 248 'a'): a 257-byte id; digest after id[0..256]",
     [](Encoder& e) { text_identity(e, 248); }, "46 f1 bb 9a b8 3e 95 6b d5 f8 9c f5 75 dd b9 8a"},
    {Kind::kProbe, "probe.overflow.309", "SCAN_KEY (text of 300 'a'): a 309-byte id; digest after id[0..256]",
     [](Encoder& e) { text_identity(e, 300); }, "6c 4a 5c ec 77 06 67 31 77 8b fc cf 86 75 46 43"},
};
// clang-format on

constexpr std::uint8_t kFieldHeader[] = {0x02, 0x01, 0x00, 0x01};

// The bytes a vector denotes, computed by the implementation.
std::vector<std::uint8_t> actual_bytes(const Vector& v) {
    Encoder e;
    std::span<const std::uint8_t> id;
    switch (v.kind) {
        case Kind::kField:
            e.begin(Domain::kScanKey, 1);
            v.encode(e);
            id = e.end();
            if (id.size() < 5 ||
                !std::equal(std::begin(kFieldHeader), std::end(kFieldHeader), id.begin()) ||
                id.back() != 0x00) {
                return {};
            }
            return {id.begin() + 4, id.end() - 1};
        case Kind::kIdentity:
            v.encode(e);
            id = e.end();
            return {id.begin(), id.end()};
        case Kind::kProbe: {
            v.encode(e);
            id = e.end();
            const Probe probe = row_probe_v1(id);
            const auto bytes = probe.bytes();
            if (bytes.size() != kProbeMaxBytes ||
                !std::equal(bytes.begin(), bytes.begin() + kProbePrefixBytes, id.begin())) {
                return {};
            }
            return {bytes.begin() + kProbePrefixBytes, bytes.end()};
        }
        case Kind::kDigest: {
            const Probe probe =
                row_probe_v1_with_digest(std::vector<std::uint8_t>(300, 0), probe_digest_v1({}));
            return {probe.bytes().begin() + kProbePrefixBytes, probe.bytes().end()};
        }
    }
    return {};
}

std::string spaced(std::string_view hex) {
    const auto bytes = from_hex(hex);
    return bytes ? to_hex(*bytes, ' ') : "<invalid hex>";
}

TEST(RowIdGolden, EveryVectorEncodesToItsGoldenBytes) {
    for (const Vector& v : kVectors) {
        SCOPED_TRACE(v.id);
        EXPECT_EQ(to_hex(actual_bytes(v), ' '), spaced(v.hex));
    }
}

TEST(RowIdGolden, VectorIdsAreUnique) {
    std::set<std::string> ids;
    for (const Vector& v : kVectors) {
        EXPECT_TRUE(ids.insert(v.id).second) << v.id;
    }
}

std::map<std::string, std::string> document_vectors() {
    const auto doc = pgt::testing::read_doc_vectors(PGT_SOURCE_DIR "/docs/row-identity-v2.md");
    EXPECT_TRUE(doc.duplicate_id.empty()) << "duplicate document vector " << doc.duplicate_id;
    return doc.hex_by_id;
}

TEST(RowIdGolden, DocumentTablesMatchTheTestVectorsExactly) {
    const auto doc = document_vectors();
    ASSERT_FALSE(doc.empty()) << "no vector rows found in docs/row-identity-v2.md";
    std::set<std::string> ids;
    for (const Vector& v : kVectors) {
        ids.insert(v.id);
        const auto it = doc.find(v.id);
        ASSERT_NE(it, doc.end()) << "vector missing from the document: " << v.id;
        EXPECT_EQ(spaced(it->second), spaced(v.hex)) << v.id;
    }
    for (const auto& [id, hex] : doc) {
        EXPECT_TRUE(ids.count(id)) << "document vector without a test: " << id;
    }
}

// Prints table rows for new vectors (run with --gtest_also_run_disabled_tests).
// Existing rows are frozen: never regenerate them from the implementation.
TEST(RowIdGolden, DISABLED_PrintDocumentRows) {
    for (const Vector& v : kVectors) {
        std::cout << "| `" << v.id << "` | " << v.input << " | `" << to_hex(actual_bytes(v), ' ')
                  << "` |\n";
    }
}

}  // namespace
