// pg_trickle's own lock tags (see locks.hpp).
//
// A tag is LOCKTAG_ADVISORY (the user lock method, shown in pg_locks as
// locktype 'advisory') with field4 one of the kinds below. PostgreSQL's
// SQL advisory functions only ever set field4 to 1 (one int8 key) or 2
// (two int4 keys), so no statement can name these tags.
//   field1 database   field2 pgt_id (low 32 bits)   field3 0 or a hash
//   field4 kind
// Invariant: every lock is transaction-scoped (released at commit, abort,
// or the abort of the subtransaction that took it), like
// pg_advisory_xact_lock's: a writer's lock lasts as long as its changes
// are uncommitted.
#include "pg/refresh/locks.hpp"

#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/lmgr.h"
}

namespace pgt::pg {

namespace {

// field4 values: away from SQL's 1 and 2 ("PI", "PR", "PD" in ASCII).
enum class LockKind : uint16 {
    kImmediateWriters = 0x5049,
    kRefresh = 0x5052,
    kIdentity = 0x5044,
};

void acquire(int64_t pgt_id, uint32 hash, LockKind kind, LOCKMODE mode) {
    pg_call([&] {
        LOCKTAG tag;
        SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, static_cast<uint32>(pgt_id), hash,
                             static_cast<uint16>(kind));
        (void)LockAcquire(&tag, mode, /*sessionLock=*/false, /*dontWait=*/false);
    });
}

}  // namespace

void lock_immediate_writers(int64_t pgt_id, bool exclusive) {
    acquire(pgt_id, 0, LockKind::kImmediateWriters, exclusive ? ExclusiveLock : ShareLock);
}

void lock_stream_table_for_refresh(int64_t pgt_id) {
    // First the writers' lock: a refresh never runs while an IMMEDIATE
    // writer applies a change.
    lock_immediate_writers(pgt_id, true);
    acquire(pgt_id, 0, LockKind::kRefresh, ExclusiveLock);
}

void lock_identities(int64_t pgt_id, const std::vector<int32_t>& sorted_hashes) {
    // One order for every writer: two writers never wait for each other in
    // a cycle of these locks within a statement.
    for (std::size_t i = 0; i < sorted_hashes.size(); i++) {
        if (i == 0 || sorted_hashes[i] != sorted_hashes[i - 1]) {
            acquire(pgt_id, static_cast<uint32>(sorted_hashes[i]), LockKind::kIdentity,
                    ExclusiveLock);
        }
    }
}

}  // namespace pgt::pg
