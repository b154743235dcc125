// Backend-side hooks of the scheduler (see hooks.cpp).
// Invariant: installed only when pg_trickle is preloaded.
#pragma once

extern "C" {
#include "postgres.h"
}

namespace pgt::pg {

void install_scheduler_hooks();

// Called by the capture trigger for the source it captured: at commit the
// write is counted for the scheduler (note_committed_writes).
void mark_source_written(Oid relid);

}  // namespace pgt::pg
