// Delta program text form (see program.hpp).
// Invariant: decode_program(encode_program(p)) == p for every p.
#include "core/diff/program.hpp"

#include <cstdlib>
#include <string>

#include "core/error.hpp"

namespace pgt::diff {

namespace {

const std::string kHeader = "-- pgt:images ";

[[noreturn]] void malformed() {
    throw Error(sqlstate::kInternalError, "malformed delta program in the catalog");
}

// Reads a decimal number at text[pos], then expects `sep`.
std::size_t number(const std::string& text, std::size_t& pos, char sep) {
    std::size_t start = pos;
    std::size_t value = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
        value = value * 10 + static_cast<std::size_t>(text[pos] - '0');
        pos++;
    }
    if (pos == start || pos >= text.size() || text[pos] != sep) {
        malformed();
    }
    pos++;
    return value;
}

}  // namespace

std::string encode_program(const DeltaProgram& p) {
    if (p.images.empty()) {
        return p.main;
    }
    std::string header = kHeader;
    std::string body;
    for (std::size_t i = 0; i < p.images.size(); i++) {
        const ImageStep& s = p.images[i];
        header += std::to_string(s.source) + ":" + std::to_string(s.window) + ":" +
                  std::to_string(s.sql.size()) + (i + 1 < p.images.size() ? "," : "\n");
        body += s.sql;
    }
    return header + body + p.main;
}

DeltaProgram decode_program(const std::string& text) {
    DeltaProgram p;
    if (text.compare(0, kHeader.size(), kHeader) != 0) {
        p.main = text;
        return p;
    }
    std::size_t pos = kHeader.size();
    std::vector<std::size_t> lengths;
    for (bool more = true; more;) {
        ImageStep s;
        s.source = number(text, pos, ':');
        s.window = static_cast<int>(number(text, pos, ':'));
        std::size_t at = pos;
        while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
            at++;
        }
        if (at >= text.size() || (text[at] != ',' && text[at] != '\n')) {
            malformed();
        }
        more = text[at] == ',';
        lengths.push_back(number(text, pos, text[at]));
        p.images.push_back(s);
    }
    for (std::size_t i = 0; i < p.images.size(); i++) {
        if (pos + lengths[i] > text.size()) {
            malformed();
        }
        p.images[i].sql = text.substr(pos, lengths[i]);
        pos += lengths[i];
    }
    p.main = text.substr(pos);
    return p;
}

}  // namespace pgt::diff
