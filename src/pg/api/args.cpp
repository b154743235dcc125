// Argument access and client notices for the SQL API.
// Invariant: detoasting and text conversion happen under pg_call.
#include "pg/api/args.hpp"

#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "utils/builtins.h"
}

namespace pgt::pg {

std::optional<std::string> Args::optional_text(int n) const {
    if (is_null(n)) {
        return std::nullopt;
    }
    char* s = pg_call([&] { return text_to_cstring(PG_GETARG_TEXT_PP(n)); });
    return std::string(s);
}

std::string Args::required_text(int n, const char* argname) const {
    std::optional<std::string> v = optional_text(n);
    if (!v) {
        throw_null_argument(argname);
    }
    return *v;
}

std::string Args::text_or(int n, const char* fallback) const {
    return optional_text(n).value_or(fallback);
}

bool Args::bool_or(int n, bool fallback) const {
    return is_null(n) ? fallback : PG_GETARG_BOOL(n);
}

void notice(const std::string& message) {
    if (!message.empty()) {
        pg_call([&] { ereport(NOTICE, (errmsg_internal("%s", message.c_str()))); });
    }
}

void notice_with_hint(const std::string& message, const std::string& detail,
                      const std::string& hint) {
    pg_call([&] {
        ereport(NOTICE, (errmsg_internal("%s", message.c_str()),
                         errdetail_internal("%s", detail.c_str()), errhint("%s", hint.c_str())));
    });
}

void warning(const std::string& message, const std::string& detail) {
    pg_call([&] {
        ereport(WARNING,
                (errmsg_internal("%s", message.c_str()), errdetail_internal("%s", detail.c_str())));
    });
}

}  // namespace pgt::pg
