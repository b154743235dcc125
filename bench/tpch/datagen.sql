-- Deterministic TPC-H-style data generator, plain SQL, for schema.sql's tables.
-- Usage: psql -X -v sf=0.01 -f schema.sql -f datagen.sql   (sf >= 0.01)
-- Invariant: every generated value is a pure function of (row key, column
-- seed, cycle) via tpch_gen.rnd(), never of scan order, random() or
-- parallelism, so the same SF always yields byte-identical tables. rf1.sql
-- reuses tpch_gen.lineitem_rows / order_rows, so keep their signatures.
--
-- Keys and cardinalities (n = round(base * SF)):
--   region 5, nation 25 (real names and region mapping),
--   supplier 10000*SF, part 200000*SF, partsupp 4 per part,
--   customer 150000*SF, orders 1500000*SF, lineitem 1..7 per order.
--   Order keys are SPARSE as in the spec: the i-th order has key
--   ((i-1)/8)*32 + (i-1)%8 + 1 (8 used out of every 32). Orders reference only
--   customers whose key is not a multiple of 3 (a third never order, Q13/Q22).
-- Dates follow the spec: o_orderdate in [1992-01-01, 1998-08-02]; ship =
-- order + 1..121 days, commit = order + 30..90, receipt = ship + 1..30;
-- l_returnflag R/A if receipt <= 1995-06-17 else N; l_linestatus O if ship >
-- 1995-06-17 else F; o_orderstatus F/O/P from its lines; o_totalprice =
-- sum(extendedprice * (1 + tax) * (1 - discount)).

\set ON_ERROR_STOP 1
\if :{?sf}
\else
  DO $$ BEGIN RAISE EXCEPTION 'datagen.sql: set the scale factor, e.g. psql -v sf=0.01'; END $$;
\endif
SET client_min_messages = warning;
SET synchronous_commit = off;
SET work_mem = '64MB';
SET maintenance_work_mem = '256MB';

SELECT (:sf)::numeric >= 0.01 AS sf_ok,
       greatest(1, round(10000 * (:sf)::numeric))::bigint   AS n_supp,
       greatest(1, round(200000 * (:sf)::numeric))::bigint  AS n_part,
       greatest(1, round(150000 * (:sf)::numeric))::bigint  AS n_cust,
       greatest(1, round(1500000 * (:sf)::numeric))::bigint AS n_ord
\gset
\if :sf_ok
\else
  DO $$ BEGIN RAISE EXCEPTION 'datagen.sql: sf must be >= 0.01'; END $$;
\endif

------------------------------------------------------------------------------
-- Generator helpers (schema tpch_gen; also used by rf1.sql and rf3.sql)
------------------------------------------------------------------------------
DROP SCHEMA IF EXISTS tpch_gen CASCADE;
CREATE SCHEMA tpch_gen;

-- Uniform integer in [lo, hi], a pure function of (k, seed).
-- Seeds: 1000 * cycle + a column number (orders 1xx, lineitem 2xx, part 3xx,
-- partsupp 4xx, supplier 5xx, customer 6xx, nation/region 7xx, pool 8xx,
-- updates 9xx). The base load is cycle 0.
CREATE FUNCTION tpch_gen.rnd(k bigint, seed bigint, lo bigint, hi bigint)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT lo + (hashint8extended(k, seed) & 9223372036854775807) % (hi - lo + 1) $$;

-- Alphanumeric string of length lo..hi (the spec's "v-string").
CREATE FUNCTION tpch_gen.vstring(k bigint, seed bigint, lo bigint, hi bigint)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT substr(encode(sha256(convert_to(k::text || ':' || seed::text, 'UTF8')), 'base64'),
                 1, tpch_gen.rnd(k, seed, lo, hi)::integer) $$;

-- Phone number whose country code is nationkey + 10.
CREATE FUNCTION tpch_gen.phone(k bigint, seed bigint, nationkey integer)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT (nationkey + 10)::text
          || '-' || tpch_gen.rnd(k, seed, 100, 999)::text
          || '-' || tpch_gen.rnd(k, seed + 1, 100, 999)::text
          || '-' || tpch_gen.rnd(k, seed + 2, 1000, 9999)::text $$;

-- Retail price, a fixed function of the part key (as in the spec).
CREATE FUNCTION tpch_gen.retailprice(partkey bigint)
RETURNS numeric LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT ((90000 + (partkey / 10) % 20001 + 100 * (partkey % 1000)) / 100.0)::numeric(15,2) $$;

-- The i-th (0..3) supplier of a part, among nsupp suppliers (spec formula).
-- For a few scale factors two i may give the same supplier; the partsupp
-- load then keeps one row, and lineitems still reference an existing pair.
CREATE FUNCTION tpch_gen.ps_suppkey(partkey bigint, i bigint, nsupp bigint)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT (partkey + i * (nsupp / 4 + (partkey - 1) / nsupp)) % nsupp + 1 $$;

-- Order key of the i-th generated order: sparse (spec) or keybase + i.
CREATE FUNCTION tpch_gen.orderkey(i bigint, keybase bigint, sparse boolean)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT keybase + CASE WHEN sparse THEN ((i - 1) / 8) * 32 + (i - 1) % 8 + 1 ELSE i END $$;

-- The j-th (0-based) customer key that is not a multiple of 3.
CREATE FUNCTION tpch_gen.ordering_custkey(j bigint)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT (j / 2) * 3 + j % 2 + 1 $$;

CREATE FUNCTION tpch_gen.o_orderdate(orderkey bigint, cycle integer)
RETURNS date LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT date '1992-01-01' + tpch_gen.rnd(orderkey, 1000 * cycle + 101, 0, 2405)::integer $$;

CREATE FUNCTION tpch_gen.o_linecount(orderkey bigint, cycle integer)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT tpch_gen.rnd(orderkey, 1000 * cycle + 102, 1, 7) $$;

CREATE FUNCTION tpch_gen.mktsegments() RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT ARRAY['AUTOMOBILE', 'BUILDING', 'FURNITURE', 'MACHINERY', 'HOUSEHOLD'] $$;

-- Text pool: 10000 entries of ~10 generated sentences each (>= 300 chars).
-- Comments are substrings of a pool entry chosen by key hash, like the
-- spec's pool; "special ... requests" occurs now and then (Q13).
CREATE TABLE tpch_gen.text_pool (id integer PRIMARY KEY, txt text NOT NULL);

INSERT INTO tpch_gen.text_pool
SELECT p.id,
       string_agg(w.adj[1 + tpch_gen.rnd(s.k, 801, 0, 19)] || ' '
                  || w.noun[1 + tpch_gen.rnd(s.k, 802, 0, 19)] || ' '
                  || w.adv[1 + tpch_gen.rnd(s.k, 803, 0, 15)] || ' '
                  || w.verb[1 + tpch_gen.rnd(s.k, 804, 0, 19)] || ' '
                  || w.prep[1 + tpch_gen.rnd(s.k, 805, 0, 15)] || ' the '
                  || w.adj[1 + tpch_gen.rnd(s.k, 806, 0, 19)] || ' '
                  || w.noun[1 + tpch_gen.rnd(s.k, 807, 0, 19)]
                  || w.term[1 + tpch_gen.rnd(s.k, 808, 0, 4)],
                  ' ' ORDER BY s.j)
FROM generate_series(0, 9999) AS p(id)
CROSS JOIN generate_series(0, 9) AS s0(j)
CROSS JOIN LATERAL (SELECT p.id * 16 + s0.j AS k, s0.j) AS s
CROSS JOIN (SELECT
    ARRAY['special', 'pending', 'regular', 'express', 'final', 'silent', 'careful',
          'quick', 'bold', 'even', 'ironic', 'idle', 'busy', 'quiet', 'sly',
          'brave', 'daring', 'thin', 'close', 'steady'] AS adj,
    ARRAY['requests', 'accounts', 'packages', 'deposits', 'instructions',
          'shipments', 'pallets', 'invoices', 'ledgers', 'crates', 'parcels',
          'notes', 'tickets', 'claims', 'sheets', 'bundles', 'cartons', 'drafts',
          'manifests', 'receipts'] AS noun,
    ARRAY['quickly', 'slowly', 'carefully', 'boldly', 'quietly', 'furiously',
          'evenly', 'blithely', 'always', 'never', 'sometimes', 'closely',
          'idly', 'busily', 'finally', 'gently'] AS adv,
    ARRAY['nap', 'wake', 'haggle', 'argue', 'cajole', 'boost', 'detect', 'merge',
          'use', 'promise', 'engage', 'print', 'serve', 'drift', 'doze',
          'unwind', 'settle', 'doubt', 'grow', 'linger'] AS verb,
    ARRAY['about', 'above', 'across', 'after', 'against', 'along', 'among',
          'around', 'before', 'behind', 'beside', 'between', 'beyond', 'during',
          'over', 'toward'] AS prep,
    ARRAY['.', '.', '.', ';', '!'] AS term) AS w
GROUP BY p.id;

-- Lineitems of the orders with index p_first..p_last (see tpch_gen.orderkey).
CREATE FUNCTION tpch_gen.lineitem_rows(p_first bigint, p_last bigint,
                                       p_keybase bigint, p_sparse boolean,
                                       p_cycle integer, p_npart bigint,
                                       p_nsupp bigint)
RETURNS SETOF tpch.lineitem LANGUAGE sql STABLE AS $$
SELECT o.okey,
       a.pk,
       tpch_gen.ps_suppkey(a.pk, tpch_gen.rnd(k.lk, k.s + 202, 0, 3), p_nsupp),
       l.ln::integer,
       a.qty::numeric(15,2),
       (a.qty * tpch_gen.retailprice(a.pk))::numeric(15,2),
       (tpch_gen.rnd(k.lk, k.s + 204, 0, 10) / 100.0)::numeric(15,2),
       (tpch_gen.rnd(k.lk, k.s + 205, 0, 8) / 100.0)::numeric(15,2),
       (CASE WHEN b.receipt > date '1995-06-17' THEN 'N'
             WHEN tpch_gen.rnd(k.lk, k.s + 206, 0, 1) = 0 THEN 'R'
             ELSE 'A' END)::char(1),
       (CASE WHEN a.ship > date '1995-06-17' THEN 'O' ELSE 'F' END)::char(1),
       a.ship,
       a.commitd,
       b.receipt,
       ((ARRAY['DELIVER IN PERSON', 'COLLECT COD', 'NONE', 'TAKE BACK RETURN'])
            [1 + tpch_gen.rnd(k.lk, k.s + 216, 0, 3)])::char(25),  -- seed 216: see README (Q19)
       ((ARRAY['REG AIR', 'AIR', 'RAIL', 'SHIP', 'TRUCK', 'MAIL', 'FOB'])
            [1 + tpch_gen.rnd(k.lk, k.s + 211, 0, 6)])::char(10),
       substr(tp.txt, 1 + tpch_gen.rnd(k.lk, k.s + 213, 0, 99)::integer,
              tpch_gen.rnd(k.lk, k.s + 214, 10, 43)::integer)::varchar(44)
FROM generate_series(p_first, p_last) AS g(i)
CROSS JOIN LATERAL (SELECT tpch_gen.orderkey(g.i, p_keybase, p_sparse) AS okey) AS o
CROSS JOIN LATERAL generate_series(1, tpch_gen.o_linecount(o.okey, p_cycle)) AS l(ln)
CROSS JOIN LATERAL (SELECT o.okey * 8 + l.ln AS lk, 1000::bigint * p_cycle AS s,
                           tpch_gen.o_orderdate(o.okey, p_cycle) AS od) AS k
CROSS JOIN LATERAL (SELECT tpch_gen.rnd(k.lk, k.s + 201, 1, p_npart) AS pk,
                           tpch_gen.rnd(k.lk, k.s + 203, 1, 50)::numeric AS qty,
                           k.od + tpch_gen.rnd(k.lk, k.s + 207, 1, 121)::integer AS ship,
                           k.od + tpch_gen.rnd(k.lk, k.s + 208, 30, 90)::integer AS commitd) AS a
CROSS JOIN LATERAL (SELECT a.ship + tpch_gen.rnd(k.lk, k.s + 209, 1, 30)::integer AS receipt) AS b
JOIN tpch_gen.text_pool AS tp ON tp.id = tpch_gen.rnd(k.lk, k.s + 212, 0, 9999)
$$;

-- Orders with index p_first..p_last; status and total price are read back
-- from their lineitems, which must be loaded first.
CREATE FUNCTION tpch_gen.order_rows(p_first bigint, p_last bigint,
                                    p_keybase bigint, p_sparse boolean,
                                    p_cycle integer, p_ncust bigint)
RETURNS SETOF tpch.orders LANGUAGE sql STABLE AS $$
SELECT o.okey,
       tpch_gen.ordering_custkey(tpch_gen.rnd(o.okey, o.s + 103, 0, p_ncust - p_ncust / 3 - 1)),
       t.status,
       t.total,
       tpch_gen.o_orderdate(o.okey, p_cycle),
       ((ARRAY['1-URGENT', '2-HIGH', '3-MEDIUM', '4-NOT SPECIFIED', '5-LOW'])
            [1 + tpch_gen.rnd(o.okey, o.s + 104, 0, 4)])::char(15),
       ('Clerk#' || lpad(tpch_gen.rnd(o.okey, o.s + 105, 1, greatest(1, p_ncust / 150))::text,
                         9, '0'))::char(15),
       0,
       substr(tp.txt, 1 + tpch_gen.rnd(o.okey, o.s + 107, 0, 99)::integer,
              tpch_gen.rnd(o.okey, o.s + 108, 19, 78)::integer)::varchar(79)
FROM generate_series(p_first, p_last) AS g(i)
CROSS JOIN LATERAL (SELECT tpch_gen.orderkey(g.i, p_keybase, p_sparse) AS okey,
                           1000::bigint * p_cycle AS s) AS o
CROSS JOIN LATERAL (
    SELECT (CASE WHEN bool_and(l_linestatus = 'F') THEN 'F'
                 WHEN bool_and(l_linestatus = 'O') THEN 'O'
                 ELSE 'P' END)::char(1) AS status,
           round(sum(l_extendedprice * (1 + l_tax) * (1 - l_discount)), 2)::numeric(15,2) AS total
    FROM tpch.lineitem
    WHERE l_orderkey = o.okey) AS t
JOIN tpch_gen.text_pool AS tp ON tp.id = tpch_gen.rnd(o.okey, o.s + 106, 0, 9999)
$$;

------------------------------------------------------------------------------
-- Load
------------------------------------------------------------------------------
TRUNCATE tpch.region, tpch.nation, tpch.supplier, tpch.customer, tpch.part,
         tpch.partsupp, tpch.orders, tpch.lineitem;

-- Secondary (non-constraint) indexes from schema.sql are dropped for the load
-- and rebuilt from their saved definitions afterwards: far cheaper than
-- maintaining them row by row. Primary keys stay (keys arrive in order).
CREATE TEMP TABLE saved_indexes AS
SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def
FROM pg_index i
JOIN pg_class c ON c.oid = i.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'tpch'
  AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid);

DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT name FROM saved_indexes LOOP
        EXECUTE 'DROP INDEX ' || r.name;
    END LOOP;
END
$$;

INSERT INTO tpch.region
SELECT r.key, r.name, substr(tp.txt, 1, tpch_gen.rnd(r.key, 701, 31, 115)::integer)
FROM (VALUES (0, 'AFRICA'), (1, 'AMERICA'), (2, 'ASIA'), (3, 'EUROPE'),
             (4, 'MIDDLE EAST')) AS r(key, name)
JOIN tpch_gen.text_pool AS tp ON tp.id = tpch_gen.rnd(r.key, 702, 0, 9999);

INSERT INTO tpch.nation
SELECT n.key, n.name, n.region,
       substr(tp.txt, 1, tpch_gen.rnd(n.key, 703, 31, 114)::integer)
FROM (VALUES (0, 'ALGERIA', 0), (1, 'ARGENTINA', 1), (2, 'BRAZIL', 1),
             (3, 'CANADA', 1), (4, 'EGYPT', 4), (5, 'ETHIOPIA', 0),
             (6, 'FRANCE', 3), (7, 'GERMANY', 3), (8, 'INDIA', 2),
             (9, 'INDONESIA', 2), (10, 'IRAN', 4), (11, 'IRAQ', 4),
             (12, 'JAPAN', 2), (13, 'JORDAN', 4), (14, 'KENYA', 0),
             (15, 'MOROCCO', 0), (16, 'MOZAMBIQUE', 0), (17, 'PERU', 1),
             (18, 'CHINA', 2), (19, 'ROMANIA', 3), (20, 'SAUDI ARABIA', 4),
             (21, 'VIETNAM', 2), (22, 'RUSSIA', 3), (23, 'UNITED KINGDOM', 3),
             (24, 'UNITED STATES', 1)) AS n(key, name, region)
JOIN tpch_gen.text_pool AS tp ON tp.id = tpch_gen.rnd(n.key, 704, 0, 9999);

-- Suppliers: key % 200 = 17 get "Customer ... Complaints" (Q16 excludes them),
-- key % 200 = 117 get "Customer ... Recommends" (spec: 5 per 10000 each).
INSERT INTO tpch.supplier
SELECT g.k,
       'Supplier#' || lpad(g.k::text, 9, '0'),
       tpch_gen.vstring(g.k, 501, 10, 40),
       n.nk,
       tpch_gen.phone(g.k, 503, n.nk),
       tpch_gen.rnd(g.k, 506, -99999, 999999) / 100.0,
       CASE g.k % 200
           WHEN 17 THEN left(c.txt, 20) || ' Customer ' || substr(c.txt, 21, 15)
                        || ' Complaints ' || substr(c.txt, 36, 40)
           WHEN 117 THEN left(c.txt, 20) || ' Customer ' || substr(c.txt, 21, 15)
                         || ' Recommends ' || substr(c.txt, 36, 40)
           ELSE c.txt END
FROM generate_series(1, :n_supp) AS g(k)
CROSS JOIN LATERAL (SELECT tpch_gen.rnd(g.k, 502, 0, 24)::integer AS nk) AS n
JOIN tpch_gen.text_pool AS tp ON tp.id = tpch_gen.rnd(g.k, 507, 0, 9999)
CROSS JOIN LATERAL (SELECT substr(tp.txt, 1 + tpch_gen.rnd(g.k, 508, 0, 99)::integer,
                                  tpch_gen.rnd(g.k, 509, 25, 100)::integer) AS txt) AS c;
\echo supplier loaded

-- Parts: p_name is 5 distinct colour words (start + step coprime with 92).
INSERT INTO tpch.part
SELECT g.k,
       w.col[1 + r.c0 % 92] || ' ' || w.col[1 + (r.c0 + d.d) % 92] || ' '
         || w.col[1 + (r.c0 + 2 * d.d) % 92] || ' ' || w.col[1 + (r.c0 + 3 * d.d) % 92]
         || ' ' || w.col[1 + (r.c0 + 4 * d.d) % 92],
       'Manufacturer#' || r.m,
       'Brand#' || r.m || tpch_gen.rnd(g.k, 304, 1, 5),
       w.syl1[1 + tpch_gen.rnd(g.k, 305, 0, 5)] || ' ' || w.syl2[1 + tpch_gen.rnd(g.k, 306, 0, 4)]
         || ' ' || w.syl3[1 + tpch_gen.rnd(g.k, 307, 0, 4)],
       tpch_gen.rnd(g.k, 308, 1, 50),
       w.cont1[1 + tpch_gen.rnd(g.k, 309, 0, 4)] || ' ' || w.cont2[1 + tpch_gen.rnd(g.k, 310, 0, 7)],
       tpch_gen.retailprice(g.k),
       substr(tp.txt, 1 + tpch_gen.rnd(g.k, 312, 0, 99)::integer,
              tpch_gen.rnd(g.k, 313, 5, 22)::integer)
FROM generate_series(1, :n_part) AS g(k)
CROSS JOIN LATERAL (SELECT tpch_gen.rnd(g.k, 301, 0, 91) AS c0,
                           1 + 2 * tpch_gen.rnd(g.k, 302, 0, 44) AS d0,
                           tpch_gen.rnd(g.k, 303, 1, 5) AS m) AS r
CROSS JOIN LATERAL (SELECT CASE WHEN r.d0 % 23 = 0 THEN r.d0 + 2 ELSE r.d0 END AS d) AS d
JOIN tpch_gen.text_pool AS tp ON tp.id = tpch_gen.rnd(g.k, 311, 0, 9999)
CROSS JOIN (SELECT
    ARRAY['almond', 'antique', 'aquamarine', 'azure', 'beige', 'bisque', 'black',
          'blanched', 'blue', 'blush', 'brown', 'burlywood', 'burnished',
          'chartreuse', 'chiffon', 'chocolate', 'coral', 'cornflower', 'cornsilk',
          'cream', 'cyan', 'dark', 'deep', 'dim', 'dodger', 'drab', 'firebrick',
          'floral', 'forest', 'frosted', 'gainsboro', 'ghost', 'goldenrod', 'green',
          'grey', 'honeydew', 'hot', 'indian', 'ivory', 'khaki', 'lace', 'lavender',
          'lawn', 'lemon', 'light', 'lime', 'linen', 'magenta', 'maroon', 'medium',
          'metallic', 'midnight', 'mint', 'misty', 'moccasin', 'navajo', 'navy',
          'olive', 'orange', 'orchid', 'pale', 'papaya', 'peach', 'peru', 'pink',
          'plum', 'powder', 'puff', 'purple', 'red', 'rose', 'rosy', 'royal',
          'saddle', 'salmon', 'sandy', 'seashell', 'sienna', 'sky', 'slate', 'smoke',
          'snow', 'spring', 'steel', 'tan', 'thistle', 'tomato', 'turquoise',
          'violet', 'wheat', 'white', 'yellow'] AS col,
    ARRAY['STANDARD', 'SMALL', 'MEDIUM', 'LARGE', 'ECONOMY', 'PROMO'] AS syl1,
    ARRAY['ANODIZED', 'BURNISHED', 'PLATED', 'POLISHED', 'BRUSHED'] AS syl2,
    ARRAY['TIN', 'NICKEL', 'BRASS', 'STEEL', 'COPPER'] AS syl3,
    ARRAY['SM', 'LG', 'MED', 'JUMBO', 'WRAP'] AS cont1,
    ARRAY['CASE', 'BOX', 'BAG', 'JAR', 'PKG', 'PACK', 'CAN', 'DRUM'] AS cont2) AS w;
\echo part loaded

INSERT INTO tpch.partsupp
SELECT g.k,
       tpch_gen.ps_suppkey(g.k, i.i, :n_supp),
       tpch_gen.rnd(g.k * 4 + i.i, 401, 1, 9999),
       tpch_gen.rnd(g.k * 4 + i.i, 402, 100, 100000) / 100.0,
       substr(tp.txt, 1 + tpch_gen.rnd(g.k * 4 + i.i, 404, 0, 99)::integer,
              tpch_gen.rnd(g.k * 4 + i.i, 405, 49, 198)::integer)
FROM generate_series(1, :n_part) AS g(k)
CROSS JOIN generate_series(0, 3) AS i(i)
JOIN tpch_gen.text_pool AS tp ON tp.id = tpch_gen.rnd(g.k * 4 + i.i, 403, 0, 9999)
ON CONFLICT DO NOTHING;
\echo partsupp loaded

INSERT INTO tpch.customer
SELECT g.k,
       'Customer#' || lpad(g.k::text, 9, '0'),
       tpch_gen.vstring(g.k, 601, 10, 40),
       n.nk,
       tpch_gen.phone(g.k, 603, n.nk),
       tpch_gen.rnd(g.k, 606, -99999, 999999) / 100.0,
       (tpch_gen.mktsegments())[1 + tpch_gen.rnd(g.k, 607, 0, 4)],
       substr(tp.txt, 1 + tpch_gen.rnd(g.k, 609, 0, 99)::integer,
              tpch_gen.rnd(g.k, 610, 29, 116)::integer)
FROM generate_series(1, :n_cust) AS g(k)
CROSS JOIN LATERAL (SELECT tpch_gen.rnd(g.k, 602, 0, 24)::integer AS nk) AS n
JOIN tpch_gen.text_pool AS tp ON tp.id = tpch_gen.rnd(g.k, 608, 0, 9999);
\echo customer loaded

INSERT INTO tpch.lineitem
SELECT * FROM tpch_gen.lineitem_rows(1, :n_ord, 0, true, 0, :n_part, :n_supp);
\echo lineitem loaded

INSERT INTO tpch.orders
SELECT * FROM tpch_gen.order_rows(1, :n_ord, 0, true, 0, :n_cust);
\echo orders loaded

DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT def FROM saved_indexes ORDER BY name LOOP
        EXECUTE r.def;
    END LOOP;
END
$$;
DROP TABLE saved_indexes;
\echo indexes rebuilt

ANALYZE tpch.region, tpch.nation, tpch.supplier, tpch.customer, tpch.part,
        tpch.partsupp, tpch.orders, tpch.lineitem, tpch_gen.text_pool;
