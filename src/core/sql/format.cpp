// Formatting generated SQL for explain_st (see format.hpp).
// Invariant: every character inside a literal, quoted identifier or
// comment is copied unchanged; outside them only whitespace is changed.
#include "core/sql/format.hpp"

#include <cctype>
#include <cstddef>
#include <string>
#include <vector>

#include "core/diff/program.hpp"

namespace pgt::sql {

namespace {

// Clauses a line break goes before; a longer one first where one starts
// another. Starters open a statement at their depth; the others break
// only at a depth where a statement was opened (not inside f(x ORDER BY
// y), OVER (...), EXTRACT(... FROM ...)).
struct Clause {
    const char* word;
    bool starter;
};
constexpr Clause kClauses[] = {
    {"WITH RECURSIVE", true}, {"WITH", true},        {"SELECT", true},
    {"INSERT INTO", true},    {"DELETE FROM", true}, {"UPDATE", true},
    {"VALUES", true},         {"FROM", false},       {"WHERE", false},
    {"GROUP BY", false},      {"HAVING", false},     {"WINDOW", false},
    {"ORDER BY", false},      {"LIMIT", false},      {"OFFSET", false},
    {"UNION ALL", false},     {"UNION", false},      {"INTERSECT ALL", false},
    {"INTERSECT", false},     {"EXCEPT ALL", false}, {"EXCEPT", false},
    {"LEFT JOIN", false},     {"RIGHT JOIN", false}, {"FULL JOIN", false},
    {"CROSS JOIN", false},    {"JOIN", false},       {"ON CONFLICT", false},
    {"RETURNING", false},     {"SET", false},
};

bool word_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$';
}

// The clause starting at sql[i] on word boundaries, or nullptr. FROM
// after DISTINCT is the operator IS [NOT] DISTINCT FROM.
const Clause* clause_at(const std::string& sql, std::size_t i) {
    if ((i > 0 && word_char(sql[i - 1])) || (i >= 9 && sql.compare(i - 9, 9, "DISTINCT ") == 0)) {
        return nullptr;
    }
    for (const Clause& c : kClauses) {
        std::string w = c.word;
        if (sql.compare(i, w.size(), w) == 0 &&
            (i + w.size() == sql.size() || !word_char(sql[i + w.size()]))) {
            return &c;
        }
    }
    return nullptr;
}

// The end (one past) of the literal, quoted identifier or comment that
// starts at sql[i], or i when none does.
std::size_t opaque_end(const std::string& sql, std::size_t i) {
    const char c = sql[i];
    if (c == '\'' || c == '"') {
        bool escapes = c == '\'' && i > 0 && (sql[i - 1] == 'E' || sql[i - 1] == 'e') &&
                       (i < 2 || !word_char(sql[i - 2]));
        for (std::size_t j = i + 1; j < sql.size(); j++) {
            if (escapes && sql[j] == '\\') {
                j++;
            } else if (sql[j] == c) {
                if (j + 1 < sql.size() && sql[j + 1] == c) {
                    j++;  // doubled: part of the text
                } else {
                    return j + 1;
                }
            }
        }
        return sql.size();
    }
    if (sql.compare(i, 2, "--") == 0) {
        std::size_t nl = sql.find('\n', i);
        return nl == std::string::npos ? sql.size() : nl + 1;
    }
    if (sql.compare(i, 2, "/*") == 0) {
        std::size_t end = sql.find("*/", i + 2);
        return end == std::string::npos ? sql.size() : end + 2;
    }
    if (c == '$' && (i == 0 || !word_char(sql[i - 1]))) {
        std::size_t j = i + 1;
        while (j < sql.size() &&
               (std::isalpha(static_cast<unsigned char>(sql[j])) || sql[j] == '_')) {
            j++;
        }
        if (j < sql.size() && sql[j] == '$') {
            std::string tag = sql.substr(i, j - i + 1);
            std::size_t end = sql.find(tag, j + 1);
            return end == std::string::npos ? sql.size() : end + tag.size();
        }
    }
    return i;
}

void trim_right(std::string& s) {
    while (!s.empty() && s.back() == ' ') {
        s.pop_back();
    }
}

}  // namespace

std::string format_statement(const std::string& sql) {
    std::string out;
    std::vector<bool> opened{false};  // per depth: a statement was opened
    for (std::size_t i = 0; i < sql.size();) {
        const char c = sql[i];
        if (std::size_t end = opaque_end(sql, i); end != i) {
            out += sql.substr(i, end - i);
            i = end;
            continue;
        }
        if (std::isspace(static_cast<unsigned char>(c))) {
            if (!out.empty() && out.back() != ' ' && out.back() != '\n' && out.back() != '(') {
                out += ' ';
            }
            i++;
            continue;
        }
        if (c == '(' || c == ')') {
            if (c == '(') {
                opened.push_back(false);
            } else if (opened.size() > 1) {
                opened.pop_back();
                trim_right(out);
            }
            out += c;
            i++;
            continue;
        }
        const Clause* k = clause_at(sql, i);
        if (k != nullptr && (k->starter || opened.back())) {
            opened.back() = true;
            trim_right(out);
            if (!out.empty() && out.back() != '(') {
                out += "\n" + std::string(2 * (opened.size() - 1), ' ');
            }
            out += k->word;
            i += std::string(k->word).size();
            continue;
        }
        out += c;
        i++;
    }
    trim_right(out);
    return out;
}

namespace {

std::string sources_of(uint64_t mask) {
    std::string out;
    for (int i = 0; i < 64; i++) {
        if ((mask >> i) & 1) {
            out += (out.empty() ? "" : ", ") + std::to_string(i);
        }
    }
    return out.empty() ? "-" : out;
}

void section(std::string& out, const std::string& head, const std::string& sql) {
    out += (out.empty() ? "" : "\n\n") + std::string("-- ") + head + "\n" + format_statement(sql);
}

void image_sections(std::string& out, const std::vector<diff::ImageStep>& steps,
                    const std::string& what) {
    for (const diff::ImageStep& s : steps) {
        section(out,
                what + " of source " + std::to_string(s.source) + " (window " +
                    std::to_string(s.window) + ")",
                s.sql);
    }
}

}  // namespace

std::string format_program(const std::string& program) {
    diff::DeltaProgram p = diff::decode_program(program);
    std::string out;
    image_sections(out, p.images, "change images");
    for (const diff::KeptStep& k : p.kept) {
        section(out,
                "kept copy " + k.table + " of source " + std::to_string(k.source) +
                    ": rebuild (when invalid)",
                k.rebuild);
        section(out, "kept copy " + k.table + ": apply the change", k.apply);
    }
    for (std::size_t b = 0; b < p.branches.size(); b++) {
        const diff::Branch& br = p.branches[b];
        section(out,
                "branch " + std::to_string(b + 1) + " (before-images of " +
                    sources_of(br.old_sources) + "; after-images of " + sources_of(br.new_sources) +
                    "; signed images of " + sources_of(br.delta_sources) + ")",
                br.sql);
    }
    section(out,
            p.branches.empty()
                ? std::string("apply")
                : "apply (the branches that can find rows replace " + diff::kBranchesMarker + ")",
            p.main);
    if (!p.key_rows.empty()) {
        section(out,
                "instead of the above, for a change of source " + std::to_string(p.key_source) +
                    " alone: the rows of the keys it touched",
                p.key_rows);
    }
    if (!p.fallback.empty()) {
        section(out, "fallback: apply over netted images (when apply raises)", p.fallback);
    }
    image_sections(out, p.fallback_images, "fallback: netted images");
    if (!p.full_query.empty()) {
        section(out, "FULL refresh query (fills the hidden aggregate state)", p.full_query);
    }
    return out;
}

}  // namespace pgt::sql
