// Hex formatting and parsing for row identity diagnostics and golden vectors.
// Invariant: pure functions of their input; never used on the encode path.
#include "core/rowid/hex.hpp"

namespace pgt::rowid {
namespace {

constexpr char kDigits[] = "0123456789abcdef";

int nibble(char c) noexcept {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

bool is_space(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

}  // namespace

std::string to_hex(std::span<const std::uint8_t> bytes, char separator) {
    std::string out;
    out.reserve(bytes.size() * 3);
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        if (separator != 0 && i != 0) {
            out.push_back(separator);
        }
        out.push_back(kDigits[bytes[i] >> 4]);
        out.push_back(kDigits[bytes[i] & 0x0F]);
    }
    return out;
}

std::optional<std::vector<std::uint8_t>> from_hex(std::string_view text) {
    std::vector<std::uint8_t> out;
    int high = -1;
    for (char c : text) {
        if (is_space(c)) {
            continue;
        }
        const int v = nibble(c);
        if (v < 0) {
            return std::nullopt;
        }
        if (high < 0) {
            high = v;
        } else {
            out.push_back(static_cast<std::uint8_t>(high << 4 | v));
            high = -1;
        }
    }
    if (high >= 0) {
        return std::nullopt;
    }
    return out;
}

}  // namespace pgt::rowid
