// Quoting for the SQL we generate: identifiers and literals, by PostgreSQL's
// own quoting functions.
// Invariant: every identifier and literal put into generated SQL goes
// through one of these (or quoted_relation_name for relations).
#pragma once

#include <string>

namespace pgt::pg {

// An identifier quoted as needed (quote_identifier).
std::string quote_ident(const std::string& ident);

// A SQL string literal (quote_literal_cstr).
std::string sql_literal(const std::string& value);

}  // namespace pgt::pg
