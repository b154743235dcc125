-- TPC-H Q10, returned item reporting (quarter from 1993-10-01).
-- Adapted: interval '3 months'; final ORDER BY revenue DESC and LIMIT 20 dropped.
SELECT c_custkey, c_name,
       sum(l_extendedprice * (1 - l_discount)) AS revenue,
       c_acctbal, n_name, c_address, c_phone, c_comment
FROM tpch.customer, tpch.orders, tpch.lineitem, tpch.nation
WHERE c_custkey = o_custkey
  AND l_orderkey = o_orderkey
  AND o_orderdate >= date '1993-10-01'
  AND o_orderdate < date '1993-10-01' + interval '3 months'
  AND l_returnflag = 'R'
  AND c_nationkey = n_nationkey
GROUP BY c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
