// Shared memory of the scheduler (see shared_state.hpp).
// Invariant: the spinlock guards every field; latches are set after it is
// released (SetLatch may signal another process).
#include "pg/scheduler/shared_state.hpp"

#include "pg/common/settings.hpp"

#include <algorithm>

extern "C" {
#include "postgres.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/shmem.h"
#include "storage/spin.h"
}

namespace pgt::pg {

namespace {

// Databases with pg_trickle (running, starting or waiting for a worker)
// a server serves at once.
constexpr int kSlots = 256;
constexpr int kQueue = 64;

// Writes to captured sources are counted per bucket of source OIDs (two
// sources in one bucket only cost a needless look); a bucket set in wake_on
// wakes the worker at a writer's commit.
constexpr int kWriteBuckets = kSourceWriteBuckets;

struct DbSlot {
    Oid dboid;
    SlotState state;
    pid_t pid;
    Latch* latch;
    bool stop;
    uint32 written[kWriteBuckets];
    uint64 wake_on[kWriteBuckets / 64];
    TimestampTz due;  // kWaiting: wants a worker from then on
    bool woken;       // kWaiting: a commit wrote a wake source
};

struct SchedulerShared {
    slock_t mutex;
    Latch* launcher_latch;
    int yields_wanted;  // want_yields
    int nqueued;
    Oid queue[kQueue];
    DbSlot slots[kSlots];
};

SchedulerShared* g_shared = nullptr;
bool g_requested = false;

DbSlot* find_slot(Oid dboid) {
    for (DbSlot& s : g_shared->slots) {
        if (s.state != SlotState::kFree && s.dboid == dboid) {
            return &s;
        }
    }
    return nullptr;
}

bool live(const DbSlot* s) {
    return s != nullptr && (s->state == SlotState::kStarting || s->state == SlotState::kRunning);
}

}  // namespace

bool scheduler_preloaded() {
    return g_requested;
}

void request_scheduler_shmem() {
    RequestAddinShmemSpace(MAXALIGN(sizeof(SchedulerShared)));
    g_requested = true;
}

void init_scheduler_shmem() {
    bool found = false;
    g_shared = static_cast<SchedulerShared*>(
        ShmemInitStruct("pg_trickle scheduler", sizeof(SchedulerShared), &found));
    if (!found) {
        memset(g_shared, 0, sizeof(SchedulerShared));
        SpinLockInit(&g_shared->mutex);
    }
}

namespace {

void unregister_launcher(int, Datum) {
    SpinLockAcquire(&g_shared->mutex);
    if (g_shared->launcher_latch == MyLatch) {
        g_shared->launcher_latch = nullptr;
    }
    SpinLockRelease(&g_shared->mutex);
}

}  // namespace

void register_launcher() {
    SpinLockAcquire(&g_shared->mutex);
    g_shared->launcher_latch = MyLatch;
    SpinLockRelease(&g_shared->mutex);
    before_shmem_exit(unregister_launcher, 0);
}

std::vector<Oid> take_probe_requests() {
    Oid copy[kQueue];
    SpinLockAcquire(&g_shared->mutex);
    int n = g_shared->nqueued;
    memcpy(copy, g_shared->queue, sizeof(Oid) * n);
    g_shared->nqueued = 0;
    SpinLockRelease(&g_shared->mutex);
    return std::vector<Oid>(copy, copy + n);
}

bool claim_slot(Oid dboid) {
    bool claimed = false;
    SpinLockAcquire(&g_shared->mutex);
    DbSlot* s = find_slot(dboid);
    if (!live(s)) {
        if (s == nullptr) {
            for (DbSlot& f : g_shared->slots) {
                if (f.state == SlotState::kFree) {
                    s = &f;
                    break;
                }
            }
        }
        if (s != nullptr) {
            *s = DbSlot{dboid, SlotState::kStarting, 0, nullptr, false, {}, {}, 0, false};
            claimed = true;
        }
    }
    SpinLockRelease(&g_shared->mutex);
    return claimed;
}

std::optional<SlotState> slot_state(Oid dboid) {
    SpinLockAcquire(&g_shared->mutex);
    DbSlot* s = find_slot(dboid);
    std::optional<SlotState> st = s ? std::optional(s->state) : std::nullopt;
    SpinLockRelease(&g_shared->mutex);
    return st;
}

std::optional<SlotView> slot_view(Oid dboid) {
    SpinLockAcquire(&g_shared->mutex);
    DbSlot* s = find_slot(dboid);
    std::optional<SlotView> v = s ? std::optional(SlotView{s->state, s->pid}) : std::nullopt;
    SpinLockRelease(&g_shared->mutex);
    return v;
}

std::vector<Oid> live_slots() {
    Oid found[kSlots];
    int n = 0;
    SpinLockAcquire(&g_shared->mutex);
    for (const DbSlot& s : g_shared->slots) {
        if (live(&s)) {
            found[n++] = s.dboid;
        }
    }
    SpinLockRelease(&g_shared->mutex);
    return std::vector<Oid>(found, found + n);
}

void free_slot(Oid dboid) {
    SpinLockAcquire(&g_shared->mutex);
    if (DbSlot* s = find_slot(dboid)) {
        *s = DbSlot{};
    }
    SpinLockRelease(&g_shared->mutex);
}

bool queue_slot(Oid dboid, TimestampTz due) {
    bool queued = false;
    SpinLockAcquire(&g_shared->mutex);
    DbSlot* s = find_slot(dboid);
    if (s == nullptr) {
        for (DbSlot& f : g_shared->slots) {
            if (f.state == SlotState::kFree) {
                s = &f;
                f = DbSlot{dboid, SlotState::kWaiting, 0, nullptr, false, {}, {}, due, false};
                break;
            }
        }
        queued = s != nullptr;
    } else if (!live(s) && s->state != SlotState::kDropping) {
        s->due = s->state == SlotState::kWaiting ? std::min(s->due, due) : due;
        s->state = SlotState::kWaiting;
        queued = true;
    }
    SpinLockRelease(&g_shared->mutex);
    return queued;
}

std::vector<WaitingDb> waiting_slots() {
    std::vector<WaitingDb> out;
    out.reserve(kSlots);
    SpinLockAcquire(&g_shared->mutex);
    for (const DbSlot& s : g_shared->slots) {
        if (s.state == SlotState::kWaiting ||
            (s.state == SlotState::kDropping && s.pid == 0 && s.latch == nullptr)) {
            out.push_back(WaitingDb{s.dboid, s.state, s.due, s.woken});
        }
    }
    SpinLockRelease(&g_shared->mutex);
    return out;
}

void want_yields(int n) {
    Latch* wake[kSlots];
    int woken = 0;
    SpinLockAcquire(&g_shared->mutex);
    if (n > 0 && g_shared->yields_wanted == 0) {
        for (const DbSlot& s : g_shared->slots) {
            if (s.state == SlotState::kRunning && s.latch != nullptr) {
                wake[woken++] = s.latch;
            }
        }
    }
    g_shared->yields_wanted = n;
    SpinLockRelease(&g_shared->mutex);
    for (int i = 0; i < woken; i++) {
        SetLatch(wake[i]);
    }
}

bool take_yield() {
    SpinLockAcquire(&g_shared->mutex);
    const bool yield = g_shared->yields_wanted > 0;
    if (yield) {
        g_shared->yields_wanted--;
    }
    SpinLockRelease(&g_shared->mutex);
    return yield;
}

void yield_worker(Oid dboid, TimestampTz due) {
    SpinLockAcquire(&g_shared->mutex);
    if (DbSlot* s = find_slot(dboid)) {
        if (s->pid == MyProcPid) {
            s->state = s->stop ? SlotState::kDropping : SlotState::kWaiting;
            s->pid = 0;
            s->latch = nullptr;
            s->due = due;
            s->woken = false;
        }
    }
    Latch* launcher = g_shared->launcher_latch;
    SpinLockRelease(&g_shared->mutex);
    if (launcher != nullptr) {
        SetLatch(launcher);
    }
}

void attach_worker(Oid dboid) {
    SpinLockAcquire(&g_shared->mutex);
    if (DbSlot* s = find_slot(dboid)) {
        s->state = SlotState::kRunning;
        s->pid = MyProcPid;
        s->latch = MyLatch;
    }
    SpinLockRelease(&g_shared->mutex);
}

void leave_worker(Oid dboid, SlotState why) {
    Latch* launcher = nullptr;
    SpinLockAcquire(&g_shared->mutex);
    if (DbSlot* s = find_slot(dboid)) {
        if (s->pid == MyProcPid) {
            s->state = s->stop ? SlotState::kDropping : why;
            s->pid = 0;
            s->latch = nullptr;
        }
    }
    launcher = g_shared->launcher_latch;
    SpinLockRelease(&g_shared->mutex);
    if (launcher != nullptr) {
        SetLatch(launcher);
    }
}

bool worker_stop_requested(Oid dboid) {
    SpinLockAcquire(&g_shared->mutex);
    DbSlot* s = find_slot(dboid);
    bool stop = s != nullptr && s->stop;
    SpinLockRelease(&g_shared->mutex);
    return stop;
}

void request_probe(Oid dboid) {
    if (g_shared == nullptr) {
        return;
    }
    SpinLockAcquire(&g_shared->mutex);
    bool queued = false;
    for (int i = 0; i < g_shared->nqueued; i++) {
        queued = queued || g_shared->queue[i] == dboid;
    }
    if (!queued && g_shared->nqueued < kQueue) {
        g_shared->queue[g_shared->nqueued++] = dboid;
    }
    Latch* launcher = g_shared->launcher_latch;
    SpinLockRelease(&g_shared->mutex);
    if (launcher != nullptr) {
        SetLatch(launcher);
    }
}

int source_write_bucket(Oid relid) {
    return static_cast<int>(relid % kWriteBuckets);
}

void note_committed_writes(Oid dboid, const Oid* relids, int n) {
    if (g_shared == nullptr || n == 0) {
        return;
    }
    Latch* latch = nullptr;
    SpinLockAcquire(&g_shared->mutex);
    DbSlot* s = find_slot(dboid);
    if (s != nullptr) {
        bool wake = false;
        for (int i = 0; i < n; i++) {
            // InvalidOid stands for sources too many to list: every bucket.
            int lo = relids[i] == InvalidOid ? 0 : source_write_bucket(relids[i]);
            int hi = relids[i] == InvalidOid ? kWriteBuckets : lo + 1;
            for (int b = lo; b < hi; b++) {
                s->written[b]++;
                wake = wake || (s->wake_on[b / 64] & (uint64(1) << (b % 64))) != 0;
            }
        }
        if (wake && s->state == SlotState::kRunning) {
            latch = s->latch;
        } else if (wake && s->state == SlotState::kWaiting) {
            s->woken = true;  // its turn comes at once
            latch = g_shared->launcher_latch;
        }
    }
    SpinLockRelease(&g_shared->mutex);
    if (latch != nullptr) {
        SetLatch(latch);
    }
}

SourceWriteCounts source_write_counts(Oid dboid) {
    SourceWriteCounts out{};
    if (g_shared == nullptr) {
        return out;
    }
    SpinLockAcquire(&g_shared->mutex);
    if (DbSlot* s = find_slot(dboid)) {
        memcpy(out.data(), s->written, sizeof(s->written));
    }
    SpinLockRelease(&g_shared->mutex);
    return out;
}

void set_wake_sources(Oid dboid, const std::vector<Oid>& relids) {
    uint64 mask[kWriteBuckets / 64] = {};
    for (Oid r : relids) {
        int b = source_write_bucket(r);
        mask[b / 64] |= uint64(1) << (b % 64);
    }
    if (g_shared == nullptr) {
        return;
    }
    SpinLockAcquire(&g_shared->mutex);
    if (DbSlot* s = find_slot(dboid)) {
        memcpy(s->wake_on, mask, sizeof(mask));
    }
    SpinLockRelease(&g_shared->mutex);
}

bool stop_worker_for_drop(Oid dboid) {
    if (g_shared == nullptr) {
        return false;
    }
    SpinLockAcquire(&g_shared->mutex);
    DbSlot* s = find_slot(dboid);
    bool was_live = live(s);
    Latch* latch = nullptr;
    if (was_live) {
        s->stop = true;
        latch = s->latch;
    } else if (s != nullptr && s->state == SlotState::kWaiting) {
        s->state = SlotState::kDropping;  // no worker is started for it during the drop
    }
    SpinLockRelease(&g_shared->mutex);
    if (latch != nullptr) {
        SetLatch(latch);
    }
    return was_live;
}

std::optional<int> live_worker(Oid dboid) {
    if (g_shared == nullptr) {
        return std::nullopt;
    }
    SpinLockAcquire(&g_shared->mutex);
    DbSlot* s = find_slot(dboid);
    std::optional<int> pid = live(s) ? std::optional<int>(s->pid) : std::nullopt;
    SpinLockRelease(&g_shared->mutex);
    return pid;
}

bool worker_running(Oid dboid) {
    if (g_shared == nullptr) {
        return false;
    }
    SpinLockAcquire(&g_shared->mutex);
    DbSlot* s = find_slot(dboid);
    bool running = s != nullptr && s->state == SlotState::kRunning && s->pid != 0;
    SpinLockRelease(&g_shared->mutex);
    return running;
}

bool scheduler_trims_buffers() {
    return g_scheduler_enabled && worker_running(MyDatabaseId);
}

}  // namespace pgt::pg
