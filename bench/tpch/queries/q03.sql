-- TPC-H Q3, shipping priority (segment BUILDING, date 1995-03-15).
-- Adapted: final ORDER BY revenue DESC, o_orderdate and LIMIT 10 dropped.
SELECT l_orderkey,
       sum(l_extendedprice * (1 - l_discount)) AS revenue,
       o_orderdate,
       o_shippriority
FROM tpch.customer, tpch.orders, tpch.lineitem
WHERE c_mktsegment = 'BUILDING'
  AND c_custkey = o_custkey
  AND l_orderkey = o_orderkey
  AND o_orderdate < date '1995-03-15'
  AND l_shipdate > date '1995-03-15'
GROUP BY l_orderkey, o_orderdate, o_shippriority
