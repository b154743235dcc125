// Numeric canonicalisation and payload bytes for row identity V2.
// Invariant: 1.0 and 1.00 (any dscale, any leading/trailing zero digits)
// reduce to the same CanonicalNumeric and therefore the same bytes.
#include "core/rowid/payload.hpp"

#include "core/error.hpp"

#include <iterator>
#include <limits>
#include <string>

namespace pgt::rowid::payload {
namespace {

constexpr std::int16_t kMaxDigit = 9999;

[[noreturn]] void fail_numeric(const char* message, std::int64_t value) {
    throw Error(sqlstate::kInvalidParameterValue, message,
                "The offending value is " + std::to_string(value) + ".",
                "The caller must pass numeric digits as PostgreSQL stores them.");
}

// Class byte of a non-finite numeric, indexed by NumericSign.
constexpr std::uint8_t kSpecialClass[] = {
    wire::kNumericPositive, wire::kNumericNegative, wire::kNumericNaN,
    wire::kNumericPosInf,   wire::kNumericNegInf,
};

}  // namespace

CanonicalNumeric canonical_numeric(const NumericView& v) {
    CanonicalNumeric out;
    if (static_cast<std::size_t>(v.sign) >= std::size(kSpecialClass)) {
        fail_numeric("numeric sign class out of range in row identity input",
                     static_cast<std::int64_t>(v.sign));
    }
    const bool finite = v.sign == NumericSign::kPositive || v.sign == NumericSign::kNegative;
    if (!finite) {
        out.klass = kSpecialClass[static_cast<std::size_t>(v.sign)];
        return out;
    }
    for (std::int16_t d : v.digits) {
        if (d < 0 || d > kMaxDigit) {
            fail_numeric("numeric digit outside 0..9999 in row identity input", d);
        }
    }
    std::size_t first = 0;
    std::size_t last = v.digits.size();
    while (first < last && v.digits[first] == 0) {
        ++first;
    }
    while (last > first && v.digits[last - 1] == 0) {
        --last;
    }
    if (first == last) {
        return out;  // zero: sign and weight do not matter
    }
    const std::int64_t weight =
        static_cast<std::int64_t>(v.weight) - static_cast<std::int64_t>(first);
    if (weight < std::numeric_limits<std::int16_t>::min() ||
        weight > std::numeric_limits<std::int16_t>::max()) {
        fail_numeric("numeric weight outside int16 in row identity input", weight);
    }
    out.klass = v.sign == NumericSign::kNegative ? wire::kNumericNegative : wire::kNumericPositive;
    out.weight = static_cast<std::int16_t>(weight);
    out.digits = v.digits.data() + first;
    out.count = last - first;
    return out;
}

// Magnitude := weight (sign-flipped int16) | digit+1 (u16) ... | 0x0000.
// Negative values invert every magnitude byte, reversing their order.
void write_numeric_payload(std::uint8_t* out, const CanonicalNumeric& n) noexcept {
    out[0] = n.klass;
    if (numeric_payload_size(n) == 1) {
        return;
    }
    std::uint8_t* p = out + 1;
    put_be16(p, int2_key(n.weight));
    p += 2;
    for (std::size_t i = 0; i < n.count; ++i, p += 2) {
        put_be16(p, static_cast<std::uint16_t>(n.digits[i] + 1));
    }
    put_be16(p, 0);
    if (n.klass == wire::kNumericNegative) {
        for (std::uint8_t* q = out + 1; q < p + 2; ++q) {
            *q = static_cast<std::uint8_t>(~*q);
        }
    }
}

}  // namespace pgt::rowid::payload
