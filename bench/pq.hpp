// A minimal libpq client for the benchmark driver: run SQL, read text
// values, time statements on the client's monotonic clock.
// Invariant: any SQL error aborts the benchmark with the server's SQLSTATE
// and message; a benchmark never silently measures a failed statement.
#pragma once

#include <libpq-fe.h>

#include <memory>
#include <string>
#include <vector>

namespace pgt::bench {

// Rows of text values (NULL reads as an empty string).
using Rows = std::vector<std::vector<std::string>>;

class Conn {
public:
    explicit Conn(const std::string& conninfo);
    ~Conn();
    Conn(const Conn&) = delete;
    Conn& operator=(const Conn&) = delete;

    // Runs sql (with text parameters $1.. when given) and returns its rows.
    Rows exec(const std::string& sql, const std::vector<std::string>& params = {});
    // The first column of the first row.
    std::string scalar(const std::string& sql, const std::vector<std::string>& params = {});
    // Wall-clock milliseconds of one round trip of sql, rows discarded.
    double timed_ms(const std::string& sql, const std::vector<std::string>& params = {});

private:
    PGconn* conn_;
};

// Connects, retrying for up to timeout_s seconds (a just-restarted server).
std::unique_ptr<Conn> connect_retrying(const std::string& conninfo, int timeout_s);

// "name" with embedded quotes doubled: a quoted SQL identifier.
std::string quote_ident(const std::string& name);

}  // namespace pgt::bench
