// Shared memory of the scheduler: the launcher's latch, one slot per
// database that has (or may have) a scheduler worker, and a queue of
// databases to look at. Written by the launcher, the workers and ordinary
// backends (wake-ups, CREATE EXTENSION, DROP DATABASE).
// Invariant: every access holds the spinlock for a few instructions only;
// nothing that can fail or allocate runs under it.
#pragma once

#include <optional>
#include <vector>

extern "C" {
#include "postgres.h"
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
};

// True once _PG_init ran as a preloaded library and requested the memory.
bool scheduler_preloaded();

void request_scheduler_shmem();  // shmem_request_hook part
void init_scheduler_shmem();     // shmem_startup_hook part

// Launcher side.
void register_launcher();  // MyLatch becomes the launcher's latch
std::vector<Oid> take_probe_requests();
// Claims a slot for dboid in kStarting state; false when none is free or
// dboid already has a live slot (kStarting or kRunning).
bool claim_slot(Oid dboid);
std::optional<SlotState> slot_state(Oid dboid);
void free_slot(Oid dboid);

// Worker side.
void attach_worker(Oid dboid);  // kRunning, pid and latch recorded
void leave_worker(Oid dboid, SlotState why);
bool worker_stop_requested(Oid dboid);

// Any backend.
void request_probe(Oid dboid);   // the launcher looks at dboid soon
void wake_scheduler(Oid dboid);  // sets the worker's latch, if any
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
