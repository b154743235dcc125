-- TPC-H Q11, important stock identification (GERMANY). Adapted: FRACTION fixed
-- at the spec's SF 1 value 0.0001 (spec: 0.0001 / SF); final ORDER BY value DESC dropped.
SELECT ps_partkey, sum(ps_supplycost * ps_availqty) AS value
FROM tpch.partsupp, tpch.supplier, tpch.nation
WHERE ps_suppkey = s_suppkey
  AND s_nationkey = n_nationkey
  AND n_name = 'GERMANY'
GROUP BY ps_partkey
HAVING sum(ps_supplycost * ps_availqty) > (
        SELECT sum(ps_supplycost * ps_availqty) * 0.0001
        FROM tpch.partsupp, tpch.supplier, tpch.nation
        WHERE ps_suppkey = s_suppkey
          AND s_nationkey = n_nationkey
          AND n_name = 'GERMANY')
