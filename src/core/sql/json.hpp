// JSON text for what core stores or sends as JSON (delta programs in their
// jsonb catalog column, notification payloads, alerts): string escaping,
// and a reader for the documents core wrote itself after PostgreSQL's jsonb
// gave them back (keys reordered, whitespace changed).
// Invariant: the reader accepts RFC 8259 JSON with numbers limited to
// non-negative integers below 2^64; anything else is kInternalError.
#pragma once
#include "core/core.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pgt::sql {

// Appends s as a JSON string literal (with the quotes): " and \ escaped,
// bytes < 0x20 as \u00XX, every other byte verbatim (UTF-8 passes through).
void append_json_string(std::string& out, std::string_view s);

struct JsonValue {
    enum class Kind : std::uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
    Kind kind = Kind::kNull;
    bool boolean = false;
    uint64_t number = 0;
    std::string string;
    std::vector<JsonValue> items;                            // kArray
    std::vector<std::pair<std::string, JsonValue>> members;  // kObject, in text order

    // The member named key, or nullptr (also when this is not an object).
    const JsonValue* find(std::string_view key) const;
};

// Throws kInternalError naming what is malformed.
JsonValue parse_json(std::string_view text);

}  // namespace pgt::sql
