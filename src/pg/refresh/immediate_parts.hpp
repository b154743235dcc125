// What IMMEDIATE's installing (immediate_install.cpp) and firing
// (immediate.cpp) share: the program table, the events a program is kept
// per, the transition tables each reads and the triggers' names.
#pragma once

#include <cstdint>
#include <string>

#include "core/diff/scan_delta.hpp"
#include "pg/catalog/catalog_schema.hpp"

namespace pgt::pg::immediate {

inline const std::string kPrograms =
    std::string(pgt::catalog::kSchema) + "." + pgt::catalog::kImmediate;

// The programs (pgt_immediate.event) and what each reads.
inline constexpr const char* kEvents = "IUDM";

inline diff::TransitionTables event_tables(char event) {
    switch (event) {
        case 'I':
            return {{}, {diff::kTransitionNew}};
        case 'U':
            return {{diff::kTransitionOld}, {diff::kTransitionNew}};
        case 'D':
            return {{diff::kTransitionOld}, {}};
        default:  // 'M': the events of one statement, applied as one change
            return {{diff::kTransitionOld, diff::kTransitionDeleted},
                    {diff::kTransitionNew, diff::kTransitionInserted}};
    }
}

// The names of a stream table's IMMEDIATE triggers start so.
inline std::string trigger_prefix(int64_t pgt_id) {
    return "pgt_immediate_" + std::to_string(pgt_id) + "_";
}

// The row trigger (ENABLE REPLICA) that refuses a logical replication
// worker's writes ends so; the statement triggers end in before, ins, upd,
// del, trunc.
inline constexpr const char* kReplicatedSuffix = "repl";

}  // namespace pgt::pg::immediate
