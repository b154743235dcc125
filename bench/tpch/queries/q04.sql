-- TPC-H Q4, order priority checking (quarter from 1993-07-01).
-- Adapted: interval '3 months'; final ORDER BY o_orderpriority dropped.
SELECT o_orderpriority, count(*) AS order_count
FROM tpch.orders
WHERE o_orderdate >= date '1993-07-01'
  AND o_orderdate < date '1993-07-01' + interval '3 months'
  AND EXISTS (SELECT *
              FROM tpch.lineitem
              WHERE l_orderkey = o_orderkey
                AND l_commitdate < l_receiptdate)
GROUP BY o_orderpriority
