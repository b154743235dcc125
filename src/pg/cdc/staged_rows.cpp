// Staged buffer rows (see staged_rows.hpp for when they are written).
// Everything here is plain PostgreSQL C: it runs inside executor hooks and
// transaction callbacks, where an error must propagate as a PostgreSQL
// error, and keeps no C++ object that would need unwinding.
#include "pg/cdc/staged_rows.hpp"

#include <algorithm>

extern "C" {
#include "access/detoast.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"
}

namespace pgt::pg {
namespace {

// A batch is written when it holds this many rows or bytes: enough to fill
// pages with one WAL record each, little enough to bound a backend's memory
// when rows carry large values.
constexpr int kStageRows = 1000;
constexpr Size kStageBytes = 4 * 1024 * 1024;

struct Staged {
    MemoryContext cxt = nullptr;   // staged tuples and what a write allocates; reset after it
    MemoryContext keep = nullptr;  // the slots and their descriptor, kept across writes
    Oid buffer = InvalidOid;       // the buffer the slots are made for
    TupleDesc desc = nullptr;      // a copy of its layout (not reference-counted)
    int made = 0;                  // slots made so far
    int n = 0;                     // slots holding a staged row, not yet written
    Size bytes = 0;
    // Rows staged by a subtransaction's parent and written when the
    // subtransaction `carrier` started (its callback runs in it): they are
    // kept in slots[0, carried) until it ends, and staged again for the
    // parent if it aborts. No row is staged while rows are carried.
    SubTransactionId carrier = InvalidSubTransactionId;
    int carried = 0;
    TupleTableSlot* slots[kStageRows];
};
Staged g_staged;

ExecutorStart_hook_type g_prev_start = nullptr;
ExecutorFinish_hook_type g_prev_finish = nullptr;

// Empties the slots (each frees its tuple) and the staging context.
void discard_staged() {
    for (int i = 0; i < std::max(g_staged.n, g_staged.carried); i++) {
        ExecClearTuple(g_staged.slots[i]);
    }
    g_staged.n = g_staged.carried = 0;
    g_staged.carrier = InvalidSubTransactionId;
    g_staged.bytes = 0;
    if (g_staged.cxt != nullptr) {
        MemoryContextReset(g_staged.cxt);
    }
}

// Writes the staged rows: the slots own their tuples, so heap_multi_insert
// takes them as they are (no copy). What it allocates (TOAST copies, its
// arrays) goes into the staging context. Unless `keep` (the rows are then
// carried), the slots are emptied after. On error the (sub)transaction
// aborts and the callbacks below discard what is left.
void write_staged(bool keep = false) {
    if (g_staged.n == 0) {
        return;
    }
    MemoryContext old = MemoryContextSwitchTo(g_staged.cxt);
    Relation rel = table_open(g_staged.buffer, RowExclusiveLock);
    const CommandId cid = GetCurrentCommandId(true);
    if (g_staged.n == 1) {
        heap_insert(rel, ExecFetchSlotHeapTuple(g_staged.slots[0], false, nullptr), cid, 0,
                    nullptr);
    } else {
        heap_multi_insert(rel, g_staged.slots, g_staged.n, cid, 0, nullptr);
    }
    table_close(rel, NoLock);  // RowExclusiveLock is kept until transaction end
    MemoryContextSwitchTo(old);
    if (keep) {
        g_staged.carried = g_staged.n;
        g_staged.n = 0;
    } else {
        discard_staged();
    }
}

// Makes the slots fit `buffer`'s layout (rows of another buffer were
// written first).
void slots_for(Oid buffer, TupleDesc desc) {
    if (g_staged.buffer == buffer && g_staged.desc != nullptr &&
        equalTupleDescs(g_staged.desc, desc)) {
        return;
    }
    MemoryContextReset(g_staged.keep);
    g_staged.made = 0;
    MemoryContext old = MemoryContextSwitchTo(g_staged.keep);
    g_staged.desc = CreateTupleDescCopy(desc);
    MemoryContextSwitchTo(old);
    g_staged.buffer = buffer;
}

void on_xact(XactEvent event, void*) {
    if (event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PRE_PREPARE) {
        write_staged();
    } else if (g_staged.n > 0 || g_staged.carried > 0) {
        discard_staged();  // aborted (or, defensively, past the point of writing)
    }
}

// Staged rows belong to the subtransaction that is current when they are
// written: a subtransaction that starts (its callback already runs in it)
// writes its parent's staged rows and carries them; if it commits they
// stay, if it aborts they are staged again for the parent, current again.
void on_subxact(SubXactEvent event, SubTransactionId sub, SubTransactionId, void*) {
    if (event == SUBXACT_EVENT_START_SUB) {
        if (g_staged.n > 0 && g_staged.carrier == InvalidSubTransactionId) {
            write_staged(true);
            g_staged.carrier = sub;
        }
    } else if (event == SUBXACT_EVENT_PRE_COMMIT_SUB) {
        if (sub == g_staged.carrier) {
            discard_staged();  // the carried rows are the parent's now
        } else {
            write_staged();
        }
    } else if (event == SUBXACT_EVENT_ABORT_SUB) {
        if (sub == g_staged.carrier) {
            g_staged.n = g_staged.carried;  // their first write went with it
            g_staged.carried = 0;
            g_staged.carrier = InvalidSubTransactionId;
        } else if (g_staged.carrier == InvalidSubTransactionId) {
            discard_staged();  // staged in this subtransaction
        }
    }
}

void executor_start(QueryDesc* qd, int eflags) {
    write_staged();
    if (g_prev_start != nullptr) {
        g_prev_start(qd, eflags);
    } else {
        standard_ExecutorStart(qd, eflags);
    }
}

void executor_finish(QueryDesc* qd) {
    if (g_prev_finish != nullptr) {
        g_prev_finish(qd);
    } else {
        standard_ExecutorFinish(qd);
    }
    write_staged();  // the statement's AFTER ROW triggers have all fired
}

}  // namespace

void stage_buffer_row(Oid buffer, TupleDesc desc, const Datum* values, const bool* nulls) {
    if (g_staged.cxt == nullptr) {
        // Blocks big enough that a batch of ordinary rows fits in the one
        // kept across resets.
        g_staged.cxt = AllocSetContextCreate(TopMemoryContext, "pg_trickle staged capture",
                                             256 * 1024, 256 * 1024, ALLOCSET_DEFAULT_MAXSIZE);
        g_staged.keep = AllocSetContextCreate(TopMemoryContext, "pg_trickle staged capture slots",
                                              ALLOCSET_DEFAULT_SIZES);
        RegisterXactCallback(on_xact, nullptr);
        RegisterSubXactCallback(on_subxact, nullptr);
    }
    if (g_staged.carrier != InvalidSubTransactionId) {
        // Rows are carried: this one is written at once.
        Relation rel = table_open(buffer, RowExclusiveLock);
        HeapTuple tup = heap_form_tuple(desc, const_cast<Datum*>(values), const_cast<bool*>(nulls));
        heap_insert(rel, tup, GetCurrentCommandId(true), 0, nullptr);
        heap_freetuple(tup);
        table_close(rel, NoLock);
        return;
    }
    if (g_staged.n > 0 && g_staged.buffer != buffer) {
        write_staged();
    }
    if (g_staged.n == 0) {
        // Held from the first staged row, as a direct insert would hold it:
        // the buffer's layout cannot change under the staged rows.
        LockRelationOid(buffer, RowExclusiveLock);
        slots_for(buffer, desc);
    }
    if (g_staged.n == g_staged.made) {
        MemoryContext old = MemoryContextSwitchTo(g_staged.keep);
        g_staged.slots[g_staged.made++] = MakeSingleTupleTableSlot(g_staged.desc, &TTSOpsHeapTuple);
        MemoryContextSwitchTo(old);
    }
    MemoryContext old = MemoryContextSwitchTo(g_staged.cxt);
    // A value stored out of line in the source is fetched now, while the
    // trigger's snapshot is active: a staged row carries its values, and
    // the write (at commit, after a COPY) may have no snapshot to read the
    // source's TOAST table with.
    Datum* own = nullptr;
    for (int i = 0; i < desc->natts; i++) {
        if (!nulls[i] && TupleDescAttr(desc, i)->attlen == -1 &&
            VARATT_IS_EXTERNAL(DatumGetPointer(values[i]))) {
            if (own == nullptr) {
                own = static_cast<Datum*>(palloc(sizeof(Datum) * desc->natts));
                memcpy(own, values, sizeof(Datum) * desc->natts);
            }
            own[i] = PointerGetDatum(detoast_external_attr(
                reinterpret_cast<struct varlena*>(DatumGetPointer(values[i]))));
        }
    }
    HeapTuple tup = heap_form_tuple(desc, own != nullptr ? own : const_cast<Datum*>(values),
                                    const_cast<bool*>(nulls));
    MemoryContextSwitchTo(old);
    ExecStoreHeapTuple(tup, g_staged.slots[g_staged.n++], true);  // the slot frees it
    g_staged.bytes += tup->t_len;
    if (g_staged.n == kStageRows || g_staged.bytes >= kStageBytes) {
        write_staged();
    }
}

void install_staged_rows_hooks() {
    g_prev_start = ExecutorStart_hook;
    ExecutorStart_hook = executor_start;
    g_prev_finish = ExecutorFinish_hook;
    ExecutorFinish_hook = executor_finish;
}

}  // namespace pgt::pg
