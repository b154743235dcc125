-- TPC-H Q20, potential part promotion (forest%, 1994, CANADA).
-- Adapted: interval '1 year'; final ORDER BY s_name dropped.
SELECT s_name, s_address
FROM tpch.supplier, tpch.nation
WHERE s_suppkey IN (
        SELECT ps_suppkey
        FROM tpch.partsupp
        WHERE ps_partkey IN (SELECT p_partkey FROM tpch.part WHERE p_name LIKE 'forest%')
          AND ps_availqty > (SELECT 0.5 * sum(l_quantity)
                             FROM tpch.lineitem
                             WHERE l_partkey = ps_partkey
                               AND l_suppkey = ps_suppkey
                               AND l_shipdate >= date '1994-01-01'
                               AND l_shipdate < date '1994-01-01' + interval '1 year'))
  AND s_nationkey = n_nationkey
  AND n_name = 'CANADA'
