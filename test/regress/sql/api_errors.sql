-- Error texts and SQLSTATEs of the SQL API, exactly as users see them.
CREATE EXTENSION pg_trickle;
\set SHOW_CONTEXT never
CREATE TABLE src (id int PRIMARY KEY, v text);
INSERT INTO src VALUES (1, 'a'), (2, 'b');

SELECT pgtrickle.create_stream_table('st', 'SELECT * FROM missing');
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.create_stream_table('st', 'SELECT id FROM src FOR SHARE');
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.create_stream_table('st', 'SELECT id FROM src TABLESAMPLE BERNOULLI (10)');
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.create_stream_table('st', 'SELECT id FROM src LIMIT 1');
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.create_stream_table('st', 'SELECT id AS __pgt_x FROM src');
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.create_stream_table('st', 'SELECT id, v AS id FROM src');
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.create_stream_table('st', 'SELECT ROW(id, v) AS r FROM src');
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.create_stream_table('src', 'SELECT 1 AS one');
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.create_stream_table('st', 'SELECT id FROM src', schedule => '10 parsecs');
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.create_stream_table('st', 'SELECT id FROM src', schedule => '61 * * * *');
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.create_stream_table('st', 'SELECT a.id FROM src a FULL JOIN (SELECT id FROM src WHERE id > 1) b ON b.id = a.id', refresh_mode => 'DIFFERENTIAL');
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.create_stream_table('st', 'SELECT id, random() AS r FROM src', refresh_mode => 'DIFFERENTIAL');
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.create_stream_table('st', 'SELECT id FROM src UNION SELECT id + 10 FROM src', refresh_mode => 'IMMEDIATE');
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.create_stream_table('st', 'SELECT id FROM src', refresh_mode => 'often');
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.create_stream_table('st', 'UPDATE src SET v = v');
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.create_stream_table('pg_temp.st', 'SELECT id FROM src');
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.create_stream_table('nosuchschema.st', 'SELECT id FROM src');
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.refresh_stream_table('src');
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.alter_stream_table('src', status => 'ACTIVE');
\echo :LAST_ERROR_SQLSTATE
-- nothing was created by any of the calls above
SELECT count(*) AS stream_tables FROM pgtrickle.pgt_stream_tables;
SELECT count(*) AS relations FROM pg_class WHERE relname = 'st';

SELECT pgtrickle.create_stream_table('st', 'SELECT id, v FROM src');
SELECT pgtrickle.alter_stream_table('st', status => 'ERROR');
\echo :LAST_ERROR_SQLSTATE
SELECT pgtrickle.alter_stream_table('st', query => 'SELECT id FROM st');
\echo :LAST_ERROR_SQLSTATE
DROP EXTENSION pg_trickle CASCADE;
