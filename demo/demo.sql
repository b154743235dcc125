-- The pg_trickle demo: a small shop, three stream tables, some changes,
-- a refresh, the scheduler, notifications, joins. Run by `make demo`.
\pset footer off
\pset null '(null)'
\echo
\echo '== 1. Install the extension and load a small shop =='
CREATE EXTENSION pg_trickle;
CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, region text NOT NULL);
CREATE TABLE products  (id int PRIMARY KEY, name text NOT NULL, category text NOT NULL,
                        price numeric(8,2) NOT NULL);
CREATE TABLE orders    (id int PRIMARY KEY, customer_id int NOT NULL REFERENCES customers,
                        product_id int NOT NULL REFERENCES products, quantity int NOT NULL);
INSERT INTO customers VALUES (1, 'Ada', 'north'), (2, 'Bo', 'south'), (3, 'Cy', 'east'),
                             (4, 'Di', 'north');
INSERT INTO products VALUES (1, 'hammer', 'tools', 12.50), (2, 'drill', 'tools', 89.00),
                            (3, 'kite', 'toys', 15.00), (4, 'yo-yo', 'toys', 3.25);
INSERT INTO orders SELECT g, 1 + g % 4, 1 + g % 3, 1 + g % 5 FROM generate_series(1, 40) g;
SELECT count(*) AS orders_loaded FROM orders;

\echo
\echo '== 2. Define stream tables: a query and a schedule; they are ordinary tables =='
\o /dev/null
SELECT pgtrickle.create_stream_table(
    'revenue_by_region',
    $$SELECT c.region, count(*) AS orders, sum(o.quantity * p.price) AS revenue
        FROM orders o
        JOIN customers c ON c.id = o.customer_id
        JOIN products p ON p.id = o.product_id
       GROUP BY c.region$$,
    schedule => '1m', refresh_mode => 'FULL');
SELECT pgtrickle.create_stream_table(
    'top_products',
    $$SELECT p.name, sum(o.quantity) AS units
        FROM orders o JOIN products p ON p.id = o.product_id
       GROUP BY p.name ORDER BY units DESC, p.name LIMIT 3$$,
    schedule => '*/5 * * * *');
SELECT pgtrickle.create_stream_table(
    'big_orders',
    'SELECT o.id, o.customer_id, o.quantity FROM orders o WHERE o.quantity >= 5');
\o
SELECT region, orders, revenue FROM revenue_by_region ORDER BY region;
SELECT name, units FROM top_products ORDER BY units DESC, name;
SELECT count(*) AS big_orders FROM big_orders;

\echo
\echo '== 3. Change the sources: a new customer region, price changes, deletes =='
INSERT INTO customers VALUES (5, 'Eve', 'west');
INSERT INTO orders VALUES (41, 5, 4, 50), (42, 5, 2, 1);
UPDATE products SET price = price * 1.10 WHERE category = 'tools';
DELETE FROM orders WHERE customer_id = 3;
\echo 'Before refresh, the stream table still shows the old state:'
SELECT region, orders, revenue FROM revenue_by_region ORDER BY region;

\echo
\echo '== 4. Refresh now (refresh_stream_table(); the scheduler would do it on each schedule) =='
\o /dev/null
SELECT pgtrickle.refresh_stream_table('revenue_by_region');
SELECT pgtrickle.refresh_stream_table('top_products');
SELECT pgtrickle.refresh_stream_table('big_orders');
\o
SELECT region, orders, revenue FROM revenue_by_region ORDER BY region;
SELECT name, units FROM top_products ORDER BY units DESC, name;
SELECT count(*) AS big_orders FROM big_orders;

\echo
\echo '== 5. Check: each stream table equals its query run from scratch =='
SELECT 'revenue_by_region' AS stream_table,
       NOT EXISTS ((SELECT region, orders, revenue FROM revenue_by_region
                    EXCEPT ALL
                    SELECT c.region, count(*), sum(o.quantity * p.price)
                      FROM orders o JOIN customers c ON c.id = o.customer_id
                      JOIN products p ON p.id = o.product_id GROUP BY c.region)
                   UNION ALL
                   (SELECT c.region, count(*), sum(o.quantity * p.price)
                      FROM orders o JOIN customers c ON c.id = o.customer_id
                      JOIN products p ON p.id = o.product_id GROUP BY c.region
                    EXCEPT ALL
                    SELECT region, orders, revenue FROM revenue_by_region)) AS matches_query;

\echo
\echo '== 6. What pg_trickle knows: status and refresh history =='
SELECT name, status, refresh_mode, requested_mode, schedule, is_populated
  FROM pgtrickle.pgt_status();
SELECT s.pgt_name AS stream_table, h.action, h.initiated_by, h.rows_inserted, h.rows_deleted
  FROM pgtrickle.pgt_refresh_history h JOIN pgtrickle.pgt_stream_tables s USING (pgt_id)
 ORDER BY h.refresh_id;

\echo
\echo '== 7. Every row carries its identity (hidden-by-convention columns) =='
SELECT region, row_identity_domain AS identity, encode(__pgt_row_id, 'hex') AS __pgt_row_id
  FROM revenue_by_region, pgtrickle.pgt_stream_tables
 WHERE pgt_relid = 'revenue_by_region'::regclass ORDER BY region;

\echo
\echo '== 8. Mistakes are caught before anything is created =='
\set ON_ERROR_STOP 0
\set SHOW_CONTEXT never
SELECT pgtrickle.create_stream_table('sample', 'SELECT * FROM orders TABLESAMPLE SYSTEM (10)');
SELECT pgtrickle.create_stream_table('later', 'SELECT id FROM orders', schedule => '10 parsecs');
\set ON_ERROR_STOP 1
SELECT count(*) AS stream_tables FROM pgtrickle.pgt_stream_tables;

\echo
\echo '== 9. The background scheduler refreshes on its own =='
\echo 'big_orders has the default schedule (calculated: 1 s when nothing reads it).'
SELECT check_name, ok, detail FROM pgtrickle.health_check() WHERE check_name = 'scheduler';
INSERT INTO orders VALUES (43, 1, 1, 9);
SELECT count(*) AS order_43_in_big_orders FROM big_orders WHERE id = 43;
SELECT pg_sleep(2.5) \g /dev/null
SELECT count(*) AS order_43_in_big_orders_after_2_5s FROM big_orders WHERE id = 43;
SELECT h.action, h.initiated_by, h.rows_inserted
  FROM pgtrickle.pgt_refresh_history h JOIN pgtrickle.pgt_stream_tables s USING (pgt_id)
 WHERE s.pgt_name = 'big_orders' ORDER BY h.refresh_id DESC LIMIT 1;

\echo
\echo '== 10. Change notifications: one NOTIFY per row a refresh changes =='
\o /dev/null
SELECT pgtrickle.create_stream_table(
    'north_orders',
    $$SELECT o.id, o.quantity FROM orders o WHERE o.customer_id IN (1, 4)$$,
    schedule => '1h', notify => 'north_orders_changed');
\o
LISTEN north_orders_changed;
UPDATE orders SET quantity = quantity + 1 WHERE id IN (4, 12);
DELETE FROM orders WHERE id = 8;
\echo 'A refresh that applies three row changes sends three notifications (shown by psql):'
SELECT pgtrickle.refresh_stream_table('north_orders') \g /dev/null
\echo 'A refresh with nothing to apply sends none:'
SELECT pgtrickle.refresh_stream_table('north_orders') \g /dev/null
UNLISTEN *;

\echo
\echo '== 11. Joins (LEFT/RIGHT too, up to 8 tables) and GROUP BY are maintained incrementally =='
\echo 'A new customer without orders gets a row with 0 orders (LEFT JOIN).'
\o /dev/null
SELECT pgtrickle.create_stream_table(
    'customer_orders',
    $$SELECT o.id AS order_id, c.id AS customer_id, c.name, o.quantity
        FROM orders o JOIN customers c ON c.id = o.customer_id$$,
    schedule => '1h', refresh_mode => 'DIFFERENTIAL');
SELECT pgtrickle.create_stream_table(
    'units_per_customer',
    'SELECT customer_id, count(*) AS orders, sum(quantity) AS units FROM orders GROUP BY customer_id',
    schedule => '1h', refresh_mode => 'DIFFERENTIAL');
SELECT pgtrickle.create_stream_table(
    'revenue_by_category_region',
    $$SELECT p.category, c.region, count(*) AS orders, sum(o.quantity * p.price) AS revenue
        FROM orders o JOIN customers c ON c.id = o.customer_id JOIN products p ON p.id = o.product_id
       GROUP BY p.category, c.region$$,
    schedule => '1h', refresh_mode => 'DIFFERENTIAL');
SELECT pgtrickle.create_stream_table(
    'orders_per_customer',
    $$SELECT c.name, count(o.id) AS orders FROM customers c LEFT JOIN orders o ON o.customer_id = c.id
       GROUP BY c.name$$,
    schedule => '1h', refresh_mode => 'DIFFERENTIAL');
\o
UPDATE customers SET name = 'Ada L.' WHERE id = 1;
UPDATE orders SET customer_id = 4 WHERE id = 5;
INSERT INTO customers VALUES (9, 'Ed', 'west');
SELECT pgtrickle.refresh_stream_table('customer_orders') \g /dev/null
SELECT pgtrickle.refresh_stream_table('units_per_customer') \g /dev/null
SELECT pgtrickle.refresh_stream_table('revenue_by_category_region') \g /dev/null
SELECT pgtrickle.refresh_stream_table('orders_per_customer') \g /dev/null
SELECT s.pgt_name AS stream_table, h.action, h.rows_inserted, h.rows_deleted
  FROM pgtrickle.pgt_refresh_history h JOIN pgtrickle.pgt_stream_tables s USING (pgt_id)
 WHERE s.pgt_name IN ('customer_orders', 'units_per_customer', 'revenue_by_category_region',
                      'orders_per_customer')
   AND h.initiated_by = 'MANUAL'
 ORDER BY h.refresh_id;
SELECT name, orders FROM orders_per_customer ORDER BY name;
SELECT NOT EXISTS (
         (SELECT order_id, customer_id, name, quantity FROM customer_orders
          EXCEPT ALL SELECT o.id, c.id, c.name, o.quantity FROM orders o
                     JOIN customers c ON c.id = o.customer_id)
         UNION ALL
         (SELECT o.id, c.id, c.name, o.quantity FROM orders o JOIN customers c ON c.id = o.customer_id
          EXCEPT ALL SELECT order_id, customer_id, name, quantity FROM customer_orders))
       AS customer_orders_matches_query;

\echo
\echo '== 12. Why DIFFERENTIAL: the same query over 500,000 rows, 100 of them changed =='
\o /dev/null
CREATE TABLE events (id int PRIMARY KEY, device int NOT NULL, reading numeric NOT NULL);
INSERT INTO events SELECT g, g % 1000, g % 97 FROM generate_series(1, 500000) g;
ANALYZE events;
SELECT pgtrickle.create_stream_table('readings_full',
    'SELECT device, count(*) AS n, sum(reading) AS total FROM events GROUP BY device',
    schedule => '1h', refresh_mode => 'FULL');
SELECT pgtrickle.create_stream_table('readings_diff',
    'SELECT device, count(*) AS n, sum(reading) AS total FROM events GROUP BY device',
    schedule => '1h', refresh_mode => 'DIFFERENTIAL');
UPDATE events SET reading = reading + 1 WHERE id % 4999 = 0;
SELECT pgtrickle.refresh_stream_table('readings_full');
SELECT pgtrickle.refresh_stream_table('readings_diff');
\o
SELECT s.pgt_name AS stream_table, h.action,
       round(1000 * extract(epoch FROM h.end_time - h.start_time), 1) AS refresh_ms,
       h.rows_inserted + h.rows_deleted AS rows_written
  FROM pgtrickle.pgt_refresh_history h JOIN pgtrickle.pgt_stream_tables s USING (pgt_id)
 WHERE s.pgt_name IN ('readings_full', 'readings_diff') AND h.initiated_by = 'MANUAL'
 ORDER BY s.pgt_name DESC;
SELECT NOT EXISTS ((SELECT device, n, total FROM readings_diff
                    EXCEPT ALL SELECT device, n, total FROM readings_full)
                   UNION ALL
                   (SELECT device, n, total FROM readings_full
                    EXCEPT ALL SELECT device, n, total FROM readings_diff)) AS both_agree;
