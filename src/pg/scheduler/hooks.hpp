// Backend-side hooks of the scheduler (see hooks.cpp).
// Invariant: installed only when pg_trickle is preloaded.
#pragma once

namespace pgt::pg {

void install_scheduler_hooks();

// Called by the capture trigger: at commit, wake this database's scheduler.
void mark_source_written();

}  // namespace pgt::pg
