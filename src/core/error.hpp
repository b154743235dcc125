// The one error type that crosses our C++ code: a PostgreSQL-shaped error
// (SQLSTATE, message, detail, hint). Invariant: sqlstate is always five
// characters from [0-9A-Z]; src/pg/boundary turns it back into ereport.
#pragma once
#include "core/core.hpp"

#include <stdexcept>
#include <string>

namespace pgt {

class Error : public std::runtime_error {
public:
    Error(std::string sqlstate, std::string message, std::string detail = {}, std::string hint = {})
        : std::runtime_error(message),
          sqlstate_(std::move(sqlstate)),
          detail_(std::move(detail)),
          hint_(std::move(hint)) {}

    const std::string& sqlstate() const noexcept { return sqlstate_; }
    const char* message() const noexcept { return what(); }
    const std::string& detail() const noexcept { return detail_; }
    const std::string& hint() const noexcept { return hint_; }

private:
    std::string sqlstate_;
    std::string detail_;
    std::string hint_;
};

// SQLSTATEs used by core code (PostgreSQL's errcodes, spelled as text
// because core code cannot see errcodes.h).
namespace sqlstate {
inline constexpr const char* kFeatureNotSupported = "0A000";
inline constexpr const char* kInvalidParameterValue = "22023";
inline constexpr const char* kProgramLimitExceeded = "54000";
inline constexpr const char* kInternalError = "XX000";
}  // namespace sqlstate

}  // namespace pgt
