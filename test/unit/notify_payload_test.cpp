// Unit tests of change-notification payloads (src/core/notify): exact JSON,
// identifier quoting, escaping and truncation below the NOTIFY limit.
// Invariant: every payload a test builds is checked to be < its limit.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/notify/payload.hpp"
#include "core/sql/json.hpp"
#include "core/sql/quote.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace {

using pgt::notify::build_payload;
using pgt::notify::ChangeEvent;
using pgt::notify::Op;
using pgt::sql::quote_identifier;

ChangeEvent docs_event(Op op, std::uint64_t seq) {
    ChangeEvent ev;
    ev.schema = "public";
    ev.table = "docs";
    ev.op = op;
    ev.seq = seq;
    ev.key_names = {"id"};
    ev.key_json = {"1"};
    return ev;
}

std::string checked_build(const ChangeEvent& ev, std::size_t limit = pgt::notify::kPayloadLimit) {
    std::string p = build_payload(ev, limit);
    EXPECT_LT(p.size(), limit);
    return p;
}

std::string json_of(std::string_view s) {
    std::string out;
    pgt::sql::append_json_string(out, s);
    return out;
}

TEST(NotifyPayload, insert_has_table_op_seq_key_and_no_columns) {
    EXPECT_EQ(checked_build(docs_event(Op::kInsert, 1)),
              R"({"table":"public.docs","op":"INSERT","seq":1,"key":{"id":1}})");
}

TEST(NotifyPayload, minimal_has_table_op_and_seq_only) {
    ChangeEvent ev = docs_event(Op::kUpdate, 9);
    ev.key_changed = true;
    ev.old_key_json = {"2"};
    ev.changed_columns = {"id", "secret"};
    ev.minimal = true;
    EXPECT_EQ(checked_build(ev), R"({"table":"public.docs","op":"UPDATE","seq":9})");
}

TEST(NotifyPayload, resync_has_a_reason_and_no_key_even_when_minimal) {
    ChangeEvent ev;
    ev.schema = "public";
    ev.table = "st";
    ev.op = Op::kResync;
    ev.seq = 3;
    ev.reason = "defining query \"replaced\"";
    EXPECT_EQ(
        checked_build(ev),
        R"({"table":"public.st","op":"RESYNC","seq":3,"reason":"defining query \"replaced\""})");
    ev.minimal = true;
    EXPECT_EQ(
        checked_build(ev),
        R"({"table":"public.st","op":"RESYNC","seq":3,"reason":"defining query \"replaced\""})");
    const std::string long_reason(9000, 'r');
    ev.reason = long_reason;
    EXPECT_EQ(checked_build(ev), R"({"table":"public.st","op":"RESYNC","seq":3,"truncated":true})");
    ev.reason = "";
    ev.key_names = {"id"};
    ev.key_json = {"1"};
    EXPECT_THROW(build_payload(ev), pgt::Error);
    ChangeEvent row = docs_event(Op::kDelete, 4);
    row.reason = "why";
    EXPECT_THROW(build_payload(row), pgt::Error);
}

TEST(NotifyPayload, delete_has_key_and_no_columns) {
    EXPECT_EQ(checked_build(docs_event(Op::kDelete, 42)),
              R"({"table":"public.docs","op":"DELETE","seq":42,"key":{"id":1}})");
}

TEST(NotifyPayload, update_lists_changed_column_names) {
    ChangeEvent ev = docs_event(Op::kUpdate, 17);
    ev.changed_columns = {"doc", "Title"};
    EXPECT_EQ(
        checked_build(ev),
        R"({"table":"public.docs","op":"UPDATE","seq":17,"key":{"id":1},"columns":["doc","Title"]})");
}

TEST(NotifyPayload, update_with_no_changed_columns_has_empty_list) {
    ChangeEvent ev = docs_event(Op::kUpdate, 3);
    ev.key_changed = true;
    ev.old_key_json = {"2"};
    EXPECT_EQ(
        checked_build(ev),
        R"({"table":"public.docs","op":"UPDATE","seq":3,"key":{"id":1},"old_key":{"id":2},"columns":[]})");
}

TEST(NotifyPayload, key_mixes_numbers_strings_and_null_in_argument_order) {
    ChangeEvent ev = docs_event(Op::kInsert, 5);
    ev.key_names = {"a", "b", "c", "d"};
    ev.key_json = {"12.50", R"("a\"b")", std::nullopt, "-3"};
    EXPECT_EQ(
        checked_build(ev),
        R"({"table":"public.docs","op":"INSERT","seq":5,"key":{"a":12.50,"b":"a\"b","c":null,"d":-3}})");
}

TEST(NotifyPayload, old_key_only_when_update_changed_the_key) {
    ChangeEvent ev = docs_event(Op::kUpdate, 9);
    ev.old_key_json = {"7"};
    ev.changed_columns = {"doc"};
    EXPECT_EQ(checked_build(ev).find("old_key"), std::string::npos);
    ev.key_changed = true;
    EXPECT_EQ(
        checked_build(ev),
        R"({"table":"public.docs","op":"UPDATE","seq":9,"key":{"id":1},"old_key":{"id":7},"columns":["doc"]})");
}

TEST(NotifyPayload, key_changed_or_columns_on_insert_is_internal_error) {
    ChangeEvent ev = docs_event(Op::kInsert, 1);
    ev.changed_columns = {"doc"};
    try {
        build_payload(ev);
        FAIL() << "expected pgt::Error";
    } catch (const pgt::Error& e) {
        EXPECT_EQ(e.sqlstate(), "XX000");
    }
}

TEST(NotifyPayload, key_names_arity_mismatch_is_internal_error) {
    ChangeEvent ev = docs_event(Op::kInsert, 1);
    ev.key_names = {"id", "extra"};
    EXPECT_THROW(build_payload(ev), pgt::Error);
}

TEST(NotifyPayload, key_names_are_json_escaped) {
    ChangeEvent ev = docs_event(Op::kDelete, 1);
    ev.key_names = {"Odd \"Name\""};
    EXPECT_EQ(checked_build(ev),
              R"({"table":"public.docs","op":"DELETE","seq":1,"key":{"Odd \"Name\"":1}})");
}

TEST(NotifyPayload, old_key_arity_mismatch_is_internal_error) {
    ChangeEvent ev = docs_event(Op::kUpdate, 1);
    ev.key_changed = true;
    ev.old_key_json = {"1", "2"};
    EXPECT_THROW(build_payload(ev), pgt::Error);
}

TEST(QuoteIdentifier, lower_case_identifiers_stay_unquoted) {
    EXPECT_EQ(quote_identifier("docs"), "docs");
    EXPECT_EQ(quote_identifier("_t1_x"), "_t1_x");
}

TEST(QuoteIdentifier, mixed_case_space_digit_start_and_empty_are_quoted) {
    EXPECT_EQ(quote_identifier("Docs"), R"("Docs")");
    EXPECT_EQ(quote_identifier("Odd Name"), R"("Odd Name")");
    EXPECT_EQ(quote_identifier("1abc"), R"("1abc")");
    EXPECT_EQ(quote_identifier(""), R"("")");
    EXPECT_EQ(quote_identifier("café"), "\"café\"");
}

TEST(QuoteIdentifier, keywords_are_quoted) {
    for (const char* kw : {"select", "table", "from", "where", "user", "order", "group", "left"}) {
        EXPECT_EQ(quote_identifier(kw), std::string("\"") + kw + "\"") << kw;
    }
    EXPECT_EQ(quote_identifier("selects"), "selects");
    EXPECT_EQ(quote_identifier("name"), "name");  // unreserved keyword
    // Column-name keywords are quoted too, as PostgreSQL's quote_identifier does.
    for (const char* kw : {"int", "values", "between", "time", "position"}) {
        EXPECT_EQ(quote_identifier(kw), std::string("\"") + kw + "\"") << kw;
    }
}

TEST(QuoteIdentifier, embedded_quote_is_doubled) {
    EXPECT_EQ(quote_identifier(R"(a"b)"), R"("a""b")");
}

TEST(NotifyPayload, table_parts_are_quoted_then_json_escaped) {
    ChangeEvent ev = docs_event(Op::kDelete, 1);
    ev.schema = "My Schema";
    ev.table = R"(we"ird)";
    EXPECT_EQ(checked_build(ev),
              R"({"table":"\"My Schema\".\"we\"\"ird\"","op":"DELETE","seq":1,"key":{"id":1}})");
    ev.schema = "public";
    ev.table = "order";
    EXPECT_EQ(checked_build(ev),
              R"({"table":"public.\"order\"","op":"DELETE","seq":1,"key":{"id":1}})");
}

TEST(NotifyPayload, pre_quoted_names_are_used_verbatim) {
    ChangeEvent ev = docs_event(Op::kDelete, 1);
    ev.schema = "public";
    ev.table = R"("Odd Name")";
    ev.names_quoted = true;
    EXPECT_EQ(checked_build(ev),
              R"({"table":"public.\"Odd Name\"","op":"DELETE","seq":1,"key":{"id":1}})");
}

TEST(NotifyPayload, empty_schema_gives_unqualified_table) {
    ChangeEvent ev = docs_event(Op::kDelete, 1);
    ev.schema = "";
    EXPECT_EQ(checked_build(ev), R"({"table":"docs","op":"DELETE","seq":1,"key":{"id":1}})");
}

TEST(JsonEscape, quotes_and_backslashes_are_escaped) {
    EXPECT_EQ(json_of(R"(a"b\c)"), R"("a\"b\\c")");
}

TEST(JsonEscape, every_control_byte_is_u00xx) {
    for (int b = 0; b < 0x20; ++b) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "%04x", b);
        EXPECT_EQ(json_of(std::string(1, static_cast<char>(b))), std::string("\"\\u") + hex + "\"")
            << b;
    }
    EXPECT_EQ(json_of("\x7f"), "\"\x7f\"");
}

TEST(JsonEscape, utf8_passes_through) {
    EXPECT_EQ(json_of("žluť 日本 😀"), "\"žluť 日本 😀\"");
}

TEST(NotifyPayload, column_names_are_json_escaped) {
    ChangeEvent ev = docs_event(Op::kUpdate, 2);
    ev.changed_columns = {"a\"b", "c\\d", "e\nf", "ü"};
    EXPECT_EQ(
        checked_build(ev),
        R"({"table":"public.docs","op":"UPDATE","seq":2,"key":{"id":1},"columns":["a\"b","c\\d","e\u000af","ü"]})");
}

TEST(NotifyTruncation, big_key_drops_columns_then_keys_and_keeps_seq) {
    const std::string big = "\"" + std::string(8500, 'k') + "\"";
    ChangeEvent ev = docs_event(Op::kUpdate, 77);
    ev.key_json = {big};
    ev.key_changed = true;
    ev.old_key_json = {"1"};
    ev.changed_columns = {"doc"};
    EXPECT_EQ(checked_build(ev),
              R"({"table":"public.docs","op":"UPDATE","seq":77,"truncated":true})");
}

TEST(NotifyTruncation, key_that_fits_without_columns_keeps_key) {
    const std::string big = "\"" + std::string(3000, 'k') + "\"";
    ChangeEvent ev = docs_event(Op::kUpdate, 78);
    ev.key_json = {big};
    ev.key_changed = true;
    ev.old_key_json = {"1"};
    std::vector<std::string> names(400, std::string(20, 'c'));
    for (const auto& n : names) {
        ev.changed_columns.push_back(n);
    }
    EXPECT_EQ(checked_build(ev), R"({"table":"public.docs","op":"UPDATE","seq":78,"key":{"id":)" +
                                     big + R"(},"old_key":{"id":1},"truncated":true})");
}

TEST(NotifyTruncation, big_insert_key_drops_key) {
    ChangeEvent ev = docs_event(Op::kInsert, 4);
    const std::string big = "\"" + std::string(9000, 'x') + "\"";
    ev.key_names = {"id", "n"};
    ev.key_json = {big, "2"};
    EXPECT_EQ(checked_build(ev),
              R"({"table":"public.docs","op":"INSERT","seq":4,"truncated":true})");
}

TEST(NotifyTruncation, many_changed_columns_drop_only_columns) {
    ChangeEvent ev = docs_event(Op::kUpdate, 5);
    std::vector<std::string> names;
    for (int i = 0; i < 1000; ++i) {
        names.push_back("column_" + std::to_string(i));
    }
    for (const auto& n : names) {
        ev.changed_columns.push_back(n);
    }
    EXPECT_EQ(checked_build(ev),
              R"({"table":"public.docs","op":"UPDATE","seq":5,"key":{"id":1},"truncated":true})");
}

TEST(NotifyTruncation, payload_of_exactly_limit_bytes_is_truncated) {
    ChangeEvent ev = docs_event(Op::kUpdate, 6);
    const std::string full_small = build_payload(ev);  // ... "columns":[]}
    // One column name sized so the full payload is exactly kPayloadLimit bytes.
    const std::string name(pgt::notify::kPayloadLimit - full_small.size() - 2, 'n');
    ev.changed_columns = {name};
    std::string p = checked_build(ev);
    EXPECT_NE(p.find("\"truncated\":true"), std::string::npos);
    ev.changed_columns = {std::string_view(name).substr(1)};
    EXPECT_EQ(checked_build(ev).size(), pgt::notify::kPayloadLimit - 1);
}

TEST(NotifyTruncation, limit_too_small_for_minimal_form_throws_54000) {
    try {
        build_payload(docs_event(Op::kInsert, 1), 20);
        FAIL() << "expected pgt::Error";
    } catch (const pgt::Error& e) {
        EXPECT_EQ(e.sqlstate(), "54000");
    }
}

TEST(NotifyPayload, distinct_seq_makes_identical_events_differ) {
    EXPECT_NE(checked_build(docs_event(Op::kInsert, 1)), checked_build(docs_event(Op::kInsert, 2)));
    EXPECT_EQ(checked_build(docs_event(Op::kInsert, 18446744073709551615ull)),
              R"({"table":"public.docs","op":"INSERT","seq":18446744073709551615,"key":{"id":1}})");
}

TEST(NotifyPayload, append_reuses_buffer_and_restores_it_on_error) {
    std::string buf = "prefix|";
    pgt::notify::append_payload(buf, docs_event(Op::kInsert, 1));
    EXPECT_EQ(buf, R"(prefix|{"table":"public.docs","op":"INSERT","seq":1,"key":{"id":1}})");
    buf.clear();
    pgt::notify::append_payload(buf, docs_event(Op::kDelete, 2));
    EXPECT_EQ(buf, R"({"table":"public.docs","op":"DELETE","seq":2,"key":{"id":1}})");
    EXPECT_THROW(pgt::notify::append_payload(buf, docs_event(Op::kInsert, 3), 10), pgt::Error);
    EXPECT_EQ(buf, R"({"table":"public.docs","op":"DELETE","seq":2,"key":{"id":1}})");
}

}  // namespace
