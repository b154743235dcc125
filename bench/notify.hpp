// Change-notification benchmark (`pgt_bench notify`): single-row UPDATE
// latency with pgtrickle.notify_changes() against the same table without it,
// for an UPDATE that changes a column and for a no-op UPDATE (SET col = col),
// single-row and bulk.
// Invariant: it only prints; every ratio compares numbers taken in one run.
#pragma once

#include "bench.hpp"

namespace pgt::bench {

// opt.rows: rows in each of the identical tables; opt.runs: measured rounds.
void run_notify(const Options& opt);

}  // namespace pgt::bench
