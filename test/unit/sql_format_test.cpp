// Unit tests of the SQL formatting explain_st prints (src/core/sql/format):
// clauses on their own lines, indented by depth, and nothing but
// whitespace outside literals changed.
#include "core/sql/format.hpp"

#include <gtest/gtest.h>

#include <string>

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

TEST(SqlFormat, a_program_prints_each_section_with_what_it_is) {
    pgt::diff::DeltaProgram p;
    p.images.push_back({0, 1, "SELECT true FROM b WHERE x > $6"});
    p.branches.push_back({1, 0, "SELECT k FROM i", 0});
    p.main = "SELECT 1 FROM (" + pgt::diff::kBranchesMarker + ") z";
    std::string f = format_program(pgt::diff::encode_program(p));
    EXPECT_NE(f.find("-- change images of source 0 (window 1)\nSELECT true\nFROM b\nWHERE x > $6"),
              std::string::npos)
        << f;
    EXPECT_NE(f.find("-- branch 1 (before-images of 0; after-images of -; signed images of -)"),
              std::string::npos)
        << f;
    EXPECT_NE(f.find("-- apply (the branches that can find rows replace"), std::string::npos) << f;
}

TEST(SqlFormat, a_plain_program_is_its_one_statement) {
    EXPECT_EQ(format_program(R"({"main": "SELECT 1 FROM t"})"), "-- apply\nSELECT 1\nFROM t");
}

}  // namespace
