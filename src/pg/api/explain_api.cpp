// pgtrickle._explain_program(text): a stored delta program as explain_st
// prints it, section by section, each statement over several lines.
// Invariant: reads only its argument (IMMUTABLE); a malformed program is
// an internal error, never a partial text.
#include <string>

#include "core/sql/format.hpp"
#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(pgt_explain_program);
Datum pgt_explain_program(PG_FUNCTION_ARGS);
}

Datum pgt_explain_program(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&]() -> Datum {
        const char* program =
            pgt::pg::pg_call([&] { return TextDatumGetCString(PG_GETARG_DATUM(0)); });
        std::string formatted = pgt::sql::format_program(program);
        return pgt::pg::pg_call([&] { return CStringGetTextDatum(formatted.c_str()); });
    });
}
