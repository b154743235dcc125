// The catalog tables as installed (sql/pg_trickle--0.1.0.sql and the update
// scripts after it), mirrored once: names and column order. Invariant: this
// header and the scripts change together; the e2e test catalog_mirror_matches_install_script checks
// it. (No PostgreSQL header here, so the e2e harness can include it too.)
#pragma once

#include "core/sql/names.hpp"

namespace pgt::catalog {

struct ColumnDef {
    int attnum;
    const char* name;
    const char* type;  // format_type() spelling
};

inline constexpr const char* kSchema = "pgtrickle";
inline constexpr const char* kChangesSchema = "pgtrickle_changes";

inline constexpr const char* kStreamTables = "pgt_stream_tables";
inline constexpr ColumnDef kStreamTableColumns[] = {
    {1, "pgt_id", "bigint"},
    {2, "pgt_relid", "regclass"},
    {3, "pgt_schema", "name"},
    {4, "pgt_name", "name"},
    {5, "defining_query", "text"},
    {6, "effective_query", "text"},
    {7, "schedule", "text"},
    {8, "requested_mode", "text"},
    {9, "refresh_mode", "text"},
    {10, "status", "text"},
    {11, "is_populated", "boolean"},
    {12, "consecutive_errors", "integer"},
    {13, "data_timestamp", "timestamp with time zone"},
    {14, "last_refresh_at", "timestamp with time zone"},
    {15, "created_at", "timestamp with time zone"},
    {16, "row_identity_domain", "text"},
    {17, "row_identity_columns", "text[]"},
    {18, "row_identity_version", "integer"},
    {19, "row_probe_version", "integer"},
    {20, "delta_program", "jsonb"},
    {21, "notify_channel", "text"},
    {22, "query_tree", "text"},
    {23, "reinit_reason", "text"},
    {24, "instance", "text"},
    {25, "delta_version", "integer"},
    {26, "delta_strategy", "text"},
    {27, "operator_tree", "text"},
    {28, "query_settings", "text[]"},
    {29, "key_indexes", "name[]"},
    {30, "requested_cdc_mode", "text"},
    {31, "fuse_mode", "text"},
    {32, "fuse_ceiling", "bigint"},
    {33, "fuse_sensitivity", "integer"},
    {34, "st_partition_key", "text"},
    {35, "pruned_refreshes", "bigint"},
    {36, "pruned_successes", "bigint"},
    {37, "pruned_failures", "bigint"},
    {38, "pruned_rows_inserted", "bigint"},
    {39, "pruned_rows_deleted", "bigint"},
};

inline constexpr const char* kDependencies = "pgt_dependencies";
inline constexpr ColumnDef kDependencyColumns[] = {
    {1, "pgt_id", "bigint"},
    {2, "source_relid", "regclass"},
    {3, "source_type", "text"},
    {4, "columns_read", "smallint[]"},
};

inline constexpr const char* kRefreshHistory = "pgt_refresh_history";
inline constexpr ColumnDef kRefreshHistoryColumns[] = {
    {1, "refresh_id", "bigint"},
    {2, "pgt_id", "bigint"},
    {3, "action", "text"},
    {4, "status", "text"},
    {5, "initiated_by", "text"},
    {6, "rows_inserted", "bigint"},
    {7, "rows_deleted", "bigint"},
    {8, "start_time", "timestamp with time zone"},
    {9, "end_time", "timestamp with time zone"},
    {10, "reason", "text"},
    {11, "error_message", "text"},
    {12, "source_changes", "bigint"},
    {13, "kept_refill_ms", "double precision"},
};

inline constexpr const char* kSources = "pgt_sources";
inline constexpr ColumnDef kSourceColumns[] = {
    {1, "source_id", "bigint"},
    {2, "source_relid", "regclass"},
    {3, "buffer_name", "text"},
    {4, "created_at", "timestamp with time zone"},
    {5, "captured_columns", "smallint[]"},
    {6, "instance", "text"},
};

inline constexpr const char* kFrontiers = "pgt_frontiers";
inline constexpr ColumnDef kFrontierColumns[] = {
    {1, "pgt_id", "bigint"},   {2, "source_id", "bigint"}, {3, "frontier", "pg_snapshot"},
    {4, "own_xid", "xid8"},    {5, "own_seq", "bigint"},   {6, "seq_seen", "bigint"},
    {7, "write_mark", "text"}, {8, "released", "text"},
};

inline constexpr const char* kKept = "pgt_kept";
inline constexpr ColumnDef kKeptColumns[] = {
    {1, "pgt_id", "bigint"},
    {2, "source_pos", "integer"},
    {3, "copy_relid", "regclass"},
    {4, "valid", "boolean"},
};

inline constexpr const char* kImmediate = "pgt_immediate";
inline constexpr ColumnDef kImmediateColumns[] = {
    {1, "pgt_id", "bigint"}, {2, "source_relid", "oid"}, {3, "event", "\"char\""},
    {4, "program", "jsonb"}, {5, "locking", "\"char\""}, {6, "lock_sql", "text"},
    {7, "sources", "oid[]"}, {8, "shared_relid", "oid"},
};

// Prefix of every column the extension adds to a stream table; user
// queries may not produce columns with it.
inline constexpr const char* kReservedColumnPrefix = sql::kReservedPrefix;

}  // namespace pgt::catalog
