// Test-only entry points proving the error bridges (never declared by the
// extension script; tests declare them with CREATE FUNCTION ... AS
// 'pg_trickle'). Invariant: each one crosses C++ and PostgreSQL frames the
// way real code does, so a broken bridge fails these first.
#include <string>

#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
}

namespace {

int64_t g_destructor_runs = 0;

// Observable side effect of C++ unwinding: counts its destructor runs.
struct Sentinel {
    std::string payload = std::string(256, 'x');  // owns heap memory
    ~Sentinel() { g_destructor_runs++; }
};

std::string text_arg(FunctionCallInfo fcinfo, int n) {
    if (PG_ARGISNULL(n)) {
        return {};
    }
    char* s = pgt::pg::pg_call([&] { return text_to_cstring(PG_GETARG_TEXT_PP(n)); });
    return s;
}

}  // namespace

extern "C" {
PG_FUNCTION_INFO_V1(pgt_test_pg_error_roundtrip);
PG_FUNCTION_INFO_V1(pgt_test_cxx_error);
PG_FUNCTION_INFO_V1(pgt_test_destructor_runs);
}

// Divides 1 by 0 in PostgreSQL, called from C++ with a live C++ object on
// the stack: the error must reach the client unchanged and the object's
// destructor must run.
Datum pgt_test_pg_error_roundtrip(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&]() -> Datum {
        Sentinel sentinel;
        int32 divisor = PG_GETARG_INT32(0);
        Datum q = pgt::pg::pg_call(
            [&] { return DirectFunctionCall2(int4div, Int32GetDatum(1), Int32GetDatum(divisor)); });
        return q;
    });
}

// Throws pgt::Error(sqlstate, message, detail, hint) from C++.
Datum pgt_test_cxx_error(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&]() -> Datum {
        Sentinel sentinel;
        throw pgt::Error(text_arg(fcinfo, 0), text_arg(fcinfo, 1), text_arg(fcinfo, 2),
                         text_arg(fcinfo, 3));
    });
}

Datum pgt_test_destructor_runs(PG_FUNCTION_ARGS) {
    (void)fcinfo;
    PG_RETURN_INT64(g_destructor_runs);
}
