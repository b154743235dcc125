// The locks pg_trickle takes for itself: per stream table (IMMEDIATE
// writers, refreshes) and per stream-table identity (IMMEDIATE writers of
// the same group or row). Transaction-scoped, in the server's lock manager.
// Invariant: no SQL statement can take, hold or wait for these locks
// (pg_advisory_lock and friends never produce their tags), so no role can
// stall another owner's writes or refreshes through them.
#pragma once

#include <cstdint>
#include <vector>

namespace pgt::pg {

// IMMEDIATE writers of stream table pgt_id: shared by writers whose
// changes touch disjoint rows of it (a keyed projection, an algebraic
// aggregate under its identity locks, a keyed join's key-table writers),
// exclusive for any other writer and for every refresh and recompute.
void lock_immediate_writers(int64_t pgt_id, bool exclusive);

// A refresh or recompute of pgt_id: the writers' lock exclusively, then
// the refresh lock (two refreshes of one stream table serialise), always
// in that order. Waits at most lock_timeout (the scheduler sets it).
void lock_stream_table_for_refresh(int64_t pgt_id);

// One lock per identity hash of pgt_id, taken in ascending order of the
// hashes (hashes must be sorted; duplicates are taken once).
void lock_identities(int64_t pgt_id, const std::vector<int32_t>& sorted_hashes);

}  // namespace pgt::pg
