// Shared pieces of the benchmark driver: options, the two benchmarks'
// entry points, medians and fixed-width table output.
// Invariant: every reported number is a median over `runs` measurements
// taken by the same code path for both sides of a comparison.
#pragma once

#include <string>
#include <vector>

#include "pq.hpp"

namespace pgt::bench {

struct Options {
    std::string conninfo;     // libpq connection string of the private cluster
    long long rows = 0;       // rows in each benchmark table
    int runs = 5;             // measured repetitions (median reported)
    int changes = 10000;      // locality: changes applied per run
    std::string restart_cmd;  // locality: shell command that restarts the server
};

// Encoding throughput: V2 identity + probe vs text cast, join and hash.
void run_micro(const Options& opt);
// Out-of-cache locality of probe-index lookups: V2 probe vs hashed bigint.
void run_locality(const Options& opt);

double median(std::vector<double> v);
// v with `decimals` digits after the point.
std::string fixed(double v, int decimals);
// s padded with spaces to `width` (right-aligned when `right`).
std::string pad(const std::string& s, std::size_t width, bool right = true);
// A single-quoted SQL string literal.
std::string quote_literal(const std::string& s);
// Session settings both sides of every comparison run under (jit off, no
// parallel workers; with lookup_plans, nested loops over index scans only),
// plus the extension and the baseline functions.
void set_session(Conn& c, bool lookup_plans);

}  // namespace pgt::bench
