// Refresh progress in shared memory (see progress.hpp).
#include "pg/refresh/progress.hpp"

#include <algorithm>
#include <cstring>

#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/backendid.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

PGDLLEXPORT Datum pgt_refresh_progress(PG_FUNCTION_ARGS);
PG_FUNCTION_INFO_V1(pgt_refresh_progress);
}

namespace pgt::pg {

namespace {

constexpr std::size_t kTextLen = 64;

struct Slot {
    pg_atomic_uint32 changes;  // odd while its backend writes
    int pid;
    Oid dbid;
    int64 pgt_id;  // 0: no refresh
    TimestampTz started;
    TimestampTz statement_started;
    int32 statements;
    char initiated_by[kTextLen];
    char statement[kTextLen];
};

Slot* g_slots = nullptr;
int g_nslots = 0;
Slot* g_mine = nullptr;  // while a ProgressScope lives

Size shmem_size() {
    return mul_size(static_cast<Size>(MaxBackends), sizeof(Slot));
}

Slot* own_slot() {
    if (g_slots == nullptr || MyBackendId == InvalidBackendId || MyBackendId > g_nslots) {
        return nullptr;
    }
    return &g_slots[MyBackendId - 1];
}

void copy_text(char* to, const std::string& from) {
    const std::size_t n = std::min(from.size(), kTextLen - 1);
    memcpy(to, from.data(), n);
    to[n] = '\0';
}

template <typename F>
void write_slot(Slot* s, F&& f) {
    pg_atomic_fetch_add_u32(&s->changes, 1);
    pg_write_barrier();
    f(*s);
    pg_write_barrier();
    pg_atomic_fetch_add_u32(&s->changes, 1);
}

// A consistent copy of slot i (retried while its backend writes it).
Slot read_slot(int i) {
    Slot copy;
    for (;;) {
        const uint32 before = pg_atomic_read_u32(&g_slots[i].changes);
        pg_read_barrier();
        memcpy(&copy, &g_slots[i], sizeof(Slot));
        pg_read_barrier();
        if (before % 2 == 0 && pg_atomic_read_u32(&g_slots[i].changes) == before) {
            return copy;
        }
        CHECK_FOR_INTERRUPTS();
    }
}

void rows(FunctionCallInfo fcinfo) {
    InitMaterializedSRF(fcinfo, 0);
    auto* rsi = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    for (int i = 0; g_slots != nullptr && i < g_nslots; i++) {
        const Slot s = read_slot(i);
        if (s.pgt_id == 0) {
            continue;
        }
        Datum values[8] = {Int32GetDatum(s.pid),
                           ObjectIdGetDatum(s.dbid),
                           Int64GetDatum(s.pgt_id),
                           CStringGetTextDatum(s.initiated_by),
                           TimestampTzGetDatum(s.started),
                           CStringGetTextDatum(s.statement),
                           TimestampTzGetDatum(s.statement_started),
                           Int32GetDatum(s.statements)};
        bool nulls[8] = {
            false, false, false, false, false, s.statement[0] == '\0', s.statement[0] == '\0',
            false};
        tuplestore_putvalues(rsi->setResult, rsi->setDesc, values, nulls);
    }
}

}  // namespace

void request_progress_shmem() {
    RequestAddinShmemSpace(shmem_size());
}

void init_progress_shmem() {
    bool found = false;
    g_slots =
        static_cast<Slot*>(ShmemInitStruct("pg_trickle refresh progress", shmem_size(), &found));
    g_nslots = MaxBackends;
    if (!found) {
        memset(static_cast<void*>(g_slots), 0, shmem_size());
        for (int i = 0; i < g_nslots; i++) {
            pg_atomic_init_u32(&g_slots[i].changes, 0);
        }
    }
}

ProgressScope::ProgressScope(int64_t pgt_id, const std::string& initiated_by) {
    Slot* s = own_slot();
    if (s == nullptr || g_mine != nullptr) {
        return;  // not preloaded, or a refresh inside a refresh: the outer one shows
    }
    g_mine = s;
    published_ = true;
    write_slot(s, [&](Slot& w) {
        w.pid = MyProcPid;
        w.dbid = MyDatabaseId;
        w.pgt_id = pgt_id;
        w.started = GetCurrentTimestamp();
        w.statement_started = 0;
        w.statements = 0;
        copy_text(w.initiated_by, initiated_by);
        w.statement[0] = '\0';
    });
}

ProgressScope::~ProgressScope() {
    if (published_) {
        write_slot(g_mine, [](Slot& w) { w.pgt_id = 0; });
        g_mine = nullptr;
    }
}

void progress_statement(const std::string& what) {
    if (g_mine == nullptr) {
        return;
    }
    write_slot(g_mine, [&](Slot& w) {
        copy_text(w.statement, what);
        w.statement_started = GetCurrentTimestamp();
        w.statements++;
    });
}

}  // namespace pgt::pg

Datum pgt_refresh_progress(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&]() -> Datum {
        pgt::pg::pg_call([&] { pgt::pg::rows(fcinfo); });
        return (Datum)0;
    });
}
