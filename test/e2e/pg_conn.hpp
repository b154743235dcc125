// A small libpq client for the e2e tests: run SQL, get rows as text, catch
// errors with their SQLSTATE, collect NOTICEs and NOTIFY messages.
// Invariant: every failure carries the server's SQLSTATE, message, detail
// and hint, so tests assert on exactly what a user would see.
#pragma once

#include <libpq-fe.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace pgt::e2e {

struct SqlError : std::runtime_error {
    SqlError(std::string state, std::string msg, std::string det, std::string hnt)
        : std::runtime_error(state + ": " + msg),
          sqlstate(std::move(state)),
          message(std::move(msg)),
          detail(std::move(det)),
          hint(std::move(hnt)) {}
    std::string sqlstate, message, detail, hint;
    std::string context, internal_query;  // (CONTEXT and QUERY lines)
};

using Row = std::vector<std::optional<std::string>>;

// One NOTIFY message received by a LISTENing connection.
struct Notification {
    std::string channel, payload;
    int sender_pid = 0;
};

struct Result {
    std::vector<Row> rows;
    size_t size() const { return rows.size(); }
    std::string at(size_t r, size_t c) const { return rows.at(r).at(c).value_or("<NULL>"); }
};

class Conn {
public:
    explicit Conn(const std::string& conninfo);
    ~Conn();
    Conn(const Conn&) = delete;
    Conn& operator=(const Conn&) = delete;

    Result exec(const std::string& sql, const std::vector<std::string>& params = {});
    std::string scalar(const std::string& sql, const std::vector<std::string>& params = {});
    // Runs sql expecting an error; returns it (throws std::logic_error if none).
    SqlError error_of(const std::string& sql);
    int backend_pid();
    // NOTIFY messages received so far (after LISTEN); when none is pending,
    // waits up to wait_ms for the server to send some.
    std::vector<Notification> notifications(int wait_ms = 0);

    std::vector<std::string> notices;

private:
    PGconn* conn_;
};

// Connection to the harness cluster's database `dbname`.
Conn connect(const std::string& dbname = "postgres");

// The error a statement raised, or nothing when it succeeded.
inline std::optional<SqlError> error_in(Conn& c, const std::string& sql,
                                        const std::vector<std::string>& params = {}) {
    try {
        c.exec(sql, params);
    } catch (const SqlError& e) {
        return e;
    }
    return std::nullopt;
}

// SQLSTATE of the statement's error, "" when it succeeded.
inline std::string sqlstate_of(Conn& c, const std::string& sql,
                               const std::vector<std::string>& params = {}) {
    std::optional<SqlError> e = error_in(c, sql, params);
    return e ? e->sqlstate : "";
}

}  // namespace pgt::e2e
