// Typed access to SQL function arguments, with NULL handling spelled out.
// Invariant: a required argument that is NULL raises 22004 naming it;
// values are copied into C++ strings before any other PostgreSQL call.
#pragma once

#include <optional>
#include <string>

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

private:
    bool is_null(int n) const { return n >= PG_NARGS() || PG_ARGISNULL(n); }
    FunctionCallInfo fcinfo;  // this name lets the PG_* macros work in members
};

// Sends a NOTICE to the client; does nothing for an empty message.
void notice(const std::string& message);

// Sends a NOTICE with a detail and a hint.
void notice_with_hint(const std::string& message, const std::string& detail,
                      const std::string& hint);

// Sends a WARNING with a detail.
void warning(const std::string& message, const std::string& detail);

}  // namespace pgt::pg
