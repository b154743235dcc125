// AUTO's choice at each refresh of a stream table DIFFERENTIAL can
// maintain: DIFFERENTIAL while the change is small enough that its
// measured cost stays under FULL's, FULL otherwise.
// Invariant: a pure function of its inputs (the history the refresh reads);
// nothing here reads the server.
#pragma once
#include "core/core.hpp"

#include <cstdint>
#include <string>

namespace pgt {

inline constexpr int64_t kAutoReprobe = 16;
// FULL's cost is the shortest of the last kAutoFullSamples FULL refreshes.
inline constexpr int64_t kAutoFullSamples = 3;
// FULL is measured again while fewer than kAutoFullMeasured FULL times are
// known (see choose_auto): once is enough to replace a cold first time.
inline constexpr int64_t kAutoFullMeasured = 2;

// What AUTO knows before a refresh of a stream table DIFFERENTIAL can
// maintain: the changes waiting, the size of the sources, and the last
// measured refreshes of this stream table.
struct AutoInputs {
    int64_t changes = 0;  // buffered change rows in the windows
    // changes is the capture sequences' distance from the frontiers (an
    // upper bound read without scanning the buffers), not a count.
    bool changes_estimated = false;
    double source_rows = 0;  // Σ estimated rows of the sources (pg_class.reltuples)
    // The shortest of the last kAutoFullSamples FULL refreshes' durations,
    // -1 if none: one slow FULL refresh (a cold cache) does not make a
    // DIFFERENTIAL refresh that costs more than FULL usually does look cheap.
    double full_ms = -1;
    double diff_ms = -1;       // last DIFFERENTIAL refresh's duration, -1 if none
    int64_t diff_changes = 0;  // changes that DIFFERENTIAL refresh applied
    // The DIFFERENTIAL refresh before that one (-1 / 0 if none): with two
    // different change counts, cost = fixed + per change × changes.
    double prev_diff_ms = -1;
    int64_t prev_diff_changes = 0;
    // Refreshes since the last DIFFERENTIAL one: after kAutoReprobe FULL
    // refreshes in a row, one DIFFERENTIAL refresh measures again.
    int64_t since_diff = 0;
    // How many FULL refreshes full_ms is the best of (at most
    // kAutoFullSamples).
    int64_t full_samples = kAutoFullSamples;
};

struct AutoChoice {
    bool full = false;
    std::string reason;  // why FULL was chosen ("" for DIFFERENTIAL)
};

// AUTO's per-refresh choice: DIFFERENTIAL for at most auto_change_limit()
// changes, else FULL. With both measurements the limit is where the
// DIFFERENTIAL cost reaches the last FULL refresh's time: from the last two
// DIFFERENTIAL refreshes as fixed + per-change cost when they applied
// different numbers of changes and the cost grew with them (0 when the
// fixed part alone exceeds FULL: FULL always, until after kAutoReprobe
// FULL refreshes in a row the next limit comes from the last one's cost
// per change again, so DIFFERENTIAL is measured anew), else from the last
// one's cost per change (which includes its fixed part, so
// growth is over- rather than underestimated); without a DIFFERENTIAL
// measurement, a quarter of the source rows; -1 (no limit) when nothing
// is known. The refresh counts changes only up to limit + 1.
// Before any limit: while fewer than kAutoFullMeasured FULL refreshes are
// known and the last DIFFERENTIAL one, scaled to this change's count, cost
// more than half the best of them, a refresh with changes is FULL (measured again: one FULL time
// may be a cold cache's, the first at creation, and would keep a DIFFERENTIAL refresh that costs
// more than FULL usually does looking cheap; each FULL refresh spent measuring costs its difference
// to DIFFERENTIAL).
int64_t auto_change_limit(const AutoInputs& in);
AutoChoice choose_auto(const AutoInputs& in);

}  // namespace pgt
