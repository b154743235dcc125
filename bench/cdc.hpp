// Change-capture and refresh benchmark (`pgt_bench cdc`): write-path cost of
// the capture trigger with 0, 1 and 3 stream tables, DIFFERENTIAL refresh
// scaling with source size, and DIFFERENTIAL vs FULL vs REFRESH MATERIALIZED VIEW.
// Invariant: it only prints; every ratio compares numbers taken in one run.
#pragma once

#include "bench.hpp"

namespace pgt::bench {

// opt.rows: source size (write path, section 3, middle scaling size);
// opt.runs: measured rounds; opt.changes: rows updated for section 3.
// With big_scale, refresh scaling also runs at 10 x opt.rows; with
// write_only, only section 1 (the write path) runs.
void run_cdc(const Options& opt, bool big_scale, bool write_only);

}  // namespace pgt::bench
