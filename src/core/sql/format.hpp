// Generated SQL made readable: statements broken over lines before their
// clauses, and a stored delta program printed section by section, for
// explain_st.
// Invariant: formatting changes only whitespace outside literals, quoted
// identifiers and comments: the formatted text runs as the original does.
#pragma once
#include "core/core.hpp"

#include <cstddef>
#include <string>

namespace pgt::sql {

// The widest line explain_st prints (characters, prefixes included).
inline constexpr std::size_t kPlanWidth = 200;

// One statement with a line break before each clause (WITH, SELECT, FROM,
// WHERE, GROUP BY, joins, set operations, ...), indented by its depth of
// parentheses.
std::string format_statement(const std::string& sql);

// A line cut into lines of at most `width` characters: at spaces outside
// literals, quoted identifiers and comments, and inside a plain '...'
// literal that crosses the width, closed and reopened on the next line
// (SQL joins two literals separated by a newline); continuation lines are
// indented 4 more than the line. A line with nothing to cut at stays long
// (a wide E'' literal, quoted identifier or comment).
std::string wrap_line(const std::string& line, std::size_t width);

// Every line of text through wrap_line.
std::string wrap_lines(const std::string& text, std::size_t width);

// A delta program (diff::encode_program's text) as a tree: the refresh's
// steps in order (change images, kept copies, branches, apply, the
// alternatives and fallbacks), each headed by what it is and when a
// refresh runs it, each statement formatted under its head, no line wider
// than kPlanWidth. Throws kInternalError on a malformed program.
std::string format_program(const std::string& program);

}  // namespace pgt::sql
