// Change-notification payload rendering: JSON escaping, PostgreSQL-style
// identifier quoting and staged truncation below the NOTIFY limit.
// Invariant: truncation only cuts back to recorded marks of the full
// rendering, so every form is a prefix of the full payload plus a fixed tail.
#include "core/notify/payload.hpp"

#include "core/error.hpp"
#include "core/sql/json.hpp"
#include "core/sql/quote.hpp"

#include <algorithm>
#include <array>
#include <charconv>

namespace pgt::notify {

using sql::append_json_string;

namespace {

constexpr std::string_view kTruncatedTail = ",\"truncated\":true}";

// Appends one JSON object of key values, column name -> value, in argument
// order ("null" for a missing value).
void append_key_object(std::string& out, const std::vector<std::string_view>& names,
                       const std::vector<std::optional<std::string_view>>& key) {
    out += '{';
    for (std::size_t i = 0; i < key.size(); ++i) {
        if (i > 0) {
            out += ',';
        }
        append_json_string(out, names[i]);
        out += ':';
        out += key[i] ? *key[i] : std::string_view("null");
    }
    out += '}';
}

void append_uint(std::string& out, std::uint64_t v) {
    char buf[24];
    const auto res = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, res.ptr);
}

// The schema-qualified table name as SQL text (not yet JSON-escaped).
std::string qualified_table(const ChangeEvent& ev) {
    std::string name;
    if (ev.names_quoted) {
        if (!ev.schema.empty()) {
            name.append(ev.schema).append(1, '.');
        }
        name.append(ev.table);
        return name;
    }
    if (!ev.schema.empty()) {
        sql::append_quoted_identifier(name, ev.schema);
        name += '.';
    }
    sql::append_quoted_identifier(name, ev.table);
    return name;
}

void check_event(const ChangeEvent& ev) {
    const bool update = ev.op == Op::kUpdate;
    if (ev.op == Op::kResync ? !ev.key_names.empty() || !ev.key_json.empty() : !ev.reason.empty()) {
        throw Error(sqlstate::kInternalError,
                    "notify payload: a RESYNC has a reason and no key, a row event no reason");
    }
    if (!update && (ev.key_changed || !ev.changed_columns.empty())) {
        throw Error(sqlstate::kInternalError,
                    "notify payload: key_changed/changed_columns are only valid for UPDATE");
    }
    if (ev.key_names.size() != ev.key_json.size()) {
        throw Error(sqlstate::kInternalError,
                    "notify payload: key names and values differ in arity");
    }
    if (update && ev.key_changed && ev.old_key_json.size() != ev.key_json.size()) {
        throw Error(sqlstate::kInternalError, "notify payload: old key and key differ in arity");
    }
    auto empty_json = [](const std::optional<std::string_view>& v) { return v && v->empty(); };
    if (std::any_of(ev.key_json.begin(), ev.key_json.end(), empty_json) ||
        std::any_of(ev.old_key_json.begin(), ev.old_key_json.end(), empty_json)) {
        throw Error(sqlstate::kInternalError, "notify payload: empty JSON text for a key value");
    }
}

}  // namespace

std::string_view op_name(Op op) {
    switch (op) {
        case Op::kInsert:
            return "INSERT";
        case Op::kUpdate:
            return "UPDATE";
        case Op::kDelete:
            return "DELETE";
        case Op::kResync:
            return "RESYNC";
    }
    throw Error(sqlstate::kInternalError, "notify payload: invalid operation");
}

void append_payload(std::string& out, const ChangeEvent& ev, std::size_t limit) {
    check_event(ev);
    const std::size_t start = out.size();
    out += "{\"table\":";
    append_json_string(out, qualified_table(ev));
    out.append(",\"op\":\"").append(op_name(ev.op)).append("\",\"seq\":");
    append_uint(out, ev.seq);
    const std::size_t after_seq = out.size();
    if (ev.op == Op::kResync) {
        out += ",\"reason\":";
        append_json_string(out, ev.reason);
    } else if (!ev.minimal) {
        out += ",\"key\":";
        append_key_object(out, ev.key_names, ev.key_json);
    }
    if (!ev.minimal && ev.op == Op::kUpdate && ev.key_changed) {
        out += ",\"old_key\":";
        append_key_object(out, ev.key_names, ev.old_key_json);
    }
    const std::size_t after_keys = out.size();
    if (!ev.minimal && ev.op == Op::kUpdate) {
        out += ",\"columns\":[";
        for (std::size_t i = 0; i < ev.changed_columns.size(); ++i) {
            out.append(i > 0 ? "," : "");
            append_json_string(out, ev.changed_columns[i]);
        }
        out += ']';
    }
    out += '}';
    if (out.size() - start < limit) {
        return;
    }
    // Too long: cut back to the last mark that fits with the truncated tail.
    for (const std::size_t mark : {after_keys, after_seq}) {
        if (mark - start + kTruncatedTail.size() < limit) {
            out.resize(mark);
            out += kTruncatedTail;
            return;
        }
    }
    out.resize(start);
    throw Error(sqlstate::kProgramLimitExceeded,
                "notify payload: table name and sequence alone exceed the payload limit",
                "limit is " + std::to_string(limit) + " bytes");
}

std::string build_payload(const ChangeEvent& ev, std::size_t limit) {
    std::string out;
    append_payload(out, ev, limit);
    return out;
}

}  // namespace pgt::notify
