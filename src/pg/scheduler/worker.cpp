// The per-database scheduler worker: waits on its latch (set by the
// launcher, and at the commit of a write to a source of a stream table
// that is due as soon as it has a change) until the next stream table is
// due by time, at most pg_trickle.scheduler_interval_ms, then runs a tick. Leaves cleanly when the
// extension is gone, the database is being dropped, or the server is in recovery, and after a
// tick when another database waits for a worker of the pool (its own database then waits in
// turn). Invariant: between ticks no transaction is open and no lock is held.
#include <algorithm>
#include <exception>
#include <string>

#include "core/error.hpp"
#include "core/sql/quote.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/spi.hpp"
#include "pg/common/settings.hpp"
#include "pg/scheduler/shared_state.hpp"
#include "pg/scheduler/tick.hpp"

extern "C" {
#include "postgres.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

PGDLLEXPORT void pgt_scheduler_main(Datum arg);
}

namespace pgt::pg {

namespace {

Oid g_dboid = InvalidOid;

void on_exit_leave(int, Datum) {
    // Reached on any exit: a clean leave set its own reason first, so this
    // only records a failure (the launcher restarts the worker).
    leave_worker(g_dboid, SlotState::kRunning);
}

[[noreturn]] void leave(SlotState why) {
    leave_worker(g_dboid, why);
    proc_exit(0);
}

// Runs one tick. A failure outside a refresh (a refresh's own failure is
// recorded by the tick) is logged, its transaction aborted, and the worker
// carries on at the next tick instead of exiting. Returns false when the
// database no longer has pg_trickle.
bool tick_survived(SchedulerMemory& memory) {
    std::string failure;
    try {
        return run_tick(memory);
    } catch (const pgt::Error& e) {
        failure = std::string(e.sqlstate()) + ": " + e.message();
    } catch (const std::exception& e) {
        failure = e.what();
    }
    pg_call([&] {
        AbortCurrentTransaction();
        ereport(WARNING, (errmsg("pg_trickle scheduler tick failed: %s", failure.c_str()),
                          errhint("The scheduler retries at its next tick.")));
    });
    return true;
}

void worker_loop() {
    SchedulerMemory memory;
    for (;;) {
        CHECK_FOR_INTERRUPTS();
        if (worker_stop_requested(g_dboid)) {
            leave(SlotState::kDropping);
        }
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
        }
        if (RecoveryInProgress()) {
            leave(SlotState::kRecovery);
        }
        // Disabled: no writer wakes it; it looks at the setting again after
        // pg_trickle.scheduler_interval_ms.
        memory.sleep_ms = g_scheduler_interval_ms;
        if (!g_scheduler_enabled) {
            set_wake_sources(g_dboid, {});
        } else if (!tick_survived(memory)) {
            leave(SlotState::kNoExtension);
        }
        if (g_scheduler_enabled && take_yield()) {
            // Another database waits for a worker of the pool: this one's
            // turn ends after a tick, and it waits in the queue for its
            // next due time (at once when it is due now).
            yield_worker(g_dboid, GetCurrentTimestamp() + memory.sleep_ms * INT64CONST(1000));
            proc_exit(0);
        }
        if (memory.sleep_ms == 0) {
            continue;  // a wake source was written while the tick ran
        }
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
                        std::min(memory.sleep_ms, g_scheduler_interval_ms), PG_WAIT_EXTENSION);
        ResetLatch(MyLatch);
    }
}

}  // namespace

}  // namespace pgt::pg

void pgt_scheduler_main(Datum arg) {
    pgt::pg::g_dboid = DatumGetObjectId(arg);
    pqsignal(SIGTERM, die);
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    BackgroundWorkerUnblockSignals();
    pgt::pg::attach_worker(pgt::pg::g_dboid);
    before_shmem_exit(pgt::pg::on_exit_leave, 0);
    BackgroundWorkerInitializeConnectionByOid(pgt::pg::g_dboid, InvalidOid, 0);
    // The worker is a superuser: nothing it runs may resolve a function or
    // operator outside pg_catalog (a role with CREATE on public could plant
    // one), whatever the database's or the configuration's search_path.
    SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);
    // A reload signalled while the worker started (before its handler was
    // installed) was ignored: read the configuration files once now.
    ProcessConfigFile(PGC_SIGHUP);
    pgstat_report_appname("pg_trickle scheduler");
    pgt::pg::Spi::tag_process_statements(pgt::sql::statement_tag("scheduler"));
    pgt::pg::worker_loop();
}
