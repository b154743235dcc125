// Shared memory of the scheduler: the launcher's latch, one slot per
// database that has (or may have) a scheduler worker, and a queue of
// databases to look at. Written by the launcher, the workers and ordinary
// backends (wake-ups, CREATE EXTENSION, DROP DATABASE).
// Invariant: every access holds the spinlock for a few instructions only;
// nothing that can fail or allocate runs under it.
#pragma once

#include <array>
#include <optional>
#include <vector>

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
}

namespace pgt::pg {

// Why a worker's slot ended; the launcher restarts only kRunning slots
// whose worker is gone (it crashed or failed).
enum class SlotState : uint8 {
    kFree = 0,
    kStarting,     // launcher registered the worker, not yet connected
    kRunning,      // worker running
    kNoExtension,  // database has no pg_trickle: the worker left
    kDropping,     // DROP DATABASE asked the worker to leave
    kRecovery,     // server in recovery: the worker left
    // No worker: the database waits for one of the pool
    // (pg_trickle.max_scheduler_workers) from due_at on, or at once when a
    // commit wrote a source that wakes it.
    kWaiting,
};

// True once _PG_init ran as a preloaded library and requested the memory.
bool scheduler_preloaded();

void request_scheduler_shmem();  // shmem_request_hook part
void init_scheduler_shmem();     // shmem_startup_hook part

// Launcher side.
// MyLatch becomes the launcher's latch (cleared when the launcher exits).
void register_launcher();
std::vector<Oid> take_probe_requests();
// Claims a slot for dboid in kStarting state; false when none is free or
// dboid already has a live slot (kStarting or kRunning).
bool claim_slot(Oid dboid);
std::optional<SlotState> slot_state(Oid dboid);
struct SlotView {
    SlotState state;
    int pid;  // 0: not attached yet, or left
};
std::optional<SlotView> slot_view(Oid dboid);
// Databases whose slot is starting or running (a restarted launcher adopts
// their workers).
std::vector<Oid> live_slots();
void free_slot(Oid dboid);
// dboid waits for a worker from due on (no worker runs for it); false when
// one is starting or running, or no slot is free.
bool queue_slot(Oid dboid, TimestampTz due);
struct WaitingDb {
    Oid dboid;
    SlotState state;  // kWaiting or kDropping (a drop asked while it waited)
    TimestampTz due;  // kWaiting: due from then on
    bool woken;       // kWaiting: a commit wrote one of its wake sources
};
// The slots of databases without a worker that wait for one, or whose drop
// came while they waited.
std::vector<WaitingDb> waiting_slots();
// n databases wait for a worker while every worker of the pool is busy:
// the first n running workers to end a tick leave for them (raising it
// from 0 sets every running worker's latch).
void want_yields(int n);
// Worker side, after a tick: whether this worker is one of those that leave.
bool take_yield();

// Worker side.
void attach_worker(Oid dboid);  // kRunning, pid and latch recorded
void leave_worker(Oid dboid, SlotState why);
// The worker leaves for another database's turn: its database waits again
// from due on (kWaiting), its wake sources kept.
void yield_worker(Oid dboid, TimestampTz due);
bool worker_stop_requested(Oid dboid);

// Writes to captured sources, counted at commit per bucket of source OIDs.
// The worker reads the counts before it looks at the buffers: a source
// whose bucket has not moved since it last found nothing pending still has
// nothing pending (a count moves after the writer's commit is visible).
inline constexpr int kSourceWriteBuckets = 256;
using SourceWriteCounts = std::array<uint32, kSourceWriteBuckets>;
int source_write_bucket(Oid relid);
SourceWriteCounts source_write_counts(Oid dboid);
// Worker side: the sources whose committed writes wake it (those of stream
// tables due as soon as they have a change); others wait for its timeout.
void set_wake_sources(Oid dboid, const std::vector<Oid>& relids);

// Any backend.
void request_probe(Oid dboid);  // the launcher looks at dboid soon
// At the commit of a transaction that wrote captured sources relids[0..n)
// (InvalidOid: any, too many to list): counts them, and sets the worker's
// latch when one is a wake source.
void note_committed_writes(Oid dboid, const Oid* relids, int n);
// Asks dboid's worker to leave (DROP DATABASE); false when none is
// starting or running.
bool stop_worker_for_drop(Oid dboid);
// The pid of dboid's starting (0) or running worker; nullopt when none.
std::optional<int> live_worker(Oid dboid);
bool worker_running(Oid dboid);

// True when this database's scheduler worker runs and is enabled: it then
// removes consumed change-buffer rows after each tick, so refreshes leave
// that work to it (a refresh's time is then its own work only).
bool scheduler_trims_buffers();

}  // namespace pgt::pg
