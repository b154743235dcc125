// Commit marks of change buffers: per bucket of buffers (by database and
// buffer OID), in shared memory, a count of the transactions that wrote a
// buffer of the bucket and began to commit, and a count of those that
// finished (committed or aborted after all). A refresh reads its buffers'
// marks just before its snapshot and stores them with its frontiers; the
// next refresh whose marks are unchanged has an empty window without
// reading the buffer (frontier.hpp, quiet).
//
// Why that holds: a buffer row in the next window was written by a
// transaction T visible to the next snapshot and not to the frontier's.
// T counted itself as committing before it became visible, and as finished
// after. If T began to commit after the mark was read, the committing count
// moved; if before, T was still unfinished when the mark was read (it
// became visible only after the frontier's snapshot, taken after the read),
// and a mark is only recorded when nothing is unfinished.
//
// Invariant: a mark is available only when the library is preloaded (the
// counts are in shared memory) and prepared transactions are disabled
// (COMMIT PREPARED makes writes visible without running our callbacks);
// counts restart with the server, and the mark names the server's start.
#pragma once

#include <optional>
#include <string>

extern "C" {
#include "postgres.h"
}

namespace pgt::pg {

void request_commit_marks_shmem();  // shmem_request_hook part
void init_commit_marks_shmem();     // shmem_startup_hook part

// The current transaction wrote change buffer `buffer` (capture triggers).
void note_buffer_written(Oid buffer);

// The mark of `buffer` now, or nullopt when none can be given: no shared
// memory, prepared transactions possible, or a writer of its bucket between
// the start and the end of its commit.
std::optional<std::string> buffer_commit_mark(Oid buffer);

}  // namespace pgt::pg
