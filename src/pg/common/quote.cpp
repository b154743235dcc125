// Quoting for generated SQL through PostgreSQL's functions.
// Invariant: both run under pg_call (they allocate in the current context).
#include "pg/common/quote.hpp"

#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "utils/builtins.h"
}

namespace pgt::pg {

std::string quote_ident(const std::string& ident) {
    const char* q = pg_call([&] { return quote_identifier(ident.c_str()); });
    return q;
}

std::string sql_literal(const std::string& value) {
    const char* q = pg_call([&] { return quote_literal_cstr(value.c_str()); });
    return q;
}

}  // namespace pgt::pg
