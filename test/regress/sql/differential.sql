-- DIFFERENTIAL refresh of a filter/projection: capture, frontier, apply,
-- NO_DATA, TRUNCATE fallback, and what explain_st shows.
CREATE EXTENSION pg_trickle;
CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, qty int NOT NULL);
INSERT INTO items VALUES (1, 'bolt', 10), (2, 'nut', 0), (3, 'gear', 5);
SELECT pgtrickle.create_stream_table('in_stock',
  'SELECT id, upper(name) AS name, qty FROM items WHERE qty > 0',
  schedule => '1h', refresh_mode => 'DIFFERENTIAL');
SELECT property, value FROM pgtrickle.explain_st('in_stock')
 WHERE property NOT IN ('delta_statement', 'delta_plan');
SELECT length(value) > 0 AS has_delta_statement FROM pgtrickle.explain_st('in_stock')
 WHERE property = 'delta_statement';
-- the same program, formatted as a tree of its steps: its one statement,
-- clause by clause
SELECT value LIKE E'refresh: the steps below, in order\n`- apply: %\n     WITH %' AS formatted,
       pg_catalog.array_length(pg_catalog.string_to_array(value, E'\n'), 1) > 5 AS broken_into_lines
  FROM pgtrickle.explain_st('in_stock') WHERE property = 'delta_plan';
SELECT tgname FROM pg_trigger WHERE tgrelid = 'items'::regclass ORDER BY 1;
-- changes: into the filter, out of it, a key change, a no-op update
INSERT INTO items VALUES (4, 'washer', 7);
UPDATE items SET qty = 3 WHERE id = 2;
UPDATE items SET qty = 0 WHERE id = 3;
UPDATE items SET id = 10 WHERE id = 1;
UPDATE items SET name = name;
SELECT action FROM pgtrickle_changes.changes_1 ORDER BY seq;
SELECT pgtrickle.refresh_stream_table('in_stock');
SELECT id, name, qty FROM in_stock ORDER BY id;
SELECT pgtrickle.refresh_stream_table('in_stock');
TRUNCATE items;
INSERT INTO items VALUES (5, 'spring', 1);
SELECT pgtrickle.refresh_stream_table('in_stock');
SELECT id, name, qty FROM in_stock ORDER BY id;
SELECT action, rows_inserted, rows_deleted, reason
  FROM pgtrickle.pgt_refresh_history ORDER BY refresh_id;
SELECT pending_rows AS buffered FROM pgtrickle.change_buffer_sizes();
SELECT pgtrickle.drop_stream_table('in_stock');
SELECT count(*) AS sources FROM pgtrickle.pgt_sources;
SELECT count(*) AS capture_triggers FROM pg_trigger WHERE tgname LIKE 'pgt_capture%';
-- GROUP BY: touched groups are recomputed; advice when no index serves the keys
CREATE TABLE stock (id int PRIMARY KEY, shelf text, qty int);
INSERT INTO stock VALUES (1, 'a', 5), (2, 'a', 7), (3, 'b', 1), (4, NULL, 2);
SELECT pgtrickle.create_stream_table('per_shelf',
  'SELECT shelf, count(*) AS n, sum(qty) AS total FROM stock GROUP BY shelf HAVING sum(qty) > 1',
  schedule => '1h', refresh_mode => 'DIFFERENTIAL');
SELECT shelf, n, total FROM per_shelf ORDER BY shelf;
UPDATE stock SET shelf = 'b' WHERE id = 2;
INSERT INTO stock VALUES (5, NULL, 9);
SELECT pgtrickle.refresh_stream_table('per_shelf');
SELECT shelf, n, total FROM per_shelf ORDER BY shelf;
CREATE INDEX ON stock (shelf);
SELECT pgtrickle.alter_stream_table('per_shelf', refresh_mode => 'DIFFERENTIAL');
SELECT pgtrickle.drop_stream_table('per_shelf');
-- Two-table join: advice for the join column that no index serves
DROP INDEX stock_shelf_idx;
CREATE TABLE shelves (name text PRIMARY KEY, aisle int);
INSERT INTO shelves VALUES ('a', 1), ('b', 2);
SELECT pgtrickle.create_stream_table('stock_aisles',
  'SELECT s.id, h.name AS shelf, h.aisle, s.qty FROM stock s JOIN shelves h ON h.name = s.shelf',
  schedule => '1h', refresh_mode => 'DIFFERENTIAL');
UPDATE shelves SET aisle = 3 WHERE name = 'b';
DELETE FROM stock WHERE id = 1;
SELECT pgtrickle.refresh_stream_table('stock_aisles');
SELECT id, shelf, aisle, qty FROM stock_aisles ORDER BY id;
SELECT pgtrickle.drop_stream_table('stock_aisles');
DROP EXTENSION pg_trickle;
