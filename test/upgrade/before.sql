-- Run with pg_trickle 0.1.0 (its library and scripts): stream tables of
-- every mode, some changes refreshed and some left pending.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION pg_trickle VERSION '0.1.0';
CREATE TABLE src (id int PRIMARY KEY, gone int, grp int, v numeric);
ALTER TABLE src DROP COLUMN gone;
CREATE TABLE dim (grp int PRIMARY KEY, name text);
CREATE TABLE part (id int, k int, v int) PARTITION BY RANGE (k);
CREATE TABLE part_0 PARTITION OF part FOR VALUES FROM (0) TO (10);
INSERT INTO dim SELECT g, 'g' || g FROM generate_series(0, 4) g;
INSERT INTO src SELECT g, g % 5, g * 1.5 FROM generate_series(1, 60) g;
INSERT INTO part SELECT g, g % 10, g FROM generate_series(1, 30) g;
SELECT pgtrickle.create_stream_table('scan', 'SELECT id, grp, v FROM src WHERE v > 10', refresh_mode => 'DIFFERENTIAL');
SELECT pgtrickle.create_stream_table('groups', 'SELECT grp, count(*) AS n, sum(v) AS total FROM src GROUP BY grp', refresh_mode => 'DIFFERENTIAL');
SELECT pgtrickle.create_stream_table('joined', 'SELECT s.id, d.name FROM src s JOIN dim d ON d.grp = s.grp', refresh_mode => 'DIFFERENTIAL');
SELECT pgtrickle.create_stream_table('over', 'SELECT grp, n FROM groups WHERE n > 5', refresh_mode => 'DIFFERENTIAL');
SELECT pgtrickle.create_stream_table('parts', 'SELECT k, sum(v) AS s FROM part GROUP BY k', refresh_mode => 'DIFFERENTIAL');
SELECT pgtrickle.create_stream_table('full_one', 'SELECT count(*) AS c FROM src', refresh_mode => 'FULL');
SELECT pgtrickle.create_stream_table('auto_one', 'SELECT grp, max(v) AS top FROM src GROUP BY grp', refresh_mode => 'AUTO');
UPDATE src SET v = v + 100 WHERE id < 10;
SELECT pgtrickle.refresh_stream_table(n) FROM unnest(ARRAY['scan', 'groups', 'joined', 'over']) n;
-- pending at the update: captured by 0.1.0's triggers
DELETE FROM src WHERE id = 60;
INSERT INTO part VALUES (100, 5, 7);
INSERT INTO dim VALUES (5, 'g5');
