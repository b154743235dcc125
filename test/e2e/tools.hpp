// Running PostgreSQL's client programs (psql, pg_dump, pg_restore) against
// the harness's clusters from a test.
// Invariant: a program that fails throws with its command line and output.
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>

#include "cluster.hpp"

namespace pgt::e2e {

inline std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) {
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return out + "'";
}

// Runs `cmd` in a shell; returns its output (stdout and stderr).
inline std::string run_program(const std::string& cmd) {
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    if (p == nullptr) {
        throw std::runtime_error("popen failed: " + cmd);
    }
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) {
        out.append(buf, n);
    }
    int rc = pclose(p);
    if (rc != 0) {
        throw std::runtime_error("failed (" + std::to_string(rc) + "): " + cmd + "\n" + out);
    }
    return out;
}

// `program` (psql, pg_dump, ...) of the server's version, with the
// connection options of cluster `c` (socket, port, user postgres) and args.
inline std::string client(const Cluster& c, const std::string& program, const std::string& args) {
    return run_program(std::string(PGT_PG_BINDIR) + "/" + program + " -h " +
                       shell_quote(c.socket_dir()) + " -p " + std::to_string(c.port()) +
                       " -U postgres " + args);
}

}  // namespace pgt::e2e
