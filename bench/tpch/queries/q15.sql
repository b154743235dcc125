-- TPC-H Q15, top supplier (quarter from 1996-01-01). Adapted: the view
-- revenue0 is a CTE referenced twice; final ORDER BY s_suppkey dropped.
WITH revenue0 (supplier_no, total_revenue) AS (
    SELECT l_suppkey, sum(l_extendedprice * (1 - l_discount))
    FROM tpch.lineitem
    WHERE l_shipdate >= date '1996-01-01'
      AND l_shipdate < date '1996-01-01' + interval '3 months'
    GROUP BY l_suppkey)
SELECT s_suppkey, s_name, s_address, s_phone, total_revenue
FROM tpch.supplier, revenue0
WHERE s_suppkey = supplier_no
  AND total_revenue = (SELECT max(total_revenue) FROM revenue0)
