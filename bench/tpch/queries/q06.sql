-- TPC-H Q6, forecasting revenue change (1994, discount 0.06 +- 0.01, quantity < 24).
-- Adapted: interval '1 year'; nothing dropped (scalar aggregate, one row).
SELECT sum(l_extendedprice * l_discount) AS revenue
FROM tpch.lineitem
WHERE l_shipdate >= date '1994-01-01'
  AND l_shipdate < date '1994-01-01' + interval '1 year'
  AND l_discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01
  AND l_quantity < 24
