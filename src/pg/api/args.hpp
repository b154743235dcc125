// Typed access to SQL function arguments, with NULL handling spelled out.
// Invariant: a required argument that is NULL raises 22004 naming it;
// values are copied into C++ strings before any other PostgreSQL call.
#pragma once

#include <optional>
#include <string>
#include <vector>

extern "C" {
#include "postgres.h"
#include "fmgr.h"
}

namespace pgt::pg {

class Args {
public:
    explicit Args(FunctionCallInfo call) : fcinfo(call) {}

    std::string required_text(int n, const char* argname) const;
    std::optional<std::string> optional_text(int n) const;
    std::string text_or(int n, const char* fallback) const;
    bool bool_or(int n, bool fallback) const;

    // The position of the called function's argument called name (its
    // pg_proc entry), -1 when it has none: functions that share code but
    // not an argument list find their arguments by name.
    int position(const char* name) const;
    bool is_null(int n) const { return n < 0 || n >= PG_NARGS() || PG_ARGISNULL(n); }
    // The type OID of argument n (its pg_proc entry).
    Oid type_of(int n) const;
    // The called function's name and argument names (pg_proc).
    const std::string& function_name() const;

private:
    void load_signature() const;
    FunctionCallInfo fcinfo;  // this name lets the PG_* macros work in members
    mutable std::string name_;
    mutable std::vector<std::string> names_;
    mutable std::vector<Oid> types_;
};

// Sends a NOTICE to the client; does nothing for an empty message.
void notice(const std::string& message);

// Sends a NOTICE with a detail and a hint.
void notice_with_hint(const std::string& message, const std::string& detail,
                      const std::string& hint);

// Sends a WARNING with a detail.
void warning(const std::string& message, const std::string& detail);

}  // namespace pgt::pg
