// pgt_bench: the benchmark driver run by scripts/bench.sh (`make bench`).
//   pgt_bench micro    --conn CONNINFO [--rows N] [--runs R]
//   pgt_bench locality --conn CONNINFO --restart-cmd CMD [--rows N] [--changes C] [--runs R]
//   pgt_bench cdc      --conn CONNINFO [--rows N] [--changes C] [--runs R] [--big-scale 0|1]
//                      [--write-only 0|1]
//   pgt_bench notify   --conn CONNINFO [--rows N] [--runs R]
// Invariant: it only prints; no exit status depends on a timing.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "bench.hpp"
#include "cdc.hpp"
#include "notify.hpp"

#ifndef PGT_BENCH_BASELINE_SO
#error "PGT_BENCH_BASELINE_SO must name the built baseline module"
#endif

namespace pgt::bench {

double median(std::vector<double> v) {
    if (v.empty()) {
        return 0;
    }
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string fixed(double v, int decimals) {
    std::ostringstream os;
    os << std::fixed << std::setprecision(decimals) << v;
    return os.str();
}

std::string pad(const std::string& s, std::size_t width, bool right) {
    if (s.size() >= width) {
        return s;
    }
    const std::string fill(width - s.size(), ' ');
    return right ? fill + s : s + fill;
}

std::string quote_literal(const std::string& s) {
    std::string out = "'";
    for (char ch : s) {
        out += ch;
        if (ch == '\'') {
            out += '\'';
        }
    }
    return out + "'";
}

// Single-backend, JIT-free execution: the numbers are per-core costs and do
// not depend on how many parallel workers the planner happens to pick.
void set_session(Conn& c, bool lookup_plans) {
    c.exec("SET jit = off");
    c.exec("SET max_parallel_workers_per_gather = 0");
    if (lookup_plans) {
        // Identical plan shapes on both sides: nested loop over the change
        // list, one index (only) scan per change, as a stream-table apply does.
        c.exec("SET enable_hashjoin = off");
        c.exec("SET enable_mergejoin = off");
        c.exec("SET enable_seqscan = off");
        c.exec("SET enable_bitmapscan = off");
    }
    c.exec("CREATE EXTENSION IF NOT EXISTS pg_trickle");
    const std::string so = quote_literal(PGT_BENCH_BASELINE_SO);
    c.exec("CREATE OR REPLACE FUNCTION \"public\".\"bench_text_hash\"(text) RETURNS bytea AS " +
           so + ", 'bench_text_hash' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE");
    c.exec("CREATE OR REPLACE FUNCTION \"public\".\"bench_text_hash_int8\"(text) RETURNS int8 AS " +
           so + ", 'bench_text_hash_int8' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE");
}

}  // namespace pgt::bench

namespace {

int usage() {
    std::fprintf(stderr,
                 "usage: pgt_bench micro --conn CONNINFO [--rows N] [--runs R]\n"
                 "       pgt_bench locality --conn CONNINFO --restart-cmd CMD [--rows N]"
                 " [--changes C] [--runs R]\n"
                 "       pgt_bench cdc --conn CONNINFO [--rows N] [--changes C] [--runs R]"
                 " [--big-scale 0|1] [--write-only 0|1]\n"
                 "       pgt_bench notify --conn CONNINFO [--rows N] [--runs R]\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        return usage();
    }
    const std::string mode = argv[1];
    pgt::bench::Options opt;
    opt.rows = mode == "micro" || mode == "cdc" || mode == "notify" ? 1000000 : 5000000;
    bool big_scale = false;   // cdc: refresh scaling also at 10 x rows
    bool write_only = false;  // cdc: section 1 only
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string key = argv[i], val = argv[i + 1];
        if (key == "--conn") {
            opt.conninfo = val;
        } else if (key == "--rows") {
            opt.rows = std::stoll(val);
        } else if (key == "--runs") {
            opt.runs = std::stoi(val);
        } else if (key == "--changes") {
            opt.changes = std::stoi(val);
        } else if (key == "--restart-cmd") {
            opt.restart_cmd = val;
        } else if (key == "--big-scale" && mode == "cdc") {
            big_scale = val == "1";
        } else if (key == "--write-only" && mode == "cdc") {
            write_only = val == "1";
        } else {
            return usage();
        }
    }
    if (argc % 2 != 0 || opt.conninfo.empty() || opt.runs < 1 || opt.rows < 1 ||
        (mode == "locality" && (opt.restart_cmd.empty() || opt.changes < 1 ||
                                opt.changes * static_cast<long long>(opt.runs) > opt.rows)) ||
        (mode == "cdc" && (opt.rows < 1000 || opt.changes < 1 || opt.changes > opt.rows / 2)) ||
        (mode == "notify" && opt.rows < 1000)) {
        return usage();
    }
    try {
        if (mode == "micro") {
            pgt::bench::run_micro(opt);
        } else if (mode == "locality") {
            pgt::bench::run_locality(opt);
        } else if (mode == "cdc") {
            pgt::bench::run_cdc(opt, big_scale, write_only);
        } else if (mode == "notify") {
            pgt::bench::run_notify(opt);
        } else {
            return usage();
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "pgt_bench %s failed: %s\n", mode.c_str(), e.what());
        return 1;
    }
    return 0;
}
