// Generated SQL made readable: statements broken over lines before their
// clauses, and a stored delta program printed section by section, for
// explain_st.
// Invariant: formatting changes only whitespace outside literals, quoted
// identifiers and comments: the formatted text runs as the original does.
#pragma once
#include "core/core.hpp"

#include <string>

namespace pgt::sql {

// One statement with a line break before each clause (WITH, SELECT, FROM,
// WHERE, GROUP BY, joins, set operations, ...), indented by its depth of
// parentheses.
std::string format_statement(const std::string& sql);

// A delta program (diff::encode_program's text) as its sections, each
// headed by a comment saying what it is and when a refresh runs it, each
// statement formatted. Throws kInternalError on a malformed program.
std::string format_program(const std::string& program);

}  // namespace pgt::sql
