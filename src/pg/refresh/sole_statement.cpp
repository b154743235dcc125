// sole_statement() (see sole_statement.hpp): the executors started and not
// ended in this transaction are counted; while the statement a client sent
// fires its AFTER triggers the count is 1, inside a function's or a
// trigger's statement it is more. An executor an error ends is never
// counted off: the count stays high (answering "not sole") until the
// transaction ends, where it starts again from 0.
#include "pg/refresh/sole_statement.hpp"

#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "nodes/plannodes.h"
#include "tcop/pquery.h"
#include "utils/lsyscache.h"
#include "utils/portal.h"
#include "utils/rel.h"
}

namespace pgt::pg {

namespace {

int g_executors = 0;
ExecutorStart_hook_type g_prev_start = nullptr;
ExecutorEnd_hook_type g_prev_end = nullptr;

void executor_start(QueryDesc* qd, int eflags) {
    if (g_prev_start != nullptr) {
        g_prev_start(qd, eflags);
    } else {
        standard_ExecutorStart(qd, eflags);
    }
    g_executors++;
}

void executor_end(QueryDesc* qd) {
    g_executors = g_executors > 0 ? g_executors - 1 : 0;
    if (g_prev_end != nullptr) {
        g_prev_end(qd);
    } else {
        standard_ExecutorEnd(qd);
    }
}

void on_xact(XactEvent event, void*) {
    if (event == XACT_EVENT_ABORT || event == XACT_EVENT_COMMIT ||
        event == XACT_EVENT_PARALLEL_ABORT || event == XACT_EVENT_PREPARE) {
        g_executors = 0;
    }
}

// The client's statement: one plain write, outside a transaction block.
bool client_statement() {
    if (IsTransactionBlock() || g_executors != 1 || ActivePortal == nullptr ||
        list_length(ActivePortal->stmts) != 1) {
        return false;
    }
    const auto* stmt = static_cast<const PlannedStmt*>(linitial(ActivePortal->stmts));
    return IsA(stmt, PlannedStmt) && !stmt->hasModifyingCTE &&
           (stmt->commandType == CMD_INSERT || stmt->commandType == CMD_UPDATE ||
            stmt->commandType == CMD_DELETE || stmt->commandType == CMD_MERGE);
}

}  // namespace

bool sole_statement(RelationData* fired) {
    if (!client_statement()) {
        return false;
    }
    // A user's trigger, a foreign key's action or a deferred check could
    // write another table after this statement's triggers.
    return pg_call([&] {
        const Oid ours = get_namespace_oid("pgtrickle", true);
        const TriggerDesc* d = fired->trigdesc;
        for (int i = 0; d != nullptr && i < d->numtriggers; i++) {
            const Trigger& t = d->triggers[i];
            const bool fk_check = t.tgisinternal && !t.tgdeferrable &&
                                  RI_FKey_trigger_type(t.tgfoid) == RI_TRIGGER_FK;
            if (!fk_check && get_func_namespace(t.tgfoid) != ours) {
                return false;
            }
        }
        return true;
    });
}

void install_sole_statement_hooks() {
    g_prev_start = ExecutorStart_hook;
    ExecutorStart_hook = executor_start;
    g_prev_end = ExecutorEnd_hook;
    ExecutorEnd_hook = executor_end;
    RegisterXactCallback(on_xact, nullptr);
}

}  // namespace pgt::pg
