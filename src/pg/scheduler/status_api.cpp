// pgtrickle._scheduler_state(): what health_check() reports about automatic
// scheduling in this database (EC-36: without preload everything but the
// scheduler works, and the user is told so).
// Invariant: reads shared memory only; never waits or writes.
#include "pg/boundary/boundary.hpp"
#include "pg/common/settings.hpp"
#include "pg/scheduler/shared_state.hpp"

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(pgt_scheduler_state);
}

Datum pgt_scheduler_state(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] {
        const char* state = !pgt::pg::scheduler_preloaded()         ? "not_preloaded"
                            : !pgt::pg::g_scheduler_enabled         ? "disabled"
                            : pgt::pg::worker_running(MyDatabaseId) ? "running"
                                                                    : "not_running";
        return pgt::pg::pg_call([&] { return PointerGetDatum(cstring_to_text(state)); });
    });
}
