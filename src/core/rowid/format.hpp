// Row identity V2 wire constants: version, domains, synthetic discriminators,
// type tags and framing bytes (docs/row-identity-v2.md is their normative text).
// Invariant: every number in this file is persisted in __pgt_row_id. Never
// change or reuse one; only add new ones (a new type tag needs no V3).
#pragma once
#include "core/core.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pgt::rowid {

// First byte of every identity.
inline constexpr std::uint8_t kVersion = 0x02;

// Second byte: what the identity means. Disjoint meanings never share bytes.
enum class Domain : std::uint8_t {
    kScanKey = 0x01,     // source primary/unique-key fields
    kKeylessRow = 0x02,  // all logical output fields of a keyless row
    kGroupKey = 0x03,    // GROUP BY fields
    kJoinKey = 0x04,     // ordered child identities of a join
    kSetKey = 0x05,      // set-operation identity components
    kWindowKey = 0x06,   // partition/order identity components
    kSynthetic = 0x07,   // followed by a registered Synthetic discriminator
};

// Registered discriminators of the SYNTHETIC domain (third byte).
enum class Synthetic : std::uint8_t {
    kScalarAggregateSingleton = 0x01,  // the one row of an aggregate without GROUP BY
    kLateralInnerDummy = 0x02,         // the placeholder inner row of a LEFT JOIN LATERAL
};

// One byte per PostgreSQL type (a domain uses its base type's tag). 0x00 and
// 0xFF are reserved: 0xFF announces a future two-byte tag.
enum class TypeTag : std::uint8_t {
    kBool = 0x01,
    kInt2 = 0x02,
    kInt4 = 0x03,
    kInt8 = 0x04,
    kOid = 0x05,
    kFloat4 = 0x06,
    kFloat8 = 0x07,
    kNumeric = 0x08,
    kText = 0x09,
    kVarchar = 0x0A,
    kBpchar = 0x0B,
    kBytea = 0x0C,
    kUuid = 0x0D,
    kDate = 0x0E,
    kTime = 0x0F,
    kTimestamp = 0x10,
    kTimestamptz = 0x11,
    kTimetz = 0x12,
    kInterval = 0x13,
    kInet = 0x14,
    kCidr = 0x15,
    kMacaddr = 0x16,
    kMacaddr8 = 0x17,
    kBit = 0x18,
    kVarbit = 0x19,
    kEnum = 0x1A,
    kJsonb = 0x1B,
    kName = 0x1C,
    kChar = 0x1D,   // the one-byte "char"
    kImage = 0x1E,  // a user-defined base type whose equality is image equality: its bytes
    kArray = 0x40,
    kComposite = 0x41,
    kRange = 0x42,
    kMultirange = 0x43,
};

// Framing bytes.
namespace wire {
inline constexpr std::uint8_t kTupleEnd = 0x00;
inline constexpr std::uint8_t kNullTag = 0x01;   // sorts before kValueTag
inline constexpr std::uint8_t kValueTag = 0x02;  // a payload follows

// Variable-length payloads: 00 -> 00 FF, end -> 00 00, 01..FF unchanged.
inline constexpr std::uint8_t kEscape = 0x00;
inline constexpr std::uint8_t kEscapedZero = 0xFF;
inline constexpr std::uint8_t kTerminator = 0x00;

// Numeric classes, in PostgreSQL's order (-inf < finite < +inf < NaN).
inline constexpr std::uint8_t kNumericNegInf = 0x01;
inline constexpr std::uint8_t kNumericNegative = 0x02;
inline constexpr std::uint8_t kNumericZero = 0x03;
inline constexpr std::uint8_t kNumericPositive = 0x04;
inline constexpr std::uint8_t kNumericPosInf = 0x05;
inline constexpr std::uint8_t kNumericNaN = 0x06;

// Ranges: body := 00 (empty) | 01 LOWER UPPER.
inline constexpr std::uint8_t kRangeEmpty = 0x00;
inline constexpr std::uint8_t kRangeNonEmpty = 0x01;
inline constexpr std::uint8_t kLowerInfinite = 0x00;  // LOWER := 00 | 01 value incl
inline constexpr std::uint8_t kBoundFinite = 0x01;
inline constexpr std::uint8_t kUpperInfinite = 0x02;  // UPPER := 01 value incl | 02
inline constexpr std::uint8_t kLowerInclusive = 0x00;
inline constexpr std::uint8_t kLowerExclusive = 0x01;
inline constexpr std::uint8_t kUpperExclusive = 0x00;
inline constexpr std::uint8_t kUpperInclusive = 0x01;
inline constexpr std::uint8_t kMultirangeEnd = 0x00;  // ranges follow as 01 LOWER UPPER

// inet/cidr address families (IPv4 sorts first, as in PostgreSQL).
inline constexpr std::uint8_t kFamilyIpv4 = 0x04;
inline constexpr std::uint8_t kFamilyIpv6 = 0x06;

// jsonb node tags; containers end with kJsonEnd, object members start with kJsonMember.
inline constexpr std::uint8_t kJsonEnd = 0x00;
inline constexpr std::uint8_t kJsonNull = 0x01;
inline constexpr std::uint8_t kJsonString = 0x02;
inline constexpr std::uint8_t kJsonNumber = 0x03;
inline constexpr std::uint8_t kJsonFalse = 0x04;
inline constexpr std::uint8_t kJsonTrue = 0x05;
inline constexpr std::uint8_t kJsonArray = 0x06;
inline constexpr std::uint8_t kJsonObject = 0x07;
inline constexpr std::uint8_t kJsonMember = 0x01;
}  // namespace wire

// Resource limits. Exceeding one raises pgt::Error 54000; it never changes
// the encoding. Tests may lower them; production uses the defaults.
inline constexpr std::uint32_t kMaxDepth = 32;                 // nested containers
inline constexpr std::size_t kMaxIdentityBytes = 64u << 20;    // 64 MiB
inline constexpr std::uint32_t kMaxArrayDims = 6;              // PostgreSQL's MAXDIM
inline constexpr std::uint32_t kMaxArrayElements = 0x7FFFFFF;  // PostgreSQL's MaxArraySize
inline constexpr std::size_t kMaxEnumLabelBytes = 63;          // NAMEDATALEN - 1

struct Limits {
    std::uint32_t max_depth = kMaxDepth;
    std::size_t max_bytes = kMaxIdentityBytes;
};

// Registry names, as written in docs/row-identity-v2.md ("SCAN_KEY", "int4", ...);
// type_tag_name is defined with the type registry (types.cpp).
// nullptr for an unregistered value.
const char* domain_name(Domain domain) noexcept;
// The SQL spelling of a domain ("scan_key", ...: encode_row_id_v2's first
// argument, pgt_stream_tables.row_identity_domain); nullptr for an
// unregistered value. domain_spelled is its inverse (exact spelling).
const char* domain_spelling(Domain domain) noexcept;
std::optional<Domain> domain_spelled(std::string_view spelling) noexcept;
// Every spelling, in registry order ("scan_key, keyless_row, ...").
std::string domain_spellings();
const char* synthetic_name(Synthetic kind) noexcept;
const char* type_tag_name(TypeTag tag) noexcept;

}  // namespace pgt::rowid
