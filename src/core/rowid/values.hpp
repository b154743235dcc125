// Neutral input values of the row-identity encoder: how the PostgreSQL side
// hands over numerics, intervals, addresses, arrays, ranges and jsonb without
// PostgreSQL headers. Invariant: these are views — they never own memory, so
// building one per field allocates nothing.
#pragma once
#include "core/core.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace pgt::rowid {

// numeric as PostgreSQL stores it: sign/special class, weight of digits[0] in
// base 10000, digits each 0..9999 (NumericDigit). dscale is not an input: it
// does not take part in equality. Leading/trailing zero digits are allowed.
enum class NumericSign : std::uint8_t { kPositive, kNegative, kNaN, kPosInf, kNegInf };

struct NumericView {
    NumericSign sign = NumericSign::kPositive;
    std::int32_t weight = 0;
    std::span<const std::int16_t> digits;
};

// interval fields as PostgreSQL stores them (Interval: time, day, month).
struct IntervalValue {
    std::int64_t time = 0;  // microseconds
    std::int32_t day = 0;
    std::int32_t month = 0;
};

// inet/cidr: family, prefix length in bits, 4 or 16 address bytes.
enum class IpFamily : std::uint8_t { kIpv4, kIpv6 };

struct InetView {
    IpFamily family = IpFamily::kIpv4;
    std::uint8_t bits = 0;
    std::span<const std::uint8_t> address;
};

// One array dimension (ARR_DIMS / ARR_LBOUND).
struct ArrayDim {
    std::int32_t length = 0;
    std::int32_t lower_bound = 1;
};

// Range shape (PostgreSQL's RANGE_EMPTY, RANGE_LB_INC, ...). Inclusivity of an
// infinite bound and all bound flags of an empty range are ignored.
struct RangeFlags {
    bool empty = false;
    bool lower_infinite = false;
    bool upper_infinite = false;
    bool lower_inclusive = true;
    bool upper_inclusive = false;
};

// jsonb as a tree the caller builds from its JsonbContainer. Object member
// order does not matter: the encoder sorts keys bytewise. Duplicate keys are
// rejected (jsonb itself never has them; resolve them before encoding).
enum class JsonKind : std::uint8_t { kNull, kBool, kString, kNumber, kArray, kObject };

struct JsonMember;

struct JsonNode {
    JsonKind kind = JsonKind::kNull;
    bool boolean = false;                 // kBool
    std::string_view string;              // kString: raw UTF-8 bytes
    NumericView number;                   // kNumber
    const JsonNode* items = nullptr;      // kArray: `count` elements
    const JsonMember* members = nullptr;  // kObject: `count` members, any order
    std::uint32_t count = 0;
};

struct JsonMember {
    std::string_view key;
    JsonNode value;
};

// Node factories (the tree only points at caller-owned storage).
inline JsonNode json_null() noexcept {
    return JsonNode{};
}
inline JsonNode json_bool(bool v) noexcept {
    JsonNode n;
    n.kind = JsonKind::kBool;
    n.boolean = v;
    return n;
}
inline JsonNode json_string(std::string_view bytes) noexcept {
    JsonNode n;
    n.kind = JsonKind::kString;
    n.string = bytes;
    return n;
}
inline JsonNode json_number(const NumericView& v) noexcept {
    JsonNode n;
    n.kind = JsonKind::kNumber;
    n.number = v;
    return n;
}
inline JsonNode json_array(std::span<const JsonNode> items) noexcept {
    JsonNode n;
    n.kind = JsonKind::kArray;
    n.items = items.data();
    n.count = static_cast<std::uint32_t>(items.size());
    return n;
}
inline JsonNode json_object(std::span<const JsonMember> members) noexcept {
    JsonNode n;
    n.kind = JsonKind::kObject;
    n.members = members.data();
    n.count = static_cast<std::uint32_t>(members.size());
    return n;
}

}  // namespace pgt::rowid
