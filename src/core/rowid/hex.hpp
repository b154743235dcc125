// Hexadecimal display of identities and probes (seed §11: diagnostics show
// __pgt_row_id in hex) and its inverse for golden vectors.
// Invariant: to_hex output is lowercase and round-trips through from_hex.
#pragma once
#include "core/core.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pgt::rowid {

// "0a1b..." (separator 0) or "0a 1b ..." (separator ' ').
std::string to_hex(std::span<const std::uint8_t> bytes, char separator = 0);

// Parses hex digits, ignoring ASCII whitespace; nullopt on any other
// character or an odd digit count.
std::optional<std::vector<std::uint8_t>> from_hex(std::string_view text);

}  // namespace pgt::rowid
