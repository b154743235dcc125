// Delta program text form and branch selection (see program.hpp).
// Invariant: decode_program(encode_program(p)) == p for every p.
#include "core/diff/program.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "core/diff/apply.hpp"
#include "core/error.hpp"

namespace pgt::diff {

namespace {

const std::string kImages = "-- pgt:images ";
const std::string kBranches = "-- pgt:branches ";
const std::string kFull = "-- pgt:full ";
const std::string kFallback = "-- pgt:fallback ";
const std::string kFallbackImages = "-- pgt:fallback_images ";
const std::string kKept = "-- pgt:kept ";

bool plain_identifier(const std::string& s) {
    return !s.empty() &&
           s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
}

[[noreturn]] void malformed() {
    throw Error(sqlstate::kInternalError, "malformed delta program in the catalog");
}

// A decimal number at text[pos], then one of `seps`; returns the number
// and sets `sep` to the separator found.
uint64_t number(const std::string& text, std::size_t& pos, const char* seps, char& sep) {
    std::size_t start = pos;
    uint64_t value = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
        value = value * 10 + static_cast<uint64_t>(text[pos] - '0');
        pos++;
    }
    if (pos == start || pos >= text.size() ||
        std::string(seps).find(text[pos]) == std::string::npos) {
        malformed();
    }
    sep = text[pos++];
    return value;
}

// "a:b:len,a:b:c:len\n" → tuples of `fields` numbers each (the last one
// optional: absent means 0, before the length).
std::vector<std::vector<uint64_t>> tuples(const std::string& text, std::size_t& pos,
                                          std::size_t fields) {
    std::vector<std::vector<uint64_t>> out;
    for (char sep = ','; sep == ',';) {
        std::vector<uint64_t> t;
        for (sep = ':'; sep == ':';) {
            t.push_back(number(text, pos, ":,\n", sep));
        }
        if (t.size() + 1 == fields) {
            t.insert(t.end() - 1, 0);
        }
        if (t.size() != fields) {
            malformed();
        }
        out.push_back(t);
    }
    return out;
}

std::string take(const std::string& text, std::size_t& pos, uint64_t len) {
    if (len > text.size() - pos) {
        malformed();
    }
    std::string s = text.substr(pos, len);
    pos += len;
    return s;
}

// One header line "<tag>s:w:len,..." and the statements' texts.
void encode_images(const std::vector<ImageStep>& images, const std::string& tag,
                   std::string& header, std::string& body) {
    for (std::size_t i = 0; i < images.size(); i++) {
        const ImageStep& s = images[i];
        header += (i ? "," : tag) + std::to_string(s.source) + ":" + std::to_string(s.window) +
                  ":" + std::to_string(s.sql.size());
        body += s.sql;
    }
    header += images.empty() ? "" : "\n";
}

std::vector<ImageStep> decode_images(const std::vector<std::vector<uint64_t>>& heads,
                                     const std::string& text, std::size_t& pos) {
    std::vector<ImageStep> out;
    for (const auto& t : heads) {
        if (t[2] != 0) {
            malformed();
        }
        out.push_back(
            {static_cast<std::size_t>(t[0]), static_cast<int>(t[1]), take(text, pos, t[3])});
    }
    return out;
}

}  // namespace

std::string encode_program(const DeltaProgram& p) {
    std::string header, body;
    encode_images(p.images, kImages, header, body);
    for (std::size_t i = 0; i < p.branches.size(); i++) {
        const Branch& b = p.branches[i];
        header += (i ? "," : kBranches) + std::to_string(b.old_sources) + ":" +
                  std::to_string(b.new_sources) + ":" +
                  (b.delta_sources ? std::to_string(b.delta_sources) + ":" : "") +
                  std::to_string(b.sql.size());
        body += b.sql;
    }
    header += p.branches.empty() ? "" : "\n";
    if (!p.full_query.empty()) {
        for (const std::string& a : p.full_aux) {
            if (!plain_identifier(a)) {
                throw Error(sqlstate::kInternalError, "auxiliary column name \"" + a + "\"");
            }
        }
        header += kFull + std::to_string(p.full_query.size()) + ":" + join(p.full_aux, ",") + "\n";
        body += p.full_query;
    }
    if (!p.fallback.empty()) {
        header += kFallback + std::to_string(p.fallback.size()) + "\n";
        body += p.fallback;
    }
    encode_images(p.fallback_images, kFallbackImages, header, body);
    for (std::size_t i = 0; i < p.kept.size(); i++) {
        const KeptStep& k = p.kept[i];
        header += (i ? "," : kKept) + std::to_string(k.source) + ":" +
                  std::to_string(k.table.size()) + ":" + std::to_string(k.rebuild.size()) + ":" +
                  std::to_string(k.apply.size());
        body += k.table + k.rebuild + k.apply;
    }
    header += p.kept.empty() ? "" : "\n";
    return header + body + p.main;
}

DeltaProgram decode_program(const std::string& text) {
    DeltaProgram p;
    std::size_t pos = 0;
    std::vector<std::vector<uint64_t>> images, branches;
    if (text.compare(0, kImages.size(), kImages) == 0) {
        pos = kImages.size();
        images = tuples(text, pos, 4);
    }
    if (text.compare(pos, kBranches.size(), kBranches) == 0) {
        pos += kBranches.size();
        branches = tuples(text, pos, 4);
    }
    uint64_t full_len = 0;
    if (text.compare(pos, kFull.size(), kFull) == 0) {
        pos += kFull.size();
        char sep = 0;
        full_len = number(text, pos, ":", sep);
        std::size_t end = text.find('\n', pos);
        if (end == std::string::npos) {
            malformed();
        }
        std::string names = text.substr(pos, end - pos);
        pos = end + 1;
        for (std::size_t at = 0; !names.empty() && at <= names.size();) {
            std::size_t comma = std::min(names.find(',', at), names.size());
            p.full_aux.push_back(names.substr(at, comma - at));
            if (!plain_identifier(p.full_aux.back())) {
                malformed();
            }
            at = comma + 1;
        }
    }
    uint64_t fallback_len = 0;
    if (text.compare(pos, kFallback.size(), kFallback) == 0) {
        pos += kFallback.size();
        char sep = 0;
        fallback_len = number(text, pos, "\n", sep);
    }
    std::vector<std::vector<uint64_t>> fallback_images;
    if (text.compare(pos, kFallbackImages.size(), kFallbackImages) == 0) {
        pos += kFallbackImages.size();
        fallback_images = tuples(text, pos, 4);
    }
    std::vector<std::vector<uint64_t>> kept;
    if (text.compare(pos, kKept.size(), kKept) == 0) {
        pos += kKept.size();
        kept = tuples(text, pos, 4);
    }
    p.images = decode_images(images, text, pos);
    for (const auto& t : branches) {
        p.branches.push_back({t[0], t[1], take(text, pos, t[3]), t[2]});
    }
    p.full_query = take(text, pos, full_len);
    p.fallback = take(text, pos, fallback_len);
    p.fallback_images = decode_images(fallback_images, text, pos);
    for (const auto& t : kept) {
        KeptStep k;
        k.source = static_cast<std::size_t>(t[0]);
        k.table = take(text, pos, t[1]);
        k.rebuild = take(text, pos, t[2]);
        k.apply = take(text, pos, t[3]);
        p.kept.push_back(k);
    }
    p.main = text.substr(pos);
    return p;
}

std::string main_statement(const DeltaProgram& p, uint64_t has_old, uint64_t has_new) {
    if (p.branches.empty()) {
        return p.main;
    }
    std::vector<std::string> run;
    for (const Branch& b : p.branches) {
        if ((b.old_sources & ~has_old) == 0 && (b.new_sources & ~has_new) == 0 &&
            (b.delta_sources & ~(has_old | has_new)) == 0) {
            run.push_back("(" + b.sql + ")");
        }
    }
    std::size_t at = p.main.find(kBranchesMarker);
    if (at == std::string::npos) {
        malformed();
    }
    if (run.empty()) {
        return "";
    }
    return p.main.substr(0, at) + join(run, " UNION ALL ") +
           p.main.substr(at + kBranchesMarker.size());
}

}  // namespace pgt::diff
