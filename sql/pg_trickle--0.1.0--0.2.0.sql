-- pg_trickle 0.1.0 -> 0.2.0. Also the installation path of 0.2.0
-- (CREATE EXTENSION runs pg_trickle--0.1.0.sql, then this): every schema
-- change ships as an update script, so a new install and an updated one
-- have the same catalog. src/pg/catalog/catalog_schema.hpp mirrors the
-- result.

\echo Use "ALTER EXTENSION pg_trickle UPDATE TO '0.2.0'" to load this file. \quit

-- This database's pg_trickle: a random id made when the catalog is made
-- and not dumped. Catalog rows and capture triggers carry the id of the
-- database that made them; rows a pg_dump/pg_restore brought from
-- elsewhere carry another one, and are adopted (pgtrickle._adopt_restored).
-- pg_upgrade and CREATE DATABASE ... TEMPLATE keep it, with the
-- transaction ids the frontiers and buffers refer to.
CREATE TABLE pgtrickle.pgt_instance (
    id       text NOT NULL,
    -- the backend that made the catalog (ran CREATE EXTENSION): when the
    -- database is being restored from a dump, the restore's own session.
    -- While it is connected the scheduler adopts nothing (_restore_complete).
    made_by  integer
);
INSERT INTO pgtrickle.pgt_instance
    VALUES (pg_catalog.gen_random_uuid()::text, pg_catalog.pg_backend_pid());
CREATE UNIQUE INDEX pgt_instance_one_row ON pgtrickle.pgt_instance ((true));
GRANT SELECT ON pgtrickle.pgt_instance TO PUBLIC;

CREATE FUNCTION pgtrickle._instance()
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT id FROM pgtrickle.pgt_instance $$;

-- Relations are referenced as regclass: pg_dump writes their names and
-- pg_restore reads them back as the restored relations' OIDs.
ALTER TABLE pgtrickle.pgt_stream_tables
    ALTER COLUMN pgt_relid TYPE regclass USING pgt_relid::regclass,
    -- The analysed defining query (nodeToString, as pg_rewrite keeps a
    -- view's): it names sources by OID, so the query is deparsed from it
    -- again after a source, column, function or schema is renamed. NULL
    -- when only the text is known (then the text is analysed again).
    ADD COLUMN query_tree text,
    -- Why the next refresh reinitialises the stream table (analyses the
    -- query again, rebuilds its maintenance, recomputes it FULL); NULL when
    -- it need not. Set by DDL that changes what the query computes without
    -- PostgreSQL refusing it (docs/sql-reference.md, "When sources change").
    ADD COLUMN reinit_reason text,
    -- pgt_instance.id of the database that made the row (see there)
    ADD COLUMN instance text NOT NULL DEFAULT pgtrickle._instance(),
    -- the program format delta_program was written in (src/core/diff/
    -- program.hpp, kProgramVersion): one of another format is never run,
    -- the stream table is reinitialised instead
    ADD COLUMN delta_version integer,
    -- DIFFERENTIAL: the delta strategy its refreshes run (explain_st)
    ADD COLUMN delta_strategy text,
    -- the query's operator tree with each node's row identity and rule,
    -- as explain_st prints it
    ADD COLUMN operator_tree text,
    -- the settings a query's values depend on (TimeZone, DateStyle, ...),
    -- as name=value, recorded when it was defined: every refresh and
    -- IMMEDIATE statement computes under them, whoever runs it
    ADD COLUMN query_settings text[],
    -- the indexes pg_trickle made on the storage for a join's keys (names
    -- in the storage's schema, chosen free when made): the only indexes it
    -- ever drops there
    ADD COLUMN key_indexes name[],
    -- cdc_mode as create_stream_table or alter_stream_table was given it
    -- ('auto' or 'trigger'; NULL: not given). Changes are captured by row
    -- triggers either way.
    ADD COLUMN requested_cdc_mode text
        CHECK (requested_cdc_mode IN ('auto', 'trigger')),
    -- The Rust pg_trickle's fuse and partitioned storage, which tools such
    -- as dbt-pgtrickle read here: not provided, so always off and NULL.
    ADD COLUMN fuse_mode text NOT NULL DEFAULT 'off' CHECK (fuse_mode = 'off'),
    ADD COLUMN fuse_ceiling bigint CHECK (fuse_ceiling IS NULL),
    ADD COLUMN fuse_sensitivity integer CHECK (fuse_sensitivity IS NULL),
    ADD COLUMN st_partition_key text CHECK (st_partition_key IS NULL),
    -- What the history rows pruned by pg_trickle.history_retention
    -- counted (every status, SUCCESS, FAILED; rows written), so that the
    -- counts of pg_stat_stream_tables only grow.
    ADD COLUMN pruned_refreshes bigint NOT NULL DEFAULT 0,
    ADD COLUMN pruned_successes bigint NOT NULL DEFAULT 0,
    ADD COLUMN pruned_failures bigint NOT NULL DEFAULT 0,
    ADD COLUMN pruned_rows_inserted bigint NOT NULL DEFAULT 0,
    ADD COLUMN pruned_rows_deleted bigint NOT NULL DEFAULT 0;
-- The delta program is a JSON document (src/core/diff/program.hpp): its
-- statements and what each reads, queryable with jsonb operators. A 0.1.0
-- program is not one: its stream table is reinitialised by its next refresh.
UPDATE pgtrickle.pgt_stream_tables
   SET reinit_reason = 'delta program made by another pg_trickle version'
 WHERE delta_sql IS NOT NULL AND reinit_reason IS NULL;
ALTER TABLE pgtrickle.pgt_stream_tables RENAME COLUMN delta_sql TO delta_program;
ALTER TABLE pgtrickle.pgt_stream_tables
    ALTER COLUMN delta_program TYPE jsonb USING NULL;
ALTER TABLE pgtrickle.pgt_dependencies
    ALTER COLUMN source_relid TYPE regclass USING source_relid::regclass;
ALTER TABLE pgtrickle.pgt_sources
    ALTER COLUMN source_relid TYPE regclass USING source_relid::regclass,
    -- pgt_instance.id of the database that made the capture (its triggers
    -- carry it too: restored ones capture nothing)
    ADD COLUMN instance text NOT NULL DEFAULT pgtrickle._instance();
ALTER TABLE pgtrickle.pgt_kept
    ALTER COLUMN copy_relid TYPE regclass USING copy_relid::regclass;
-- The buffer's commit mark read just before the frontier's snapshot was
-- taken (NULL: none): while the buffer's mark is unchanged, no transaction
-- that wrote it has committed since, and a refresh's window is empty
-- without reading the buffer.
ALTER TABLE pgtrickle.pgt_frontiers ADD COLUMN write_mark text;
-- Why the scheduler dropped this consumer from its source's buffer
-- (pg_trickle.max_buffer_retention; NULL: it was not): the buffer no
-- longer keeps rows for it, and its next refresh recomputes.
ALTER TABLE pgtrickle.pgt_frontiers ADD COLUMN released text;

-- IMMEDIATE maintenance -------------------------------------------------------

-- Per IMMEDIATE stream table, source and event (I, U, D, M): the program its
-- source's statement trigger runs over the transition tables, and how it
-- locks.
CREATE TABLE pgtrickle.pgt_immediate (
    pgt_id       bigint NOT NULL REFERENCES pgtrickle.pgt_stream_tables ON DELETE CASCADE,
    source_relid oid NOT NULL,
    -- M: the events of one statement (ON CONFLICT DO UPDATE, MERGE, a
    -- writable CTE) applied together
    event        "char" NOT NULL CHECK (event IN ('I', 'U', 'D', 'M')),
    program      jsonb NOT NULL,  -- a delta program (src/core/diff/program.hpp)
    -- How concurrent writers are kept apart: 'r' the source's row locks
    -- suffice (the stream table's rows are the source's), 'i' lock_sql
    -- lists the sorted hashes of the identities the change touches (each
    -- locked by the extension), 't' one writer at a time.
    locking      "char" NOT NULL CHECK (locking IN ('r', 'i', 't', 'k')),
    lock_sql     text,
    -- A query over several tables (source_relid 0): the table of each
    -- source position, whose transition relations the program reads
    sources      oid[],
    -- locking 'k': the table whose key is the stream table's; under READ
    -- COMMITTED its writers share the stream table's lock
    shared_relid oid,
    PRIMARY KEY (pgt_id, source_relid, event)
);
SELECT pg_catalog.pg_extension_config_dump('pgtrickle.pgt_immediate', '');

CREATE FUNCTION pgtrickle._immediate_before()
RETURNS trigger
AS 'MODULE_PATHNAME', 'pgt_immediate_before'
LANGUAGE C;

CREATE FUNCTION pgtrickle._immediate_after()
RETURNS trigger
AS 'MODULE_PATHNAME', 'pgt_immediate_after'
LANGUAGE C;

-- The row trigger (ENABLE REPLICA) on each table an IMMEDIATE stream
-- table's statement triggers are on: a logical replication worker, which
-- fires row triggers only, fails to write there (0A000) rather than leave
-- the stream table stale.
CREATE FUNCTION pgtrickle._immediate_replicated()
RETURNS trigger
AS 'MODULE_PATHNAME', 'pgt_immediate_replicated'
LANGUAGE C;

-- As for capture triggers: only the extension installs them.
REVOKE EXECUTE ON FUNCTION pgtrickle._immediate_before(), pgtrickle._immediate_after(),
                           pgtrickle._immediate_replicated() FROM PUBLIC;

-- Change notes of FULL stream tables (pgt_note_<pgt_id>): a statement
-- trigger that tells the scheduler a source was written. Only the
-- extension installs them.
CREATE FUNCTION pgtrickle._note_write()
RETURNS trigger
AS 'MODULE_PATHNAME', 'pgt_note_write'
LANGUAGE C;
REVOKE EXECUTE ON FUNCTION pgtrickle._note_write() FROM PUBLIC;
-- The same for a table an ALTER TABLE changed (a rewrite fires no trigger).
CREATE FUNCTION pgtrickle._note_table_written(relid oid)
RETURNS void
AS 'MODULE_PATHNAME', 'pgt_note_table_written'
LANGUAGE C STRICT;
REVOKE EXECUTE ON FUNCTION pgtrickle._note_table_written(oid) FROM PUBLIC;

CREATE FUNCTION pgtrickle._reinit_immediate()
RETURNS void
AS 'MODULE_PATHNAME', 'pgt_reinit_immediate'
LANGUAGE C VOLATILE;
REVOKE EXECUTE ON FUNCTION pgtrickle._reinit_immediate() FROM PUBLIC;

-- What every API call does first, for those written in SQL (explain_st):
-- refuses a catalog of another version (55000), adopts a restored one.
CREATE FUNCTION pgtrickle._open_catalog()
RETURNS void
AS 'MODULE_PATHNAME', 'pgt_open_catalog'
LANGUAGE C VOLATILE;

-- How many statements this backend maintained the stream table for by
-- applying their change, and how many by recomputing it.
CREATE FUNCTION pgtrickle._immediate_counters(name text, OUT incremental bigint,
                                              OUT recomputed bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'pgt_immediate_counters'
LANGUAGE C STRICT VOLATILE;

ALTER TABLE pgtrickle.pgt_refresh_history
    DROP CONSTRAINT pgt_refresh_history_initiated_by_check,
    ADD CONSTRAINT pgt_refresh_history_initiated_by_check
        CHECK (initiated_by IN ('CREATE', 'MANUAL', 'ALTER', 'SCHEDULER', 'IMMEDIATE'));

-- Lifecycle API -------------------------------------------------------------

-- The arguments after initialize (create) and status (alter) up to notify
-- are those of the Rust pg_trickle's API, in its order and with its
-- defaults, so that tools written for it (dbt-pgtrickle) call these
-- functions unchanged; notify (and cascade) follow them. Such an argument
-- either takes effect (cdc_mode) or, given anything but its default, fails
-- with 0A000 naming it (src/pg/api/compat_args.cpp).
DROP FUNCTION pgtrickle.create_stream_table(text, text, text, text, boolean, text);
CREATE FUNCTION pgtrickle.create_stream_table(
    name text, query text,
    schedule text DEFAULT 'calculated',
    refresh_mode text DEFAULT 'AUTO',
    initialize boolean DEFAULT true,
    diamond_consistency text DEFAULT NULL,
    diamond_schedule_policy text DEFAULT NULL,
    cdc_mode text DEFAULT NULL,
    append_only boolean DEFAULT false,
    pooler_compatibility_mode boolean DEFAULT false,
    partition_by text DEFAULT NULL,
    max_differential_joins integer DEFAULT NULL,
    max_delta_fraction double precision DEFAULT NULL,
    output_distribution_column text DEFAULT NULL,
    temporal boolean DEFAULT false,
    storage_backend text DEFAULT NULL,
    sink text DEFAULT NULL,
    ducklake_sink_path text DEFAULT NULL,
    ducklake_sink_table_id bigint DEFAULT NULL,
    notify text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'pgt_create_stream_table'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

DROP FUNCTION pgtrickle.alter_stream_table(text, text, text, text, text, text);
CREATE FUNCTION pgtrickle.alter_stream_table(
    name text,
    query text DEFAULT NULL,
    schedule text DEFAULT NULL,
    refresh_mode text DEFAULT NULL,
    status text DEFAULT NULL,
    diamond_consistency text DEFAULT NULL,
    diamond_schedule_policy text DEFAULT NULL,
    cdc_mode text DEFAULT NULL,
    append_only boolean DEFAULT NULL,
    pooler_compatibility_mode boolean DEFAULT NULL,
    tier text DEFAULT NULL,
    fuse text DEFAULT NULL,
    fuse_ceiling bigint DEFAULT NULL,
    fuse_sensitivity integer DEFAULT NULL,
    partition_by text DEFAULT NULL,
    max_differential_joins integer DEFAULT NULL,
    max_delta_fraction double precision DEFAULT NULL,
    post_refresh_action text DEFAULT NULL,
    reindex_drift_threshold double precision DEFAULT NULL,
    sink text DEFAULT NULL,
    ducklake_sink_path text DEFAULT NULL,
    ducklake_sink_table_id bigint DEFAULT NULL,
    notify text DEFAULT '',
    "cascade" boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME', 'pgt_alter_stream_table'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Checks a stream table's maintenance (capture triggers, change buffers,
-- frontiers, pending reinitialisation, error state) and puts what it finds
-- wrong right with one reinitialisation (a FULL rebuild); one row per
-- finding and what was done, or one 'healthy' row when nothing was done.
CREATE FUNCTION pgtrickle.repair_stream_table(name text)
RETURNS TABLE (item text, found text, action text)
AS 'MODULE_PATHNAME', 'pgt_repair_stream_table'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- create_stream_table unless a stream table of that name exists (then a
-- NOTICE, and nothing changes: not even a different query replaces it). A
-- relation of that name that is not a stream table: 42P07, as from
-- create_stream_table. The name resolves in the caller's search_path.
CREATE FUNCTION pgtrickle.create_stream_table_if_not_exists(
    name text, query text,
    schedule text DEFAULT 'calculated',
    refresh_mode text DEFAULT 'AUTO',
    initialize boolean DEFAULT true,
    diamond_consistency text DEFAULT NULL,
    diamond_schedule_policy text DEFAULT NULL,
    cdc_mode text DEFAULT NULL,
    append_only boolean DEFAULT false,
    pooler_compatibility_mode boolean DEFAULT false,
    partition_by text DEFAULT NULL,
    max_differential_joins integer DEFAULT NULL,
    max_delta_fraction double precision DEFAULT NULL,
    output_distribution_column text DEFAULT NULL,
    temporal boolean DEFAULT false,
    storage_backend text DEFAULT NULL,
    sink text DEFAULT NULL,
    ducklake_sink_path text DEFAULT NULL,
    ducklake_sink_table_id bigint DEFAULT NULL,
    notify text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'pgt_create_stream_table_if_not_exists'
LANGUAGE C VOLATILE;

-- create_stream_table when no stream table of that name exists; otherwise
-- the stream table is made to match: nothing happens when its query (as
-- stored: analysed, schema-qualified), schedule, requested mode and
-- notification channel are already these, and what differs is given to
-- alter_stream_table, with its rules (same output columns: the table is
-- kept; other columns: it is rebuilt, refused while views or other stream
-- tables read it). initialize applies to a creation only. The query is
-- compared as the stream table's owner would store it, analysed with the
-- owner's rights.
CREATE FUNCTION pgtrickle.create_or_replace_stream_table(
    name text, query text,
    schedule text DEFAULT 'calculated',
    refresh_mode text DEFAULT 'AUTO',
    initialize boolean DEFAULT true,
    diamond_consistency text DEFAULT NULL,
    diamond_schedule_policy text DEFAULT NULL,
    cdc_mode text DEFAULT NULL,
    append_only boolean DEFAULT false,
    pooler_compatibility_mode boolean DEFAULT false,
    partition_by text DEFAULT NULL,
    max_differential_joins integer DEFAULT NULL,
    max_delta_fraction double precision DEFAULT NULL,
    output_distribution_column text DEFAULT NULL,
    temporal boolean DEFAULT false,
    storage_backend text DEFAULT NULL,
    notify text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'pgt_create_or_replace_stream_table'
LANGUAGE C VOLATILE;

-- alter_stream_table(name, status => 'ACTIVE'): a suspended or failing
-- stream table is refreshed again, its error count reset. Owner only.
-- Functions taking a stream table's name resolve it in the caller's
-- search_path (pgtrickle._stream_table_id), so they cannot pin their own:
-- their bodies are SQL-standard (BEGIN ATOMIC), bound to operators and
-- functions when the extension is created, and look up nothing else when
-- called. Every other SQL function pins search_path.
CREATE FUNCTION pgtrickle.resume_stream_table(name text)
RETURNS void
LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT pgtrickle.alter_stream_table(name, status => 'ACTIVE');
END;

-- alter_stream_table(name, status => 'SUSPENDED'): the scheduler leaves it
-- alone until it is resumed; a manual refresh still runs. Owner only.
CREATE FUNCTION pgtrickle.pause_stream_table(name text)
RETURNS void
LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT pgtrickle.alter_stream_table(name, status => 'SUSPENDED');
END;

-- The library's version (the catalog's is pg_extension.extversion).
CREATE FUNCTION pgtrickle.version()
RETURNS text
AS 'MODULE_PATHNAME', 'pgt_version'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- Health and monitoring -------------------------------------------------------

-- The catalog id of the stream table a name resolves to (in the caller's
-- search_path, as the other functions' names do): 42P01 when there is no
-- such relation, 42809 when it is not a stream table.
CREATE FUNCTION pgtrickle._stream_table_id(name text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgt_stream_table_id'
LANGUAGE C STABLE;

-- A refresh's error text may quote a value only the stream table's owner
-- may read (invalid input syntax for type integer: "..."): PUBLIC reads
-- every column of the history but error_message, which
-- pgtrickle._refresh_error gives to the owner (and roles with its rights)
-- and to pg_read_all_stats, as pg_stat_activity shows a query.
REVOKE SELECT ON pgtrickle.pgt_refresh_history FROM PUBLIC;
GRANT SELECT (refresh_id, pgt_id, action, status, initiated_by, rows_inserted, rows_deleted,
              start_time, end_time, reason, source_changes, kept_refill_ms)
    ON pgtrickle.pgt_refresh_history TO PUBLIC;

-- The error text of one refresh for whom may read it, else NULL.
CREATE FUNCTION pgtrickle._refresh_error(refresh_id bigint)
RETURNS text
AS 'MODULE_PATHNAME', 'pgt_refresh_error'
LANGUAGE C STRICT STABLE;

-- A stream table's refreshes, the latest first (at most max_rows).
CREATE FUNCTION pgtrickle.get_refresh_history(name text, max_rows integer DEFAULT 20)
RETURNS TABLE (refresh_id bigint, start_time timestamptz, end_time timestamptz,
               action text, status text, initiated_by text, rows_inserted bigint,
               rows_deleted bigint, duration_ms double precision, reason text,
               error_message text)
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT h.refresh_id, h.start_time, h.end_time, h.action, h.status, h.initiated_by,
           h.rows_inserted, h.rows_deleted,
           1000 OPERATOR(pg_catalog.*) pg_catalog.date_part('epoch',
               h.end_time OPERATOR(pg_catalog.-) h.start_time),
           h.reason, pgtrickle._refresh_error(h.refresh_id)
      FROM pgtrickle.pgt_refresh_history h
     WHERE h.pgt_id OPERATOR(pg_catalog.=) pgtrickle._stream_table_id(name)
     ORDER BY h.refresh_id DESC
     LIMIT GREATEST(max_rows, 0);
END;

-- The relations a stream table reads: each source, its kind, whether its
-- changes are captured for it (a DIFFERENTIAL stream table's tables), and
-- the columns it reads (NULL when read only through a view).
CREATE FUNCTION pgtrickle.list_sources(name text)
RETURNS TABLE (source_table text, source_oid bigint, source_type text, cdc_mode text,
               columns_used text)
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT d.source_relid::pg_catalog.regclass::pg_catalog.text,
           d.source_relid::pg_catalog.oid::bigint,
           d.source_type,
           CASE WHEN EXISTS (SELECT 1 FROM pgtrickle.pgt_frontiers f
                               JOIN pgtrickle.pgt_sources src
                                 ON src.source_id OPERATOR(pg_catalog.=) f.source_id
                              WHERE f.pgt_id OPERATOR(pg_catalog.=) d.pgt_id
                                AND src.source_relid OPERATOR(pg_catalog.=)
                                    d.source_relid::pg_catalog.oid)
                THEN 'trigger'
                WHEN EXISTS (SELECT 1 FROM pgtrickle.pgt_immediate i
                              WHERE i.pgt_id OPERATOR(pg_catalog.=) d.pgt_id
                                AND i.source_relid OPERATOR(pg_catalog.=)
                                    d.source_relid::pg_catalog.oid)
                THEN 'immediate' ELSE 'none' END,
           (SELECT pg_catalog.string_agg(CASE WHEN c.a OPERATOR(pg_catalog.=) 0 THEN '*'
                                              ELSE pg_catalog.quote_ident(a.attname) END,
                                         ', ' ORDER BY c.a)
              FROM pg_catalog.unnest(d.columns_read) c(a)
              LEFT JOIN pg_catalog.pg_attribute a
                ON a.attrelid OPERATOR(pg_catalog.=) d.source_relid::pg_catalog.oid
               AND a.attnum OPERATOR(pg_catalog.=) c.a)
      FROM pgtrickle.pgt_dependencies d
     WHERE d.pgt_id OPERATOR(pg_catalog.=) pgtrickle._stream_table_id(name)
     ORDER BY 1;
END;

-- The statement that creates the stream table again as it is defined now
-- (name, query as written, schedule, requested mode, notify channel).
CREATE FUNCTION pgtrickle.export_definition(name text)
RETURNS text
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT pg_catalog.format(
               'SELECT pgtrickle.create_stream_table(%L, %L, schedule => %L, refresh_mode => %L%s%s);',
               pg_catalog.format('%I.%I', s.pgt_schema, s.pgt_name), s.defining_query, s.schedule,
               s.requested_mode,
               CASE WHEN s.requested_cdc_mode IS NULL THEN ''
                    ELSE pg_catalog.format(', cdc_mode => %L', s.requested_cdc_mode) END,
               CASE WHEN s.notify_channel IS NULL THEN ''
                    ELSE pg_catalog.format(', notify => %L', s.notify_channel) END)
      FROM pgtrickle.pgt_stream_tables s
     WHERE s.pgt_id OPERATOR(pg_catalog.=) pgtrickle._stream_table_id(name);
END;

-- An IMMEDIATE stream table's triggers enabled as installed (its statement
-- triggers ENABLE ALWAYS, its replication row trigger ENABLE REPLICA), and
-- how many it has when whole: six on each table it reads (a join's tables,
-- a view's base tables, an upstream stream table), once per table.
CREATE FUNCTION pgtrickle._immediate_triggers(id bigint, OUT present bigint, OUT expected bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT (SELECT count(*) FROM pg_catalog.pg_trigger t
             WHERE t.tgname LIKE 'pgt\_immediate\_' || id || '\_%'
               AND t.tgenabled = CASE WHEN t.tgfoid = 'pgtrickle._immediate_replicated()'::regprocedure
                                      THEN 'R' ELSE 'A' END),
           -- five statement triggers per table a statement on which
           -- reaches a source: the source, and every table of a
           -- partitioned one's tree (empty for a table outside any); the
           -- row trigger on each that holds rows (not a partitioned table)
           (SELECT coalesce(sum((SELECT CASE WHEN count(*) = 0 THEN 6
                                             ELSE 5 * count(*) + count(*) FILTER (WHERE p.isleaf) END
                                   FROM pg_catalog.pg_partition_tree(d.source_relid) p)), 0)
              FROM pgtrickle.pgt_dependencies d
             WHERE d.pgt_id = id
               AND d.source_type IN ('TABLE', 'PARTITIONED_TABLE', 'STREAM_TABLE'))::bigint
$$;

-- One row per check; ok = false says what needs attention and how.
CREATE OR REPLACE FUNCTION pgtrickle.health_check()
RETURNS TABLE (check_name text, ok boolean, detail text)
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT 'scheduler', st IN ('running', 'waiting') OR pg_catalog.pg_is_in_recovery(),
           CASE WHEN pg_catalog.pg_is_in_recovery() THEN 'this server is a standby: stream '
                  'tables are refreshed on the primary and reach this server with the rest of '
                  'its data (no scheduler runs here, and refreshes are refused)'
             ELSE CASE st
             WHEN 'running' THEN 'a scheduler worker refreshes this database''s stream tables'
             WHEN 'waiting' THEN pg_catalog.format('this database waits for its turn: more '
                  'databases are due than the %s scheduler workers '
                  '(pg_trickle.max_scheduler_workers) serve at once; each worker leaves after a '
                  'look at its stream tables, and the most overdue database goes next',
                  pg_catalog.current_setting('pg_trickle.max_scheduler_workers'))
             WHEN 'not_preloaded' THEN 'scheduling is off: pg_trickle is not in '
                  'shared_preload_libraries, so stream tables refresh only when '
                  'pgtrickle.refresh_stream_table() is called (from cron or the application)'
             WHEN 'disabled' THEN 'scheduling is off: pg_trickle.enabled = off; stream tables '
                  'refresh only when pgtrickle.refresh_stream_table() is called'
             ELSE 'no scheduler worker runs for this database yet (it starts within seconds '
                  'of CREATE EXTENSION; see the server log if it does not)'
           END END
      FROM (SELECT pgtrickle._scheduler_state() AS st) s
    UNION ALL
    SELECT 'version', v.lib = e.extversion,
           CASE WHEN v.lib = e.extversion THEN 'pg_trickle ' || v.lib
                ELSE format('the library is %s, this database''s catalog %s: run ALTER EXTENSION '
                            'pg_trickle UPDATE', v.lib, e.extversion)
           END
      FROM (SELECT pgtrickle.version() AS lib) v,
           pg_catalog.pg_extension e WHERE e.extname = 'pg_trickle'
    UNION ALL
    SELECT 'suspended_stream_tables', count(*) = 0,
           CASE WHEN count(*) = 0 THEN 'none'
                ELSE string_agg(format('%I.%I', pgt_schema, pgt_name), ', ' ORDER BY pgt_id)
                     || ': resume with pgtrickle.alter_stream_table(name, status => ''ACTIVE'')'
           END
      FROM pgtrickle.pgt_stream_tables WHERE status = 'SUSPENDED'
    UNION ALL
    SELECT 'failing_stream_tables', count(*) = 0,
           CASE WHEN count(*) = 0 THEN 'none'
                ELSE string_agg(format('%I.%I (%s errors in a row)', pgt_schema, pgt_name,
                                       consecutive_errors), ', ' ORDER BY pgt_id)
                     || ': see pgtrickle.pgt_refresh_history.error_message'
           END
      FROM pgtrickle.pgt_stream_tables WHERE status = 'ERROR'
    UNION ALL
    -- A relation a stream table reads that no longer exists (PostgreSQL
    -- refuses to drop one without CASCADE, which drops the stream table).
    SELECT 'missing_sources', count(*) = 0,
           CASE WHEN count(*) = 0 THEN 'every relation a stream table reads exists'
                ELSE string_agg(format('%I.%I (relation %s)', s.pgt_schema, s.pgt_name,
                                       d.source_relid), ', ' ORDER BY s.pgt_id)
                     || ': drop those stream tables and create them again'
           END
      FROM pgtrickle.pgt_dependencies d
      JOIN pgtrickle.pgt_stream_tables s ON s.pgt_id = d.pgt_id
     WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = d.source_relid)
    UNION ALL
    -- A stream table's guard (it refuses writes other than pg_trickle's,
    -- also under session_replication_role = replica) missing or not
    -- ENABLE ALWAYS: recognised by the function it runs.
    SELECT 'storage_guard', count(*) = 0,
           CASE WHEN count(*) = 0 THEN 'every stream table refuses direct writes'
                ELSE string_agg(format('%I.%I', s.pgt_schema, s.pgt_name), ', '
                                ORDER BY s.pgt_id)
                     || ': their guard trigger is missing or disabled, so direct writes reach '
                        'them; run pgtrickle.repair_stream_table on them'
           END
      FROM pgtrickle.pgt_stream_tables s
     WHERE s.instance = pgtrickle._instance()
       AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
                        WHERE t.tgrelid = s.pgt_relid AND t.tgenabled = 'A'
                          AND t.tgfoid = 'pgtrickle._guard_storage()'::pg_catalog.regprocedure)
    UNION ALL
    -- Rows a pg_restore brought, not adopted yet (pgtrickle._adopt_restored).
    SELECT 'restored_stream_tables', count(*) = 0,
           CASE WHEN count(*) = 0 THEN 'none'
                ELSE string_agg(format('%I.%I', pgt_schema, pgt_name), ', ' ORDER BY pgt_id)
                     || ': restored from a dump; adopted once the restore is complete (the '
                        'scheduler does it) or at the first pg_trickle call, which rebuilds the '
                        'IMMEDIATE ones at once and the others at their next refresh'
           END
      FROM pgtrickle.pgt_stream_tables WHERE instance <> pgtrickle._instance()
    UNION ALL
    -- DDL changed what these compute: their next refresh reinitialises them.
    SELECT 'reinit_pending', count(*) = 0,
           CASE WHEN count(*) = 0 THEN 'none'
                ELSE string_agg(format('%I.%I (%s)', pgt_schema, pgt_name, reinit_reason), ', '
                                ORDER BY pgt_id)
                     || ': their next refresh recomputes them in full (or run '
                        'pgtrickle.refresh_stream_table now)'
           END
      FROM pgtrickle.pgt_stream_tables WHERE reinit_reason IS NOT NULL
    UNION ALL
    -- Consumers that fell more than pg_trickle.max_buffer_retention rows
    -- behind (suspended or lagging): no longer kept in the buffer.
    SELECT 'buffer_retention', count(*) = 0,
           CASE WHEN count(*) = 0 THEN 'no stream table was dropped from a change buffer'
                ELSE string_agg(format('%I.%I on %s (%s)', st.pgt_schema, st.pgt_name,
                                       s.source_relid::regclass, f.released), ', '
                                ORDER BY st.pgt_id, s.source_id)
                     || ': their change buffers no longer keep rows for them; their next '
                        'refresh recomputes them in full'
           END
      FROM pgtrickle.pgt_frontiers f
      JOIN pgtrickle.pgt_sources s ON s.source_id = f.source_id
      JOIN pgtrickle.pgt_stream_tables st ON st.pgt_id = f.pgt_id
     WHERE f.released IS NOT NULL
    UNION ALL
    -- A capture trigger missing or not ENABLE ALWAYS (ALTER TABLE ...
    -- DISABLE/ENABLE TRIGGER): changes made meanwhile never reach the
    -- DIFFERENTIAL stream tables reading that table.
    SELECT 'change_capture', count(*) = 0,
           CASE WHEN count(*) = 0 THEN 'every captured table''s capture triggers fire always'
                ELSE string_agg(format('%s (trigger %s %s)', c.src, c.tname, c.state), ', '
                                ORDER BY c.src, c.tname)
                     || ': changes made while capture was off are missing from the stream '
                        'tables reading them; their next DIFFERENTIAL refresh repairs it and '
                        'recomputes (or run pgtrickle.repair_stream_table on them now)'
           END
      FROM (SELECT s.source_relid::regclass::text AS src, n.tname,
                   CASE WHEN t.oid IS NULL THEN 'missing'
                        ELSE 'enabled ' || CASE t.tgenabled WHEN 'D' THEN 'never'
                                                            WHEN 'O' THEN 'on origin only'
                                                            ELSE 'on replica only' END
                   END AS state
              FROM pgtrickle.pgt_sources s
             CROSS JOIN LATERAL (VALUES ('pgt_capture_' || s.source_id),
                                        ('pgt_capture_' || s.source_id || '_truncate')) n(tname)
              LEFT JOIN pg_catalog.pg_trigger t
                ON t.tgrelid = s.source_relid AND t.tgname = n.tname
             WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_class k WHERE k.oid = s.source_relid)
               AND (t.oid IS NULL OR t.tgenabled <> 'A')) c
    UNION ALL
    -- An IMMEDIATE stream table's triggers missing or not enabled as
    -- installed: statements on its source pass without maintaining it (or,
    -- its replication row trigger, a logical replication worker's writes).
    SELECT 'immediate_maintenance', count(*) = 0,
           CASE WHEN count(*) = 0 THEN 'every IMMEDIATE stream table''s triggers fire as installed'
                ELSE string_agg(format('%I.%I (%s of its %s triggers fire as installed)', x.pgt_schema,
                                       x.pgt_name, x.present, x.expected), ', ' ORDER BY x.pgt_id)
                     || ': statements on their sources do not maintain them; run '
                        'pgtrickle.repair_stream_table on them'
           END
      FROM (SELECT st.pgt_id, st.pgt_schema, st.pgt_name, tr.present, tr.expected
              FROM pgtrickle.pgt_stream_tables st,
                   LATERAL pgtrickle._immediate_triggers(st.pgt_id) tr
             WHERE st.refresh_mode = 'IMMEDIATE' AND st.instance = pgtrickle._instance()) x
     WHERE x.present <> x.expected
    UNION ALL
    -- Scheduled refreshes skipped (a lock not granted within
    -- pg_trickle.lock_timeout) 3 times or more since the stream table's
    -- last refresh that was not skipped: a lock on it or on a source is
    -- held for long, and the stream table falls behind.
    SELECT 'skipped_refreshes', count(*) = 0,
           CASE WHEN count(*) = 0 THEN 'no stream table''s scheduled refreshes are being skipped'
                ELSE string_agg(format('%I.%I (%s skipped in a row since %s)', s.pgt_schema,
                                       s.pgt_name, k.skipped, k.since), ', ' ORDER BY s.pgt_id)
                     || ': a lock on the stream table or a source it reads was held past '
                        'pg_trickle.lock_timeout at each try; pg_locks shows who holds it'
           END
      FROM pgtrickle.pgt_stream_tables s
     CROSS JOIN LATERAL (
           SELECT count(*) AS skipped, min(h.start_time) AS since
             FROM pgtrickle.pgt_refresh_history h
            WHERE h.pgt_id = s.pgt_id AND h.status = 'SKIPPED'
              AND h.refresh_id > coalesce((SELECT max(x.refresh_id)
                                             FROM pgtrickle.pgt_refresh_history x
                                            WHERE x.pgt_id = s.pgt_id
                                              AND x.status <> 'SKIPPED'), 0)) k
     WHERE k.skipped >= 3
$$;

-- The change rows of one source that a stream table has not consumed yet
-- (at most max_rows when given); NULL when the caller may not read the
-- source (SELECT on it, or pg_read_all_stats) or it has no frontier.
CREATE FUNCTION pgtrickle._pending_changes(pgt_id bigint, source_id bigint,
                                           max_rows bigint DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgt_pending_changes'
LANGUAGE C VOLATILE;

-- Time since the stream table was last known equal to its sources: zero
-- when every source it reads is captured and none has a change it has not
-- consumed (and always for IMMEDIATE), else the time since data_timestamp
-- (its last refresh's snapshot, or for a FULL table with change notes the
-- scheduler's last finding that none of its tables was written); NULL when
-- it was never populated.
CREATE FUNCTION pgtrickle._staleness(id bigint)
RETURNS interval
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
        WHEN NOT st.is_populated OR st.data_timestamp IS NULL THEN NULL
        WHEN st.refresh_mode = 'IMMEDIATE' THEN interval '0'
        WHEN NOT EXISTS (
                 SELECT 1 FROM pgtrickle.pgt_dependencies d
                  WHERE d.pgt_id = st.pgt_id AND d.source_type <> 'VIEW'
                    AND NOT EXISTS (SELECT 1 FROM pgtrickle.pgt_frontiers f
                                      JOIN pgtrickle.pgt_sources s ON s.source_id = f.source_id
                                     WHERE f.pgt_id = st.pgt_id
                                       AND s.source_relid = d.source_relid))
         AND EXISTS (SELECT 1 FROM pgtrickle.pgt_frontiers f WHERE f.pgt_id = st.pgt_id)
         AND NOT EXISTS (
                 SELECT 1 FROM pgtrickle.pgt_frontiers f
                  WHERE f.pgt_id = st.pgt_id
                    AND coalesce(pgtrickle._pending_changes(f.pgt_id, f.source_id, 1), 1) > 0)
            THEN interval '0'
        ELSE greatest(now() - st.data_timestamp, interval '0')
    END
      FROM pgtrickle.pgt_stream_tables st
     WHERE st.pgt_id = id
$$;

DROP FUNCTION pgtrickle.pgt_status();
CREATE FUNCTION pgtrickle.pgt_status()
RETURNS TABLE (
    name               text,
    status             text,
    refresh_mode       text,
    requested_mode     text,
    schedule           text,
    is_populated       boolean,
    consecutive_errors integer,
    last_refresh_at    timestamptz,
    data_timestamp     timestamptz,
    staleness          interval,
    reinit_reason      text)
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.format('%I.%I', n.nspname, c.relname),
           st.status, st.refresh_mode, st.requested_mode, st.schedule,
           st.is_populated, st.consecutive_errors, st.last_refresh_at,
           st.data_timestamp, pgtrickle._staleness(st.pgt_id), st.reinit_reason
      FROM pgtrickle.pgt_stream_tables st
      JOIN pg_catalog.pg_class c ON c.oid = st.pgt_relid
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     ORDER BY n.nspname, c.relname
$$;

-- Housekeeping ----------------------------------------------------------------

-- The extension's triggers dropped in this transaction, recognised by the
-- function they call (of this schema, which no other role can create in),
-- as an object-access hook saw them just before their deletion
-- (src/pg/catalog/dropped_triggers.cpp): the trigger, its table, its
-- function, the table of the topmost trigger it was cloned from (a
-- partition's clone; else its own table) and its first argument (the
-- stream table's id for IMMEDIATE triggers). _on_sql_drop joins it with
-- pg_event_trigger_dropped_objects() by OID.
CREATE FUNCTION pgtrickle._dropped_triggers(
    OUT trigger_oid pg_catalog.oid, OUT relid pg_catalog.oid, OUT func pg_catalog.regproc,
    OUT root_relid pg_catalog.oid, OUT first_arg text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pgt_dropped_triggers'
LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION pgtrickle._dropped_triggers() FROM PUBLIC;

-- Does nothing; calling it loads the library, whose hook must be in place
-- before a DDL command drops anything.
CREATE FUNCTION pgtrickle._on_ddl_start()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'pgt_on_ddl_start'
LANGUAGE C;
CREATE EVENT TRIGGER pgt_ddl_start ON ddl_command_start
    EXECUTE FUNCTION pgtrickle._on_ddl_start();

-- A stream table's storage dropped with plain DROP TABLE (or DROP SCHEMA
-- ... CASCADE) takes its catalog rows with it.
-- {"op":"RESYNC","reason":...} on a stream table's channel, at commit
-- (src/pg/notify/stream_notify.cpp); for the sql_drop event trigger.
CREATE FUNCTION pgtrickle._notify_resync(channel text, schema text, name text, reason text)
RETURNS void
AS 'MODULE_PATHNAME', 'pgt_notify_resync'
LANGUAGE C VOLATILE STRICT;
REVOKE ALL ON FUNCTION pgtrickle._notify_resync(text, text, text, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION pgtrickle._on_sql_drop()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src record;
    tname text;
    readers text;
    imm_readers text;
    guarded text;
    imm record;
    gone bigint;
BEGIN
    -- Our triggers are recognised by what they are (_dropped_triggers: the
    -- function they call, their table, their first argument), never by
    -- name: anyone may name a trigger on their own table like ours.
    --
    -- A capture trigger dropped while its source lives on without another
    -- of its kind and the capture is still in use (DROP TRIGGER, DROP
    -- COLUMN ... CASCADE of a captured column): refused, the stream tables
    -- reading it would silently stop following the table. pg_trickle
    -- removes a capture's catalog row before its triggers, and creates a
    -- trigger it replaces before dropping the old one.
    SELECT pg_catalog.string_agg(DISTINCT pg_catalog.format('%I.%I', st.pgt_schema, st.pgt_name), ', ')
      INTO readers
      FROM pg_catalog.pg_event_trigger_dropped_objects() d
      JOIN pgtrickle._dropped_triggers() x ON x.trigger_oid = d.objid
      JOIN pgtrickle.pgt_sources s ON s.source_relid = x.relid
      JOIN pgtrickle.pgt_frontiers f ON f.source_id = s.source_id
      JOIN pgtrickle.pgt_stream_tables st ON st.pgt_id = f.pgt_id
     WHERE d.classid = 'pg_catalog.pg_trigger'::pg_catalog.regclass
       AND x.func IN ('pgtrickle._capture_row'::pg_catalog.regproc,
                      'pgtrickle._capture_truncate'::pg_catalog.regproc)
       AND EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = s.source_relid)
       AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
                        WHERE t.tgrelid = x.relid
                          AND (t.tgfoid = x.func
                               OR (x.func = 'pgtrickle._capture_row'::pg_catalog.regproc
                                   AND t.tgfoid = 'pgtrickle._capture_statement'::pg_catalog.regproc)));
    -- An IMMEDIATE trigger dropped by hand (from a source, a join's table
    -- or a partition that is still there): its stream table would stop
    -- following that table. pg_trickle deletes the programs first; a
    -- partition dropped takes its triggers with it (handled below).
    SELECT pg_catalog.string_agg(DISTINCT pg_catalog.format('%I.%I', st.pgt_schema, st.pgt_name), ', ')
      INTO imm_readers
      FROM pg_catalog.pg_event_trigger_dropped_objects() d
      JOIN pgtrickle._dropped_triggers() x ON x.trigger_oid = d.objid
      JOIN pgtrickle.pgt_stream_tables st ON st.pgt_id::pg_catalog.text = x.first_arg
     WHERE d.classid = 'pg_catalog.pg_trigger'::pg_catalog.regclass
       AND x.func IN ('pgtrickle._immediate_before'::pg_catalog.regproc,
                      'pgtrickle._immediate_after'::pg_catalog.regproc,
                      'pgtrickle._immediate_replicated'::pg_catalog.regproc)
       AND EXISTS (SELECT 1 FROM pgtrickle.pgt_immediate i WHERE i.pgt_id = st.pgt_id)
       AND EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = x.relid);
    -- The guard of a stream table that lives on (DROP TRIGGER, or DROP
    -- COLUMN ... CASCADE of a source column its query reads, on which the
    -- guard depends): refused, the stream table would become writable and
    -- could no longer be maintained.
    SELECT pg_catalog.string_agg(DISTINCT pg_catalog.format('%I.%I', st.pgt_schema, st.pgt_name), ', ')
      INTO guarded
      FROM pg_catalog.pg_event_trigger_dropped_objects() d
      JOIN pgtrickle._dropped_triggers() x ON x.trigger_oid = d.objid
      JOIN pgtrickle.pgt_stream_tables st ON st.pgt_relid = x.relid
     WHERE d.classid = 'pg_catalog.pg_trigger'::pg_catalog.regclass
       AND x.func = 'pgtrickle._guard_storage'::pg_catalog.regproc
       AND EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = st.pgt_relid);
    IF guarded IS NOT NULL THEN
        RAISE EXCEPTION 'cannot drop the trigger that guards a stream table'
            USING ERRCODE = '2BP01',
                  DETAIL = 'Stream tables it guards: ' || guarded || '. DROP COLUMN ... CASCADE of a column a stream table reads would drop it too.',
                  HINT = 'Drop those stream tables first (pgtrickle.drop_stream_table).';
    END IF;
    IF imm_readers IS NOT NULL THEN
        RAISE EXCEPTION 'cannot drop the trigger that maintains an IMMEDIATE stream table'
            USING ERRCODE = '2BP01',
                  DETAIL = 'Stream tables it maintains: ' || imm_readers || '.',
                  HINT = 'Drop those stream tables first (pgtrickle.drop_stream_table), or alter them to another refresh_mode.';
    END IF;
    IF readers IS NOT NULL THEN
        RAISE EXCEPTION 'cannot drop the change capture of a table that stream tables read'
            USING ERRCODE = '2BP01',
                  DETAIL = 'Stream tables reading it: ' || readers || '.',
                  HINT = 'Drop those stream tables first (pgtrickle.drop_stream_table), or alter them to refresh_mode => ''FULL''.';
    END IF;
    -- A partition of a captured table dropped (its copy of the capture
    -- trigger goes with it): its rows left without a captured change.
    -- (Recognised as a clone of the source's capture row trigger.)
    PERFORM pgtrickle._mark_for_reinit('pg_catalog.pg_class'::pg_catalog.regclass,
                                       ARRAY[s.source_relid],
                                       'partition ' || pg_catalog.format('%I.%I', d.address_names[1],
                                                                         d.address_names[2])
                                       || ' of ' || s.source_relid::pg_catalog.regclass::pg_catalog.text
                                       || ' dropped')
       FROM pg_catalog.pg_event_trigger_dropped_objects() d
       JOIN pgtrickle._dropped_triggers() x ON x.trigger_oid = d.objid
       JOIN pgtrickle.pgt_sources s ON s.source_relid = x.root_relid
      WHERE d.classid = 'pg_catalog.pg_trigger'::pg_catalog.regclass
        AND x.func = 'pgtrickle._capture_row'::pg_catalog.regproc
        AND x.relid <> x.root_relid
        AND EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = s.source_relid);
    -- Listeners of a dropped stream table learn it is gone (at commit).
    PERFORM pgtrickle._notify_resync(st.notify_channel, st.pgt_schema, st.pgt_name, 'dropped')
       FROM pgtrickle.pgt_stream_tables st
       JOIN pg_catalog.pg_event_trigger_dropped_objects() d
         ON d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
        AND d.objsubid = 0
        AND d.objid = st.pgt_relid
      WHERE st.notify_channel IS NOT NULL;
    DELETE FROM pgtrickle.pgt_stream_tables st
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
       AND d.objsubid = 0
       AND d.objid = st.pgt_relid;
    GET DIAGNOSTICS gone = ROW_COUNT;
    -- Kept copies of stream tables that are gone (one name at a time: the
    -- DROP fires this trigger again, which must find nothing left).
    FOR tname IN
        SELECT c.oid::pg_catalog.regclass::pg_catalog.text
          FROM pg_catalog.pg_class c
         WHERE c.relnamespace = 'pgtrickle_changes'::pg_catalog.regnamespace
           AND c.relkind = 'r' AND c.relname LIKE 'pgt\_kept\_%'
           AND NOT EXISTS (SELECT 1 FROM pgtrickle.pgt_kept k WHERE k.copy_relid = c.oid)
    LOOP
        EXECUTE 'DROP TABLE ' || tname;
    END LOOP;
    -- IMMEDIATE triggers and change notes whose stream table is gone (one
    -- at a time, each checked first: the DROP fires this trigger again).
    FOR imm IN
        SELECT t.tgname, t.tgrelid FROM pg_catalog.pg_trigger t
         WHERE (t.tgname LIKE 'pgt\_immediate\_%'
                AND t.tgfoid IN ('pgtrickle._immediate_before()'::pg_catalog.regprocedure,
                                 'pgtrickle._immediate_after()'::pg_catalog.regprocedure,
                                 'pgtrickle._immediate_replicated()'::pg_catalog.regprocedure)
                AND NOT EXISTS (SELECT 1 FROM pgtrickle.pgt_immediate i
                                 WHERE i.pgt_id::pg_catalog.text = pg_catalog.split_part(t.tgname, '_', 3)))
            OR (t.tgname LIKE 'pgt\_note\_%'
                AND t.tgfoid = 'pgtrickle._note_write()'::pg_catalog.regprocedure
                AND NOT EXISTS (SELECT 1 FROM pgtrickle.pgt_stream_tables st
                                 WHERE t.tgname = 'pgt_note_' || st.pgt_id))
    LOOP
        IF EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
                    WHERE t.tgrelid = imm.tgrelid AND t.tgname = imm.tgname) THEN
            EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', imm.tgname,
                                      imm.tgrelid::pg_catalog.regclass);
        END IF;
    END LOOP;
    -- Captures whose source table is gone, and, when this drop took stream
    -- tables (their frontiers went with them), captures nobody consumes any
    -- more. Only then: a capture being installed has no frontier yet, and
    -- pg_trickle's own drops in the meantime (an IMMEDIATE stream table
    -- rebuilt by the DDL end of the capture's CREATE TABLE) must leave it.
    FOR src IN
        SELECT s.source_id, s.source_relid, s.buffer_name,
               EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = s.source_relid) AS live
          FROM pgtrickle.pgt_sources s
         WHERE (gone > 0
                AND NOT EXISTS (SELECT 1 FROM pgtrickle.pgt_frontiers f
                                 WHERE f.source_id = s.source_id))
            OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = s.source_relid)
    LOOP
        -- Existence is checked first (no IF EXISTS): these DROPs fire this
        -- trigger again, and the nested run must find nothing to say.
        IF src.live THEN
            FOREACH tname IN ARRAY ARRAY['pgt_capture_' || src.source_id,
                                         'pgt_capture_' || src.source_id || '_truncate']
            LOOP
                IF EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
                            WHERE t.tgrelid = src.source_relid AND t.tgname = tname
                              AND t.tgfoid IN ('pgtrickle._capture_row'::pg_catalog.regproc,
                                               'pgtrickle._capture_truncate'::pg_catalog.regproc)) THEN
                    EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', tname,
                                              src.source_relid::pg_catalog.regclass);
                END IF;
            END LOOP;
        END IF;
        IF pg_catalog.to_regclass(src.buffer_name) IS NOT NULL THEN
            EXECUTE 'DROP TABLE ' || src.buffer_name;
        END IF;
        DELETE FROM pgtrickle.pgt_sources WHERE source_id = src.source_id;
        PERFORM pgtrickle._drop_partition_captures(src.source_id, src.source_relid);
    END LOOP;
    -- The buffers still in use: a dropped stream table's owner keeps no
    -- SELECT on them unless another of its stream tables reads them.
    PERFORM pgtrickle._revoke_stale_readers(s.buffer_name::pg_catalog.regclass)
       FROM pgtrickle.pgt_sources s
      WHERE pg_catalog.to_regclass(s.buffer_name) IS NOT NULL;
    -- A partition of an IMMEDIATE stream table's source dropped (its
    -- triggers go with it, the stream table keeps its programs): its rows
    -- left without a statement. The stream table is rebuilt now.
    UPDATE pgtrickle.pgt_stream_tables st
       SET reinit_reason = 'partition ' || pg_catalog.format('%I.%I', d.address_names[1],
                                                            d.address_names[2]) || ' dropped'
      FROM pg_catalog.pg_event_trigger_dropped_objects() d
      JOIN pgtrickle._dropped_triggers() x ON x.trigger_oid = d.objid
     WHERE d.classid = 'pg_catalog.pg_trigger'::pg_catalog.regclass
       AND x.func = 'pgtrickle._immediate_before'::pg_catalog.regproc
       AND x.first_arg = st.pgt_id::pg_catalog.text
       AND st.refresh_mode = 'IMMEDIATE'
       AND EXISTS (SELECT 1 FROM pgtrickle.pgt_immediate i WHERE i.pgt_id = st.pgt_id);
    IF FOUND THEN
        PERFORM pgtrickle._reinit_immediate();
    END IF;
END
$$;

-- After ALTER TABLE on a stream table's storage: a new owner gets the
-- rights (above); a renamed column is refused (0A000, the ALTER rolls
-- back), since storage columns are the query's output columns. (A new name
-- or schema is followed: see _on_ddl_end.)
CREATE OR REPLACE FUNCTION pgtrickle._on_alter_table()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    moved record;
BEGIN
    SELECT s.pgt_schema, s.pgt_name, d.object_identity INTO moved
      FROM pg_catalog.pg_event_trigger_ddl_commands() d
      JOIN pgtrickle.pgt_stream_tables s ON s.pgt_relid = d.objid
     WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
       AND d.objsubid <> 0 AND d.object_type = 'table column'
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'cannot rename a column of stream table %.% (now %)',
                        pg_catalog.quote_ident(moved.pgt_schema),
                        pg_catalog.quote_ident(moved.pgt_name), moved.object_identity
              USING ERRCODE = '0A000',
                    HINT = 'Name the column in the defining query instead '
                           '(pgtrickle.alter_stream_table with query =>).';
    END IF;
    -- A foreign key on a stream table, or referencing one (seed EC-27): a
    -- refresh deletes and inserts rows in whatever order its delta gives,
    -- so a key it briefly breaks would fail it.
    SELECT s.pgt_schema, s.pgt_name, k.conname INTO moved
      FROM pg_catalog.pg_constraint k
      JOIN pgtrickle.pgt_stream_tables s ON s.pgt_relid IN (k.conrelid, k.confrelid)
     WHERE k.contype = 'f'
       AND (k.conrelid IN (SELECT d.objid FROM pg_catalog.pg_event_trigger_ddl_commands() d
                            WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass)
            OR k.confrelid IN (SELECT d.objid FROM pg_catalog.pg_event_trigger_ddl_commands() d
                                WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass))
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'foreign key % cannot involve stream table %.%', moved.conname,
                        pg_catalog.quote_ident(moved.pgt_schema),
                        pg_catalog.quote_ident(moved.pgt_name)
              USING ERRCODE = '0A000',
                    DETAIL = 'A refresh applies its changes in no particular order; a key it '
                             'breaks for a moment would fail the refresh.',
                    HINT = 'Check the relationship in the defining query, or on the source tables.';
    END IF;
    PERFORM pgtrickle._sync_owner_rights(s.pgt_id)
       FROM pgtrickle.pgt_stream_tables s
      WHERE s.pgt_relid IN (SELECT d.objid FROM pg_catalog.pg_event_trigger_ddl_commands() d
                             WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass);
END
$$;

-- Sources that change under stream tables ---------------------------------
-- (docs/sql-reference.md, "When sources change")

-- What a DDL command does to stream tables' results (src/pg/catalog/
-- ddl_effect.cpp): NULLs when nothing, else why and the objects (of class
-- classid) whose dependent stream tables must be reinitialised.
CREATE FUNCTION pgtrickle._ddl_effect(cmd pg_catalog.pg_ddl_command,
    OUT reason text, OUT classid pg_catalog.oid, OUT objids pg_catalog.oid[])
AS 'MODULE_PATHNAME', 'pgt_ddl_effect'
LANGUAGE C STRICT VOLATILE;
REVOKE ALL ON FUNCTION pgtrickle._ddl_effect(pg_catalog.pg_ddl_command) FROM PUBLIC;

-- Marks for reinitialisation (reinit_reason) every stream table whose
-- results the objects may change, and every stream table reading one of
-- those, transitively: the ones reading a relation among them (or an
-- ancestor of one: inheritance and partitions), the ones that are one, the
-- ones whose storage depends on one (functions, types: pg_depend) or that
-- read a view whose rule does; for a schema, the ones depending on
-- anything in it. The first reason is kept until the reinitialisation.
CREATE FUNCTION pgtrickle._mark_for_reinit(cls pg_catalog.oid, objs pg_catalog.oid[], why text)
RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH RECURSIVE obj(oid) AS (
        SELECT o FROM unnest(objs) o
        UNION
        SELECT i.inhparent FROM pg_inherits i JOIN obj ON i.inhrelid = obj.oid
         WHERE cls = 'pg_class'::regclass
    ), direct(pgt_id) AS (
        SELECT d.pgt_id FROM pgtrickle.pgt_dependencies d JOIN obj ON d.source_relid = obj.oid
         WHERE cls = 'pg_class'::regclass
        UNION
        SELECT s.pgt_id FROM pgtrickle.pgt_stream_tables s JOIN obj ON s.pgt_relid = obj.oid
         WHERE cls = 'pg_class'::regclass
        UNION
        SELECT s.pgt_id FROM pgtrickle.pgt_stream_tables s
          JOIN pg_depend p ON p.classid = 'pg_class'::regclass AND p.objid = s.pgt_relid
                          AND p.objsubid = 0
          JOIN obj ON p.refobjid = obj.oid
         WHERE p.refclassid = cls
        UNION
        SELECT d.pgt_id FROM pgtrickle.pgt_dependencies d
          JOIN pg_rewrite r ON r.ev_class = d.source_relid
          JOIN pg_depend p ON p.classid = 'pg_rewrite'::regclass AND p.objid = r.oid
          JOIN obj ON p.refobjid = obj.oid
         WHERE p.refclassid = cls
        UNION
        SELECT s.pgt_id FROM pgtrickle.pgt_stream_tables s
          JOIN pg_class c ON c.oid = s.pgt_relid
         WHERE cls = 'pg_namespace'::regclass AND c.relnamespace = ANY (objs)
        UNION
        SELECT d.pgt_id FROM pgtrickle.pgt_dependencies d
          JOIN pg_class c ON c.oid = d.source_relid
         WHERE cls = 'pg_namespace'::regclass AND c.relnamespace = ANY (objs)
        UNION
        SELECT s.pgt_id FROM pgtrickle.pgt_stream_tables s
          JOIN pg_depend p ON p.classid = 'pg_class'::regclass AND p.objid = s.pgt_relid
                          AND p.objsubid = 0
          LEFT JOIN pg_proc f ON p.refclassid = 'pg_proc'::regclass AND f.oid = p.refobjid
          LEFT JOIN pg_type t ON p.refclassid = 'pg_type'::regclass AND t.oid = p.refobjid
         WHERE cls = 'pg_namespace'::regclass
           AND (f.pronamespace = ANY (objs) OR t.typnamespace = ANY (objs))
    ), closure(pgt_id) AS (
        SELECT pgt_id FROM direct
        UNION
        SELECT d.pgt_id FROM closure c
          JOIN pgtrickle.pgt_stream_tables s ON s.pgt_id = c.pgt_id
          JOIN pgtrickle.pgt_dependencies d ON d.source_relid = s.pgt_relid
    )
    UPDATE pgtrickle.pgt_stream_tables s
       SET reinit_reason = COALESCE(s.reinit_reason, why)
     WHERE s.pgt_id IN (SELECT pgt_id FROM closure)
$$;
REVOKE ALL ON FUNCTION pgtrickle._mark_for_reinit(pg_catalog.oid, pg_catalog.oid[], text)
    FROM PUBLIC;

-- TRUNCATE of one partition fires that partition's TRUNCATE triggers only
-- (row triggers are cloned to partitions, statement triggers are not):
-- every partition of a captured partitioned table gets the capture's
-- TRUNCATE trigger, and a table no longer a partition loses it.
-- Idempotent; called when capture is installed and after DDL on tables.
CREATE FUNCTION pgtrickle._capture_partitions(src_id bigint)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s record;
    part record;
    tname name := 'pgt_capture_' || src_id || '_truncate';
BEGIN
    -- (A restored capture is left as pg_restore makes it, until adopted.)
    SELECT so.source_relid, so.buffer_name, so.instance INTO s
      FROM pgtrickle.pgt_sources so
     WHERE so.source_id = src_id AND so.instance = pgtrickle._instance();
    IF NOT FOUND THEN
        RETURN;
    END IF;
    FOR part IN
        SELECT t.relid FROM pg_partition_tree(s.source_relid) t
          JOIN pg_class c ON c.oid = t.relid
         WHERE t.relid <> s.source_relid AND c.relkind IN ('r', 'p')
    LOOP
        -- Checked here, not in the loop's query: the ALTER TABLE below runs
        -- this function again (through _on_ddl_end) for the same source.
        CONTINUE WHEN EXISTS (SELECT 1 FROM pg_trigger g
                               WHERE g.tgrelid = part.relid AND g.tgname = tname);
        EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %s FOR EACH STATEMENT '
                       'EXECUTE FUNCTION pgtrickle._capture_truncate(%L, %L)',
                       tname, part.relid::regclass, s.buffer_name, s.instance);
        EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER %I', part.relid::regclass, tname);
    END LOOP;
    FOR part IN
        SELECT g.tgrelid FROM pg_trigger g
         WHERE g.tgname = tname AND g.tgrelid <> s.source_relid
           AND g.tgfoid = 'pgtrickle._capture_truncate'::regproc
           AND g.tgrelid NOT IN (SELECT t.relid FROM pg_partition_tree(s.source_relid) t)
    LOOP
        CONTINUE WHEN NOT EXISTS (SELECT 1 FROM pg_trigger g
                                   WHERE g.tgrelid = part.tgrelid AND g.tgname = tname);
        EXECUTE format('DROP TRIGGER %I ON %s', tname, part.tgrelid::regclass);
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION pgtrickle._capture_partitions(bigint) FROM PUBLIC;

-- A capture released: the TRUNCATE triggers it put on partitions of table
-- `src` (the table's own triggers are dropped by the caller).
CREATE FUNCTION pgtrickle._drop_partition_captures(src_id bigint, src pg_catalog.oid)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    part record;
    tname name := 'pgt_capture_' || src_id || '_truncate';
BEGIN
    FOR part IN
        SELECT g.tgrelid FROM pg_trigger g
         WHERE g.tgname = tname AND g.tgrelid <> src
           AND g.tgfoid = 'pgtrickle._capture_truncate'::regproc
    LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', tname, part.tgrelid::regclass);
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION pgtrickle._drop_partition_captures(bigint, pg_catalog.oid) FROM PUBLIC;

-- Backup and restore ------------------------------------------------------
-- pg_dump keeps the catalog (pg_extension_config_dump), the storage tables
-- with their rows and triggers, the capture and IMMEDIATE triggers and the
-- buffers; the restored rows name relations by regclass, so they point at
-- the restored ones. What cannot be carried over is reset by adoption:
-- frontiers and buffered changes refer to the old database's transaction
-- ids, analysed queries, captured column numbers and IMMEDIATE programs to
-- its OIDs and attribute numbers, and pg_depend rows are not dumped.

-- Whether the restore that brought rows of another database is over, as
-- far as can be seen from here: no session is restoring this database (the
-- one that made the catalog, pg_restore's or psql's, has left, and no
-- pg_restore is connected), and every trigger the dump brings for the
-- restored rows is back and ENABLE ALWAYS (a plain-format dump creates a
-- trigger and enables it in two statements): each capture's two, each
-- stream table's guard, each IMMEDIATE stream table's on every table it
-- reads. The scheduler adopts only then: adopting in the middle of a
-- restore would make triggers the restore is still to create.
CREATE FUNCTION pgtrickle._restore_complete()
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity a
                        WHERE a.datname = pg_catalog.current_database()
                          AND a.pid <> pg_catalog.pg_backend_pid()
                          AND (a.pid = (SELECT i.made_by FROM pgtrickle.pgt_instance i)
                               OR a.application_name = 'pg_restore'))
       AND NOT EXISTS (SELECT 1 FROM pgtrickle.pgt_sources s
                        WHERE s.instance <> pgtrickle._instance()
                          AND (SELECT count(*) FROM pg_catalog.pg_trigger t
                                WHERE t.tgrelid = s.source_relid AND t.tgenabled = 'A'
                                  AND t.tgname IN ('pgt_capture_' || s.source_id,
                                                   'pgt_capture_' || s.source_id || '_truncate')) < 2)
       AND NOT EXISTS (SELECT 1 FROM pgtrickle.pgt_stream_tables st
                        WHERE st.instance <> pgtrickle._instance()
                          AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
                                           WHERE t.tgrelid = st.pgt_relid AND t.tgname = 'pgt_guard'
                                             AND t.tgenabled = 'A'))
       AND NOT EXISTS (SELECT 1 FROM pgtrickle.pgt_stream_tables st,
                                     pgtrickle._immediate_triggers(st.pgt_id) tr
                        WHERE st.instance <> pgtrickle._instance()
                          AND st.refresh_mode = 'IMMEDIATE' AND tr.present < tr.expected)
$$;
REVOKE ALL ON FUNCTION pgtrickle._restore_complete() FROM PUBLIC;

-- Adopts the rows a restore brought: every restored capture (its triggers,
-- which capture nothing meanwhile, and its buffer) is dropped, every
-- restored kept copy too, every restored IMMEDIATE stream table's programs
-- and triggers (which maintain nothing meanwhile), and every restored
-- stream table is marked for reinitialisation ('restored from a dump').
-- The caller (src/pg/api: the first API call, forced, or the scheduler)
-- then rebuilds the IMMEDIATE ones at once, in the same transaction; the
-- next refresh of each other one rebuilds it (FULL, in history). Unless
-- `force`, only once the restore is complete (_restore_complete). Returns
-- how many stream tables it adopted.
CREATE FUNCTION pgtrickle._adopt_restored(force boolean)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    me text := pgtrickle._instance();
    src record;
    copy record;
    trig record;
    tname text;
    n bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pgtrickle.pgt_stream_tables WHERE instance <> me)
       AND NOT EXISTS (SELECT 1 FROM pgtrickle.pgt_sources WHERE instance <> me) THEN
        RETURN 0;
    END IF;
    IF NOT force AND NOT pgtrickle._restore_complete() THEN
        RETURN 0;
    END IF;
    FOR src IN SELECT s.source_id, s.source_relid, s.buffer_name
                 FROM pgtrickle.pgt_sources s WHERE s.instance <> me LOOP
        -- The row first (its frontiers go with it): the drops below then
        -- find no capture in use.
        DELETE FROM pgtrickle.pgt_sources WHERE source_id = src.source_id;
        FOREACH tname IN ARRAY ARRAY['pgt_capture_' || src.source_id,
                                     'pgt_capture_' || src.source_id || '_truncate'] LOOP
            IF EXISTS (SELECT 1 FROM pg_trigger t
                        WHERE t.tgrelid = src.source_relid AND t.tgname = tname
                          AND t.tgfoid IN ('pgtrickle._capture_row'::regproc,
                                           'pgtrickle._capture_truncate'::regproc)) THEN
                EXECUTE format('DROP TRIGGER %I ON %s', tname, src.source_relid);
            END IF;
        END LOOP;
        PERFORM pgtrickle._drop_partition_captures(src.source_id, src.source_relid);
        IF to_regclass(src.buffer_name) IS NOT NULL THEN
            EXECUTE 'DROP TABLE ' || src.buffer_name;
        END IF;
    END LOOP;
    FOR copy IN SELECT k.pgt_id, k.source_pos, k.copy_relid
                  FROM pgtrickle.pgt_kept k
                  JOIN pgtrickle.pgt_stream_tables st ON st.pgt_id = k.pgt_id
                 WHERE st.instance <> me LOOP
        DELETE FROM pgtrickle.pgt_kept
         WHERE pgt_id = copy.pgt_id AND source_pos = copy.source_pos;
        IF copy.copy_relid <> 0 THEN
            EXECUTE 'DROP TABLE IF EXISTS ' || copy.copy_relid::text;
        END IF;
    END LOOP;
    -- IMMEDIATE maintenance: the programs name the old database's OIDs.
    -- Programs first (the sql_drop trigger refuses to drop a trigger of a
    -- stream table that has them, and drops the other triggers of one that
    -- has none: each is looked for first).
    DELETE FROM pgtrickle.pgt_immediate i
     USING pgtrickle.pgt_stream_tables st
     WHERE i.pgt_id = st.pgt_id AND st.instance <> me;
    FOR trig IN SELECT t.tgname, t.tgrelid
                  FROM pg_trigger t
                  JOIN pgtrickle.pgt_stream_tables st
                    ON t.tgname LIKE 'pgt\_immediate\_' || st.pgt_id || '\_%'
                 WHERE st.instance <> me
                   AND t.tgfoid IN ('pgtrickle._immediate_before()'::regprocedure,
                                    'pgtrickle._immediate_after()'::regprocedure,
                                    'pgtrickle._immediate_replicated()'::regprocedure) LOOP
        IF EXISTS (SELECT 1 FROM pg_trigger t
                    WHERE t.tgrelid = trig.tgrelid AND t.tgname = trig.tgname) THEN
            EXECUTE format('DROP TRIGGER %I ON %s', trig.tgname, trig.tgrelid::regclass);
        END IF;
    END LOOP;
    DELETE FROM pgtrickle.pgt_frontiers f
     USING pgtrickle.pgt_stream_tables st
     WHERE f.pgt_id = st.pgt_id AND st.instance <> me;
    -- Whatever the old database had marked them for, or DDL of the
    -- restore itself: the rebuild covers it.
    UPDATE pgtrickle.pgt_stream_tables
       SET instance = me, query_tree = NULL, delta_program = NULL,
           reinit_reason = 'restored from a dump'
     WHERE instance <> me;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
REVOKE ALL ON FUNCTION pgtrickle._adopt_restored(boolean) FROM PUBLIC;

-- After DDL PostgreSQL permits but that changes what stream tables compute
-- (CREATE OR REPLACE FUNCTION/VIEW, ALTER FUNCTION, an enum value renamed,
-- ATTACH/DETACH PARTITION, inheritance changes) or the names their stored
-- text uses (renames, SET SCHEMA): their next refresh reinitialises them.
-- A stream table renamed or moved keeps its catalog names in step.
CREATE FUNCTION pgtrickle._on_ddl_end()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    e record;
BEGIN
    FOR e IN
        SELECT x.reason, x.classid, x.objids
          FROM pg_catalog.pg_event_trigger_ddl_commands() d,
               LATERAL pgtrickle._ddl_effect(d.command) x
         WHERE x.reason IS NOT NULL
    LOOP
        PERFORM pgtrickle._mark_for_reinit(e.classid, e.objids, e.reason);
    END LOOP;
    -- A table ALTER TABLE changed (ALTER COLUMN TYPE ... USING rewrites its
    -- rows, a new collation reorders them; no row or statement trigger
    -- fires) counts as written for the FULL stream tables noting it.
    IF TG_TAG = 'ALTER TABLE' THEN
        PERFORM pgtrickle._note_table_written(d.objid)
           FROM pg_catalog.pg_event_trigger_ddl_commands() d
          WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass;
    END IF;
    -- Partitions created, attached or detached keep their capture.
    IF TG_TAG IN ('CREATE TABLE', 'ALTER TABLE') THEN
        PERFORM pgtrickle._capture_partitions(so.source_id)
           FROM pgtrickle.pgt_sources so
           JOIN pg_catalog.pg_class c ON c.oid = so.source_relid
          WHERE c.relkind = 'p';
    END IF;
    UPDATE pgtrickle.pgt_stream_tables s
       SET pgt_schema = n.nspname, pgt_name = c.relname
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE c.oid = s.pgt_relid AND (s.pgt_schema <> n.nspname OR s.pgt_name <> c.relname);
    -- IMMEDIATE stream tables are rebuilt now: their sources' next
    -- statements must not run programs made for the old definition.
    PERFORM pgtrickle._reinit_immediate();
END
$$;

CREATE EVENT TRIGGER pgt_ddl_end ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE', 'CREATE TABLE', 'CREATE FOREIGN TABLE', 'CREATE FUNCTION', 'ALTER FUNCTION',
                 'CREATE AGGREGATE', 'ALTER AGGREGATE', 'CREATE VIEW', 'ALTER VIEW',
                 'ALTER MATERIALIZED VIEW', 'ALTER FOREIGN TABLE', 'ALTER TYPE',
                 'ALTER DOMAIN', 'ALTER SCHEMA')
    EXECUTE FUNCTION pgtrickle._on_ddl_end();

-- Stream tables made by 0.1.0 -------------------------------------------------
-- Their partitions get the capture's TRUNCATE trigger, and each is
-- reinitialised by its next refresh: analysed again, it records the types
-- it computes with and keeps its analysed query, and its delta statement
-- is made again by this version.
SELECT pgtrickle._capture_partitions(s.source_id)
  FROM pgtrickle.pgt_sources s
  JOIN pg_catalog.pg_class c ON c.oid = s.source_relid
 WHERE c.relkind = 'p';
UPDATE pgtrickle.pgt_stream_tables SET reinit_reason = 'pg_trickle updated to 0.2.0';
-- Each gets the replica identity 0.2.0 gives at creation (the whole row),
-- so it can be published as it is.
DO $$
DECLARE
    st record;
BEGIN
    FOR st IN SELECT pgt_relid FROM pgtrickle.pgt_stream_tables WHERE pgt_relid <> 0 LOOP
        EXECUTE format('ALTER TABLE %s REPLICA IDENTITY FULL', st.pgt_relid);
    END LOOP;
END
$$;

-- A stored delta program section by section, each statement over several
-- lines (explain_st's delta_plan).
CREATE FUNCTION pgtrickle._explain_program(program text)
RETURNS text
AS 'MODULE_PATHNAME', 'pgt_explain_program'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
REVOKE ALL ON FUNCTION pgtrickle._explain_program(text) FROM PUBLIC;

-- One generated statement over lines of at most 200 characters, broken
-- before its clauses; only whitespace changes (explain_st).
CREATE FUNCTION pgtrickle._format_statement(sql text)
RETURNS text
AS 'MODULE_PATHNAME', 'pgt_format_statement'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
REVOKE ALL ON FUNCTION pgtrickle._format_statement(text) FROM PUBLIC;

-- The main statement of stream table `id`'s delta program, formatted
-- (explain_st's delta_statement); reads only the catalog, as _delta_plan.
CREATE FUNCTION pgtrickle._delta_statement(id bigint)
RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pgtrickle._format_statement(s.delta_program OPERATOR(pg_catalog.->>) 'main')
      FROM pgtrickle.pgt_stream_tables s WHERE s.pgt_id OPERATOR(pg_catalog.=) id
$$;

-- The query FULL refreshes of stream table `id` run, formatted
-- (explain_st's recompute_query).
CREATE FUNCTION pgtrickle._recompute_query(id bigint)
RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pgtrickle._format_statement(s.effective_query)
      FROM pgtrickle.pgt_stream_tables s WHERE s.pgt_id OPERATOR(pg_catalog.=) id
$$;

-- The delta plan of stream table `id` (explain_st): reads only the
-- catalog, which PUBLIC can read, so it exposes nothing new.
CREATE FUNCTION pgtrickle._delta_plan(id bigint)
RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pgtrickle._explain_program(s.delta_program::pg_catalog.text)
      FROM pgtrickle.pgt_stream_tables s WHERE s.pgt_id OPERATOR(pg_catalog.=) id
$$;

-- What creating a stream table of the query would decide, as a dry run:
-- its refresh mode (and why), row identity, delta strategy, operator tree
-- and the indexes its refreshes want; the same checks and errors as
-- create_stream_table, and nothing created.
CREATE FUNCTION pgtrickle.validate_query(query text, refresh_mode text DEFAULT 'AUTO')
RETURNS TABLE (property text, value text)
AS 'MODULE_PATHNAME', 'pgt_validate_query'
LANGUAGE C;

-- The statements of a stream table's next refresh run under EXPLAIN
-- (ANALYZE, BUFFERS) inside a subtransaction that is rolled back
-- (explain_st(name, true)). Owner only: it runs the refresh as the owner.
CREATE FUNCTION pgtrickle._explain_refresh(name text)
RETURNS TABLE (property text, value text)
AS 'MODULE_PATHNAME', 'pgt_explain_refresh'
LANGUAGE C STRICT;

-- explain_st also shows the delta strategy, the operator tree (each node
-- with its row identity and rule) and the delta program formatted; with
-- analyze, the plans of the next refresh's statements as they ran.
DROP FUNCTION pgtrickle.explain_st(text);
CREATE FUNCTION pgtrickle._explain_st(id bigint, with_analyze boolean)
RETURNS TABLE (property text, value text)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY
    SELECT x.property, x.value
      FROM pgtrickle.pgt_stream_tables s,
           LATERAL (VALUES
               ('refresh_mode'::pg_catalog.text, s.refresh_mode),
               ('requested_mode', s.requested_mode),
               ('row_identity', pg_catalog.concat(s.row_identity_domain, '(',
                    pg_catalog.array_to_string(s.row_identity_columns, ', '), ')')),
               ('strategy', s.delta_strategy),
               ('operator_tree', s.operator_tree),
               ('query_settings', pg_catalog.array_to_string(s.query_settings, E'\n')),
               ('defining_query', s.defining_query),
               ('recompute_query', pgtrickle._recompute_query(s.pgt_id)),
               ('change_buffers', (SELECT pg_catalog.string_agg(src.buffer_name, E'\n')
                                     FROM pgtrickle.pgt_sources src
                                     JOIN pgtrickle.pgt_frontiers f
                                       ON f.source_id OPERATOR(pg_catalog.=) src.source_id
                                    WHERE f.pgt_id OPERATOR(pg_catalog.=) s.pgt_id)),
               -- FULL: the tables whose writes it waits for (change notes),
               -- or that it is recomputed at every due time.
               ('change_notes', CASE WHEN s.refresh_mode OPERATOR(pg_catalog.=) 'FULL' THEN
                    COALESCE(
                        (SELECT pg_catalog.string_agg(t.tgrelid::pg_catalog.regclass::pg_catalog.text,
                                                      ', ' ORDER BY
                                                      t.tgrelid::pg_catalog.regclass::pg_catalog.text)
                           FROM pg_catalog.pg_trigger t
                          WHERE t.tgname OPERATOR(pg_catalog.=)
                                ('pgt_note_' OPERATOR(pg_catalog.||) s.pgt_id)),
                        'none: recomputed at every due time') END),
               ('delta_statement', pgtrickle._delta_statement(s.pgt_id)),
               ('delta_plan', pgtrickle._delta_plan(s.pgt_id)))
            AS x(property, value)
     WHERE s.pgt_id OPERATOR(pg_catalog.=) id;
    IF with_analyze THEN
        RETURN QUERY SELECT e.property, e.value FROM pgtrickle.pgt_stream_tables s,
             pgtrickle._explain_refresh(pg_catalog.format('%I.%I', s.pgt_schema, s.pgt_name)) e
         WHERE s.pgt_id OPERATOR(pg_catalog.=) id;
    END IF;
END
$$;

CREATE FUNCTION pgtrickle.explain_st(name text, with_analyze boolean DEFAULT false)
RETURNS TABLE (property text, value text)
LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT pgtrickle._open_catalog();
    SELECT e.property, e.value
      FROM pgtrickle._explain_st(pgtrickle._stream_table_id(name), with_analyze) e;
END;


-- Freshness, change buffers and the dependency graph --------------------------

-- Staleness in seconds (pgtrickle._staleness); NULL when never populated.
CREATE FUNCTION pgtrickle.get_staleness(name text)
RETURNS double precision
LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT pg_catalog.date_part('epoch', pgtrickle._staleness(pgtrickle._stream_table_id(name)));
END;

-- Refreshes the stream table when it is staler than max_age (or was never
-- populated); true when it refreshed.
CREATE FUNCTION pgtrickle._refresh_if_stale(id bigint, max_age interval)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    age pg_catalog.interval;
BEGIN
    IF max_age IS NULL THEN
        RAISE EXCEPTION 'max_age must not be NULL' USING ERRCODE = '22004',
            HINT = 'Pass an interval such as ''5 minutes''; ''0'' refreshes whenever anything is pending.';
    END IF;
    IF max_age OPERATOR(pg_catalog.<) interval '0' THEN
        RAISE EXCEPTION 'max_age must not be negative (got %)', max_age USING ERRCODE = '22023';
    END IF;
    age := pgtrickle._staleness(id);
    IF age IS NOT NULL AND age OPERATOR(pg_catalog.<=) max_age THEN
        RETURN false;
    END IF;
    PERFORM pgtrickle.refresh_stream_table(pg_catalog.format('%I.%I', s.pgt_schema, s.pgt_name))
       FROM pgtrickle.pgt_stream_tables s
      WHERE s.pgt_id OPERATOR(pg_catalog.=) id;
    RETURN true;
END
$$;

CREATE FUNCTION pgtrickle.refresh_if_stale(name text, max_age interval)
RETURNS boolean
LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT pgtrickle._refresh_if_stale(pgtrickle._stream_table_id(name), max_age);
END;

-- Refreshes of every stream table, the latest first (at most max_rows).
CREATE FUNCTION pgtrickle.refresh_timeline(max_rows integer DEFAULT 50)
RETURNS TABLE (refresh_id bigint, stream_table text, start_time timestamptz,
               end_time timestamptz, action text, status text, initiated_by text,
               rows_inserted bigint, rows_deleted bigint, duration_ms double precision,
               reason text, error_message text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT h.refresh_id, format('%I.%I', s.pgt_schema, s.pgt_name), h.start_time, h.end_time,
           h.action, h.status, h.initiated_by, h.rows_inserted, h.rows_deleted,
           1000 * date_part('epoch', h.end_time - h.start_time), h.reason,
           pgtrickle._refresh_error(h.refresh_id)
      FROM pgtrickle.pgt_refresh_history h
      JOIN pgtrickle.pgt_stream_tables s ON s.pgt_id = h.pgt_id
     ORDER BY h.refresh_id DESC
     LIMIT greatest(max_rows, 0)
$$;

-- The mode asked for, the mode maintained, and why; then what the last
-- refresh did and why.
-- Why a stream table is maintained in another mode than asked for, its
-- stored query resolved again as its owner (restricted); NULL when no
-- reason is given.
CREATE FUNCTION pgtrickle._mode_reason(id bigint)
RETURNS text
AS 'MODULE_PATHNAME', 'pgt_mode_reason'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION pgtrickle.explain_refresh_mode(name text)
RETURNS TABLE (configured_mode text, effective_mode text, reason text,
               last_refresh_action text, last_refresh_reason text)
LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT s.requested_mode, s.refresh_mode,
           CASE
               WHEN s.requested_mode OPERATOR(pg_catalog.=) s.refresh_mode THEN 'requested'
               ELSE COALESCE(pgtrickle._mode_reason(s.pgt_id),
                             'AUTO chose ' OPERATOR(pg_catalog.||) s.refresh_mode)
           END,
           h.action, h.reason
      FROM pgtrickle.pgt_stream_tables s
      LEFT JOIN LATERAL (SELECT x.action, x.reason FROM pgtrickle.pgt_refresh_history x
                          WHERE x.pgt_id OPERATOR(pg_catalog.=) s.pgt_id
                          ORDER BY x.refresh_id DESC LIMIT 1) h ON true
     WHERE s.pgt_id OPERATOR(pg_catalog.=) pgtrickle._stream_table_id(name);
END;

-- Pending change rows and buffer size per (stream table, captured source),
-- for sources the caller may read (SELECT, or pg_read_all_stats); the
-- buffer's size is shared by every consumer of the source.
CREATE FUNCTION pgtrickle.change_buffer_sizes()
RETURNS TABLE (stream_table text, source_table text, source_oid bigint, cdc_mode text,
               pending_rows bigint, buffer_bytes bigint)
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT format('%I.%I', st.pgt_schema, st.pgt_name), s.source_relid::regclass::text,
           s.source_relid::oid::bigint, 'trigger',
           CASE WHEN f.released IS NULL THEN p.n END,  -- dropped: its next refresh recomputes
           pg_total_relation_size(to_regclass(s.buffer_name))
      FROM pgtrickle.pgt_frontiers f
      JOIN pgtrickle.pgt_sources s ON s.source_id = f.source_id
      JOIN pgtrickle.pgt_stream_tables st ON st.pgt_id = f.pgt_id
     CROSS JOIN LATERAL (SELECT pgtrickle._pending_changes(f.pgt_id, f.source_id) AS n) p
     WHERE p.n IS NOT NULL
     ORDER BY 1, 2
$$;

-- The graph of stream tables and what they read. format 'text': one row
-- per node of a tree rooted at each stream table no other stream table
-- reads, its sources below it; 'dot' (Graphviz) and 'mermaid': the graph,
-- one line per row in tree_line, edges pointing the way data flows.
CREATE FUNCTION pgtrickle.dependency_tree(format text DEFAULT 'text')
RETURNS TABLE (tree_line text, node text, node_type text, depth integer, status text,
               refresh_mode text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF format IS NULL OR lower(format) NOT IN ('text', 'dot', 'mermaid') THEN
        RAISE EXCEPTION 'invalid format "%"', format USING ERRCODE = '22023',
            HINT = 'Valid values are ''text'', ''dot'' and ''mermaid''.';
    END IF;
    IF lower(format) = 'text' THEN
        RETURN QUERY
        WITH RECURSIVE
        nodes AS (
            SELECT st.pgt_relid AS relid, 'STREAM_TABLE'::text AS kind, st.status, st.refresh_mode
              FROM pgtrickle.pgt_stream_tables st),
        edges AS (  -- consumer -> source, with the source's place among its siblings
            SELECT st.pgt_relid AS parent, d.source_relid::oid AS child,
                   row_number() OVER w = count(*) OVER w AS last,
                   row_number() OVER w AS pos
              FROM pgtrickle.pgt_dependencies d
              JOIN pgtrickle.pgt_stream_tables st ON st.pgt_id = d.pgt_id
            WINDOW w AS (PARTITION BY st.pgt_relid ORDER BY d.source_relid::regclass::text
                         ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)),
        tree AS (
            SELECT n.relid, 0 AS depth, ''::text AS prefix, ''::text AS branch,
                   ARRAY[n.relid::regclass::text] AS path
              FROM nodes n
             WHERE NOT EXISTS (SELECT 1 FROM edges e WHERE e.child = n.relid)
            UNION ALL
            SELECT e.child, t.depth + 1,
                   t.prefix || CASE WHEN t.depth = 0 THEN '' WHEN t.branch = '└── ' THEN '    '
                                    ELSE '│   ' END,
                   CASE WHEN e.last THEN '└── ' ELSE '├── ' END,
                   t.path || lpad(e.pos::text, 6, '0') || e.child::regclass::text
              FROM tree t JOIN edges e ON e.parent = t.relid
             WHERE t.depth < 64)
        SELECT t.prefix || t.branch || t.relid::regclass::text, t.relid::regclass::text,
               coalesce(n.kind, d.source_type), t.depth, n.status, n.refresh_mode
          FROM tree t
          LEFT JOIN nodes n ON n.relid = t.relid
          LEFT JOIN LATERAL (SELECT x.source_type FROM pgtrickle.pgt_dependencies x
                              WHERE x.source_relid::oid = t.relid LIMIT 1) d ON true
         ORDER BY t.path;
        RETURN;
    END IF;
    RETURN QUERY
    WITH
    named AS (
        SELECT DISTINCT x.relid, x.relid::regclass::text AS label,
               EXISTS (SELECT 1 FROM pgtrickle.pgt_stream_tables st WHERE st.pgt_relid = x.relid)
                   AS is_st
          FROM (SELECT st.pgt_relid::oid AS relid FROM pgtrickle.pgt_stream_tables st
                UNION SELECT d.source_relid::oid FROM pgtrickle.pgt_dependencies d) x),
    edges AS (
        SELECT d.source_relid::oid AS src, st.pgt_relid::oid AS dst
          FROM pgtrickle.pgt_dependencies d
          JOIN pgtrickle.pgt_stream_tables st ON st.pgt_id = d.pgt_id),
    lines AS (
        SELECT 0 AS part, '' AS k,
               CASE WHEN lower(format) = 'dot' THEN 'digraph pg_trickle {' ELSE 'graph LR' END AS l
        UNION ALL
        SELECT 1, n.label,
               CASE WHEN lower(format) = 'dot'
                    THEN '  "n' || n.relid || '" [label="' || replace(n.label, '"', '\"') || '"' ||
                         CASE WHEN n.is_st THEN ', shape=box' ELSE '' END || '];'
                    ELSE '  n' || n.relid || CASE WHEN n.is_st THEN '[' ELSE '(' END ||
                         '"' || replace(n.label, '"', '#quot;') || '"' ||
                         CASE WHEN n.is_st THEN ']' ELSE ')' END END
          FROM named n
        UNION ALL
        SELECT 2, e.src::regclass::text || ' ' || e.dst::regclass::text,
               CASE WHEN lower(format) = 'dot' THEN '  "n' || e.src || '" -> "n' || e.dst || '";'
                    ELSE '  n' || e.src || ' --> n' || e.dst END
          FROM edges e
        UNION ALL
        SELECT 3, '', '}' WHERE lower(format) = 'dot')
    SELECT l.l, NULL::text, NULL::text, NULL::integer, NULL::text, NULL::text
      FROM lines l ORDER BY l.part, l.k;
END
$$;

-- Views for exporters (monitoring/postgres_exporter.yml), readable by every
-- role, as pg_stat_* views and pgt_status() are. Pending changes are
-- counted for roles that may read the source and for members of
-- pg_read_all_stats (so pg_monitor).

-- One row per stream table: its state and freshness.
CREATE VIEW pgtrickle.stream_tables AS
SELECT pg_catalog.format('%I.%I', st.pgt_schema, st.pgt_name) AS name,
       st.pgt_schema::text AS schema_name, st.pgt_name::text AS table_name,
       st.status, st.refresh_mode, st.requested_mode, st.schedule, st.is_populated,
       st.consecutive_errors, st.last_refresh_at, st.data_timestamp,
       pg_catalog.date_part('epoch', pgtrickle._staleness(st.pgt_id)) AS staleness_seconds,
       st.reinit_reason IS NOT NULL AS reinit_pending,
       (SELECT pg_catalog.count(*) FROM pgtrickle.pgt_dependencies d
         WHERE d.pgt_id OPERATOR(pg_catalog.=) st.pgt_id) AS sources
  FROM pgtrickle.pgt_stream_tables st;

-- Whether a stream table that has not been equal to its sources for
-- `staleness` is behind its schedule: past its interval, or past the first
-- cron fire time since; NULL for 'calculated' or never populated.
CREATE FUNCTION pgtrickle._schedule_overdue(schedule text, staleness interval)
RETURNS boolean
AS 'MODULE_PATHNAME', 'pgt_schedule_overdue'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

-- One row per stream table with its refresh counts over the history kept
-- (pg_trickle.history_retention), under the names the Rust pg_trickle's
-- view has, which tools such as dbt-pgtrickle read. Every role may read it,
-- as pgt_status() (staleness as there).
CREATE VIEW pgtrickle.pg_stat_stream_tables AS
SELECT st.pgt_id, st.pgt_schema::text AS pgt_schema, st.pgt_name::text AS pgt_name,
       st.status, st.refresh_mode, st.requested_mode, st.schedule, st.is_populated,
       st.data_timestamp, st.last_refresh_at, a.staleness,
       pgtrickle._schedule_overdue(st.schedule, a.staleness) AS stale,
       st.pruned_refreshes OPERATOR(pg_catalog.+) h.total_refreshes AS total_refreshes,
       st.pruned_successes OPERATOR(pg_catalog.+) h.successful_refreshes
           AS successful_refreshes,
       st.pruned_failures OPERATOR(pg_catalog.+) h.failed_refreshes AS failed_refreshes,
       h.avg_duration_ms, st.consecutive_errors,
       CASE WHEN EXISTS (SELECT 1 FROM pgtrickle.pgt_frontiers f
                          WHERE f.pgt_id OPERATOR(pg_catalog.=) st.pgt_id)
                 OR st.refresh_mode OPERATOR(pg_catalog.=) 'IMMEDIATE'
            THEN ARRAY['trigger'] ELSE '{}'::text[] END AS cdc_modes,
       st.pruned_rows_inserted OPERATOR(pg_catalog.+) h.rows_inserted AS rows_inserted_total,
       st.pruned_rows_deleted OPERATOR(pg_catalog.+) h.rows_deleted AS rows_deleted_total
  FROM pgtrickle.pgt_stream_tables st
  CROSS JOIN LATERAL (SELECT pgtrickle._staleness(st.pgt_id) AS staleness) a
  CROSS JOIN LATERAL (
      SELECT pg_catalog.count(*) AS total_refreshes,
             pg_catalog.count(*) FILTER (WHERE r.status OPERATOR(pg_catalog.=) 'SUCCESS')
                 AS successful_refreshes,
             pg_catalog.count(*) FILTER (WHERE r.status OPERATOR(pg_catalog.=) 'FAILED')
                 AS failed_refreshes,
             pg_catalog.avg(1000 OPERATOR(pg_catalog.*) pg_catalog.date_part('epoch',
                 r.end_time OPERATOR(pg_catalog.-) r.start_time)) AS avg_duration_ms,
             coalesce(pg_catalog.sum(r.rows_inserted), 0)::bigint AS rows_inserted,
             coalesce(pg_catalog.sum(r.rows_deleted), 0)::bigint AS rows_deleted
        FROM pgtrickle.pgt_refresh_history r
       WHERE r.pgt_id OPERATOR(pg_catalog.=) st.pgt_id) h;
GRANT SELECT ON pgtrickle.pg_stat_stream_tables TO PUBLIC;

-- Per stream table and refresh action, over the history kept
-- (pg_trickle.history_retention): counts, failures, duration percentiles
-- and rows written.
CREATE VIEW pgtrickle.refresh_stats AS
SELECT pg_catalog.format('%I.%I', st.pgt_schema, st.pgt_name) AS name,
       h.action,
       pg_catalog.count(*) AS refreshes,
       pg_catalog.count(*) FILTER (WHERE h.status OPERATOR(pg_catalog.=) 'FAILED') AS failed,
       pg_catalog.count(*) FILTER (WHERE h.status OPERATOR(pg_catalog.=) 'SKIPPED') AS skipped,
       pg_catalog.round((pg_catalog.percentile_cont(0.5) WITHIN GROUP (ORDER BY 1000
           OPERATOR(pg_catalog.*) pg_catalog.date_part('epoch', h.end_time OPERATOR(pg_catalog.-)
           h.start_time)))::pg_catalog.numeric, 3)::pg_catalog.float8
           AS p50_ms,
       pg_catalog.round((pg_catalog.percentile_cont(0.95) WITHIN GROUP (ORDER BY 1000
           OPERATOR(pg_catalog.*) pg_catalog.date_part('epoch', h.end_time OPERATOR(pg_catalog.-)
           h.start_time)))::pg_catalog.numeric, 3)::pg_catalog.float8
           AS p95_ms,
       pg_catalog.sum(h.rows_inserted)::bigint AS rows_inserted,
       pg_catalog.sum(h.rows_deleted)::bigint AS rows_deleted,
       pg_catalog.max(h.end_time) AS last_end_time
  FROM pgtrickle.pgt_refresh_history h
  JOIN pgtrickle.pgt_stream_tables st ON st.pgt_id OPERATOR(pg_catalog.=) h.pgt_id
 GROUP BY st.pgt_schema, st.pgt_name, h.action;

-- change_buffer_sizes() as a view.
CREATE VIEW pgtrickle.change_buffers AS
SELECT b.stream_table, b.source_table, b.source_oid, b.cdc_mode, b.pending_rows, b.buffer_bytes
  FROM pgtrickle.change_buffer_sizes() b;

-- Refreshes running now, in every backend (shared memory): one row each.
CREATE FUNCTION pgtrickle._refresh_progress(
    OUT pid integer, OUT dbid oid, OUT pgt_id bigint, OUT initiated_by text,
    OUT started_at timestamptz, OUT step_name text, OUT step_started_at timestamptz,
    OUT step integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pgt_refresh_progress'
LANGUAGE C VOLATILE;

-- The refreshes of this database's stream tables running now: the backend,
-- who started it, since when, and the step it is in (its statement, or
-- waiting for the refresh lock), numbered from 1.
CREATE VIEW pgtrickle.refresh_progress AS
SELECT p.pid,
       pg_catalog.format('%I.%I', st.pgt_schema, st.pgt_name) AS name,
       p.initiated_by,
       p.started_at,
       pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) p.started_at AS elapsed,
       p.step,
       p.step_name,
       p.step_started_at
  FROM pgtrickle._refresh_progress() p
  JOIN pgtrickle.pgt_stream_tables st ON st.pgt_id OPERATOR(pg_catalog.=) p.pgt_id
 WHERE p.dbid OPERATOR(pg_catalog.=) (SELECT d.oid FROM pg_catalog.pg_database d
                                       WHERE d.datname OPERATOR(pg_catalog.=)
                                             pg_catalog.current_database())
   AND EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity a
                WHERE a.pid OPERATOR(pg_catalog.=) p.pid);

GRANT SELECT ON pgtrickle.stream_tables, pgtrickle.refresh_stats, pgtrickle.change_buffers,
    pgtrickle.refresh_progress TO PUBLIC;

-- The Rust pg_trickle's monitoring and operations API ----------------------
-- Same names, columns and arguments as the Rust project's
-- (docs/sql-reference.md, "The Rust pg_trickle's API"); every role may read
-- the monitoring ones, as pgt_status().

-- pgt_stream_tables with the staleness as pgt_status() computes it and
-- whether it is behind its schedule.
CREATE VIEW pgtrickle.stream_tables_info AS
SELECT st.*, a.staleness, pgtrickle._schedule_overdue(st.schedule, a.staleness) AS stale
  FROM pgtrickle.pgt_stream_tables st
  CROSS JOIN LATERAL (SELECT pgtrickle._staleness(st.pgt_id) AS staleness) a;
GRANT SELECT ON pgtrickle.stream_tables_info TO PUBLIC;

-- One row: how many stream tables, failing and behind their schedule,
-- whether this database's scheduler worker runs, and a word for all that.
CREATE VIEW pgtrickle.quick_health AS
SELECT c.total_stream_tables, c.error_tables, c.stale_tables,
       pgtrickle._scheduler_state() OPERATOR(pg_catalog.=) 'running' AS scheduler_running,
       CASE WHEN c.total_stream_tables OPERATOR(pg_catalog.=) 0 THEN 'EMPTY'
            WHEN c.suspended_tables OPERATOR(pg_catalog.>) 0 THEN 'CRITICAL'
            WHEN c.error_tables OPERATOR(pg_catalog.>) 0
                 OR c.stale_tables OPERATOR(pg_catalog.>) 0 THEN 'WARNING'
            ELSE 'OK' END AS status
  FROM (SELECT pg_catalog.count(*) AS total_stream_tables,
               pg_catalog.count(*) FILTER (WHERE s.status OPERATOR(pg_catalog.=) 'ERROR'
                                           OR s.consecutive_errors OPERATOR(pg_catalog.>) 0)
                   AS error_tables,
               pg_catalog.count(*) FILTER (WHERE s.stale) AS stale_tables,
               pg_catalog.count(*) FILTER (WHERE s.status OPERATOR(pg_catalog.=) 'SUSPENDED')
                   AS suspended_tables
          FROM pgtrickle.stream_tables_info s) c;
GRANT SELECT ON pgtrickle.quick_health TO PUBLIC;

-- Per stream table: refresh counts over the history kept, the last
-- refresh, staleness in seconds.
CREATE FUNCTION pgtrickle.st_refresh_stats()
RETURNS TABLE (pgt_name text, pgt_schema text, status text, refresh_mode text,
               is_populated boolean, total_refreshes bigint, successful_refreshes bigint,
               failed_refreshes bigint, total_rows_inserted bigint, total_rows_deleted bigint,
               avg_duration_ms double precision, last_refresh_action text,
               last_refresh_status text, last_refresh_at timestamptz,
               staleness_secs double precision, stale boolean)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.pgt_name, s.pgt_schema, s.status, s.refresh_mode, s.is_populated,
           s.total_refreshes, s.successful_refreshes, s.failed_refreshes,
           s.rows_inserted_total, s.rows_deleted_total, s.avg_duration_ms,
           l.action, l.status, s.last_refresh_at,
           pg_catalog.date_part('epoch', s.staleness), s.stale
      FROM pgtrickle.pg_stat_stream_tables s
      LEFT JOIN LATERAL (SELECT r.action, r.status FROM pgtrickle.pgt_refresh_history r
                          WHERE r.pgt_id = s.pgt_id
                          ORDER BY r.refresh_id DESC LIMIT 1) l ON true
     ORDER BY s.pgt_schema, s.pgt_name
$$;

-- Every capture trigger pg_trickle keeps on a source: its row (or
-- statement) trigger and its TRUNCATE trigger, whether each exists and
-- fires in every session (ENABLE ALWAYS).
CREATE FUNCTION pgtrickle.trigger_inventory()
RETURNS TABLE (source_table text, source_oid bigint, trigger_name text, trigger_type text,
               present boolean, enabled boolean)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.source_relid::regclass::text, s.source_relid::oid::bigint,
           e.name, e.kind, t.oid IS NOT NULL, coalesce(t.tgenabled = 'A', false)
      FROM pgtrickle.pgt_sources s
     CROSS JOIN LATERAL (VALUES ('pgt_capture_' || s.source_id, 'DML'),
                                ('pgt_capture_' || s.source_id || '_truncate', 'TRUNCATE'))
                 e(name, kind)
      LEFT JOIN pg_catalog.pg_trigger t
             ON t.tgrelid = s.source_relid AND t.tgname = e.name
            AND t.tgfoid IN ('pgtrickle._capture_row'::regproc,
                             'pgtrickle._capture_statement'::regproc,
                             'pgtrickle._capture_truncate'::regproc)
     ORDER BY 1, 4
$$;

-- Per captured source: its capture (always by triggers here) and what is
-- wrong with it, if anything.
CREATE FUNCTION pgtrickle.check_cdc_health()
RETURNS TABLE (source_relid bigint, source_table text, cdc_mode text, slot_name text,
               lag_bytes bigint, confirmed_lsn text, alert text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT i.source_oid, i.source_table, 'TRIGGER', NULL::text, NULL::bigint, NULL::text,
           CASE WHEN bool_and(i.present) IS NOT TRUE THEN 'capture_trigger_missing'
                WHEN bool_and(i.enabled) IS NOT TRUE THEN 'capture_trigger_not_always_enabled'
           END
      FROM pgtrickle.trigger_inventory() i
     GROUP BY i.source_oid, i.source_table
     ORDER BY 2
$$;

-- A publication of a stream table's storage for logical replication,
-- named pgt_pub_<table>; dropped with the stream table. The caller needs
-- the rights CREATE PUBLICATION needs (CREATE on the database, ownership of
-- the table). The name resolves in the caller's search_path (the body is
-- SQL-standard); _publication runs with a pinned one.
CREATE FUNCTION pgtrickle._publication(id bigint, publish boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    st record;
BEGIN
    SELECT s.pgt_relid, s.pgt_name INTO st FROM pgtrickle.pgt_stream_tables s
     WHERE s.pgt_id = id;
    IF publish THEN
        EXECUTE format('CREATE PUBLICATION %I FOR TABLE %s', 'pgt_pub_' || st.pgt_name,
                       st.pgt_relid::regclass);
    ELSE
        EXECUTE format('DROP PUBLICATION %I', 'pgt_pub_' || st.pgt_name);
    END IF;
END
$$;

CREATE FUNCTION pgtrickle.stream_table_to_publication(name text)
RETURNS void
LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT pgtrickle._publication(pgtrickle._stream_table_id(name), true);
END;

CREATE FUNCTION pgtrickle.drop_stream_table_publication(name text)
RETURNS void
LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT pgtrickle._publication(pgtrickle._stream_table_id(name), false);
END;

-- Creates each stream table of a JSON array of objects (name, query and
-- create_stream_table's other arguments by name), all or none; returns one
-- {"name", "status": "created", "pgt_id"} per element. An error names the
-- element (its index from 0 and its name) and keeps its SQLSTATE. C, so the
-- names resolve in the caller's search_path and nothing else does.
CREATE FUNCTION pgtrickle.bulk_create(definitions jsonb)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'pgt_bulk_create'
LANGUAGE C VOLATILE;

-- Sets status (SUSPENDED or ACTIVE) on every stream table the caller owns
-- (a member of its owner role; a superuser: every one) that has another;
-- returns how many changed. pause_all and resume_all.
CREATE FUNCTION pgtrickle._set_status_all(new_status text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n bigint := 0;
    st record;
BEGIN
    FOR st IN SELECT s.pgt_relid FROM pgtrickle.pgt_stream_tables s
               WHERE s.status <> new_status AND pg_has_role(
                     (SELECT c.relowner FROM pg_class c WHERE c.oid = s.pgt_relid), 'USAGE')
               ORDER BY s.pgt_id LOOP
        PERFORM pgtrickle.alter_stream_table(st.pgt_relid::regclass::text, status => new_status);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;

CREATE FUNCTION pgtrickle.pause_all()
RETURNS bigint
LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT pgtrickle._set_status_all('SUSPENDED');
END;

CREATE FUNCTION pgtrickle.resume_all()
RETURNS bigint
LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT pgtrickle._set_status_all('ACTIVE');
END;
