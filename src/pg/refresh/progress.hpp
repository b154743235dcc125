// Refresh progress: each backend refreshing a stream table publishes, in a
// shared-memory slot of its own, which stream table, who started the
// refresh, since when, the statement it runs and how many it ran; the view
// pgtrickle.refresh_progress reads every slot (pgt_refresh_progress).
// Invariant: a slot is written only by its backend, under a change count
// that readers check (a read that overlaps a write is retried), and is
// cleared when the refresh ends, however it ends (ProgressScope).
#pragma once

#include <cstdint>
#include <string>

extern "C" {
#include "postgres.h"
}

namespace pgt::pg {

void request_progress_shmem();  // shmem_request_hook part
void init_progress_shmem();     // shmem_startup_hook part

// The refresh of stream table pgt_id, published for as long as it lives.
class ProgressScope {
public:
    ProgressScope(int64_t pgt_id, const std::string& initiated_by);
    ~ProgressScope();
    ProgressScope(const ProgressScope&) = delete;
    ProgressScope& operator=(const ProgressScope&) = delete;

private:
    bool published_ = false;  // false inside another refresh: the outer one shows
};

// The statement the current refresh runs now (what: "apply", "FULL
// recompute", ...); nothing when no refresh is published.
void progress_statement(const std::string& what);

}  // namespace pgt::pg
