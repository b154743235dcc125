// Definitions of every pg_trickle.* setting (scheduler, analysis, refresh).
// Invariant: every setting has a documented default and range; settings a
// running worker re-reads on SIGHUP are PGC_SIGHUP.
#include "pg/common/settings.hpp"

#include <climits>

extern "C" {
#include "postgres.h"
#include "utils/guc.h"
}

namespace pgt::pg {

bool g_scheduler_enabled = true;
int g_scheduler_interval_ms = 1000;
int g_max_scheduler_workers = 4;
int g_refresh_work_mem_kb = 64 * 1024;
double g_delta_random_page_cost = 1.1;
int g_default_schedule_seconds = 1;
int g_min_schedule_seconds = 0;
int g_max_consecutive_errors = 3;
bool g_diamond_atomic = true;
int g_history_retention_seconds = 7 * 86400;
int g_max_grouping_set_branches = 64;
bool g_drive_from_changes = true;
double g_kept_copy_fraction = 0.2;
int g_lock_timeout_ms = 5000;
int g_immediate_max_rows = 0;
int g_log_min_duration_refresh_ms = -1;
bool g_notify_minimal = false;
int g_refresh_timeout_ms = 0;
int g_max_buffer_retention = 1000000;

namespace {

int g_diamond_consistency = 0;  // index into kDiamondOptions

const struct config_enum_entry kDiamondOptions[] = {
    {"atomic", 0, false}, {"none", 1, false}, {nullptr, 0, false}};

void diamond_assign(int value, void*) {
    g_diamond_atomic = value == 0;
}

int g_notify_payload = 0;  // index into kNotifyPayloadOptions

const struct config_enum_entry kNotifyPayloadOptions[] = {
    {"keys", 0, false}, {"minimal", 1, false}, {nullptr, 0, false}};

void notify_payload_assign(int value, void*) {
    g_notify_minimal = value == 1;
}

}  // namespace

void define_settings() {
    DefineCustomBoolVariable("pg_trickle.enabled",
                             "Whether the background scheduler refreshes stream tables.",
                             "Manual refreshes work either way.", &g_scheduler_enabled, true,
                             PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "pg_trickle.scheduler_interval_ms",
        "Longest time a scheduler waits between two looks at its stream tables.", nullptr,
        &g_scheduler_interval_ms, 1000, 10, 60000, PGC_SIGHUP, GUC_UNIT_MS, nullptr, nullptr,
        nullptr);
    DefineCustomIntVariable(
        "pg_trickle.max_scheduler_workers",
        "Most scheduler workers running at once, across all databases.",
        "With more databases than workers, each worker leaves after a tick when another "
        "database is due, and databases take turns, most overdue first.",
        &g_max_scheduler_workers, 4, 1, 256, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("pg_trickle.default_schedule_seconds",
                            "Interval of a 'calculated' stream table that no stream table reads.",
                            nullptr, &g_default_schedule_seconds, 1, 1, 86400, PGC_SIGHUP,
                            GUC_UNIT_S, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("pg_trickle.min_schedule_seconds",
                            "Shortest interval the scheduler refreshes any stream table at.",
                            "Cron schedules are not raised to it; 0: none.",
                            &g_min_schedule_seconds, 0, 0, 86400, PGC_SIGHUP, GUC_UNIT_S, nullptr,
                            nullptr, nullptr);
    DefineCustomIntVariable("pg_trickle.max_consecutive_errors",
                            "Failed scheduled refreshes in a row after which a stream table is "
                            "suspended.",
                            nullptr, &g_max_consecutive_errors, 3, 1, 1000, PGC_SIGHUP, 0, nullptr,
                            nullptr, nullptr);
    DefineCustomEnumVariable("pg_trickle.diamond_consistency",
                             "Whether stream tables of a diamond refresh all or none in a tick.",
                             nullptr, &g_diamond_consistency, 0, kDiamondOptions, PGC_SIGHUP, 0,
                             nullptr, diamond_assign, nullptr);
    DefineCustomIntVariable("pg_trickle.history_retention",
                            "How long the scheduler keeps rows of pgtrickle.pgt_refresh_history.",
                            "0 keeps every row. Pruned by each database's scheduler.",
                            &g_history_retention_seconds, 7 * 86400, 0, INT_MAX, PGC_SIGHUP,
                            GUC_UNIT_S, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("pg_trickle.max_grouping_set_branches",
                            "Most grouping sets a GROUPING SETS, CUBE or ROLLUP query may expand "
                            "to under DIFFERENTIAL refresh.",
                            "Each set is recomputed as its own branch; FULL refresh has no limit.",
                            &g_max_grouping_set_branches, 64, 1, 65536, PGC_USERSET, 0, nullptr,
                            nullptr, nullptr);
    DefineCustomIntVariable(
        "pg_trickle.refresh_work_mem",
        "Least work_mem a DIFFERENTIAL refresh's delta statements run with.",
        "A delta statement sorts, hashes and aggregates whole change windows; a larger work_mem "
        "keeps that in memory. A FULL recompute runs with work_mem as it is, as REFRESH "
        "MATERIALIZED VIEW does. -1 leaves work_mem as it is.",
        &g_refresh_work_mem_kb, 64 * 1024, -1, MAX_KILOBYTES, PGC_USERSET, GUC_UNIT_KB, nullptr,
        nullptr, nullptr);
    DefineCustomRealVariable(
        "pg_trickle.delta_random_page_cost",
        "Most random_page_cost a DIFFERENTIAL refresh's delta statements are planned with.",
        "A delta statement probes the tables once per changed row; at the default 4 the "
        "planner often scans a whole table instead, though the probed pages are usually "
        "cached. -1 leaves random_page_cost as it is.",
        &g_delta_random_page_cost, 1.1, -1, 1e10, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable(
        "pg_trickle.drive_joins_from_changes",
        "Whether delta statements join a changed table to its one join partner first.",
        "Read when a DIFFERENTIAL stream table is created or given a new query or mode. A "
        "changed table joined to only one other table of its FROM is joined to it in a derived "
        "table of their own, so PostgreSQL cannot join the other tables first on a misestimate.",
        &g_drive_from_changes, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomRealVariable(
        "pg_trickle.kept_copy_fraction",
        "Largest estimated share of a joined table's rows its filter may keep for DIFFERENTIAL "
        "refreshes to keep a copy of those rows.",
        "Read when a DIFFERENTIAL stream table over a join is created or given a new query or "
        "mode. Delta statements probe the copy (only the rows that pass the table's own "
        "conditions, only the columns the query reads) instead of the table. 0: no copies; 1: "
        "a copy for every filtered table, also tables under 10000 rows.",
        &g_kept_copy_fraction, 0.2, 0, 1, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "pg_trickle.lock_timeout",
        "Longest time a scheduled refresh waits for a lock before it is skipped.",
        "A skipped refresh is recorded in pgtrickle.pgt_refresh_history with status SKIPPED "
        "and retried at the next tick; other stream tables keep their schedules. 0 waits "
        "without a bound.",
        &g_lock_timeout_ms, 5000, 0, INT_MAX, PGC_SIGHUP, GUC_UNIT_MS, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "pg_trickle.immediate_max_rows",
        "Most rows one statement may change in a source of an IMMEDIATE stream table.",
        "A statement changing more fails (54000) instead of maintaining the stream table inside "
        "it; 0 sets no bound.",
        &g_immediate_max_rows, 0, 0, INT_MAX, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "pg_trickle.log_min_duration_refresh", "Logs every refresh that takes at least this long.",
        "A LOG line names the stream table, what ran (FULL, DIFFERENTIAL), who started it, the "
        "rows written and why it recomputed. 0 logs every refresh; -1 none.",
        &g_log_min_duration_refresh_ms, -1, -1, INT_MAX, PGC_SUSET, GUC_UNIT_MS, nullptr, nullptr,
        nullptr);
    // SUSET: any role may LISTEN on any channel, so what a payload shows is
    // for a superuser to choose (per database or role with ALTER ... SET),
    // never for the writing session.
    DefineCustomEnumVariable(
        "pg_trickle.notify_payload", "What change notifications carry.",
        "keys: table, operation, sequence number, the row's key values and changed column "
        "names; minimal: table, operation and sequence number only (a listener re-reads what "
        "it caches).",
        &g_notify_payload, 0, kNotifyPayloadOptions, PGC_SUSET, 0, nullptr, notify_payload_assign,
        nullptr);
    DefineCustomIntVariable(
        "pg_trickle.refresh_timeout", "Longest time a scheduled refresh may run.",
        "Past it the refresh is canceled, recorded in pgtrickle.pgt_refresh_history as FAILED "
        "and retried after a back-off. A statement_timeout set on the stream table's owner or on "
        "the database applies too, the smaller one winning. 0 sets no bound.",
        &g_refresh_timeout_ms, 0, 0, INT_MAX, PGC_SIGHUP, GUC_UNIT_MS, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "pg_trickle.max_buffer_retention",
        "Most change-buffer rows one stream table may keep from being removed.",
        "A stream table (suspended, or lagging) whose frontier is more than this many captured "
        "rows behind is dropped from the buffer: it is marked for reinitialisation, its next "
        "refresh recomputes it, and the scheduler removes the rows it held. 0 sets no bound.",
        &g_max_buffer_retention, 1000000, 0, INT_MAX, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    MarkGUCPrefixReserved("pg_trickle");
}

}  // namespace pgt::pg
