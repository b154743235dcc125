// Reads and writes of the pgtrickle catalog tables, through SPI.
// Invariant: every write runs as the catalog's owner (callers cannot edit
// the catalog directly) and every statement is parameterised.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/refresh_mode.hpp"
#include "pg/analyze/defining_query.hpp"
#include "pg/boundary/spi.hpp"
#include "pg/catalog/catalog_schema.hpp"

extern "C" {
#include "postgres.h"
}

namespace pgt::pg::catalog {

struct StreamTableRow {
    int64_t pgt_id = 0;
    Oid relid = InvalidOid;
    std::string schema;
    std::string name;
    std::string defining_query;
    std::string effective_query;
    std::string schedule;
    RefreshMode requested_mode = RefreshMode::kAuto;
    RefreshMode refresh_mode = RefreshMode::kFull;  // what refreshes do
    sched::Status status = sched::Status::Active;
    bool is_populated = false;
    rowid::Domain identity_domain = rowid::Domain::kKeylessRow;
    std::vector<std::string> identity_columns;  // output columns the identity encodes
    int row_identity_version = 0;               // format of the stored __pgt_row_id
    int row_probe_version = 0;                  // format of the stored __pgt_row_probe
    // DIFFERENTIAL and IMMEDIATE: the delta program (diff::encode_program's
    // JSON, stored as jsonb)
    std::optional<std::string> delta_program;
    std::optional<std::string> notify_channel;  // change notifications on the storage
    std::optional<std::string> query_tree;      // the analysed query (nodeToString)
    std::optional<std::string> reinit_reason;   // the next refresh reinitialises: why
    std::optional<int> delta_version;           // diff::kProgramVersion delta_program was made with
    std::optional<std::string> delta_strategy;  // DIFFERENTIAL: the strategy delta_program runs
    std::optional<std::string> operator_tree;   // ir::format_tree of the query, rules chosen
    // name=value of each setting the query's values may depend on, recorded
    // when it was defined (none: computed under the session's settings)
    std::vector<std::string> query_settings;
    // cdc_mode as the API was given it ('auto', 'trigger'; none: not given)
    std::optional<std::string> requested_cdc_mode;
};

struct Dependency {
    Oid relid;
    std::string source_type;  // TABLE, VIEW, STREAM_TABLE, ...
    // Columns read as the owner (pgt_dependencies.columns_read), none: only
    // through a view.
    std::optional<std::vector<int>> columns_read;
};

struct HistoryRow {
    int64_t pgt_id;
    std::string action;        // FULL | DIFFERENTIAL
    std::string initiated_by;  // CREATE | MANUAL | ALTER | SCHEDULER
    int64_t rows_inserted;
    int64_t rows_deleted;
    std::string start_time;  // timestamptz text, taken with clock_timestamp()
    std::optional<std::string> reason;
    std::optional<int64_t> source_changes;  // counted for AUTO stream tables
    std::optional<double> kept_refill_ms;   // kept copies refilled (DIFFERENTIAL)
};

// A text[] literal with every element quoted ({"a","b\"c"}), for a
// parameter cast to text[].
std::string text_array_literal(const std::vector<std::string>& items);

// Runs one statement as the catalog's owner (catalog writes, change buffers,
// capture triggers): callers never need rights on pgtrickle objects.
uint64_t exec_as_owner(Spi& spi, const std::string& sql, const std::vector<SpiParam>& params = {});

// Runs one statement as the catalog's owner and returns its rows.
SpiRows query_as_owner(Spi& spi, const std::string& sql, const std::vector<SpiParam>& params = {});

// The catalog owner's role OID.
Oid catalog_owner();

// Refuses (55000, HINT ALTER EXTENSION ... UPDATE) a catalog of another
// version than this library's. (Every API call does it first, then adopts
// restored rows: open_stream_tables in pg/api/lifecycle.hpp.)
void open_catalog(Spi& spi);
// The catalog version of this database ("" without the extension) and the
// library's.
std::string catalog_version(Spi& spi);
const char* library_version();

// This database's pgtrickle.pgt_instance id (capture triggers carry it).
std::string instance(Spi& spi);

// Adopts catalog rows a pg_dump/pg_restore brought from another database
// (pgtrickle._adopt_restored): their captures, kept copies and IMMEDIATE
// programs and triggers dropped, their stream tables marked for
// reinitialisation. `force`: also while the restore does not look complete
// (pgtrickle._restore_complete; an API call). Returns how many stream
// tables. The catalog step only: pg::adopt_restored (lifecycle.hpp) also
// rebuilds the IMMEDIATE ones.
int64_t adopt_restored(Spi& spi, bool force);

std::optional<StreamTableRow> find_by_relid(Spi& spi, Oid relid);
std::optional<StreamTableRow> find_by_id(Spi& spi, int64_t pgt_id);
bool is_stream_table(Spi& spi, Oid relid);

int64_t insert_stream_table(Spi& spi, const StreamTableRow& row);
void update_definition(Spi& spi, const StreamTableRow& row);
void mark_refreshed(Spi& spi, int64_t pgt_id);
void delete_stream_table(Spi& spi, int64_t pgt_id);
void replace_dependencies(Spi& spi, int64_t pgt_id, const std::vector<Dependency>& deps);
// Records in pg_depend that the stream table's storage depends on each
// relation its query reads, each function it calls and each type it
// computes with (replacing what was recorded before), as a view does:
// PostgreSQL then refuses DROP TABLE/VIEW/FUNCTION/TYPE of what it uses
// with 2BP01 naming the stream table, DROP ... CASCADE drops the stream
// table too, and DDL that changes what they compute finds its dependents
// (pgtrickle._on_ddl_end).
void record_dependencies(Oid st_relid, const std::vector<Dependency>& deps,
                         const std::vector<Oid>& functions, const std::vector<Oid>& types);
// Removes the storage's pg_depend on relation relid (a stream table it
// reads whose storage is being rebuilt).
void forget_dependency(Oid st_relid, Oid relid);
// The dependencies read as the owner, with their columns (ReadRight form,
// check_as unset): what a DIFFERENTIAL refresh checks first.
std::vector<ReadRight> owner_reads(Spi& spi, int64_t pgt_id);
void record_history(Spi& spi, const HistoryRow& h);
// A refresh that failed (status FAILED, the error text as error_message),
// or that the scheduler skipped because a lock was not granted in time
// (status SKIPPED).
void record_failed_refresh(Spi& spi, int64_t pgt_id, const std::string& action,
                           const std::string& initiated_by, const std::string& start_time,
                           const std::string& error, const std::string& status = "FAILED");
// Stores status and consecutive_errors (no write when both are unchanged).
void set_health(Spi& spi, int64_t pgt_id, sched::Status status, int consecutive_errors);

// Stream tables whose defining query reads relid (directly).
std::vector<StreamTableRow> dependents_of(Spi& spi, Oid relid);

// Kept copies of a stream table's join sources (pgtrickle.pgt_kept): a
// new copy starts invalid; valid ones are a bit per source position.
void insert_kept_copy(Spi& spi, int64_t pgt_id, std::size_t source_pos, const std::string& table);
std::vector<std::string> kept_copy_tables(Spi& spi, int64_t pgt_id);  // those still there
void delete_kept_copies(Spi& spi, int64_t pgt_id);
uint64_t valid_kept_copies(Spi& spi, int64_t pgt_id);
void set_kept_copy_valid(Spi& spi, int64_t pgt_id, std::size_t source_pos);
void invalidate_kept_copies(Spi& spi, int64_t pgt_id);

// Whether the stream table's owner (owner: its OID) owns its kept copies;
// when not (the owner changed), pgtrickle._sync_owner_rights gives them to
// it. Refreshes run as the owner: without this, the first
// refresh after ALTER TABLE ... OWNER TO or REASSIGN OWNED would fail.
void ensure_owner_rights(Spi& spi, int64_t pgt_id, Oid owner);

// pgtrickle._sync_owner_rights: the stream table's owner gets SELECT on
// the change buffers it reads (and USAGE on their schema) and owns its
// kept copies; a role that owns no stream table reading a buffer loses
// SELECT on it. Idempotent; runs as the catalog owner.
void sync_owner_rights(Spi& spi, int64_t pgt_id);

// Current clock time as timestamptz text (for history start times).
std::string clock_now(Spi& spi);

}  // namespace pgt::pg::catalog
