-- RF1 (new sales): insert ceil(1% of the current order count) new orders and
-- their 1..7 lineitems each. Usage: psql -v cycle=N -1 -f rf1.sql, N >= 1;
-- the caller owns the transaction. Needs datagen.sql's tpch_gen helpers.
-- Invariant: new keys are max(o_orderkey)+1, +2, ... (dense, above every
-- existing key); values are pure functions of (key, :cycle) with the base
-- load's distributions; lineitems go first and the orders' status and total
-- price are read back from them, so both statements must run in this order.

INSERT INTO tpch.lineitem
SELECT l.*
FROM (SELECT coalesce(max(o_orderkey), 0) AS base,
             ceil(count(*) * 0.01)::bigint AS n
      FROM tpch.orders) AS o,
     (SELECT max(p_partkey) AS n FROM tpch.part) AS p,
     (SELECT max(s_suppkey) AS n FROM tpch.supplier) AS s,
     LATERAL tpch_gen.lineitem_rows(1, o.n, o.base, false, :cycle, p.n, s.n) AS l;

-- The new lineitems are exactly those above the current maximum order key.
INSERT INTO tpch.orders
SELECT n.*
FROM (SELECT coalesce(max(o_orderkey), 0) AS base FROM tpch.orders) AS o,
     (SELECT coalesce(max(l_orderkey), 0) AS top FROM tpch.lineitem) AS l,
     (SELECT max(c_custkey) AS n FROM tpch.customer) AS c,
     LATERAL tpch_gen.order_rows(1, l.top - o.base, o.base, false, :cycle, c.n) AS n;
