// Decimal literal parsing into base-10000 digit groups aligned on the
// decimal point, the way PostgreSQL's numeric stores them.
// Invariant: group i holds decimal exponents 4*(weight-i) .. 4*(weight-i)+3.
#include "core/rowid/decimal.hpp"

#include "core/error.hpp"

#include <array>
#include <string>
#include <utility>

namespace pgt::rowid {
namespace {

constexpr std::int64_t kMaxExponent = 1000000;

[[noreturn]] void fail(std::string_view literal) {
    throw Error(sqlstate::kInvalidParameterValue, "invalid decimal literal",
                "The literal is \"" + std::string(literal) + "\".");
}

bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
        if ((a[i] | 0x20) != (b[i] | 0x20)) {
            return false;
        }
    }
    return true;
}

constexpr std::int64_t floor_div4(std::int64_t v) noexcept {
    return v >= 0 ? v / 4 : -((3 - v) / 4);
}

// Parses an optional exponent suffix "e[+-]digits" starting at `pos`.
std::int64_t parse_exponent(std::string_view s, std::size_t pos, std::string_view literal) {
    if (pos == s.size()) {
        return 0;
    }
    if ((s[pos] | 0x20) != 'e' || ++pos == s.size()) {
        fail(literal);
    }
    const bool negative = s[pos] == '-';
    pos += (s[pos] == '-' || s[pos] == '+') ? 1 : 0;
    if (pos == s.size()) {
        fail(literal);
    }
    std::int64_t exp = 0;
    for (; pos < s.size(); ++pos) {
        if (s[pos] < '0' || s[pos] > '9' || (exp = exp * 10 + (s[pos] - '0')) > kMaxExponent) {
            fail(literal);
        }
    }
    return negative ? -exp : exp;
}

// Groups the significant digits `mant` (first digit at decimal exponent e0).
void to_groups(const std::string& mant, std::int64_t e0, DecimalNumeric& out) {
    out.weight = static_cast<std::int32_t>(floor_div4(e0));
    const std::string padded =
        std::string(static_cast<std::size_t>(3 - (e0 - 4 * out.weight)), '0') + mant +
        std::string(3, '0');
    for (std::size_t i = 0; i + 4 <= padded.size(); i += 4) {
        out.digits.push_back(static_cast<std::int16_t>(std::stoi(padded.substr(i, 4))));
    }
    while (!out.digits.empty() && out.digits.back() == 0) {
        out.digits.pop_back();
    }
}

}  // namespace

DecimalNumeric parse_decimal(std::string_view literal) {
    DecimalNumeric out;
    std::string_view s = literal;
    const bool negative = !s.empty() && s[0] == '-';
    s.remove_prefix(!s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0);
    if (iequals(s, "nan") && s.size() == literal.size()) {
        out.sign = NumericSign::kNaN;
        return out;
    }
    if (iequals(s, "infinity")) {
        out.sign = negative ? NumericSign::kNegInf : NumericSign::kPosInf;
        return out;
    }
    std::string mant;
    std::int64_t int_digits = -1;  // digits before the point; -1 until a point is seen
    std::size_t pos = 0;
    for (; pos < s.size() && ((s[pos] >= '0' && s[pos] <= '9') || s[pos] == '.'); ++pos) {
        if (s[pos] == '.') {
            if (int_digits >= 0) {
                fail(literal);
            }
            int_digits = static_cast<std::int64_t>(mant.size());
        } else {
            mant.push_back(s[pos]);
        }
    }
    if (mant.empty()) {
        fail(literal);
    }
    std::int64_t point = (int_digits >= 0 ? int_digits : static_cast<std::int64_t>(mant.size())) +
                         parse_exponent(s, pos, literal);
    const std::size_t lead = std::min(mant.find_first_not_of('0'), mant.size());
    mant.erase(0, lead);
    point -= static_cast<std::int64_t>(lead);
    mant.erase(mant.find_last_not_of('0') + 1);  // npos + 1 == 0 clears an all-zero string
    if (mant.empty()) {
        return out;  // zero
    }
    out.sign = negative ? NumericSign::kNegative : NumericSign::kPositive;
    to_groups(mant, point - 1, out);
    return out;
}

}  // namespace pgt::rowid
