// Commit marks of change buffers (see commit_marks.hpp).
// Invariant: a transaction that noted a buffer adds 1 to its bucket's
// committing count before its commit is visible (XACT_EVENT_PRE_COMMIT) and
// 1 to its finished count after (XACT_EVENT_COMMIT), or at its abort once it
// had counted itself as committing; so finished <= committing at all times.
#include "pg/cdc/commit_marks.hpp"

#include <cinttypes>
#include <cstdio>

extern "C" {
#include "postgres.h"
#include "access/twophase.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"
}

namespace pgt::pg {

namespace {

// Buffers of every database share the buckets: two buffers in one bucket
// only cost a needless buffer read.
constexpr uint32 kBuckets = 1024;

struct CommitMarks {
    TimestampTz started;  // the server's start: counts restart with it
    pg_atomic_uint32 committing[kBuckets];
    pg_atomic_uint32 finished[kBuckets];
};

CommitMarks* g_marks = nullptr;

// The buckets this transaction wrote (a few; past kMaxNoted, every bucket).
constexpr int kMaxNoted = 16;
uint32 g_noted[kMaxNoted];
int g_nnoted = 0;
bool g_all = false;
bool g_committing = false;  // counted as committing: finished is owed
bool g_callback = false;
Oid g_last = InvalidOid;  // the buffer noted last (a statement writes one, row by row)

uint32 bucket_of(Oid buffer) {
    uint64 h = (static_cast<uint64>(MyDatabaseId) << 32) | buffer;
    h ^= h >> 33;
    h *= UINT64CONST(0xff51afd7ed558ccd);
    h ^= h >> 33;
    return static_cast<uint32>(h % kBuckets);
}

void add_to(pg_atomic_uint32* counts, const uint32* buckets, int n, bool all) {
    if (all) {
        for (uint32 b = 0; b < kBuckets; b++) {
            pg_atomic_fetch_add_u32(&counts[b], 1);
        }
        return;
    }
    for (int i = 0; i < n; i++) {
        pg_atomic_fetch_add_u32(&counts[buckets[i]], 1);
    }
}

void reset() {
    g_last = InvalidOid;
    g_nnoted = 0;
    g_all = false;
    g_committing = false;
}

void on_xact(XactEvent event, void*) {
    switch (event) {
        case XACT_EVENT_PRE_COMMIT:
        case XACT_EVENT_PARALLEL_PRE_COMMIT:
            if (g_nnoted > 0 || g_all) {
                add_to(g_marks->committing, g_noted, g_nnoted, g_all);
                g_committing = true;
            }
            return;
        case XACT_EVENT_COMMIT:
        case XACT_EVENT_PARALLEL_COMMIT:
        case XACT_EVENT_ABORT:
        case XACT_EVENT_PARALLEL_ABORT:
            if (g_committing) {
                add_to(g_marks->finished, g_noted, g_nnoted, g_all);
            }
            reset();
            return;
        case XACT_EVENT_PREPARE:
            // Its writes become visible at COMMIT PREPARED, which no callback
            // of ours sees: marks are not given while that is possible.
            reset();
            return;
        default:
            return;
    }
}

}  // namespace

void request_commit_marks_shmem() {
    RequestAddinShmemSpace(MAXALIGN(sizeof(CommitMarks)));
}

void init_commit_marks_shmem() {
    bool found = false;
    g_marks = static_cast<CommitMarks*>(
        ShmemInitStruct("pg_trickle commit marks", sizeof(CommitMarks), &found));
    if (!found) {
        g_marks->started = GetCurrentTimestamp();
        for (uint32 b = 0; b < kBuckets; b++) {
            pg_atomic_init_u32(&g_marks->committing[b], 0);
            pg_atomic_init_u32(&g_marks->finished[b], 0);
        }
    }
}

void note_buffer_written(Oid buffer) {
    if (buffer == g_last || g_marks == nullptr || g_all) {
        return;
    }
    g_last = buffer;
    const uint32 b = bucket_of(buffer);
    for (int i = 0; i < g_nnoted; i++) {
        if (g_noted[i] == b) {
            return;
        }
    }
    if (!g_callback) {
        RegisterXactCallback(on_xact, nullptr);
        g_callback = true;
    }
    if (g_nnoted == kMaxNoted) {
        // Every bucket from now on. Past PRE_COMMIT (a write by another
        // extension's callback), the buckets not counted yet are counted
        // now, so each bucket's two counts still match once finished.
        if (g_committing) {
            for (uint32 c = 0; c < kBuckets; c++) {
                bool counted = false;
                for (int i = 0; i < g_nnoted; i++) {
                    counted = counted || g_noted[i] == c;
                }
                if (!counted) {
                    pg_atomic_fetch_add_u32(&g_marks->committing[c], 1);
                }
            }
        }
        g_all = true;
        return;
    }
    g_noted[g_nnoted++] = b;
    if (g_committing) {
        pg_atomic_fetch_add_u32(&g_marks->committing[b], 1);  // still before visibility
    }
}

std::optional<std::string> buffer_commit_mark(Oid buffer) {
    if (g_marks == nullptr || max_prepared_xacts > 0) {
        return std::nullopt;
    }
    const uint32 b = bucket_of(buffer);
    // committing first: a writer counted there and finished by the time
    // finished is read became visible before that read.
    const uint32 committing = pg_atomic_read_u32(&g_marks->committing[b]);
    pg_memory_barrier();
    const uint32 finished = pg_atomic_read_u32(&g_marks->finished[b]);
    if (committing != finished) {
        return std::nullopt;
    }
    char mark[64];
    snprintf(mark, sizeof mark, "%" PRId64 ":%u:%u", static_cast<int64_t>(g_marks->started), b,
             committing);
    return std::string(mark);
}

}  // namespace pgt::pg
