-- Row identity V2 through SQL (docs/row-identity-v2.md): domains, NULLs,
-- synthetic identities, nesting, the probe, declarations and error texts.
CREATE EXTENSION pg_trickle;
\set SHOW_CONTEXT never

-- Declarations: immutable and parallel safe; only the probe is strict.
SELECT p.oid::regprocedure AS function, p.provolatile, p.proparallel, p.proisstrict
  FROM pg_proc p
 WHERE p.pronamespace = 'pgtrickle'::regnamespace
   AND p.proname IN ('encode_row_id_v2', 'row_probe_v1')
 ORDER BY 1::text;

-- One int4 field under every domain: only byte 2 differs.
SELECT d AS domain, encode(pgtrickle.encode_row_id_v2(d, ROW(1)), 'hex') AS id
  FROM unnest(ARRAY['scan_key', 'keyless_row', 'group_key', 'join_key', 'set_key',
                    'window_key']) AS d;
SELECT encode(pgtrickle.encode_row_id_v2('synthetic', 'scalar_aggregate_singleton', ROW()), 'hex');
SELECT encode(pgtrickle.encode_row_id_v2('synthetic', 'lateral_inner_dummy', ROW()), 'hex');
SELECT encode(pgtrickle.encode_row_id_v2('SCAN_KEY', ROW()), 'hex') AS spelled_in_upper_case;

-- NULL fields are tagged by type; a NULL composite is not a composite of NULLs.
SELECT encode(pgtrickle.encode_row_id_v2('group_key', ROW(NULL::int4, NULL::text)), 'hex');
SELECT encode(pgtrickle.encode_row_id_v2('scan_key', ROW(NULL::record)), 'hex');
SELECT encode(pgtrickle.encode_row_id_v2('scan_key', ROW(ROW(NULL::int4))), 'hex');

-- Equal values, equal identities.
SELECT pgtrickle.encode_row_id_v2('scan_key', ROW(1.0::numeric, 'ab  '::char(4), '1 mon'::interval))
     = pgtrickle.encode_row_id_v2('scan_key', ROW(1.00::numeric, 'ab'::bpchar, '30 days'::interval))
       AS equal;
SELECT pgtrickle.encode_row_id_v2('scan_key', ROW('{"b": 1, "a": 2}'::jsonb))
     = pgtrickle.encode_row_id_v2('scan_key', ROW('{"a": 2, "b": 1}'::jsonb)) AS equal;

-- Framing: field boundaries are part of the identity.
SELECT pgtrickle.encode_row_id_v2('scan_key', ROW('a'::text, 'bc'::text))
    <> pgtrickle.encode_row_id_v2('scan_key', ROW('ab'::text, 'c'::text)) AS distinct_ids;

-- Structural values: arrays, ranges, composites, jsonb, domains, enums.
CREATE DOMAIN posint AS int4 CHECK (VALUE > 0);
CREATE TYPE mood AS ENUM ('happy', 'sad');
SELECT encode(pgtrickle.encode_row_id_v2('scan_key', ROW('[0:1]={1,2}'::int4[])), 'hex');
SELECT encode(pgtrickle.encode_row_id_v2('scan_key', ROW('[1,5)'::int4range, '{}'::int4multirange)), 'hex');
SELECT encode(pgtrickle.encode_row_id_v2('scan_key', ROW(ROW(1, 'a'::text))), 'hex');
SELECT encode(pgtrickle.encode_row_id_v2('scan_key', ROW('{"a": [true, null]}'::jsonb)), 'hex');
SELECT encode(pgtrickle.encode_row_id_v2('scan_key', ROW(7::posint, 'sad'::mood)), 'hex');

-- A table row: dropped columns are not fields.
CREATE TABLE t (k int, gone int, v text);
ALTER TABLE t DROP COLUMN gone;
INSERT INTO t VALUES (1, 'x'), (2, NULL);
SELECT k, encode(pgtrickle.encode_row_id_v2('keyless_row', t), 'hex') FROM t ORDER BY k;

-- Join identities embed child identities as escaped bytea fields.
SELECT encode(pgtrickle.encode_row_id_v2('join_key',
         ROW(pgtrickle.encode_row_id_v2('scan_key', ROW(1)),
             pgtrickle.encode_row_id_v2('scan_key', ROW('x'::text)))), 'hex');

-- The probe: the identity up to 256 bytes, else 256 bytes and a digest.
SELECT pgtrickle.row_probe_v1(pgtrickle.encode_row_id_v2('scan_key', ROW(1)))
     = pgtrickle.encode_row_id_v2('scan_key', ROW(1)) AS probe_is_id;
SELECT n, length(id) AS id_bytes, length(pgtrickle.row_probe_v1(id)) AS probe_bytes,
       encode(substring(pgtrickle.row_probe_v1(id) from 257), 'hex') AS digest
  FROM (SELECT n, pgtrickle.encode_row_id_v2('scan_key', ROW(repeat('a', n))) AS id
          FROM unnest(ARRAY[247, 248, 300]) AS n) s
 ORDER BY n;
SELECT pgtrickle.row_probe_v1(NULL) IS NULL AS strict;

-- Errors.
SELECT pgtrickle.encode_row_id_v2(NULL, ROW(1));
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.encode_row_id_v2('scan_key', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.encode_row_id_v2('primary_key', ROW(1));
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.encode_row_id_v2('synthetic', ROW());
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.encode_row_id_v2('scan_key', 'scalar_aggregate_singleton', ROW());
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.encode_row_id_v2('synthetic', 'singleton', ROW());
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.encode_row_id_v2('scan_key', ROW(1, point(1, 2)));
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.encode_row_id_v2('scan_key', ROW(ARRAY['{}'::json]));
\echo :LAST_ERROR_SQLSTATE

DROP TABLE t;
DROP TYPE mood;
DROP DOMAIN posint;
DROP EXTENSION pg_trickle;
