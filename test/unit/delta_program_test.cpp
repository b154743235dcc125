// Unit tests of the delta program's JSON form (src/core/diff/program).
// Invariant: decode(encode(p)) == p, whatever the statements contain.
#include <gtest/gtest.h>

#include <vector>

#include "core/diff/program.hpp"
#include "core/error.hpp"

namespace {

using pgt::diff::decode_program;
using pgt::diff::DeltaProgram;
using pgt::diff::encode_program;

void expect_same(const std::vector<pgt::diff::ImageStep>& got,
                 const std::vector<pgt::diff::ImageStep>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); i++) {
        EXPECT_EQ(got[i].source, want[i].source);
        EXPECT_EQ(got[i].window, want[i].window);
        EXPECT_EQ(got[i].sql, want[i].sql);
    }
}

void expect_same(const std::vector<pgt::diff::Branch>& got,
                 const std::vector<pgt::diff::Branch>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); i++) {
        EXPECT_EQ(got[i].old_sources, want[i].old_sources);
        EXPECT_EQ(got[i].new_sources, want[i].new_sources);
        EXPECT_EQ(got[i].delta_sources, want[i].delta_sources);
        EXPECT_EQ(got[i].sql, want[i].sql);
    }
}

TEST(DeltaProgram, a_lone_statement_is_an_object_with_main_only) {
    DeltaProgram p = pgt::diff::one_statement("WITH x AS (SELECT '\"1\"\n') SELECT 1, 2, 3");
    EXPECT_EQ(encode_program(p), R"({"main": "WITH x AS (SELECT '\"1\"\u000a') SELECT 1, 2, 3"})");
    DeltaProgram back = decode_program(encode_program(p));
    EXPECT_TRUE(back.images.empty());
    EXPECT_EQ(back.main, p.main);
}

TEST(DeltaProgram, members_are_read_in_any_order_and_spacing_as_jsonb_returns_them) {
    // jsonb sorts keys by length, then bytes, and escapes newlines as \n.
    DeltaProgram back = decode_program(
        R"({"kept": [{"apply": "a", "table": "t", "source": 2, "rebuild": ""}], "main": "M\n", )"
        R"("branches": [{"new": 2, "old": 1, "sql": "B", "delta": 0}]})");
    EXPECT_EQ(back.main, "M\n");
    ASSERT_EQ(back.branches.size(), 1u);
    EXPECT_EQ(back.branches[0].old_sources, 1u);
    EXPECT_EQ(back.branches[0].new_sources, 2u);
    ASSERT_EQ(back.kept.size(), 1u);
    EXPECT_EQ(back.kept[0].source, 2u);
    EXPECT_EQ(back.kept[0].table, "t");
}

TEST(DeltaProgram, image_steps_round_trip_with_any_content) {
    DeltaProgram p;
    p.images.push_back({0, 2, "SELECT '-- pgt:images 9:9:9\n', ',' FROM t"});
    p.images.push_back({1, 0, ""});
    p.images.push_back({12, 11, "SELECT 'é\n\n' AS x"});
    p.branches.push_back({1, 0, "SELECT 1 AS k -- pgt:branches 1:1:1\n"});
    p.branches.push_back({0, 6, "SELECT ''"});
    p.main = "SELECT 1, 0, 0 -- pgt:images 1:1:1";
    DeltaProgram back = decode_program(encode_program(p));
    expect_same(back.branches, p.branches);
    expect_same(back.images, p.images);
    EXPECT_EQ(back.main, p.main);
}

TEST(DeltaProgram, a_fallback_statement_round_trips_with_or_without_a_full_query) {
    DeltaProgram p;
    p.full_query = "SELECT 1 AS a, 2 AS __pgt_count -- pgt:fallback 9\n";
    p.full_aux = {"__pgt_count"};
    p.fallback = "WITH src AS (SELECT 'net\n-- pgt:fallback 1\n') SELECT 1, 0, 0";
    p.main = "WITH src AS (SELECT 'all') SELECT 1, 0, 0";
    DeltaProgram back = decode_program(encode_program(p));
    EXPECT_EQ(back.full_query, p.full_query);
    EXPECT_EQ(back.full_aux, p.full_aux);
    EXPECT_EQ(back.fallback, p.fallback);
    EXPECT_EQ(back.main, p.main);
    DeltaProgram lone;
    lone.fallback = "SELECT 2, 0, 0";
    lone.main = "SELECT 1, 0, 0";
    DeltaProgram lone_back = decode_program(encode_program(lone));
    EXPECT_TRUE(lone_back.full_query.empty());
    EXPECT_EQ(lone_back.fallback, lone.fallback);
    EXPECT_EQ(lone_back.main, lone.main);
    EXPECT_TRUE(decode_program(R"({"main": "SELECT 1, 0, 0"})").fallback.empty());
}

TEST(DeltaProgram, only_branches_whose_images_have_rows_run) {
    DeltaProgram p;
    p.branches.push_back({0b01, 0, "A"});
    p.branches.push_back({0, 0b10, "B"});
    p.branches.push_back({0b11, 0, "C"});
    p.main = "WITH keys AS (" + pgt::diff::kBranchesMarker + ") SELECT '" +
             pgt::diff::kBranchesMarker + "'";
    EXPECT_EQ(pgt::diff::main_statement(p, 0b01, 0b10),
              "WITH keys AS ((A) UNION ALL (B)) SELECT '" + pgt::diff::kBranchesMarker + "'");
    EXPECT_EQ(pgt::diff::main_statement(p, 0b11, 0),
              "WITH keys AS ((A) UNION ALL (C)) SELECT '" + pgt::diff::kBranchesMarker + "'");
    EXPECT_EQ(pgt::diff::main_statement(p, 0b10, 0b01), "") << "no branch can find a row";
}

TEST(DeltaProgram, signed_image_branches_and_fallback_images_round_trip) {
    DeltaProgram p;
    p.images.push_back({0, 0, "SELECT 'all'"});
    p.images.push_back({1, 1, "SELECT 'all -- pgt:fallback_images 1:1:1\n'"});
    p.branches.push_back({0, 0, "D0", 0b01});
    p.branches.push_back({0b10, 0, "O1", 0});
    p.branches.push_back({0b01, 0, "D1O0", 0b10});
    p.fallback_images.push_back({0, 0, "SELECT 'netted'"});
    p.fallback_images.push_back({1, 1, ""});
    p.main = "WITH d AS (" + pgt::diff::kBranchesMarker + ") SELECT 1, 0, 0";
    std::string text = encode_program(p);
    EXPECT_NE(text.find(R"("branches": [{"old": 0, "new": 0, "delta": 1, "sql": "D0"}, )"),
              std::string::npos)
        << text;
    DeltaProgram back = decode_program(text);
    expect_same(back.branches, p.branches);
    expect_same(back.images, p.images);
    expect_same(back.fallback_images, p.fallback_images);
    EXPECT_EQ(back.main, p.main);
    // A signed branch runs when its table has images of either kind.
    EXPECT_EQ(pgt::diff::main_statement(p, 0, 0b01), "WITH d AS ((D0)) SELECT 1, 0, 0");
    EXPECT_EQ(pgt::diff::main_statement(p, 0b11, 0),
              "WITH d AS ((D0) UNION ALL (O1) UNION ALL (D1O0)) SELECT 1, 0, 0");
    EXPECT_EQ(pgt::diff::main_statement(p, 0b01, 0), "WITH d AS ((D0)) SELECT 1, 0, 0");
    EXPECT_EQ(pgt::diff::main_statement(p, 0b10, 0), "WITH d AS ((O1)) SELECT 1, 0, 0");
}

TEST(DeltaProgram, kept_copy_steps_round_trip_after_everything_else) {
    DeltaProgram p;
    p.images.push_back({0, 0, "SELECT 1"});
    p.branches.push_back({0, 0, "D0", 0b01});
    p.fallback_images.push_back({0, 0, "SELECT 'netted -- pgt:kept 1:1:1:1\n'"});
    p.kept.push_back({0, "s.\"c 0\"", "INSERT INTO s.\"c 0\" SELECT 1", "WITH d AS (SELECT 1)"});
    p.kept.push_back({3, "s.c3", "", "x"});
    p.main = "WITH d AS (" + pgt::diff::kBranchesMarker + ") SELECT 1, 0, 0";
    std::string text = encode_program(p);
    EXPECT_NE(text.find(R"("kept": [{"source": 0, "table": "s.\"c 0\"", )"), std::string::npos)
        << text;
    DeltaProgram back = decode_program(text);
    ASSERT_EQ(back.kept.size(), 2u);
    for (std::size_t i = 0; i < 2; i++) {
        EXPECT_EQ(back.kept[i].source, p.kept[i].source);
        EXPECT_EQ(back.kept[i].table, p.kept[i].table);
        EXPECT_EQ(back.kept[i].rebuild, p.kept[i].rebuild);
        EXPECT_EQ(back.kept[i].apply, p.kept[i].apply);
    }
    expect_same(back.fallback_images, p.fallback_images);
    EXPECT_EQ(back.main, p.main);
    DeltaProgram none;
    none.main = "SELECT 1";
    EXPECT_TRUE(decode_program(encode_program(none)).kept.empty());
}

TEST(DeltaProgram, a_key_table_statement_round_trips_and_is_absent_when_empty) {
    DeltaProgram p;
    p.main = "WITH d AS (" + pgt::diff::kBranchesMarker + ") SELECT 1, 0, 0";
    p.key_rows = "WITH __pgt_new_1 AS (SELECT '}' AS x) SELECT 1, 0, 0";
    p.key_source = 1;
    const std::string text = encode_program(p);
    EXPECT_NE(text.find(R"("key_rows": {"source": 1, "sql": "WITH __pgt_new_1)"), std::string::npos)
        << text;
    DeltaProgram back = decode_program(text);
    EXPECT_EQ(back.key_rows, p.key_rows);
    EXPECT_EQ(back.key_source, 1u);
    EXPECT_EQ(back.main, p.main);
    DeltaProgram none = pgt::diff::one_statement("SELECT 1");
    EXPECT_EQ(encode_program(none).find("key_rows"), std::string::npos);
    EXPECT_TRUE(decode_program(encode_program(none)).key_rows.empty());
}

TEST(DeltaProgram, the_full_query_and_auxiliary_columns_round_trip) {
    DeltaProgram p;
    p.images.push_back({0, 0, "SELECT 1"});
    p.branches.push_back({1, 0, "SELECT -1 AS w -- pgt:full 3:x\n"});
    p.full_query = "SELECT 'a\n-- pgt:full 1:y\n', count(*) AS __pgt_count FROM t";
    p.full_aux = {"__pgt_count", "__pgt_n1", "__pgt_sc2"};
    p.main = "WITH d AS (" + pgt::diff::kBranchesMarker + ") SELECT 1, 0, 0";
    DeltaProgram back = decode_program(encode_program(p));
    EXPECT_EQ(back.full_query, p.full_query);
    EXPECT_EQ(back.full_aux, p.full_aux);
    ASSERT_EQ(back.branches.size(), 1u);
    EXPECT_EQ(back.branches[0].sql, p.branches[0].sql);
    EXPECT_EQ(back.main, p.main);
    DeltaProgram lone;
    lone.full_query = "SELECT 1 AS a, 2 AS __pgt_count";
    lone.full_aux = {"__pgt_count"};
    lone.main = "SELECT 1, 0, 0";
    DeltaProgram lone_back = decode_program(encode_program(lone));
    EXPECT_EQ(lone_back.full_query, lone.full_query);
    EXPECT_EQ(lone_back.full_aux, lone.full_aux);
    EXPECT_EQ(lone_back.main, lone.main);
    DeltaProgram bad;
    bad.full_query = "SELECT 1";
    bad.full_aux = {"Bad Name"};
    EXPECT_THROW((void)encode_program(bad), pgt::Error) << "names are written unquoted";
}

TEST(DeltaProgram, a_malformed_program_is_an_internal_error) {
    for (const char* text :
         {"", "SELECT 1", "[]", R"({"images": []})", R"({"main": 1})", R"({"main": "x")",
          R"({"main": "x", "images": [{"source": 0, "sql": "a"}]})",
          R"({"main": "x", "branches": [{"old": -1, "new": 0, "delta": 0, "sql": "a"}]})",
          R"({"main": "x", "branches": {"old": 1}})",
          R"({"main": "x", "full_query": "q", "full_aux": ["A b"]})", R"({"main": "x"} trailing)",
          R"({"main": "\ud800"})"}) {
        try {
            (void)decode_program(text);
            ADD_FAILURE() << "accepted: " << text;
        } catch (const pgt::Error& e) {
            EXPECT_EQ(e.sqlstate(), "XX000") << text;
        }
    }
}

}  // namespace
