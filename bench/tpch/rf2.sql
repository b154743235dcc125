-- RF2 (old sales): delete the oldest ceil(1% of the current order count)
-- orders, by (o_orderdate, o_orderkey), together with their lineitems.
-- Usage: psql -v cycle=N -1 -f rf2.sql; the caller owns the transaction
-- (:cycle is accepted for symmetry but the victims depend only on the data).
-- Invariant: both statements select the same victims (orders is unchanged
-- between them), so no lineitem is left without its order.

DELETE FROM tpch.lineitem
WHERE l_orderkey IN (SELECT o_orderkey
                     FROM tpch.orders
                     ORDER BY o_orderdate, o_orderkey
                     LIMIT (SELECT ceil(count(*) * 0.01)::bigint FROM tpch.orders));

DELETE FROM tpch.orders
WHERE o_orderkey IN (SELECT o_orderkey
                     FROM tpch.orders
                     ORDER BY o_orderdate, o_orderkey
                     LIMIT (SELECT ceil(count(*) * 0.01)::bigint FROM tpch.orders));
