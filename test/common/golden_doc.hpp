// The golden vectors of docs/row-identity-v2.md as the tests read them:
// rows "| `family.name` | input | `hex` |" of the document's tables.
// Invariant: one parser for every test layer (unit and e2e), so both check
// exactly the same vectors.
#pragma once

#include <fstream>
#include <map>
#include <string>
#include <string_view>

namespace pgt::testing {

inline std::string_view trim_spaces(std::string_view s) {
    while (!s.empty() && s.front() == ' ') {
        s.remove_prefix(1);
    }
    while (!s.empty() && s.back() == ' ') {
        s.remove_suffix(1);
    }
    return s;
}

// The content of a cell written entirely as `code`, else empty.
inline std::string_view code_cell(std::string_view cell) {
    cell = trim_spaces(cell);
    if (cell.size() < 2 || cell.front() != '`' || cell.back() != '`') {
        return {};
    }
    cell = cell.substr(1, cell.size() - 2);
    return cell.find('`') == std::string_view::npos ? cell : std::string_view{};
}

struct DocVectors {
    std::map<std::string, std::string> hex_by_id;  // hex as written (bytes space-separated)
    std::string duplicate_id;                      // non-empty: an id that appears twice
};

// Vector rows of the document at path: first and last cells in backticks,
// the id containing a dot. Other tables are skipped.
inline DocVectors read_doc_vectors(const std::string& path) {
    std::ifstream in(path);
    DocVectors out;
    std::string line;
    while (std::getline(in, line)) {
        std::string_view row = trim_spaces(line);
        if (row.size() < 2 || row.front() != '|' || row.back() != '|') {
            continue;
        }
        row = row.substr(1, row.size() - 2);
        const std::string_view id = code_cell(row.substr(0, row.find('|')));
        const std::string_view hex = code_cell(row.substr(row.rfind('|') + 1));
        if (id.find('.') != std::string_view::npos && !hex.empty() &&
            !out.hex_by_id.emplace(id, hex).second && out.duplicate_id.empty()) {
            out.duplicate_id = id;
        }
    }
    return out;
}

}  // namespace pgt::testing
