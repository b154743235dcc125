// Unit tests of the SQL formatting explain_st prints (src/core/sql/format):
// clauses on their own lines, indented by depth, and nothing but
// whitespace outside literals changed.
#include "core/sql/format.hpp"
#include "core/sql/quote.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/diff/program.hpp"

namespace {

using pgt::sql::format_program;
using pgt::sql::format_statement;

std::string without_spaces(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c != ' ' && c != '\n') {
            out += c;
        }
    }
    return out;
}

TEST(SqlFormat, clauses_start_lines_indented_by_depth) {
    EXPECT_EQ(format_statement("SELECT a, b FROM t WHERE a IN (SELECT x FROM u) ORDER BY a"),
              "SELECT a, b\nFROM t\nWHERE a IN (SELECT x\n  FROM u)\nORDER BY a");
}

TEST(SqlFormat, clause_words_inside_calls_and_literals_stay_put) {
    const std::string sql =
        "SELECT array_agg(x ORDER BY y), EXTRACT(year FROM d), 'a  FROM  b', \"WHERE\" "
        "FROM t WHERE a IS NOT DISTINCT FROM b";
    EXPECT_EQ(format_statement(sql),
              "SELECT array_agg(x ORDER BY y), EXTRACT(year FROM d), 'a  FROM  b', \"WHERE\"\n"
              "FROM t\nWHERE a IS NOT DISTINCT FROM b");
}

TEST(SqlFormat, only_whitespace_changes) {
    const std::string sql =
        "WITH c AS (SELECT 1 AS k)   INSERT INTO s.t (k) SELECT k FROM c LEFT JOIN d ON d.k = "
        "c.k UNION ALL SELECT 2 ON CONFLICT (k) DO UPDATE SET k = EXCLUDED.k RETURNING "
        "(xmax = 0)";
    std::string f = format_statement(sql);
    EXPECT_EQ(without_spaces(f), without_spaces(sql));
    EXPECT_NE(f.find("\nLEFT JOIN d"), std::string::npos) << f;
    EXPECT_NE(f.find("\nON CONFLICT (k) DO\nUPDATE\nSET"), std::string::npos) << f;
}

// The lines of text.
std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::size_t from = 0;
    for (std::size_t nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1) {
        out.push_back(text.substr(from, nl - from));
    }
    out.push_back(text.substr(from));
    return out;
}

std::size_t widest(const std::string& text) {
    std::size_t w = 0;
    for (const std::string& l : lines_of(text)) {
        w = std::max(w, l.size());
    }
    return w;
}

TEST(SqlFormat, a_wide_line_is_cut_at_spaces_outside_literals) {
    std::string line = "  WHERE (";
    for (int i = 0; i < 40; i++) {
        line += "t.c" + std::to_string(i) + " = 'a b c' AND ";
    }
    line += "true)";
    const std::string w = pgt::sql::wrap_line(line, 80);
    EXPECT_LE(widest(w), 80U) << w;
    EXPECT_EQ(without_spaces(w), without_spaces(line));
    for (const std::string& l : lines_of(w)) {
        EXPECT_EQ(std::count(l.begin(), l.end(), '\'') % 2, 0) << "a literal was cut: " << l;
    }
    EXPECT_EQ(lines_of(w).at(1).find_first_not_of(' '), 6U) << "continuations indented 4 more";
    EXPECT_EQ(pgt::sql::wrap_line("SELECT 1", 80), "SELECT 1");
}

// Wrapped text back as one line: each continued literal (closing quote,
// newline, indentation, quote) joined, each other break a space again.
std::string unwrapped(const std::string& w) {
    std::string back;
    for (std::size_t i = 0; i < w.size(); i++) {
        if (w[i] == '\n') {
            std::size_t j = i + 1;
            while (j < w.size() && w[j] == ' ') {
                j++;
            }
            const bool literal = !back.empty() && back.back() == '\'' && j < w.size() &&
                                 w[j] == '\'' && w.compare(j + 1, 1, ":") != 0;
            if (literal) {
                back.pop_back();
            } else {
                back += ' ';
            }
            i = literal ? j : j - 1;
            continue;
        }
        back += w[i];
    }
    return back;
}

// Characters of a UTF-8 line.
std::size_t chars(const std::string& l) {
    return static_cast<std::size_t>(
        std::count_if(l.begin(), l.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

TEST(SqlFormat, a_literal_wider_than_a_line_continues_as_sql_joins_it) {
    // 'ab' followed by a newline and 'cd' is the literal 'abcd'; a doubled
    // quote and a UTF-8 character are never cut, nor a space dropped.
    std::string value;
    for (int i = 0; i < 60; i++) {
        value += i % 7 == 0 ? "''" : (i % 5 == 0 ? "\xc3\xa9" : (i % 3 == 0 ? " " : "xy"));
    }
    for (const std::string& line : {"SELECT '" + value + "'::text AS v",
                                    "SELECT f('" + value + "'::text),g('" + value + "')"}) {
        const std::string w = pgt::sql::wrap_line(line, 30);
        for (const std::string& l : lines_of(w)) {
            EXPECT_LE(chars(l), 30U) << w;
        }
        EXPECT_EQ(unwrapped(w), line) << w;
        EXPECT_GT(lines_of(w).size(), 3U);
    }
}

TEST(SqlFormat, what_cannot_be_cut_stays_whole) {
    const std::string e = "SELECT E'" + std::string(50, 'x') + "\\n'";
    EXPECT_EQ(pgt::sql::wrap_line(e, 20), "SELECT\n    E'" + std::string(50, 'x') + "\\n'");
    const std::string id = "\"" + std::string(40, 'q') + "\"";
    EXPECT_EQ(pgt::sql::wrap_line(id, 20), id);
}

TEST(SqlFormat, a_program_prints_as_a_tree_of_its_steps) {
    pgt::diff::DeltaProgram p;
    p.images.push_back({0, 1, "SELECT true FROM b WHERE x > $6"});
    p.branches.push_back({1, 0, "SELECT k FROM i", 0});
    p.main = "SELECT 1 FROM (" + pgt::diff::kBranchesMarker + ") z WHERE " + std::string(300, 'a') +
             " > 'b'";
    std::string f = format_program(pgt::diff::encode_program(p));
    EXPECT_EQ(f.rfind("refresh: the steps below, in order\n+- change images:", 0), 0U) << f;
    EXPECT_NE(f.find("|  `- source 0 (window 1): __pgt_old_0, __pgt_new_0, __pgt_delta_0\n"
                     "|       SELECT true\n|       FROM b\n|       WHERE x > $6\n"),
              std::string::npos)
        << f;
    EXPECT_NE(f.find("|  `- branch 1: before-images of 0; after-images of -; signed images of -\n"
                     "|       SELECT k\n"),
              std::string::npos)
        << f;
    EXPECT_NE(f.find("`- apply: returns (inserted, deleted, updated)\n     SELECT 1\n"),
              std::string::npos)
        << f;
    // The one word wider than a line stays whole; every other line fits.
    for (const std::string& l : lines_of(f)) {
        if (l.find(std::string(300, 'a')) == std::string::npos) {
            EXPECT_LE(l.size(), pgt::sql::kPlanWidth) << l;
        }
    }
}

TEST(SqlFormat, a_plain_program_is_its_one_statement) {
    EXPECT_EQ(format_program(R"({"main": "SELECT 1 FROM t"})"),
              "refresh: the steps below, in order\n`- apply: returns (inserted, deleted, "
              "updated)\n     SELECT 1\n     FROM t");
}

}  // namespace

namespace {

// The comment before our statements: a name cannot end it (nor open a
// nested one, which PostgreSQL would expect closed).
TEST(StatementTag, a_name_cannot_close_or_nest_the_comment) {
    EXPECT_EQ(pgt::sql::statement_tag("refresh of public.st"),
              "/* pg_trickle: refresh of public.st */ ");
    const std::string t = pgt::sql::statement_tag("refresh of public.\"a*/b/*c\"");
    EXPECT_EQ(t, "/* pg_trickle: refresh of public.\"a_/b/_c\" */ ");
    EXPECT_EQ(t.find("*/"), t.size() - 3);
    EXPECT_EQ(t.find("/*", 1), std::string::npos);
}

}  // namespace
