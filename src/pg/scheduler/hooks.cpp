// Hooks that keep the launcher informed from ordinary backends:
//  - CREATE EXTENSION pg_trickle, CREATE DATABASE: at commit, ask the
//    launcher to look at the database (start its scheduler);
//  - DROP DATABASE: ask that database's worker to leave and wait for it
//    (5 s, then it is terminated; up to 10 s), so the drop is not refused
//    for a connected worker;
//  - a transaction that wrote captured sources: at commit, count the
//    writes and wake the database's scheduler when it waits for one of
//    those sources (mark_source_written).
// Invariant: nothing here fails a user's statement; the hooks only signal.
#include <optional>
#include <vector>

#include <signal.h>

#include "pg/scheduler/hooks.hpp"
#include "pg/scheduler/shared_state.hpp"

extern "C" {
#include "postgres.h"
#include "access/xact.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/latch.h"
#include "storage/procarray.h"
#include "tcop/utility.h"
#include "utils/wait_event.h"
}

namespace pgt::pg {

namespace {

ProcessUtility_hook_type g_prev_utility = nullptr;
bool g_callback_registered = false;
// Captured sources this transaction wrote (a few: past kMaxWritten, one
// InvalidOid stands for all), counted at commit (note_committed_writes).
constexpr int kMaxWritten = 16;
Oid g_written[kMaxWritten];
int g_nwritten = 0;
std::vector<Oid>* g_probe_at_commit = nullptr;  // TopMemoryContext-free: plain heap

void xact_callback(XactEvent event, void*) {
    if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT) {
        note_committed_writes(MyDatabaseId, g_written, g_nwritten);
        if (g_probe_at_commit != nullptr) {
            for (Oid db : *g_probe_at_commit) {
                request_probe(db);
            }
        }
    }
    // A prepared transaction's writes are counted by no one (COMMIT
    // PREPARED runs no callback of ours): the worker does not trust its
    // counts while prepared transactions are possible.
    if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
        event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
        event == XACT_EVENT_PREPARE) {
        g_nwritten = 0;
        if (g_probe_at_commit != nullptr) {
            g_probe_at_commit->clear();
        }
    }
}

void ensure_callback() {
    if (!g_callback_registered) {
        RegisterXactCallback(xact_callback, nullptr);
        g_callback_registered = true;
    }
}

void probe_at_commit(Oid db) {
    ensure_callback();
    if (g_probe_at_commit == nullptr) {
        g_probe_at_commit = new std::vector<Oid>();
    }
    g_probe_at_commit->push_back(db);
}

// DROP DATABASE fails while any backend is connected to the database
// (after waiting 5 s itself). The worker, starting or running, is asked to
// leave, which it does at the top of its loop; one still there after 5 s
// (in a long tick) is terminated: its transaction rolls back, as DROP
// DATABASE ... WITH (FORCE) would do to it.
void stop_worker_before_drop(const char* dbname) {
    Oid dboid = get_database_oid(dbname, true);
    if (!OidIsValid(dboid) || !stop_worker_for_drop(dboid)) {
        return;
    }
    for (int i = 0; i < 100; i++) {
        std::optional<int> pid = live_worker(dboid);
        if (!pid) {
            return;
        }
        // Only a process still in the proc array: the pid is not signalled
        // after the worker has gone.
        if (i == 50 && *pid != 0 && BackendPidGetProc(*pid) != nullptr) {
            (void)kill(*pid, SIGTERM);
        }
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 100,
                        PG_WAIT_EXTENSION);
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
    }
}

void utility_hook(PlannedStmt* pstmt, const char* query, bool read_only_tree,
                  ProcessUtilityContext context, ParamListInfo params, QueryEnvironment* env,
                  DestReceiver* dest, QueryCompletion* qc) {
    Node* stmt = pstmt->utilityStmt;
    if (IsA(stmt, DropdbStmt)) {
        stop_worker_before_drop(castNode(DropdbStmt, stmt)->dbname);
    }
    if (g_prev_utility != nullptr) {
        g_prev_utility(pstmt, query, read_only_tree, context, params, env, dest, qc);
    } else {
        standard_ProcessUtility(pstmt, query, read_only_tree, context, params, env, dest, qc);
    }
    if (IsA(stmt, CreateExtensionStmt) &&
        strcmp(castNode(CreateExtensionStmt, stmt)->extname, "pg_trickle") == 0) {
        probe_at_commit(MyDatabaseId);
    } else if (IsA(stmt, CreatedbStmt)) {
        Oid db = get_database_oid(castNode(CreatedbStmt, stmt)->dbname, true);
        if (OidIsValid(db)) {
            probe_at_commit(db);
        }
    }
}

}  // namespace

void install_scheduler_hooks() {
    g_prev_utility = ProcessUtility_hook;
    ProcessUtility_hook = utility_hook;
}

void mark_source_written(Oid relid) {
    if (!scheduler_preloaded()) {
        return;
    }
    for (int i = 0; i < g_nwritten; i++) {
        if (g_written[i] == relid || g_written[i] == InvalidOid) {
            return;
        }
    }
    ensure_callback();
    if (g_nwritten == kMaxWritten) {
        g_written[0] = InvalidOid;
        g_nwritten = 1;
        return;
    }
    g_written[g_nwritten++] = relid;
}

}  // namespace pgt::pg
