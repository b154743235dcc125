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

// Bytes of the UTF-8 character starting at s[i].
std::size_t char_bytes(const std::string& s, std::size_t i) {
    std::size_t j = i + 1;
    while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) {
        j++;
    }
    return j - i;
}

// A plain single-quoted literal ('...', not E'', U&'', B'' or X'') starts
// at line[i]: one that may be continued on the next line ('ab'<newline>'cd'
// is 'abcd' in SQL).
bool plain_literal_at(const std::string& line, std::size_t i) {
    return line[i] == '\'' && (i == 0 || (!word_char(line[i - 1]) && line[i - 1] != '&'));
}

// Where to cut the plain literal line[start, end) so that its first part
// and the quote that closes it fit within `room` characters, the line's
// first `used` being taken: a byte offset inside it, never between the
// two quotes of a doubled quote nor inside a UTF-8 character; 0 when no
// part fits.
std::size_t literal_cut(const std::string& line, std::size_t start, std::size_t end,
                        std::size_t used, std::size_t room) {
    std::size_t best = 0;
    std::size_t w = used + 1;  // through the opening quote
    for (std::size_t j = start + 1; j + 1 < end;) {
        if (w + 1 > room) {
            break;
        }
        if (j > start + 1) {
            best = j;
        }
        w += line[j] == '\'' ? 2 : 1;
        j += line[j] == '\'' ? 2 : char_bytes(line, j);
    }
    return best;
}

// One cut of a line too wide: the byte it is cut at (0: nowhere), where
// the rest resumes, and whether a literal is cut (then it is closed and
// reopened).
struct Cut {
    std::size_t at = 0;
    std::size_t next = 0;
    bool literal = false;
};

// Where to cut a line wider than `width` (its first `lead` characters are
// indentation): at the last space outside literals, quoted identifiers and
// comments before which it fits; inside a plain literal instead when the
// literal crosses the width and is wider than a continuation line (`more`
// characters taken), or when no space fits; when nothing fits, at the
// first space after the width.
Cut cut_of(const std::string& line, std::size_t lead, std::size_t more, std::size_t width) {
    Cut space, literal;
    std::size_t w = lead;  // characters before i
    std::size_t i = lead;
    while (i < line.size() && w <= width) {
        if (std::size_t end = opaque_end(line, i); end != i) {
            std::size_t after = w;
            for (std::size_t j = i; j < end; j += char_bytes(line, j)) {
                after++;
            }
            if (plain_literal_at(line, i)) {
                if (std::size_t at = literal_cut(line, i, end, w, width); at != 0) {
                    literal = {at, at, true};
                }
            }
            if (after > width && literal.at != 0 && (space.at == 0 || more + after - w > width)) {
                return literal;
            }
            w = after;
            i = end;
            continue;
        }
        if (line[i] == ' ' && i > lead) {
            space = {i, i + 1, false};
        }
        w++;
        i += char_bytes(line, i);
    }
    if (space.at != 0 || literal.at != 0) {
        return space.at != 0 ? space : literal;
    }
    while (i < line.size()) {
        if (std::size_t end = opaque_end(line, i); end != i) {
            i = end;
        } else if (line[i] == ' ') {
            return {i, i + 1, false};
        } else {
            i++;
        }
    }
    return {};
}

}  // namespace

std::string wrap_line(const std::string& line, std::size_t width) {
    std::size_t indent = 0;
    while (indent < line.size() && line[indent] == ' ') {
        indent++;
    }
    const std::string more(indent + 4, ' ');
    std::string out;
    std::string rest = line;
    std::size_t lead = indent;
    auto chars = [](const std::string& s) {
        std::size_t n = 0;
        for (std::size_t i = 0; i < s.size(); i += char_bytes(s, i)) {
            n++;
        }
        return n;
    };
    while (chars(rest) > width) {
        const Cut c = cut_of(rest, lead, more.size(), width);
        if (c.at == 0) {
            break;  // nothing to cut at: the line stays long
        }
        std::string head = rest.substr(0, c.at);
        if (!c.literal) {
            trim_right(head);
        }
        std::size_t from = c.next;
        while (!c.literal && from < rest.size() && rest[from] == ' ') {
            from++;
        }
        out += head + (c.literal ? "'\n" : "\n");
        rest = more + (c.literal ? "'" : "") + rest.substr(from);
        lead = more.size();
    }
    return out + rest;
}

std::string wrap_lines(const std::string& text, std::size_t width) {
    std::string out;
    std::size_t from = 0;
    while (from <= text.size()) {
        std::size_t nl = text.find('\n', from);
        const std::size_t to = nl == std::string::npos ? text.size() : nl;
        out += wrap_line(text.substr(from, to - from), width);
        if (nl == std::string::npos) {
            break;
        }
        out += '\n';
        from = nl + 1;
    }
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

// A node of the printed plan: what it is, its statement ("" none), and
// the steps under it.
struct PlanNode {
    std::string head;
    std::string sql;
    std::vector<PlanNode> children;
};

// Prints node under `prefix` ("+- " before a child that has a next
// sibling, "`- " before the last one; "|  " or "   " continues the line
// of the parent), its statement's lines under its head, each wrapped to
// kPlanWidth with the prefix counted.
void print_node(const PlanNode& n, const std::string& lead, const std::string& prefix,
                std::string& out) {
    out += (out.empty() ? "" : "\n") + lead + n.head;
    const std::string under = prefix + "  ";
    if (!n.sql.empty()) {
        std::string body = wrap_lines(format_statement(n.sql), kPlanWidth - under.size());
        std::size_t from = 0;
        while (from <= body.size()) {
            std::size_t nl = body.find('\n', from);
            const std::size_t to = nl == std::string::npos ? body.size() : nl;
            out += "\n" + under + body.substr(from, to - from);
            if (nl == std::string::npos) {
                break;
            }
            from = nl + 1;
        }
    }
    for (std::size_t c = 0; c < n.children.size(); c++) {
        const bool last = c + 1 == n.children.size();
        print_node(n.children[c], prefix + (last ? "`- " : "+- "), prefix + (last ? "   " : "|  "),
                   out);
    }
}

PlanNode image_node(const std::vector<diff::ImageStep>& steps, const std::string& head) {
    PlanNode n{head, "", {}};
    for (const diff::ImageStep& s : steps) {
        n.children.push_back({"source " + std::to_string(s.source) + " (window " +
                                  std::to_string(s.window) + "): " + sql::old_images(s.source) +
                                  ", " + sql::new_images(s.source) + ", " +
                                  sql::delta_images(s.source),
                              s.sql,
                              {}});
    }
    return n;
}

}  // namespace

std::string format_program(const std::string& program) {
    diff::DeltaProgram p = diff::decode_program(program);
    PlanNode root{"refresh: the steps below, in order", "", {}};
    if (!p.images.empty()) {
        root.children.push_back(
            image_node(p.images,
                       "change images: per source, the rows of its window, registered as its "
                       "before-images, after-images and signed images"));
    }
    if (!p.kept.empty()) {
        PlanNode kept{"kept copies: brought up to the refresh snapshot", "", {}};
        for (const diff::KeptStep& k : p.kept) {
            kept.children.push_back(
                {"kept copy " + k.table + " of source " + std::to_string(k.source),
                 "",
                 {{"rebuild (when invalid)", k.rebuild, {}},
                  {"apply the source's signed images", k.apply, {}}}});
        }
        root.children.push_back(kept);
    }
    if (!p.branches.empty()) {
        PlanNode branches{
            "branches: those whose image relations all have rows, joined by UNION "
            "ALL in place of " +
                diff::kBranchesMarker + " in apply",
            "",
            {}};
        for (std::size_t b = 0; b < p.branches.size(); b++) {
            const diff::Branch& br = p.branches[b];
            branches.children.push_back({"branch " + std::to_string(b + 1) + ": before-images of " +
                                             sources_of(br.old_sources) + "; after-images of " +
                                             sources_of(br.new_sources) + "; signed images of " +
                                             sources_of(br.delta_sources),
                                         br.sql,
                                         {}});
        }
        root.children.push_back(branches);
    }
    root.children.push_back({"apply: returns (inserted, deleted, updated)", p.main, {}});
    if (!p.key_rows.empty()) {
        root.children.push_back({"instead of the above, for a change of source " +
                                     std::to_string(p.key_source) +
                                     " alone: the rows of the keys it touched",
                                 p.key_rows,
                                 {}});
    }
    if (!p.fallback.empty()) {
        root.children.push_back(
            {"fallback: apply over netted images (when apply raises)", p.fallback, {}});
    }
    if (!p.fallback_images.empty()) {
        root.children.push_back(image_node(
            p.fallback_images,
            "fallback: netted images, registered instead of the change images when apply raises"));
    }
    if (!p.full_query.empty()) {
        root.children.push_back(
            {"FULL refresh query (fills the hidden aggregate state)", p.full_query, {}});
    }
    std::string out;
    print_node(root, "", "", out);
    return out;
}

}  // namespace pgt::sql
