-- Referential and derived-value checks for the tpch schema; raises an error
-- (SQLSTATE P0001) naming the first violated rule, else prints nothing.
-- Invariant: every rule here holds after datagen.sql and after any sequence
-- of rf1/rf2/rf3 cycles; run it with psql -v ON_ERROR_STOP=1.

DO $$
DECLARE
    rule record;
    bad  bigint;
BEGIN
    FOR rule IN SELECT * FROM (VALUES
        ('lineitem without its order',
         'SELECT count(*) FROM tpch.lineitem l WHERE NOT EXISTS (SELECT 1 FROM tpch.orders o WHERE o.o_orderkey = l.l_orderkey)'),
        ('order without lineitems',
         'SELECT count(*) FROM tpch.orders o WHERE NOT EXISTS (SELECT 1 FROM tpch.lineitem l WHERE l.l_orderkey = o.o_orderkey)'),
        ('order of a missing customer',
         'SELECT count(*) FROM tpch.orders o WHERE NOT EXISTS (SELECT 1 FROM tpch.customer c WHERE c.c_custkey = o.o_custkey)'),
        ('lineitem of a missing partsupp pair',
         'SELECT count(*) FROM tpch.lineitem l WHERE NOT EXISTS (SELECT 1 FROM tpch.partsupp ps WHERE ps.ps_partkey = l.l_partkey AND ps.ps_suppkey = l.l_suppkey)'),
        ('partsupp of a missing part or supplier',
         'SELECT count(*) FROM tpch.partsupp ps WHERE NOT EXISTS (SELECT 1 FROM tpch.part p WHERE p.p_partkey = ps.ps_partkey) OR NOT EXISTS (SELECT 1 FROM tpch.supplier s WHERE s.s_suppkey = ps.ps_suppkey)'),
        ('customer or supplier of a missing nation',
         'SELECT (SELECT count(*) FROM tpch.customer WHERE c_nationkey NOT IN (SELECT n_nationkey FROM tpch.nation)) + (SELECT count(*) FROM tpch.supplier WHERE s_nationkey NOT IN (SELECT n_nationkey FROM tpch.nation))'),
        ('o_totalprice or o_orderstatus differs from its lineitems',
         'SELECT count(*) FROM tpch.orders o JOIN (SELECT l_orderkey, round(sum(l_extendedprice * (1 + l_tax) * (1 - l_discount)), 2) AS total, CASE WHEN bool_and(l_linestatus = ''F'') THEN ''F'' WHEN bool_and(l_linestatus = ''O'') THEN ''O'' ELSE ''P'' END AS status FROM tpch.lineitem GROUP BY l_orderkey) t ON t.l_orderkey = o.o_orderkey WHERE o.o_totalprice <> t.total OR o.o_orderstatus <> t.status'),
        ('l_extendedprice differs from l_quantity * p_retailprice',
         'SELECT count(*) FROM tpch.lineitem JOIN tpch.part ON p_partkey = l_partkey WHERE l_extendedprice <> l_quantity * p_retailprice')
    ) AS r(name, sql)
    LOOP
        EXECUTE rule.sql INTO bad;
        IF bad <> 0 THEN
            RAISE EXCEPTION 'tpch consistency: % (% rows)', rule.name, bad;
        END IF;
    END LOOP;
END
$$;
