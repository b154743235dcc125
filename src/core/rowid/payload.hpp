// Pure payload transforms of row identity V2: order-preserving keys of
// integers, floats, intervals and numerics, and big-endian stores.
// Invariant: each function here *is* the normative definition of its payload
// bytes; the stores are shift-based so every host writes the same bytes.
#pragma once
#include "core/core.hpp"
#include "core/rowid/format.hpp"
#include "core/rowid/values.hpp"

#include <bit>
#include <cstddef>
#include <cstdint>

namespace pgt::rowid::payload {

__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 Uint128;

// --- big-endian stores ----------------------------------------------------
inline void put_be16(std::uint8_t* p, std::uint16_t v) noexcept {
    p[0] = static_cast<std::uint8_t>(v >> 8);
    p[1] = static_cast<std::uint8_t>(v);
}
inline void put_be32(std::uint8_t* p, std::uint32_t v) noexcept {
    put_be16(p, static_cast<std::uint16_t>(v >> 16));
    put_be16(p + 2, static_cast<std::uint16_t>(v));
}
inline void put_be64(std::uint8_t* p, std::uint64_t v) noexcept {
    put_be32(p, static_cast<std::uint32_t>(v >> 32));
    put_be32(p + 4, static_cast<std::uint32_t>(v));
}
inline void put_be128(std::uint8_t* p, Uint128 v) noexcept {
    put_be64(p, static_cast<std::uint64_t>(v >> 64));
    put_be64(p + 8, static_cast<std::uint64_t>(v));
}

// --- signed integers: flip the sign bit --------------------------------------
constexpr std::uint16_t int2_key(std::int16_t v) noexcept {
    return static_cast<std::uint16_t>(static_cast<std::uint16_t>(v) ^ 0x8000u);
}
constexpr std::uint32_t int4_key(std::int32_t v) noexcept {
    return static_cast<std::uint32_t>(v) ^ 0x80000000u;
}
constexpr std::uint64_t int8_key(std::int64_t v) noexcept {
    return static_cast<std::uint64_t>(v) ^ 0x8000000000000000ull;
}
constexpr Uint128 int128_key(Int128 v) noexcept {
    return static_cast<Uint128>(v) ^ (static_cast<Uint128>(1) << 127);
}

// --- floats: canonical zero and NaN, then the sortable IEEE transform ------
// Negative values have every bit inverted, others only the sign bit, so
// -inf < negatives < 0 < positives < +inf < NaN in unsigned order.
inline constexpr std::uint32_t kFloat4CanonicalNaN = 0x7FC00000u;
inline constexpr std::uint64_t kFloat8CanonicalNaN = 0x7FF8000000000000ull;

inline std::uint32_t float4_key(float v) noexcept {
    std::uint32_t bits = std::bit_cast<std::uint32_t>(v);
    bits = (v == 0.0f) ? 0u : bits;                // -0.0 == +0.0
    bits = (v != v) ? kFloat4CanonicalNaN : bits;  // every NaN == NaN
    const std::uint32_t mask = (bits >> 31) ? 0xFFFFFFFFu : 0x80000000u;
    return bits ^ mask;
}
inline std::uint64_t float8_key(double v) noexcept {
    std::uint64_t bits = std::bit_cast<std::uint64_t>(v);
    bits = (v == 0.0) ? 0u : bits;
    bits = (v != v) ? kFloat8CanonicalNaN : bits;
    const std::uint64_t mask = (bits >> 63) ? ~0ull : 0x8000000000000000ull;
    return bits ^ mask;
}

// --- interval: PostgreSQL's interval_cmp_value(), exact in 128 bits ---------
// (month * 30 + day) days + time microseconds; 1 month == 30 days.
inline constexpr std::int64_t kUsecsPerDay = 86400000000;

constexpr Int128 interval_cmp_value(const IntervalValue& v) noexcept {
    const Int128 days = static_cast<Int128>(v.month) * 30 + v.day;
    return days * kUsecsPerDay + v.time;
}

// --- timetz: GMT-equivalent microseconds, then the zone -------------------
constexpr std::int64_t timetz_instant(std::int64_t time, std::int32_t zone) noexcept {
    return time + static_cast<std::int64_t>(zone) * 1000000;
}

// --- numeric ------------------------------------------------------------
// A numeric reduced to its canonical form: class byte, and for non-zero
// finite values the weight and digits without leading or trailing zeros.
struct CanonicalNumeric {
    std::uint8_t klass = wire::kNumericZero;
    std::int16_t weight = 0;
    const std::int16_t* digits = nullptr;
    std::size_t count = 0;
};

// Canonicalises `v`; throws pgt::Error 22023 on a digit outside 0..9999 or a
// weight outside int16 after normalisation.
CanonicalNumeric canonical_numeric(const NumericView& v);

// Payload bytes of a canonical numeric (1 for zero and specials, otherwise
// class, weight, 2 bytes per digit, 2-byte terminator).
constexpr std::size_t numeric_payload_size(const CanonicalNumeric& n) noexcept {
    const bool magnitude = n.klass == wire::kNumericPositive || n.klass == wire::kNumericNegative;
    return magnitude ? 1 + 2 + 2 * n.count + 2 : 1;
}

// Writes numeric_payload_size(n) bytes at `out`.
void write_numeric_payload(std::uint8_t* out, const CanonicalNumeric& n) noexcept;

}  // namespace pgt::rowid::payload
