// Identifier quoting as PostgreSQL's quote_identifier does it, for the SQL
// text core makes (delta programs, notification payloads).
#pragma once
#include "core/core.hpp"

#include <string>
#include <string_view>

namespace pgt::sql {

// True for every keyword PostgreSQL's quote_identifier quotes: reserved,
// type/function-name and column-name keywords (15's, plus 16's additions).
bool is_quoted_keyword(std::string_view word) noexcept;

// Unquoted iff [a-z_][a-z0-9_]* and not is_quoted_keyword; otherwise
// wrapped in "..." with every " doubled.
std::string quote_identifier(std::string_view ident);
void append_quoted_identifier(std::string& out, std::string_view ident);

// "/* pg_trickle: <what> */ ", put before the statements run for one stream
// table so pg_stat_statements, the server log and auto_explain name it.
// Every '*' of what becomes '_': a name cannot close the comment or open a
// nested one (PostgreSQL nests block comments).
std::string statement_tag(std::string_view what);

}  // namespace pgt::sql
