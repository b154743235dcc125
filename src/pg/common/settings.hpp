// Every pg_trickle.* setting, defined once in _PG_init.
// Invariant: values are read through these variables only; defaults and
// ranges are documented in docs/scheduler.md.
#pragma once

namespace pgt::pg {

extern bool g_scheduler_enabled;           // pg_trickle.enabled
extern int g_max_scheduler_workers;        // pg_trickle.max_scheduler_workers
extern int g_scheduler_interval_ms;        // pg_trickle.scheduler_interval_ms
extern int g_default_schedule_seconds;     // pg_trickle.default_schedule_seconds
extern int g_min_schedule_seconds;         // pg_trickle.min_schedule_seconds
extern int g_max_consecutive_errors;       // pg_trickle.max_consecutive_errors
extern bool g_diamond_atomic;              // pg_trickle.diamond_consistency = 'atomic'
extern int g_history_retention_seconds;    // pg_trickle.history_retention (0: keep all)
extern int g_max_grouping_set_branches;    // pg_trickle.max_grouping_set_branches (analysis)
extern int g_refresh_work_mem_kb;          // pg_trickle.refresh_work_mem (-1: work_mem as is)
extern bool g_drive_from_changes;          // pg_trickle.drive_joins_from_changes
extern double g_kept_copy_fraction;        // pg_trickle.kept_copy_fraction
extern double g_delta_random_page_cost;    // pg_trickle.delta_random_page_cost (-1: as is)
extern int g_lock_timeout_ms;              // pg_trickle.lock_timeout (0: no bound)
extern int g_immediate_max_rows;           // pg_trickle.immediate_max_rows (0: no bound)
extern int g_log_min_duration_refresh_ms;  // pg_trickle.log_min_duration_refresh (-1: off)
extern bool g_notify_minimal;              // pg_trickle.notify_payload = 'minimal'
extern int g_refresh_timeout_ms;           // pg_trickle.refresh_timeout (0: no bound)
extern int g_max_buffer_retention;         // pg_trickle.max_buffer_retention (0: no bound)

void define_settings();

}  // namespace pgt::pg
