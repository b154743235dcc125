// Argument access and client notices for the SQL API.
// Invariant: detoasting and text conversion happen under pg_call.
#include "pg/api/args.hpp"

#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "access/htup_details.h"
#include "catalog/pg_proc.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/syscache.h"
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

void Args::load_signature() const {
    if (!name_.empty()) {
        return;
    }
    pg_call([&] {
        HeapTuple tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fcinfo->flinfo->fn_oid));
        if (!HeapTupleIsValid(tup)) {
            elog(ERROR, "cache lookup failed for function %u", fcinfo->flinfo->fn_oid);
        }
        Oid* types = nullptr;
        char** names = nullptr;
        char* modes = nullptr;
        const int n = get_func_arg_info(tup, &types, &names, &modes);
        for (int i = 0; i < n; i++) {
            names_.emplace_back(names != nullptr && names[i] != nullptr ? names[i] : "");
            types_.push_back(types[i]);
        }
        name_ = NameStr(reinterpret_cast<Form_pg_proc>(GETSTRUCT(tup))->proname);
        ReleaseSysCache(tup);
    });
}

int Args::position(const char* name) const {
    load_signature();
    for (std::size_t i = 0; i < names_.size(); i++) {
        if (names_[i] == name) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

Oid Args::type_of(int n) const {
    load_signature();
    return types_.at(static_cast<std::size_t>(n));
}

const std::string& Args::function_name() const {
    load_signature();
    return name_;
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
