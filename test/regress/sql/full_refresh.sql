-- FULL refresh: contents follow the sources after each refresh; history
-- and status record what happened.
CREATE EXTENSION pg_trickle;
CREATE TABLE products (id int PRIMARY KEY, category text, price numeric(8,2));
INSERT INTO products VALUES (1, 'tools', 9.99), (2, 'tools', 20.00), (3, 'toys', 5.00);
SELECT pgtrickle.create_stream_table('by_category',
  'SELECT category, count(*) AS n, sum(price) AS total FROM products GROUP BY category',
  schedule => '1h', refresh_mode => 'FULL');
SELECT category, n, total FROM by_category ORDER BY category;
INSERT INTO products VALUES (4, 'garden', 12.50);
UPDATE products SET price = price * 2 WHERE category = 'toys';
DELETE FROM products WHERE id = 1;
-- stale until refreshed
SELECT category, n, total FROM by_category ORDER BY category;
SELECT pgtrickle.refresh_stream_table('by_category');
SELECT category, n, total FROM by_category ORDER BY category;
-- oracle: both directions empty
(SELECT category, n, total FROM by_category EXCEPT ALL
 SELECT category, count(*), sum(price) FROM products GROUP BY category)
UNION ALL
(SELECT category, count(*), sum(price) FROM products GROUP BY category EXCEPT ALL
 SELECT category, n, total FROM by_category);
SELECT action, status, initiated_by, rows_inserted, rows_deleted
  FROM pgtrickle.pgt_refresh_history ORDER BY refresh_id;
SELECT name, status, refresh_mode, requested_mode, schedule, is_populated
  FROM pgtrickle.pgt_status();
\d by_category
-- every stored identity and probe equals a recomputation
SELECT count(*) AS wrong_ids FROM by_category
 WHERE __pgt_row_id <> pgtrickle.encode_row_id_v2('group_key', ROW(category))
    OR __pgt_row_probe <> pgtrickle.row_probe_v1(__pgt_row_id);
SELECT row_identity_domain, row_identity_columns, row_identity_version, row_probe_version
  FROM pgtrickle.pgt_stream_tables;
SELECT pgtrickle.drop_stream_table('by_category');
SELECT count(*) FROM pgtrickle.pgt_refresh_history;
DROP EXTENSION pg_trickle;
