// Unit tests of core's JSON reader and string escaping (src/core/sql/json).
#include "core/sql/json.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>

#include "core/error.hpp"

namespace {

using pgt::sql::append_json_string;
using pgt::sql::JsonValue;
using pgt::sql::parse_json;

TEST(SqlJson, values_of_every_kind_are_read) {
    JsonValue v = parse_json(R"( {"a": [1, true, false, null, "x"], "b": {}, "c": []} )");
    ASSERT_EQ(v.kind, JsonValue::Kind::kObject);
    const JsonValue* a = v.find("a");
    ASSERT_NE(a, nullptr);
    ASSERT_EQ(a->items.size(), 5u);
    EXPECT_EQ(a->items[0].number, 1u);
    EXPECT_TRUE(a->items[1].boolean);
    EXPECT_EQ(a->items[2].kind, JsonValue::Kind::kBool);
    EXPECT_FALSE(a->items[2].boolean);
    EXPECT_EQ(a->items[3].kind, JsonValue::Kind::kNull);
    EXPECT_EQ(a->items[4].string, "x");
    EXPECT_EQ(v.find("b")->kind, JsonValue::Kind::kObject);
    EXPECT_EQ(v.find("zz"), nullptr);
    EXPECT_EQ(parse_json("18446744073709551615").number, UINT64_MAX);
}

TEST(SqlJson, escapes_are_decoded_to_utf8) {
    EXPECT_EQ(parse_json(R"("\"\\\/\b\f\n\r\t\u0041\u00e9\u20ac\ud83d\ude00")").string,
              "\"\\/\b\f\n\r\tA\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    EXPECT_EQ(parse_json("\"caf\xc3\xa9\"").string, "caf\xc3\xa9");  // raw UTF-8 passes
}

TEST(SqlJson, malformed_text_is_an_internal_error) {
    for (const char* text :
         {"", "{", "[1,]", "{\"a\" 1}", "01", "1.5", "-1", "1e3", "18446744073709551616", "\"a",
          "\"\\x\"", "\"\\ud800\"", "\"\\udc00\"", "tru", "{\"a\": 1} x", "\"\x01\""}) {
        try {
            (void)parse_json(text);
            ADD_FAILURE() << "accepted: " << text;
        } catch (const pgt::Error& e) {
            EXPECT_EQ(e.sqlstate(), "XX000") << text;
        }
    }
}

TEST(SqlJson, deep_nesting_is_refused_not_a_stack_overflow) {
    EXPECT_THROW((void)parse_json(std::string(100000, '[')), pgt::Error);
}

RC_GTEST_PROP(SqlJson, any_string_escaped_reads_back_the_same, (const std::string& s)) {
    std::string text;
    append_json_string(text, s);
    RC_ASSERT(parse_json(text).string == s);
}

}  // namespace
