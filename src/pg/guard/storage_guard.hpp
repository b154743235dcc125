// Guard on stream-table storage (seed 003 EC-25/26): INSERT, UPDATE, DELETE
// and TRUNCATE are refused unless this backend's refresh is writing that
// very table.
// Invariant: the permission is C++ state of the refreshing code path
// (RefreshWriteScope), never a setting a session could SET.
#pragma once

#include <string>

extern "C" {
#include "postgres.h"
}

namespace pgt::pg {

// While alive, the refresh may write relid. Nests; restores on destruction
// (a C++ member only, no PostgreSQL call).
class RefreshWriteScope {
public:
    explicit RefreshWriteScope(Oid relid);
    ~RefreshWriteScope();
    RefreshWriteScope(const RefreshWriteScope&) = delete;
    RefreshWriteScope& operator=(const RefreshWriteScope&) = delete;
};

// The CREATE TRIGGER statement installing the guard on a storage table.
std::string guard_trigger_sql(const std::string& quoted_table);

}  // namespace pgt::pg
