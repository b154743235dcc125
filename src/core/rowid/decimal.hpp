// Decimal literal -> the encoder's neutral numeric input (sign, base-10000
// weight and digits, as PostgreSQL stores numeric). For tests, benchmarks
// and diagnostics; the PostgreSQL side reads digits straight from a Datum.
// Invariant: the result denotes exactly the literal's value (no rounding).
#pragma once
#include "core/core.hpp"
#include "core/rowid/values.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace pgt::rowid {

struct DecimalNumeric {
    NumericSign sign = NumericSign::kPositive;
    std::int32_t weight = 0;
    std::vector<std::int16_t> digits;

    NumericView view() const noexcept { return {sign, weight, digits}; }
};

// Accepts [+-]digits[.digits][e[+-]digits], "NaN", "Infinity", "-Infinity"
// (ASCII case-insensitive). Throws pgt::Error 22023 on anything else.
DecimalNumeric parse_decimal(std::string_view literal);

}  // namespace pgt::rowid
