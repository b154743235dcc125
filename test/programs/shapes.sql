-- One stream table per query shape of the delta engine, for
-- scripts/compare-programs.sh (the programs they get must not change when
-- the engine moves; test/e2e/strategy_test.cpp pins their strategies).
CREATE TABLE t (id int PRIMARY KEY, grp int NOT NULL, val numeric, note text);
CREATE TABLE d (grp int PRIMARY KEY, name text);
INSERT INTO t SELECT i, i % 7, i * 1.5, 'n' || (i % 3) FROM generate_series(1, 200) i;
INSERT INTO d SELECT g, 'd' || g FROM generate_series(0, 5) g;
ANALYZE t;
ANALYZE d;
SELECT pgtrickle.create_stream_table('s_scan', 'SELECT id, val FROM t WHERE val > 0');
SELECT pgtrickle.create_stream_table('s_agg', 'SELECT grp, sum(val) AS s, count(*) AS n FROM t GROUP BY grp');
SELECT pgtrickle.create_stream_table('s_having', 'SELECT grp, max(note) AS m FROM t GROUP BY grp HAVING count(*) > 1');
SELECT pgtrickle.create_stream_table('s_distinct', 'SELECT DISTINCT grp FROM t');
SELECT pgtrickle.create_stream_table('s_gsets', 'SELECT grp, note, count(*) AS n FROM t GROUP BY GROUPING SETS ((grp, note), (grp))');
SELECT pgtrickle.create_stream_table('s_joinkeys', 'SELECT t.id, d.grp, d.name FROM t JOIN d ON d.grp = t.grp');
SELECT pgtrickle.create_stream_table('s_join', 'SELECT t.id, d.name, t.val FROM t JOIN d ON d.grp = t.grp');
SELECT pgtrickle.create_stream_table('s_joinagg', 'SELECT d.name, sum(t.val) AS s FROM t JOIN d ON d.grp = t.grp GROUP BY d.name');
SELECT pgtrickle.create_stream_table('s_left', 'SELECT t.id, d.name FROM t LEFT JOIN d ON d.grp = t.grp');
SELECT pgtrickle.create_stream_table('s_full', 'SELECT t.id, d.name FROM t FULL JOIN d ON d.grp = t.grp');
SELECT pgtrickle.create_stream_table('s_semi', 'SELECT id, val FROM t WHERE EXISTS (SELECT 1 FROM d WHERE d.grp = t.grp)');
SELECT pgtrickle.create_stream_table('s_anti', 'SELECT id, val FROM t WHERE NOT EXISTS (SELECT 1 FROM d WHERE d.grp = t.grp)');
SELECT pgtrickle.create_stream_table('s_rollup', 'SELECT grp, note, count(*) AS n FROM t GROUP BY ROLLUP (grp, note)');
SELECT pgtrickle.create_stream_table('s_union', 'SELECT id FROM t UNION ALL SELECT grp FROM d');
SELECT pgtrickle.create_stream_table('s_unionagg', 'SELECT grp, count(*) AS n, sum(v) AS s FROM (SELECT grp, id AS v FROM t UNION ALL SELECT grp, 1 FROM d) u GROUP BY grp');
SELECT pgtrickle.create_stream_table('s_semiagg', 'SELECT t.grp, count(*) AS n, sum(t.val) AS s FROM t WHERE EXISTS (SELECT 1 FROM d WHERE d.grp = t.grp AND d.name <> ''x'') GROUP BY t.grp');
SELECT pgtrickle.create_stream_table('s_antiagg', 'SELECT t.grp, count(*) AS n FROM t WHERE NOT EXISTS (SELECT 1 FROM d WHERE d.grp = t.grp AND d.name = ''d3'') GROUP BY t.grp');
SELECT pgtrickle.create_stream_table('s_aggofagg', 'SELECT g.n, count(*) AS k FROM (SELECT d.grp, count(t.id) AS n FROM d LEFT JOIN t ON t.grp = d.grp GROUP BY d.grp) g GROUP BY g.n');
