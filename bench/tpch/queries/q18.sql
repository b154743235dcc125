-- TPC-H Q18, large volume customer (sum(l_quantity) > 300).
-- Adapted: final ORDER BY o_totalprice DESC, o_orderdate and LIMIT 100 dropped.
SELECT c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity) AS sum_qty
FROM tpch.customer, tpch.orders, tpch.lineitem
WHERE o_orderkey IN (SELECT l_orderkey
                     FROM tpch.lineitem
                     GROUP BY l_orderkey
                     HAVING sum(l_quantity) > 300)
  AND c_custkey = o_custkey
  AND o_orderkey = l_orderkey
GROUP BY c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
