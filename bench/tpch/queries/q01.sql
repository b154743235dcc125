-- TPC-H Q1, pricing summary report. Adapted: delta 90 days as a PostgreSQL
-- interval; final ORDER BY l_returnflag, l_linestatus dropped.
SELECT l_returnflag,
       l_linestatus,
       sum(l_quantity) AS sum_qty,
       sum(l_extendedprice) AS sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
       avg(l_quantity) AS avg_qty,
       avg(l_extendedprice) AS avg_price,
       avg(l_discount) AS avg_disc,
       count(*) AS count_order
FROM tpch.lineitem
WHERE l_shipdate <= date '1998-12-01' - interval '90 days'
GROUP BY l_returnflag, l_linestatus
