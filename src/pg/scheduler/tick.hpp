// One scheduler tick in one database: read the stream tables, decide which
// are due (src/core/sched, src/core/dag), refresh them in dependency order,
// one transaction per unit, diamonds all-or-none, and record what happened.
// Invariant: a failed refresh leaves its stream table (or its whole atomic
// group) exactly as it was; the failure itself is recorded and alerted.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include "core/sched/policy.hpp"

namespace pgt::pg {

// What the worker remembers between ticks (lost on restart, which only
// shortens a back-off or restarts a falling-behind streak).
struct TableMemory {
    int failed_attempts = 0;
    int64_t retry_not_before_us = 0;
    // When the worker last ran it (any outcome; SKIPPED has no back-off).
    int64_t last_attempt_us = 0;
    sched::LagTracker lag;
};

struct SchedulerMemory {
    std::map<int64_t, TableMemory> tables;  // by pgt_id
    // When a refresh of a stream table owned by each role last ran here
    // (the fair order of a tick's units).
    std::map<uint32_t, int64_t> owner_served_us;
    uint64_t random_state = 0x9e3779b97f4a7c15ULL;
    int64_t last_prune_us = 0;      // last pruning of the refresh history
    int64_t last_retention_us = 0;  // last look for consumers past max_buffer_retention
    // Per capture source: its consumers' frontiers when its buffer was
    // last trimmed (a buffer is trimmed again once one of them moved).
    std::map<int64_t, std::string> trimmed_at;
    // (pgt_id, source_id) found with nothing pending, and its source's
    // write count then (load_pending).
    std::map<std::pair<int64_t, int64_t>, uint32_t> quiet;
    // (pgt_id, table) of a FULL table with change notes, and the table's
    // write count before the worker's last refresh of it (load_notes).
    std::map<std::pair<int64_t, uint32_t>, uint32_t> noted;
    // How long the worker may wait for its latch before the next tick.
    int sleep_ms = 0;
};

// Runs one tick. Returns false when the database no longer has pg_trickle.
// Must be called outside a transaction.
bool run_tick(SchedulerMemory& memory);

}  // namespace pgt::pg
