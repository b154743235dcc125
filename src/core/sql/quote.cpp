// PostgreSQL's identifier quoting (quote_identifier), for SQL text made in
// core: generated statements and notification payloads.
// Invariant: a name is left bare only when PostgreSQL would read it back as
// the same name: [a-z_][a-z0-9_]* and not a keyword that forces quotes.
#include "core/sql/quote.hpp"

#include <algorithm>
#include <array>

namespace pgt::sql {

namespace {

// Every keyword PostgreSQL quotes (all but UNRESERVED_KEYWORD: reserved,
// type/function-name and column-name keywords), as pg_get_keywords() lists
// them in PostgreSQL 15, plus those PostgreSQL 16 adds; sorted.
// clang-format off
constexpr std::array<std::string_view, 157> kQuotedKeywords = {
    "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "authorization",
    "between", "bigint", "binary", "bit", "boolean", "both", "case", "cast", "char", "character",
    "check", "coalesce", "collate", "collation", "column", "concurrently", "constraint", "create",
    "cross", "current_catalog", "current_date", "current_role", "current_schema", "current_time",
    "current_timestamp", "current_user", "dec", "decimal", "default", "deferrable", "desc",
    "distinct", "do", "else", "end", "except", "exists", "extract", "false", "fetch", "float",
    "for", "foreign", "freeze", "from", "full", "grant", "greatest", "group", "grouping", "having",
    "ilike", "in", "initially", "inner", "inout", "int", "integer", "intersect", "interval",
    "into", "is", "isnull", "join", "json", "json_array", "json_arrayagg", "json_object",
    "json_objectagg", "lateral", "leading", "least", "left", "like", "limit", "localtime",
    "localtimestamp", "national", "natural", "nchar", "none", "normalize", "not", "notnull",
    "null", "nullif", "numeric", "offset", "on", "only", "or", "order", "out", "outer", "overlaps",
    "overlay", "placing", "position", "precision", "primary", "real", "references", "returning",
    "right", "row", "select", "session_user", "setof", "similar", "smallint", "some", "substring",
    "symmetric", "system_user", "table", "tablesample", "then", "time", "timestamp", "to",
    "trailing", "treat", "trim", "true", "union", "unique", "user", "using", "values", "varchar",
    "variadic", "verbose", "when", "where", "window", "with", "xmlattributes", "xmlconcat",
    "xmlelement", "xmlexists", "xmlforest", "xmlnamespaces", "xmlparse", "xmlpi", "xmlroot",
    "xmlserialize", "xmltable",
};
// clang-format on
static_assert(std::is_sorted(kQuotedKeywords.begin(), kQuotedKeywords.end()));

bool is_plain_identifier(std::string_view ident) noexcept {
    if (ident.empty()) {
        return false;
    }
    const char first = ident.front();
    if (!((first >= 'a' && first <= 'z') || first == '_')) {
        return false;
    }
    return std::all_of(ident.begin(), ident.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
}

}  // namespace

bool is_quoted_keyword(std::string_view word) noexcept {
    return std::binary_search(kQuotedKeywords.begin(), kQuotedKeywords.end(), word);
}

void append_quoted_identifier(std::string& out, std::string_view ident) {
    if (is_plain_identifier(ident) && !is_quoted_keyword(ident)) {
        out += ident;
        return;
    }
    out += '"';
    for (const char c : ident) {
        if (c == '"') {
            out += '"';
        }
        out += c;
    }
    out += '"';
}

std::string quote_identifier(std::string_view ident) {
    std::string out;
    append_quoted_identifier(out, ident);
    return out;
}

std::string statement_tag(std::string_view what) {
    std::string out = "/* pg_trickle: ";
    for (char c : what) {
        out += c == '*' ? '_' : c;
    }
    out += " */ ";
    return out;
}

}  // namespace pgt::sql
