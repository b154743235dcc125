// Delta program JSON form and branch selection (see program.hpp).
// Invariant: decode_program(encode_program(p)) == p for every p.
#include "core/diff/program.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "core/diff/apply.hpp"
#include "core/error.hpp"
#include "core/sql/json.hpp"

namespace pgt::diff {

namespace {

bool plain_identifier(const std::string& s) {
    return !s.empty() &&
           s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
}

[[noreturn]] void malformed(const char* what) {
    throw Error(sqlstate::kInternalError,
                std::string("malformed delta program in the catalog: ") + what);
}

void key(std::string& out, const char* name) {
    out += out.back() == '{' ? "" : ", ";
    sql::append_json_string(out, name);
    out += ": ";
}

void add_string(std::string& out, const char* name, const std::string& value) {
    key(out, name);
    sql::append_json_string(out, value);
}

void add_number(std::string& out, const char* name, uint64_t value) {
    key(out, name);
    out += std::to_string(value);
}

// "name": [{...}, ...] of one object per element, written by each(out, e).
template <typename T, typename F>
void add_array(std::string& out, const char* name, const std::vector<T>& items, F each) {
    if (items.empty()) {
        return;
    }
    key(out, name);
    out += "[";
    for (std::size_t i = 0; i < items.size(); i++) {
        out += i ? ", {" : "{";
        each(out, items[i]);
        out += "}";
    }
    out += "]";
}

void image_step(std::string& out, const ImageStep& s) {
    add_number(out, "source", s.source);
    add_number(out, "window", static_cast<uint64_t>(s.window));
    add_string(out, "sql", s.sql);
}

const sql::JsonValue& member(const sql::JsonValue& v, const char* name, sql::JsonValue::Kind kind) {
    const sql::JsonValue* m = v.find(name);
    if (m == nullptr || m->kind != kind) {
        malformed(name);
    }
    return *m;
}

const std::string& string_of(const sql::JsonValue& v, const char* name) {
    return member(v, name, sql::JsonValue::Kind::kString).string;
}

uint64_t number_of(const sql::JsonValue& v, const char* name) {
    return member(v, name, sql::JsonValue::Kind::kNumber).number;
}

// The elements of array `name` (none when absent).
const std::vector<sql::JsonValue>& array_of(const sql::JsonValue& v, const char* name) {
    static const std::vector<sql::JsonValue> kNone;
    return v.find(name) == nullptr ? kNone : member(v, name, sql::JsonValue::Kind::kArray).items;
}

std::vector<ImageStep> image_steps(const sql::JsonValue& v, const char* name) {
    std::vector<ImageStep> out;
    for (const sql::JsonValue& s : array_of(v, name)) {
        out.push_back({static_cast<std::size_t>(number_of(s, "source")),
                       static_cast<int>(number_of(s, "window")), string_of(s, "sql")});
    }
    return out;
}

}  // namespace

std::string encode_program(const DeltaProgram& p) {
    for (const std::string& a : p.full_aux) {
        if (!plain_identifier(a)) {
            throw Error(sqlstate::kInternalError, "auxiliary column name \"" + a + "\"");
        }
    }
    std::string out = "{";
    add_string(out, "main", p.main);
    add_array(out, "images", p.images, image_step);
    add_array(out, "branches", p.branches, [](std::string& o, const Branch& b) {
        add_number(o, "old", b.old_sources);
        add_number(o, "new", b.new_sources);
        add_number(o, "delta", b.delta_sources);
        add_string(o, "sql", b.sql);
    });
    if (!p.full_query.empty()) {
        add_string(out, "full_query", p.full_query);
        key(out, "full_aux");
        out += "[";
        for (std::size_t i = 0; i < p.full_aux.size(); i++) {
            out += i ? ", " : "";
            sql::append_json_string(out, p.full_aux[i]);
        }
        out += "]";
    }
    if (!p.fallback.empty()) {
        add_string(out, "fallback", p.fallback);
    }
    add_array(out, "fallback_images", p.fallback_images, image_step);
    add_array(out, "kept", p.kept, [](std::string& o, const KeptStep& k) {
        add_number(o, "source", k.source);
        add_string(o, "table", k.table);
        add_string(o, "rebuild", k.rebuild);
        add_string(o, "apply", k.apply);
    });
    if (p.main_old != 0 || p.main_new != 0) {
        key(out, "main_reads");
        out += "{";
        add_number(out, "old", p.main_old);
        add_number(out, "new", p.main_new);
        out += "}";
    }
    if (!p.key_rows.empty()) {
        key(out, "key_rows");
        out += "{";
        add_number(out, "source", p.key_source);
        add_string(out, "sql", p.key_rows);
        out += "}";
    }
    return out + "}";
}

DeltaProgram decode_program(const std::string& text) {
    const sql::JsonValue v = sql::parse_json(text);
    if (v.kind != sql::JsonValue::Kind::kObject) {
        malformed("not an object");
    }
    DeltaProgram p;
    p.main = string_of(v, "main");
    p.images = image_steps(v, "images");
    for (const sql::JsonValue& b : array_of(v, "branches")) {
        p.branches.push_back(
            {number_of(b, "old"), number_of(b, "new"), string_of(b, "sql"), number_of(b, "delta")});
    }
    if (v.find("full_query") != nullptr) {
        p.full_query = string_of(v, "full_query");
        for (const sql::JsonValue& a : array_of(v, "full_aux")) {
            if (a.kind != sql::JsonValue::Kind::kString || !plain_identifier(a.string)) {
                malformed("full_aux");
            }
            p.full_aux.push_back(a.string);
        }
    }
    if (v.find("fallback") != nullptr) {
        p.fallback = string_of(v, "fallback");
    }
    p.fallback_images = image_steps(v, "fallback_images");
    for (const sql::JsonValue& k : array_of(v, "kept")) {
        p.kept.push_back({static_cast<std::size_t>(number_of(k, "source")), string_of(k, "table"),
                          string_of(k, "rebuild"), string_of(k, "apply")});
    }
    if (v.find("main_reads") != nullptr) {
        const sql::JsonValue& m = member(v, "main_reads", sql::JsonValue::Kind::kObject);
        p.main_old = number_of(m, "old");
        p.main_new = number_of(m, "new");
    }
    if (v.find("key_rows") != nullptr) {
        const sql::JsonValue& k = member(v, "key_rows", sql::JsonValue::Kind::kObject);
        p.key_source = static_cast<std::size_t>(number_of(k, "source"));
        p.key_rows = string_of(k, "sql");
    }
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
        malformed("no branches marker in main");
    }
    if (run.empty()) {
        return "";
    }
    return p.main.substr(0, at) + join(run, " UNION ALL ") +
           p.main.substr(at + kBranchesMarker.size());
}

}  // namespace pgt::diff
