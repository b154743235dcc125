-- pg_trickle 0.1.0: schemas, catalog, SQL API.
-- Invariant: every catalog table here is mirrored once in
-- src/pg/catalog/catalog.hpp (column order included); change both together.

\echo Use "CREATE EXTENSION pg_trickle" to load this file. \quit

CREATE SCHEMA pgtrickle;
CREATE SCHEMA pgtrickle_changes;
GRANT USAGE ON SCHEMA pgtrickle TO PUBLIC;
-- Change buffers and kept copies live here. USAGE only lets a role name
-- them: no buffer is readable by any role but the extension's owner (the
-- extension's own statements read them, see docs/security.md), and each
-- kept copy only by the owner of its stream table.
REVOKE ALL ON SCHEMA pgtrickle_changes FROM PUBLIC;
GRANT USAGE ON SCHEMA pgtrickle_changes TO PUBLIC;

-- One row per stream table.
CREATE TABLE pgtrickle.pgt_stream_tables (
    pgt_id             bigserial PRIMARY KEY,
    pgt_relid          oid NOT NULL UNIQUE,
    pgt_schema         name NOT NULL,
    pgt_name           name NOT NULL,
    defining_query     text NOT NULL,
    effective_query    text NOT NULL,
    schedule           text NOT NULL,
    requested_mode     text NOT NULL
        CHECK (requested_mode IN ('AUTO', 'FULL', 'DIFFERENTIAL', 'IMMEDIATE')),
    refresh_mode       text NOT NULL
        CHECK (refresh_mode IN ('FULL', 'DIFFERENTIAL', 'IMMEDIATE')),
    status             text NOT NULL DEFAULT 'ACTIVE'
        CHECK (status IN ('ACTIVE', 'SUSPENDED', 'ERROR')),
    is_populated       boolean NOT NULL DEFAULT false,
    consecutive_errors integer NOT NULL DEFAULT 0,
    data_timestamp     timestamptz,
    last_refresh_at    timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    -- Row identity of the storage rows (docs/row-identity-v2.md): the
    -- domain, the output columns it encodes, and the format versions the
    -- stored __pgt_row_id / __pgt_row_probe values were written with.
    row_identity_domain  text NOT NULL DEFAULT 'keyless_row'
        CHECK (row_identity_domain IN ('scan_key', 'group_key', 'synthetic', 'keyless_row')),
    row_identity_columns text[] NOT NULL DEFAULT '{}',
    row_identity_version integer NOT NULL,
    row_probe_version    integer NOT NULL,
    -- DIFFERENTIAL: the one statement a refresh runs (explain_st shows it).
    delta_sql            text,
    -- Channel of the change-notification trigger on the storage
    -- (docs/notifications.md), NULL when none.
    notify_channel       text
        CHECK (octet_length(notify_channel) BETWEEN 1 AND 63)
);
COMMENT ON TABLE pgtrickle.pgt_stream_tables IS 'pg_trickle: one row per stream table';

-- The relations each stream table reads (views and their base tables).
CREATE TABLE pgtrickle.pgt_dependencies (
    pgt_id        bigint NOT NULL REFERENCES pgtrickle.pgt_stream_tables ON DELETE CASCADE,
    source_relid  oid NOT NULL,
    source_type   text NOT NULL
        CHECK (source_type IN ('TABLE', 'PARTITIONED_TABLE', 'VIEW', 'MATVIEW',
                               'FOREIGN_TABLE', 'STREAM_TABLE')),
    -- the columns the query reads as the stream table's owner ({} when it
    -- reads none, as count(*) does; 0 is a whole-row reference), which
    -- every DIFFERENTIAL refresh checks the owner may still SELECT; NULL
    -- when the query reads the relation only through a view (checked as
    -- the view's owner)
    columns_read  int2[],
    PRIMARY KEY (pgt_id, source_relid)
);
CREATE INDEX ON pgtrickle.pgt_dependencies (source_relid);

-- One row per completed refresh.
CREATE TABLE pgtrickle.pgt_refresh_history (
    refresh_id     bigserial PRIMARY KEY,
    pgt_id         bigint NOT NULL REFERENCES pgtrickle.pgt_stream_tables ON DELETE CASCADE,
    action         text NOT NULL CHECK (action IN ('FULL', 'DIFFERENTIAL', 'NO_DATA')),
    status         text NOT NULL CHECK (status IN ('SUCCESS', 'FAILED', 'SKIPPED')),
    initiated_by   text NOT NULL CHECK (initiated_by IN ('CREATE', 'MANUAL', 'ALTER', 'SCHEDULER')),
    rows_inserted  bigint NOT NULL DEFAULT 0,
    rows_deleted   bigint NOT NULL DEFAULT 0,
    start_time     timestamptz NOT NULL,
    end_time       timestamptz NOT NULL,
    reason         text,
    error_message  text,
    -- buffered source changes a refresh applied (AUTO stream tables; AUTO
    -- compares the cost per change with the last FULL refresh)
    source_changes bigint,
    -- time a DIFFERENTIAL refresh spent refilling kept copies (NULL if
    -- none): AUTO's cost per change leaves it out
    kept_refill_ms double precision
);
CREATE INDEX ON pgtrickle.pgt_refresh_history (pgt_id, refresh_id);
CREATE INDEX ON pgtrickle.pgt_refresh_history (end_time);  -- pruning (history_retention)

-- One row per source table whose changes are captured (shared by all its
-- DIFFERENTIAL consumers). The buffer's name never contains an OID, so it
-- survives dump and restore.
CREATE TABLE pgtrickle.pgt_sources (
    source_id     bigserial PRIMARY KEY,
    source_relid  oid NOT NULL UNIQUE,
    buffer_name   text NOT NULL UNIQUE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    -- source columns the buffer holds (old and new values): what consumers read
    captured_columns int2[] NOT NULL DEFAULT '{}'
);

-- The exact frontier of each (stream table, source): the snapshot of the
-- last refresh, plus the refreshing transaction's own changes it applied
-- (own_xid, up to own_seq) when it had written the source itself.
CREATE TABLE pgtrickle.pgt_frontiers (
    pgt_id     bigint NOT NULL REFERENCES pgtrickle.pgt_stream_tables ON DELETE CASCADE,
    source_id  bigint NOT NULL REFERENCES pgtrickle.pgt_sources ON DELETE CASCADE,
    frontier   pg_snapshot NOT NULL,
    own_xid    xid8,
    own_seq    bigint NOT NULL DEFAULT 0,
    -- the buffer's capture sequence when the frontier was taken: rows
    -- captured since number at most its position now minus this (AUTO's
    -- estimate of a window, read without scanning the buffer)
    seq_seen   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (pgt_id, source_id)
);

-- Kept copies of filtered join sources (docs/sql-reference.md, "Kept
-- copies"): one table in pgtrickle_changes per (stream table, source
-- position), valid when it holds the source's filtered rows as of the
-- stream table's last refresh (a FULL refresh leaves it invalid).
CREATE TABLE pgtrickle.pgt_kept (
    pgt_id     bigint NOT NULL REFERENCES pgtrickle.pgt_stream_tables ON DELETE CASCADE,
    source_pos integer NOT NULL,
    copy_relid oid NOT NULL,
    valid      boolean NOT NULL DEFAULT false,
    PRIMARY KEY (pgt_id, source_pos)
);

SELECT pg_catalog.pg_extension_config_dump('pgtrickle.pgt_stream_tables', '');
SELECT pg_catalog.pg_extension_config_dump('pgtrickle.pgt_sources', '');
SELECT pg_catalog.pg_extension_config_dump('pgtrickle.pgt_sources_source_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('pgtrickle.pgt_frontiers', '');
SELECT pg_catalog.pg_extension_config_dump('pgtrickle.pgt_kept', '');
SELECT pg_catalog.pg_extension_config_dump('pgtrickle.pgt_stream_tables_pgt_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('pgtrickle.pgt_dependencies', '');
SELECT pg_catalog.pg_extension_config_dump('pgtrickle.pgt_refresh_history', '');
SELECT pg_catalog.pg_extension_config_dump('pgtrickle.pgt_refresh_history_refresh_id_seq', '');

GRANT SELECT ON pgtrickle.pgt_stream_tables, pgtrickle.pgt_dependencies,
                pgtrickle.pgt_refresh_history, pgtrickle.pgt_sources,
                pgtrickle.pgt_frontiers, pgtrickle.pgt_kept TO PUBLIC;

-- Lifecycle API ------------------------------------------------------------

CREATE FUNCTION pgtrickle.create_stream_table(
    name text, query text,
    schedule text DEFAULT 'calculated',
    refresh_mode text DEFAULT 'AUTO',
    initialize boolean DEFAULT true,
    notify text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'pgt_create_stream_table'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION pgtrickle.alter_stream_table(
    name text,
    query text DEFAULT NULL,
    schedule text DEFAULT NULL,
    refresh_mode text DEFAULT NULL,
    status text DEFAULT NULL,
    notify text DEFAULT '')
RETURNS void
AS 'MODULE_PATHNAME', 'pgt_alter_stream_table'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION pgtrickle.drop_stream_table(name text, "cascade" boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME', 'pgt_drop_stream_table'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION pgtrickle.refresh_stream_table(name text)
RETURNS void
AS 'MODULE_PATHNAME', 'pgt_refresh_stream_table'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Change capture (internal: installed on source tables by the API) --------

CREATE FUNCTION pgtrickle._capture_row()
RETURNS trigger
AS 'MODULE_PATHNAME', 'pgt_capture_row'
LANGUAGE C;

CREATE FUNCTION pgtrickle._capture_statement()
RETURNS trigger
AS 'MODULE_PATHNAME', 'pgt_capture_statement'
LANGUAGE C;

CREATE FUNCTION pgtrickle._capture_truncate()
RETURNS trigger
AS 'MODULE_PATHNAME', 'pgt_capture_truncate'
LANGUAGE C;

-- Only the extension installs capture triggers (as the catalog owner): a
-- trigger of another role naming a buffer in its arguments would write
-- forged changes into stream tables it cannot touch. Firing needs no
-- EXECUTE (PostgreSQL checks it when the trigger is created).
REVOKE EXECUTE ON FUNCTION pgtrickle._capture_row(), pgtrickle._capture_statement(),
    pgtrickle._capture_truncate() FROM PUBLIC;

-- Health ----------------------------------------------------------------

CREATE FUNCTION pgtrickle._scheduler_state()
RETURNS text
AS 'MODULE_PATHNAME', 'pgt_scheduler_state'
LANGUAGE C VOLATILE PARALLEL SAFE;

-- One row per check; ok = false says what needs attention and how.
CREATE FUNCTION pgtrickle.health_check()
RETURNS TABLE (check_name text, ok boolean, detail text)
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT 'scheduler', st = 'running',
           CASE st
             WHEN 'running' THEN 'a scheduler worker refreshes this database''s stream tables'
             WHEN 'not_preloaded' THEN 'scheduling is off: pg_trickle is not in '
                  'shared_preload_libraries, so stream tables refresh only when '
                  'pgtrickle.refresh_stream_table() is called (from cron or the application)'
             WHEN 'disabled' THEN 'scheduling is off: pg_trickle.enabled = off; stream tables '
                  'refresh only when pgtrickle.refresh_stream_table() is called'
             ELSE 'no scheduler worker runs for this database yet (it starts within seconds '
                  'of CREATE EXTENSION; see the server log if it does not)'
           END
      FROM (SELECT pgtrickle._scheduler_state() AS st) s
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
    -- A capture trigger missing or not ENABLE ALWAYS (ALTER TABLE ...
    -- DISABLE/ENABLE TRIGGER): changes made meanwhile never reach the
    -- DIFFERENTIAL stream tables reading that table.
    SELECT 'change_capture', count(*) = 0,
           CASE WHEN count(*) = 0 THEN 'every captured table''s capture triggers fire always'
                ELSE string_agg(format('%s (trigger %s %s)', c.src, c.tname, c.state), ', '
                                ORDER BY c.src, c.tname)
                     || ': changes made while capture was off are missing from the stream '
                        'tables reading them; recreate those stream tables (or alter them to '
                        'FULL and back)'
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
$$;

-- Change notifications (seed 004): usable on any table, installed on
-- stream tables by create/alter_stream_table(notify => ...). See
-- docs/notifications.md.
CREATE FUNCTION pgtrickle.notify_changes()
RETURNS trigger
AS 'MODULE_PATHNAME', 'pgt_notify_changes'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Refuses direct writes to stream-table storage (only refreshes write it).
CREATE FUNCTION pgtrickle._guard_storage()
RETURNS trigger
AS 'MODULE_PATHNAME', 'pgt_guard_storage'
LANGUAGE C;

-- Monitoring ---------------------------------------------------------------

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
    staleness          interval)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.format('%I.%I', n.nspname, c.relname),
           st.status, st.refresh_mode, st.requested_mode, st.schedule,
           st.is_populated, st.consecutive_errors, st.last_refresh_at,
           st.data_timestamp, pg_catalog.now() - st.data_timestamp
      FROM pgtrickle.pgt_stream_tables st
      JOIN pg_catalog.pg_class c ON c.oid = st.pgt_relid
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     ORDER BY n.nspname, c.relname
$$;

-- What a refresh of a stream table runs, exactly (the statements are the
-- ones stored in the catalog and executed by refresh_stream_table).
-- No SET search_path: the name resolves in the caller's path, as the
-- other API functions' names do; every operator is qualified instead.
CREATE FUNCTION pgtrickle.explain_st(name text)
RETURNS TABLE (property text, value text)
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    rel pg_catalog.regclass := name::pg_catalog.regclass;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pgtrickle.pgt_stream_tables s
                    WHERE s.pgt_relid OPERATOR(pg_catalog.=) rel::pg_catalog.oid) THEN
        RAISE EXCEPTION '"%" is not a stream table', name
            USING ERRCODE = '42809',
                  HINT = 'pgtrickle.pgt_status() lists the stream tables.';
    END IF;
    RETURN QUERY
    SELECT x.property, x.value
      FROM pgtrickle.pgt_stream_tables s,
           LATERAL (VALUES
               ('refresh_mode'::pg_catalog.text, s.refresh_mode),
               ('requested_mode', s.requested_mode),
               ('row_identity', pg_catalog.concat(s.row_identity_domain, '(',
                    pg_catalog.array_to_string(s.row_identity_columns, ', '), ')')),
               ('defining_query', s.defining_query),
               ('recompute_query', s.effective_query),
               ('change_buffers', (SELECT pg_catalog.string_agg(src.buffer_name, ', ')
                                     FROM pgtrickle.pgt_sources src
                                     JOIN pgtrickle.pgt_frontiers f
                                       ON f.source_id OPERATOR(pg_catalog.=) src.source_id
                                    WHERE f.pgt_id OPERATOR(pg_catalog.=) s.pgt_id)),
               ('delta_statement', s.delta_sql)) AS x(property, value)
     WHERE s.pgt_relid OPERATOR(pg_catalog.=) rel::pg_catalog.oid;
END
$$;

-- Housekeeping -------------------------------------------------------------

-- A stream table's storage dropped with plain DROP TABLE (or DROP SCHEMA
-- ... CASCADE) takes its catalog rows with it.
CREATE FUNCTION pgtrickle._on_sql_drop()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src record;
    tname text;
    readers text;
BEGIN
    -- A capture trigger dropped while its source lives on and its capture
    -- is still in use (DROP TRIGGER, DROP COLUMN ... CASCADE of a captured
    -- column): refused, the stream tables reading it would silently stop
    -- following the table. pg_trickle removes a capture's catalog row
    -- before its triggers, and renames a trigger it replaces first.
    SELECT pg_catalog.string_agg(DISTINCT pg_catalog.format('%I.%I', st.pgt_schema, st.pgt_name), ', ')
      INTO readers
      FROM pg_catalog.pg_event_trigger_dropped_objects() d
      JOIN pgtrickle.pgt_sources s
        ON pg_catalog.split_part(d.object_identity, ' on ', 1)
           IN ('pgt_capture_' || s.source_id, 'pgt_capture_' || s.source_id || '_truncate')
      JOIN pgtrickle.pgt_frontiers f ON f.source_id = s.source_id
      JOIN pgtrickle.pgt_stream_tables st ON st.pgt_id = f.pgt_id
     WHERE d.object_type = 'trigger'
       AND EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = s.source_relid);
    IF readers IS NOT NULL THEN
        RAISE EXCEPTION 'cannot drop the change capture of a table that stream tables read'
            USING ERRCODE = '2BP01',
                  DETAIL = 'Stream tables reading it: ' || readers || '.',
                  HINT = 'Drop those stream tables first (pgtrickle.drop_stream_table), or alter them to refresh_mode => ''FULL''.';
    END IF;
    DELETE FROM pgtrickle.pgt_stream_tables st
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
       AND d.objsubid = 0
       AND d.objid = st.pgt_relid;
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
    -- Captures nobody consumes any more, or whose source table is gone.
    FOR src IN
        SELECT s.source_id, s.source_relid, s.buffer_name,
               EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = s.source_relid) AS live
          FROM pgtrickle.pgt_sources s
         WHERE NOT EXISTS (SELECT 1 FROM pgtrickle.pgt_frontiers f WHERE f.source_id = s.source_id)
            OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = s.source_relid)
    LOOP
        -- Existence is checked first (no IF EXISTS): these DROPs fire this
        -- trigger again, and the nested run must find nothing to say.
        IF src.live THEN
            FOREACH tname IN ARRAY ARRAY['pgt_capture_' || src.source_id,
                                         'pgt_capture_' || src.source_id || '_truncate']
            LOOP
                IF EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
                            WHERE t.tgrelid = src.source_relid AND t.tgname = tname) THEN
                    EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', tname,
                                              src.source_relid::pg_catalog.regclass);
                END IF;
            END LOOP;
        END IF;
        IF pg_catalog.to_regclass(src.buffer_name) IS NOT NULL THEN
            EXECUTE 'DROP TABLE ' || src.buffer_name;
        END IF;
        DELETE FROM pgtrickle.pgt_sources WHERE source_id = src.source_id;
    END LOOP;
    -- The buffers still in use: a dropped stream table's owner keeps no
    -- SELECT on them unless another of its stream tables reads them.
    PERFORM pgtrickle._revoke_stale_readers(s.buffer_name::pg_catalog.regclass)
       FROM pgtrickle.pgt_sources s
      WHERE pg_catalog.to_regclass(s.buffer_name) IS NOT NULL;
END
$$;

CREATE EVENT TRIGGER pgt_sql_drop ON sql_drop
    EXECUTE FUNCTION pgtrickle._on_sql_drop();

-- No role but the buffer's owner (the extension's) keeps SELECT on change
-- buffer `buf`: a buffer holds every captured column of every row of its
-- source, whoever may read them. Called by _sync_owner_rights and, for
-- every buffer left, when a stream table is dropped.
CREATE FUNCTION pgtrickle._revoke_stale_readers(buf pg_catalog.regclass)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    reader record;
BEGIN
    FOR reader IN
        SELECT DISTINCT a.grantee
          FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
         WHERE c.oid = buf AND a.grantee <> c.relowner
    LOOP
        IF reader.grantee = 0 THEN
            EXECUTE pg_catalog.format('REVOKE ALL ON %s FROM PUBLIC', buf);
        ELSE
            EXECUTE pg_catalog.format('REVOKE ALL ON %s FROM %I', buf,
                                      pg_catalog.pg_get_userbyid(reader.grantee));
        END IF;
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION pgtrickle._revoke_stale_readers(pg_catalog.regclass) FROM PUBLIC;

-- A stream table's refreshes run as its owner, who must own its kept
-- copies (the change buffers it consumes are read by the extension's own
-- statements; no role is granted SELECT on them). After an owner change
-- (ALTER TABLE ... OWNER TO, REASSIGN OWNED) this gives the copies to the
-- new owner and leaves no grant on the buffers. Idempotent. Called by the
-- trigger below and by a refresh that finds a copy of another owner
-- (REASSIGN OWNED fires no event trigger).
CREATE FUNCTION pgtrickle._sync_owner_rights(pgt_id bigint)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner oid;
    buf record;
    copy record;
BEGIN
    SELECT c.relowner INTO owner
      FROM pgtrickle.pgt_stream_tables s
      JOIN pg_catalog.pg_class c ON c.oid = s.pgt_relid
     WHERE s.pgt_id = _sync_owner_rights.pgt_id;
    IF owner IS NULL THEN
        RETURN;
    END IF;
    -- (The ALTER fires the trigger below again, on a table that is no
    -- stream table: the nested run finds nothing to do.)
    FOR copy IN
        SELECT k.copy_relid::pg_catalog.regclass::pg_catalog.text AS name
          FROM pgtrickle.pgt_kept k
          JOIN pg_catalog.pg_class c ON c.oid = k.copy_relid
         WHERE k.pgt_id = _sync_owner_rights.pgt_id AND c.relowner <> owner
    LOOP
        EXECUTE pg_catalog.format('ALTER TABLE %s OWNER TO %I', copy.name,
                                  pg_catalog.pg_get_userbyid(owner));
    END LOOP;
    FOR buf IN
        SELECT DISTINCT so.buffer_name::pg_catalog.regclass AS rel
          FROM pgtrickle.pgt_frontiers f
          JOIN pgtrickle.pgt_sources so ON so.source_id = f.source_id
         WHERE f.pgt_id = _sync_owner_rights.pgt_id
    LOOP
        PERFORM pgtrickle._revoke_stale_readers(buf.rel);
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION pgtrickle._sync_owner_rights(bigint) FROM PUBLIC;

-- After ALTER TABLE on a stream table's storage: a new owner gets the
-- rights (above); a new name or schema, and a renamed column, are refused
-- (0A000, the ALTER rolls back), since the stored delta and recompute
-- statements name the table and its columns.
CREATE FUNCTION pgtrickle._on_alter_table()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    moved record;
BEGIN
    SELECT s.pgt_schema, s.pgt_name INTO moved
      FROM pgtrickle.pgt_stream_tables s
      JOIN pg_catalog.pg_class c ON c.oid = s.pgt_relid
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE s.pgt_relid IN (SELECT d.objid FROM pg_catalog.pg_event_trigger_ddl_commands() d
                            WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass)
       AND (c.relname <> s.pgt_name OR n.nspname <> s.pgt_schema)
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'cannot rename stream table %.% or move it to another schema',
                        pg_catalog.quote_ident(moved.pgt_schema),
                        pg_catalog.quote_ident(moved.pgt_name)
              USING ERRCODE = '0A000',
                    HINT = 'Drop it and create it again under the new name.';
    END IF;
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

CREATE EVENT TRIGGER pgt_alter_table ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE', 'CREATE TABLE')
    EXECUTE FUNCTION pgtrickle._on_alter_table();

-- Row identity V2 ------------------------------------------------------------
-- docs/row-identity-v2.md. IMMUTABLE is truthful: identities are computed
-- from stored representations only (no settings, no OIDs; enums by label).
-- A NULL domain, discriminator or fields record is an error (22004), never a
-- NULL identity; ROW() is the identity without fields.

-- Internal: the same identity from separate field arguments. The planner
-- support function below rewrites encode_row_id_v2(domain, ROW(a, b, ...))
-- into this form, so no record is built and taken apart per row.
CREATE FUNCTION pgtrickle._encode_row_id_v2_fields(domain text, VARIADIC fields "any")
RETURNS bytea
AS 'MODULE_PATHNAME', 'pgt_encode_row_id_v2_fields'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION pgtrickle._encode_row_id_v2_support(internal)
RETURNS internal
AS 'MODULE_PATHNAME', 'pgt_encode_row_id_v2_support'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION pgtrickle.encode_row_id_v2(domain text, fields record)
RETURNS bytea
AS 'MODULE_PATHNAME', 'pgt_encode_row_id_v2'
LANGUAGE C IMMUTABLE PARALLEL SAFE
SUPPORT pgtrickle._encode_row_id_v2_support;

COMMENT ON FUNCTION pgtrickle.encode_row_id_v2(text, record) IS
'Row identity V2 of the record''s fields under a domain: scan_key, keyless_row, group_key, join_key, set_key or window_key';

CREATE FUNCTION pgtrickle.encode_row_id_v2(domain text, discriminator text, fields record)
RETURNS bytea
AS 'MODULE_PATHNAME', 'pgt_encode_row_id_v2_synthetic'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION pgtrickle.encode_row_id_v2(text, text, record) IS
'Row identity V2 of domain synthetic with a discriminator: scalar_aggregate_singleton or lateral_inner_dummy';

CREATE FUNCTION pgtrickle.row_probe_v1(row_id bytea)
RETURNS bytea
AS 'MODULE_PATHNAME', 'pgt_row_probe_v1'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION pgtrickle.row_probe_v1(bytea) IS
'Bounded index key of a row identity: the identity itself up to 256 bytes, else its first 256 bytes and a 16-byte xxh3_128 digest';

-- Display scale of exact numeric sums kept by algebraic aggregates: the
-- largest scale among finite inputs and how many have it, packed as
-- scale * 2^40 + count (src/core/diff/scale_state.hpp).
CREATE FUNCTION pgtrickle.numeric_scale_acc(state bigint, x numeric, weight bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgt_numeric_scale_acc'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION pgtrickle.numeric_scale_combine(a bigint, b bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgt_numeric_scale_combine'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE AGGREGATE pgtrickle.numeric_scale_state(numeric, bigint) (
    SFUNC = pgtrickle.numeric_scale_acc,
    STYPE = bigint,
    INITCOND = '0',
    COMBINEFUNC = pgtrickle.numeric_scale_combine,
    PARALLEL = SAFE
);

COMMENT ON AGGREGATE pgtrickle.numeric_scale_state(numeric, bigint) IS
'Largest display scale among the finite inputs and their weighted count at it, packed as scale * 2^40 + count (stream-table auxiliary state)';

CREATE FUNCTION pgtrickle.numeric_scale_merge(stored bigint, inserted bigint, deleted bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgt_numeric_scale_merge'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION pgtrickle.numeric_scale_merge(bigint, bigint, bigint) IS
'A numeric_scale_state after inserting and deleting inputs; NULL when the largest scale of what remains is unknown';
