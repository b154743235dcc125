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
        const char* state = "not_running";
        if (!pgt::pg::scheduler_preloaded()) {
            state = "not_preloaded";
        } else if (!pgt::pg::g_scheduler_enabled) {
            state = "disabled";
        } else if (pgt::pg::worker_running(MyDatabaseId)) {
            state = "running";
        } else if (const auto slot = pgt::pg::slot_state(MyDatabaseId);
                   slot == pgt::pg::SlotState::kWaiting || slot == pgt::pg::SlotState::kStarting) {
            state = "waiting";  // for its turn among the pool's workers, or its turn begins
        }
        return pgt::pg::pg_call([&] { return PointerGetDatum(cstring_to_text(state)); });
    });
}
