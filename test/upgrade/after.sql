-- Run with the current library after before.sql: the update, then every
-- stream table checked with the oracle through two rounds of changes.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
-- The library refuses the old catalog until the update.
DO $$
BEGIN
    PERFORM pgtrickle.refresh_stream_table('scan');
    RAISE EXCEPTION 'a 0.1.0 catalog was not refused';
EXCEPTION WHEN object_not_in_prerequisite_state THEN
    IF SQLERRM NOT LIKE '%catalog in this database is version 0.1.0%' THEN
        RAISE;
    END IF;
END $$;
-- Writes between the library update and ALTER EXTENSION are captured.
INSERT INTO src VALUES (61, 1, 1);
ALTER EXTENSION pg_trickle UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_trickle';
SELECT pgtrickle.version();
SELECT check_name, ok FROM pgtrickle.health_check() WHERE check_name IN ('version', 'reinit_pending');

-- The oracle: the stream table equals its query (multiset, user columns).
CREATE FUNCTION oracle_diff(st text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    q text;
    cols text;
    n bigint;
BEGIN
    SELECT defining_query INTO q FROM pgtrickle.pgt_stream_tables WHERE pgt_relid = st::regclass;
    SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO cols
      FROM pg_attribute WHERE attrelid = st::regclass AND attnum > 0 AND NOT attisdropped
       AND attname NOT LIKE '\_\_pgt\_%';
    EXECUTE format('SELECT count(*) FROM ((SELECT %s FROM %s EXCEPT ALL (%s)) UNION ALL '
                   '((%s) EXCEPT ALL SELECT %s FROM %s)) d', cols, st, q, q, cols, st) INTO n;
    RETURN n;
END $$;

CREATE FUNCTION check_round() RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    st text;
    act text;
    why text;
BEGIN
    FOREACH st IN ARRAY ARRAY['scan', 'groups', 'joined', 'over', 'parts', 'full_one', 'auto_one'] LOOP
        PERFORM pgtrickle.refresh_stream_table(st);
        SELECT h.action, coalesce(h.reason, '') INTO act, why FROM pgtrickle.pgt_refresh_history h
          JOIN pgtrickle.pgt_stream_tables s USING (pgt_id)
         WHERE s.pgt_relid = st::regclass ORDER BY h.refresh_id DESC LIMIT 1;
        IF oracle_diff(st) <> 0 THEN
            RAISE EXCEPTION 'stream table % differs from its query after % (%)', st, act, why;
        END IF;
        -- (AUTO picks by measured cost: only its result is checked)
        RETURN NEXT st || ': ' || CASE WHEN st = 'auto_one' THEN 'checked'
                                       ELSE act || CASE WHEN why = '' THEN '' ELSE ' (' || why || ')' END
                                  END;
    END LOOP;
END $$;

SELECT * FROM check_round();
UPDATE src SET v = v * 2 WHERE id % 4 = 0;
DELETE FROM src WHERE id = 7;
UPDATE dim SET name = 'x' WHERE grp = 1;
INSERT INTO part VALUES (101, 3, 9);
SELECT * FROM check_round();
SELECT check_name, ok FROM pgtrickle.health_check() WHERE NOT ok AND check_name <> 'scheduler';
