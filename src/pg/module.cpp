// Module entry: PG_MODULE_MAGIC and _PG_init (settings, hooks, workers).
// Invariant: _PG_init only registers; it runs no SQL and allocates nothing
// that outlives a failed load. Workers, shared memory and the utility hook
// exist only when pg_trickle is in shared_preload_libraries; the parse
// hook that lets internal statements read change buffers, the executor
// hooks that write staged capture rows (staged_rows.hpp) and the one that
// notes UPDATEs nested in IMMEDIATE statements (immediate.hpp) and the
// object-access hook that sees our triggers dropped (dropped_triggers.hpp)
// are always there.
#include "pg/boundary/boundary.hpp"
#include "pg/refresh/progress.hpp"
#include "pg/cdc/buffer_access.hpp"
#include "pg/cdc/commit_marks.hpp"
#include "pg/cdc/staged_rows.hpp"
#include "pg/catalog/dropped_triggers.hpp"
#include "pg/scheduler/hooks.hpp"
#include "pg/common/settings.hpp"
#include "pg/refresh/immediate.hpp"
#include "pg/scheduler/shared_state.hpp"

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"

PG_MODULE_MAGIC;

PGDLLEXPORT void _PG_init(void);
}

namespace {

shmem_request_hook_type g_prev_shmem_request = nullptr;
shmem_startup_hook_type g_prev_shmem_startup = nullptr;

void shmem_request() {
    if (g_prev_shmem_request != nullptr) {
        g_prev_shmem_request();
    }
    pgt::pg::request_scheduler_shmem();
    pgt::pg::request_progress_shmem();
    pgt::pg::request_commit_marks_shmem();
}

void shmem_startup() {
    if (g_prev_shmem_startup != nullptr) {
        g_prev_shmem_startup();
    }
    pgt::pg::init_scheduler_shmem();
    pgt::pg::init_progress_shmem();
    pgt::pg::init_commit_marks_shmem();
}

void register_launcher_worker() {
    BackgroundWorker w;
    memset(&w, 0, sizeof(w));
    w.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    w.bgw_start_time = BgWorkerStart_RecoveryFinished;
    w.bgw_restart_time = 5;
    snprintf(w.bgw_library_name, BGW_MAXLEN, "pg_trickle");
    snprintf(w.bgw_function_name, BGW_MAXLEN, "pgt_launcher_main");
    snprintf(w.bgw_name, BGW_MAXLEN, "pg_trickle launcher");
    snprintf(w.bgw_type, BGW_MAXLEN, "pg_trickle launcher");
    RegisterBackgroundWorker(&w);
}

}  // namespace

void _PG_init(void) {
    pgt::pg::define_settings();
    pgt::pg::install_buffer_access_hook();
    pgt::pg::install_staged_rows_hooks();
    pgt::pg::install_immediate_hooks();
    pgt::pg::install_dropped_triggers_hook();
    if (!process_shared_preload_libraries_in_progress) {
        return;  // EC-36: everything but automatic scheduling works
    }
    g_prev_shmem_request = shmem_request_hook;
    shmem_request_hook = shmem_request;
    g_prev_shmem_startup = shmem_startup_hook;
    shmem_startup_hook = shmem_startup;
    pgt::pg::install_scheduler_hooks();
    register_launcher_worker();
}
