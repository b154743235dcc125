// What the scheduler shares with the SQL-callable lifecycle API.
#pragma once

#include <optional>
#include <string>

#include "pg/api/args.hpp"
#include "pg/boundary/spi.hpp"
#include "pg/catalog/catalog.hpp"
#include "pg/refresh/full_refresh.hpp"

namespace pgt::pg {

// Refreshes row, or reinitialises it when DDL marked it (reinit_reason):
// the query analysed again, its maintenance rebuilt, a FULL refresh whose
// history gives the reason.
RefreshResult refresh_or_reinitialize(Spi& spi, catalog::StreamTableRow& row,
                                      const std::string& initiated_by);

// Adopts the catalog rows a pg_dump/pg_restore brought
// (catalog::adopt_restored) and rebuilds the IMMEDIATE stream tables among
// them now, in this transaction, so that every write after it is
// maintained; the others are rebuilt by their next refresh. A rebuild that
// fails is undone alone and recorded (FAILED in history, status ERROR; it
// stays marked, so its next refresh or repair_stream_table tries again):
// adoption itself never fails half-way. Returns how many were adopted.
int64_t adopt_restored(Spi& spi, bool force, const std::string& initiated_by);

// Reinitialises row (marked by pgtrickle._on_ddl_end, or by a repair): its
// query analysed again, its mode resolved again (a function that became
// VOLATILE, a new inheritance child), its maintenance rebuilt and its rows
// recomputed, as the owner, under the refresh lock; history gives the
// reason. Unmarked (another session did it meanwhile): a refresh.
RefreshResult reinitialize(Spi& spi, catalog::StreamTableRow& row, const std::string& initiated_by);

// pgtrickle.create_stream_table(name, query, schedule, refresh_mode,
// initialize, ...): the first five in that order, the others (compat_args,
// notify) found by name.
void create_stream_table(const Args& a);

// What alter_stream_table was asked to change (absent: unchanged).
struct AlterRequest {
    std::string name;
    std::optional<std::string> query;
    std::optional<std::string> schedule;
    std::optional<std::string> mode;
    std::optional<std::string> status;
    std::optional<std::string> cdc_mode;  // 'auto' or 'trigger'
    bool notify_given = false;            // notify (NULL: removed) is to be set
    std::optional<std::string> notify;
    bool cascade = false;
};

// Applies r to the stream table it names (owner only); a new query or
// mode is analysed, set up and refreshed as the owner, restricted, the
// query's names resolved in the caller's search_path.
void alter_stream_table(const AlterRequest& r);

// The calling session's search_path, as it is set.
std::string caller_search_path();

// What every API call does first: refuses a catalog of another version
// (catalog::open_catalog), then adopts restored rows at once (forced).
void open_stream_tables(Spi& spi);

}  // namespace pgt::pg
