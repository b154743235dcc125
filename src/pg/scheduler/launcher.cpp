// The launcher background worker: starts one scheduler worker per database
// that has pg_trickle, restarts a worker that failed, and forgets a database
// whose worker left because the extension is gone or the database is dropped.
//
//   start ─► probe every database ─┐
//   CREATE EXTENSION / DATABASE ───┼─► queue ─► launcher ─► worker(db)
//   worker failed (exit ≠ clean) ──┘                            │ leaves: no extension,
//                                                               ▼ dropping, recovery
// Terminated (pg_terminate_backend), it exits with an error and the
// postmaster starts it again after bgw_restart_time; the new launcher
// adopts the workers its predecessor started (their slots in shared memory).
// Invariant: the launcher never connects to a database; it reads only the
// shared catalog pg_database, so it never blocks DROP DATABASE.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "pg/common/settings.hpp"
#include "pg/scheduler/shared_state.hpp"

extern "C" {
#include "postgres.h"
#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

PGDLLEXPORT void pgt_launcher_main(Datum arg);
}

namespace pgt::pg {

namespace {

constexpr long kRescanMs = 10000;       // look at failed/dropping slots this often
constexpr long kRestartDelayMs = 2000;  // after a worker failed
// After a worker left for DROP DATABASE: the drop waits for it up to 10 s
// (hooks.cpp), then up to 5 s for other backends itself.
constexpr long kDropGraceMs = 30000;
// A worker adopted while still starting has this long to attach.
constexpr long kAdoptGraceMs = 30000;

struct Worker {
    BackgroundWorkerHandle* handle = nullptr;
    TimestampTz retry_at = 0;  // failed: restart not before
    // Started by an earlier launcher: no handle, watched through its slot.
    bool adopted = false;
    TimestampTz adopted_at = 0;
};

std::map<Oid, Worker> g_workers;  // databases whose worker runs, starts, or just left
bool g_warned_no_worker = false;
std::set<Oid> g_no_extension;  // probed, no pg_trickle: not probed again until asked

// Databases a scheduler may run in (connectable, not templates).
std::vector<Oid> list_databases() {
    std::vector<Oid> out;
    StartTransactionCommand();
    PushActiveSnapshot(GetTransactionSnapshot());
    Relation rel = table_open(DatabaseRelationId, AccessShareLock);
    TableScanDesc scan = table_beginscan_catalog(rel, 0, nullptr);
    HeapTuple tup;
    while ((tup = heap_getnext(scan, ForwardScanDirection)) != nullptr) {
        Form_pg_database db = reinterpret_cast<Form_pg_database>(GETSTRUCT(tup));
        if (db->datallowconn && !db->datistemplate) {
            out.push_back(db->oid);
        }
    }
    table_endscan(scan);
    table_close(rel, AccessShareLock);
    PopActiveSnapshot();
    CommitTransactionCommand();
    return out;
}

bool database_exists(Oid dboid) {
    for (Oid db : list_databases()) {
        if (db == dboid) {
            return true;
        }
    }
    return false;
}

// Workers of the pool running or starting (watched), at most
// pg_trickle.max_scheduler_workers.
int busy_workers() {
    int n = 0;
    for (const auto& [db, w] : g_workers) {
        n += w.handle != nullptr || w.adopted ? 1 : 0;
    }
    return n;
}

// Starts a worker for dboid, or puts it in the queue (kWaiting, due now)
// while the pool is full; serve_waiting starts it in its turn.
bool start_worker(Oid dboid) {
    if (busy_workers() >= g_max_scheduler_workers) {
        (void)queue_slot(dboid, GetCurrentTimestamp());
        return false;
    }
    if (!claim_slot(dboid)) {
        return false;
    }
    BackgroundWorker w;
    memset(&w, 0, sizeof(w));
    w.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    w.bgw_start_time = BgWorkerStart_RecoveryFinished;
    w.bgw_restart_time = BGW_NEVER_RESTART;
    snprintf(w.bgw_library_name, BGW_MAXLEN, "pg_trickle");
    snprintf(w.bgw_function_name, BGW_MAXLEN, "pgt_scheduler_main");
    snprintf(w.bgw_name, BGW_MAXLEN, "pg_trickle scheduler %u", dboid);
    snprintf(w.bgw_type, BGW_MAXLEN, "pg_trickle scheduler");
    w.bgw_main_arg = ObjectIdGetDatum(dboid);
    w.bgw_notify_pid = MyProcPid;
    BackgroundWorkerHandle* handle = nullptr;
    if (!RegisterDynamicBackgroundWorker(&w, &handle)) {
        free_slot(dboid);
        (void)queue_slot(dboid, GetCurrentTimestamp() + kRestartDelayMs * 1000);
        if (!g_warned_no_worker) {  // once until a worker starts again, not per attempt
            ereport(WARNING,
                    (errmsg("pg_trickle could not start a scheduler worker: every background "
                            "worker slot is in use"),
                     errdetail("Databases wait for a worker and are served as workers end."),
                     errhint("Raise max_worker_processes, or lower "
                             "pg_trickle.max_scheduler_workers.")));
            g_warned_no_worker = true;
        }
        return false;
    }
    g_warned_no_worker = false;
    g_workers[dboid] = Worker{handle, 0};
    return true;
}

// Starts workers for the databases whose turn it is, most overdue first,
// while the pool has room, and asks as many running workers as there are
// databases still due to leave after their tick. Returns how long to wait
// (ms) before the next waiting database is due.
long serve_waiting() {
    const TimestampTz now = GetCurrentTimestamp();
    std::vector<std::pair<TimestampTz, Oid>> due;
    TimestampTz next = 0;
    for (const WaitingDb& d : waiting_slots()) {
        if (g_workers.count(d.dboid) != 0) {
            continue;  // its worker just left: reap_workers looks at it
        }
        if (d.state == SlotState::kDropping) {
            g_workers[d.dboid] = Worker{};  // a drop came while it waited: as a worker that left
            continue;
        }
        if (d.woken || d.due <= now) {
            due.emplace_back(std::min(d.due, now), d.dboid);
        } else if (next == 0 || d.due < next) {
            next = d.due;
        }
    }
    std::sort(due.begin(), due.end());
    std::size_t started = 0;
    while (started < due.size() && busy_workers() < g_max_scheduler_workers) {
        (void)start_worker(due[started++].second);
    }
    want_yields(static_cast<int>(due.size() - started));
    return next == 0 ? 1000 : std::clamp<long>((next - now) / 1000 + 1, 1, 1000);
}

// Workers an earlier launcher started (it was terminated): watched through
// their slots from now on.
void adopt_workers() {
    const TimestampTz now = GetCurrentTimestamp();
    for (Oid db : live_slots()) {
        g_workers[db] = Worker{nullptr, 0, true, now};
    }
    if (!g_workers.empty()) {
        ereport(LOG, (errmsg("pg_trickle launcher restarted: it watches the %zu scheduler "
                             "workers that are still running",
                             g_workers.size())));
    }
}

// Whether a worker this launcher watches has stopped (or, adopted while
// starting, never attached).
bool worker_gone(Oid dboid, const Worker& w, TimestampTz now) {
    if (w.handle != nullptr) {
        pid_t pid = 0;
        return GetBackgroundWorkerPid(w.handle, &pid) == BGWH_STOPPED;
    }
    if (!w.adopted) {
        return true;  // failed before: waiting for its restart
    }
    std::optional<SlotView> v = slot_view(dboid);
    if (!v || v->state == SlotState::kStarting) {
        return !v || TimestampDifferenceExceeds(w.adopted_at, now, kAdoptGraceMs);
    }
    return v->state != SlotState::kRunning || v->pid == 0;
}

// Looks at each known worker: gone with a clean reason → forget the
// database; gone otherwise (crash, error) → restart after a delay.
void reap_workers() {
    TimestampTz now = GetCurrentTimestamp();
    for (auto it = g_workers.begin(); it != g_workers.end();) {
        Oid dboid = it->first;
        Worker& w = it->second;
        bool gone = worker_gone(dboid, w, now);
        if (!gone) {
            ++it;
            continue;
        }
        std::optional<SlotState> st = slot_state(dboid);
        if (st == SlotState::kWaiting) {  // left for another database's turn
            it = g_workers.erase(it);
            continue;
        }
        bool clean = st == SlotState::kNoExtension || st == SlotState::kDropping ||
                     st == SlotState::kRecovery;
        if (clean) {
            if (st == SlotState::kNoExtension) {
                g_no_extension.insert(dboid);
            }
            free_slot(dboid);
            if (st == SlotState::kDropping) {
                // DROP DATABASE is waiting for the database to have no
                // backend: no worker is started for it (not even by the
                // rescan) until the drop has had time to finish; one that
                // failed gets its worker back then.
                w = Worker{nullptr, now + kDropGraceMs * 1000};
                ++it;
                continue;
            }
            it = g_workers.erase(it);
            continue;
        }
        const bool watched = w.handle != nullptr || w.adopted;
        if (!watched && now >= w.retry_at && !database_exists(dboid)) {
            it = g_workers.erase(it);  // dropped while no worker ran
            continue;
        }
        if (watched && !database_exists(dboid)) {  // dropped meanwhile
            free_slot(dboid);
            it = g_workers.erase(it);
            continue;
        }
        if (watched) {  // failed: its turn comes again after a delay
            free_slot(dboid);
            (void)queue_slot(dboid, now + kRestartDelayMs * 1000);
            it = g_workers.erase(it);
            continue;
        }
        if (now >= w.retry_at) {  // a drop's grace has passed, and it still exists
            (void)queue_slot(dboid, now);
            it = g_workers.erase(it);
            continue;
        }
        ++it;
    }
}

// SIGTERM is PostgreSQL's die(): the FATAL error names the launcher and
// the administrator command in the log, and its exit status makes the
// postmaster start the launcher again (at shutdown it is not restarted).
[[noreturn]] void launcher_loop() {
    TimestampTz last_rescan = 0;  // rescan at once when enabled
    long wait_ms = 1000;
    for (;;) {
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, wait_ms,
                        PG_WAIT_EXTENSION);
        wait_ms = 1000;
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
        }
        if (!g_scheduler_enabled) {
            (void)take_probe_requests();  // looked at again when enabled
            g_no_extension.clear();
            last_rescan = 0;
            want_yields(0);
            continue;  // running workers see the setting too and idle
        }
        for (Oid db : take_probe_requests()) {
            g_no_extension.erase(db);
            start_worker(db);
        }
        reap_workers();
        // A database whose worker left for DROP DATABASE may still exist
        // (the drop failed), and a database created from a template that
        // has pg_trickle sends no request: look again now and then.
        if (TimestampDifferenceExceeds(last_rescan, GetCurrentTimestamp(), kRescanMs)) {
            last_rescan = GetCurrentTimestamp();
            const std::vector<Oid> dbs = list_databases();
            for (Oid db : dbs) {
                if (g_workers.count(db) == 0 && g_no_extension.count(db) == 0 && !slot_state(db)) {
                    start_worker(db);
                }
            }
            for (const WaitingDb& d : waiting_slots()) {  // dropped while waiting
                if (d.state == SlotState::kWaiting &&
                    std::find(dbs.begin(), dbs.end(), d.dboid) == dbs.end()) {
                    free_slot(d.dboid);
                }
            }
        }
        wait_ms = serve_waiting();
    }
}

}  // namespace

}  // namespace pgt::pg

void pgt_launcher_main(Datum) {
    pqsignal(SIGTERM, die);
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    BackgroundWorkerUnblockSignals();
    BackgroundWorkerInitializeConnection(nullptr, nullptr, 0);
    // The worker is a superuser: nothing it runs may resolve a function or
    // operator outside pg_catalog (a role with CREATE on public could plant
    // one), whatever the database's or the configuration's search_path.
    SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);
    // A reload signalled while the launcher started was ignored.
    ProcessConfigFile(PGC_SIGHUP);
    pgstat_report_appname("pg_trickle launcher");
    pgt::pg::register_launcher();
    pgt::pg::adopt_workers();
    pgt::pg::launcher_loop();
}
