-- TPC-H-derived schema for pg_trickle correctness tests and benchmarks.
-- Creates schema `tpch` with the eight tables, primary keys and B-tree
-- indexes on every foreign-key join column, so that delta joins can probe.
-- Invariant: the tables stay free of FOREIGN KEY constraints; referential
-- consistency is kept by datagen.sql and the refresh scripts rf1..rf3.sql.
-- Running it drops schema `tpch` (recreated here) and `tpch_gen` (made by datagen.sql).

\set ON_ERROR_STOP 1
SET client_min_messages = warning;

DROP SCHEMA IF EXISTS tpch CASCADE;
DROP SCHEMA IF EXISTS tpch_gen CASCADE;   -- generator helpers, see datagen.sql
CREATE SCHEMA tpch;

CREATE TABLE tpch.region (
    r_regionkey  integer      NOT NULL,
    r_name       char(25)     NOT NULL,
    r_comment    varchar(152),
    PRIMARY KEY (r_regionkey)
);

CREATE TABLE tpch.nation (
    n_nationkey  integer      NOT NULL,
    n_name       char(25)     NOT NULL,
    n_regionkey  integer      NOT NULL,   -- -> region
    n_comment    varchar(152),
    PRIMARY KEY (n_nationkey)
);

CREATE TABLE tpch.supplier (
    s_suppkey    bigint        NOT NULL,
    s_name       char(25)      NOT NULL,
    s_address    varchar(40)   NOT NULL,
    s_nationkey  integer       NOT NULL,  -- -> nation
    s_phone      char(15)      NOT NULL,
    s_acctbal    numeric(15,2) NOT NULL,
    s_comment    varchar(101)  NOT NULL,
    PRIMARY KEY (s_suppkey)
);

CREATE TABLE tpch.customer (
    c_custkey    bigint        NOT NULL,
    c_name       varchar(25)   NOT NULL,
    c_address    varchar(40)   NOT NULL,
    c_nationkey  integer       NOT NULL,  -- -> nation
    c_phone      char(15)      NOT NULL,
    c_acctbal    numeric(15,2) NOT NULL,
    c_mktsegment char(10)      NOT NULL,
    c_comment    varchar(117)  NOT NULL,
    PRIMARY KEY (c_custkey)
);

CREATE TABLE tpch.part (
    p_partkey     bigint        NOT NULL,
    p_name        varchar(55)   NOT NULL,
    p_mfgr        char(25)      NOT NULL,
    p_brand       char(10)      NOT NULL,
    p_type        varchar(25)   NOT NULL,
    p_size        integer       NOT NULL,
    p_container   char(10)      NOT NULL,
    p_retailprice numeric(15,2) NOT NULL,
    p_comment     varchar(23)   NOT NULL,
    PRIMARY KEY (p_partkey)
);

CREATE TABLE tpch.partsupp (
    ps_partkey    bigint        NOT NULL,  -- -> part
    ps_suppkey    bigint        NOT NULL,  -- -> supplier
    ps_availqty   integer       NOT NULL,
    ps_supplycost numeric(15,2) NOT NULL,
    ps_comment    varchar(199)  NOT NULL,
    PRIMARY KEY (ps_partkey, ps_suppkey)
);

CREATE TABLE tpch.orders (
    o_orderkey      bigint        NOT NULL,
    o_custkey       bigint        NOT NULL,  -- -> customer
    o_orderstatus   char(1)       NOT NULL,
    o_totalprice    numeric(15,2) NOT NULL,
    o_orderdate     date          NOT NULL,
    o_orderpriority char(15)      NOT NULL,
    o_clerk         char(15)      NOT NULL,
    o_shippriority  integer       NOT NULL,
    o_comment       varchar(79)   NOT NULL,
    PRIMARY KEY (o_orderkey)
);

CREATE TABLE tpch.lineitem (
    l_orderkey      bigint        NOT NULL,  -- -> orders
    l_partkey       bigint        NOT NULL,  -- -> part, and with l_suppkey -> partsupp
    l_suppkey       bigint        NOT NULL,  -- -> supplier
    l_linenumber    integer       NOT NULL,
    l_quantity      numeric(15,2) NOT NULL,
    l_extendedprice numeric(15,2) NOT NULL,
    l_discount      numeric(15,2) NOT NULL,
    l_tax           numeric(15,2) NOT NULL,
    l_returnflag    char(1)       NOT NULL,
    l_linestatus    char(1)       NOT NULL,
    l_shipdate      date          NOT NULL,
    l_commitdate    date          NOT NULL,
    l_receiptdate   date          NOT NULL,
    l_shipinstruct  char(25)      NOT NULL,
    l_shipmode      char(10)      NOT NULL,
    l_comment       varchar(44)   NOT NULL,
    PRIMARY KEY (l_orderkey, l_linenumber)   -- also serves joins on l_orderkey
);

-- Foreign-key join columns not already covered by a primary-key prefix.
CREATE INDEX nation_n_regionkey_idx  ON tpch.nation   (n_regionkey);
CREATE INDEX supplier_s_nationkey_idx ON tpch.supplier (s_nationkey);
CREATE INDEX customer_c_nationkey_idx ON tpch.customer (c_nationkey);
CREATE INDEX partsupp_ps_suppkey_idx ON tpch.partsupp (ps_suppkey);
CREATE INDEX orders_o_custkey_idx    ON tpch.orders   (o_custkey);
CREATE INDEX lineitem_l_partkey_idx  ON tpch.lineitem (l_partkey);
CREATE INDEX lineitem_l_suppkey_idx  ON tpch.lineitem (l_suppkey);
