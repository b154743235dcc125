-- RF3 (updates, not in the spec): new quantity, extended price and discount
-- for ~1% of lineitems, their orders' o_totalprice recomputed, and ~0.5% of
-- customers moved to another c_mktsegment (a group-key change for Q3).
-- Usage: psql -v cycle=N -1 -f rf3.sql, N >= 1; caller owns the transaction.
-- Invariant: rows are chosen by a hash of (key, :cycle), so a cycle is
-- deterministic; l_extendedprice stays l_quantity * p_retailprice and
-- o_totalprice stays the sum over the order's lineitems.

UPDATE tpch.lineitem
SET l_quantity = tpch_gen.rnd(l_orderkey * 8 + l_linenumber, 1000 * :cycle + 902, 1, 50),
    l_extendedprice = tpch_gen.rnd(l_orderkey * 8 + l_linenumber, 1000 * :cycle + 902, 1, 50)
                      * tpch_gen.retailprice(l_partkey),
    l_discount = tpch_gen.rnd(l_orderkey * 8 + l_linenumber, 1000 * :cycle + 903, 0, 10) / 100.0
WHERE tpch_gen.rnd(l_orderkey * 8 + l_linenumber, 1000 * :cycle + 901, 0, 99) = 0;

UPDATE tpch.orders
SET o_totalprice = t.total
FROM (SELECT l_orderkey,
             round(sum(l_extendedprice * (1 + l_tax) * (1 - l_discount)), 2) AS total
      FROM tpch.lineitem
      WHERE l_orderkey IN (SELECT l_orderkey
                           FROM tpch.lineitem
                           WHERE tpch_gen.rnd(l_orderkey * 8 + l_linenumber,
                                              1000 * :cycle + 901, 0, 99) = 0)
      GROUP BY l_orderkey) AS t
WHERE o_orderkey = t.l_orderkey
  AND o_totalprice <> t.total;

-- Move to a different segment: 1-based position p, new 0-based (p + 0..3) % 5.
UPDATE tpch.customer
SET c_mktsegment = (tpch_gen.mktsegments())
        [1 + (array_position(tpch_gen.mktsegments(), rtrim(c_mktsegment))
              + tpch_gen.rnd(c_custkey, 1000 * :cycle + 905, 0, 3)) % 5]
WHERE tpch_gen.rnd(c_custkey, 1000 * :cycle + 904, 0, 199) = 0;
