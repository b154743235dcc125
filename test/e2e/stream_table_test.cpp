// FULL-mode stream tables end to end: create, refresh, alter, drop, status,
// history, names, readers during refresh, and validation that leaves
// nothing behind. Every data-changing test checks the oracle.
// Invariant: a rejected create leaves no table, trigger or catalog row.
#include <string>
#include <thread>

#include "fixture.hpp"

namespace pgt::e2e {
namespace {

class StreamTable : public DbTest {
protected:
    void SetUp() override {
        DbTest::SetUp();
        db->exec(
            "CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, region text);"
            "CREATE TABLE orders (id int PRIMARY KEY, customer_id int REFERENCES customers,"
            " amount numeric(10,2) NOT NULL, placed date NOT NULL DEFAULT '2026-01-01');"
            "INSERT INTO customers VALUES (1, 'Ada', 'north'), (2, 'Bo', 'south'), (3, 'Cy', NULL);"
            "INSERT INTO orders VALUES (1, 1, 10.50), (2, 1, 4.25), (3, 2, 7.00), (4, 3, 1.00);");
    }

    // Relations, triggers and catalog rows that exist besides the sources.
    std::string leftovers() {
        return db->scalar(
            "SELECT (SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace "
            "AND relname NOT IN ('customers', 'orders', 'customers_pkey', 'orders_pkey')) || '/' "
            "|| "
            "(SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "WHERE NOT t.tgisinternal) || '/' || "
            "(SELECT count(*) FROM pgtrickle.pgt_stream_tables) || '/' || "
            "(SELECT count(*) FROM pgtrickle.pgt_dependencies)");
    }

    void expect_rejected(const std::string& call, const std::string& sqlstate,
                         const std::string& message_part) {
        SqlError e = db->error_of(call);
        EXPECT_EQ(e.sqlstate, sqlstate) << call << "\n" << e.message;
        EXPECT_NE(e.message.find(message_part), std::string::npos)
            << "message \"" << e.message << "\" does not mention \"" << message_part << "\"";
        EXPECT_EQ(leftovers(), "0/0/0/0") << "a rejected call left objects behind: " << call;
    }
};

const char* kTotals =
    "SELECT c.region, count(*) AS orders, sum(o.amount) AS total "
    "FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.region";
// A shape DIFFERENTIAL does not maintain (yet): a FULL JOIN of a derived table.
const char* kFullJoin =
    "SELECT c.region, o.amount FROM orders o FULL JOIN (SELECT * FROM customers WHERE id > 0) c ON "
    "c.id = "
    "o.customer_id";

TEST_F(StreamTable, create_populates_and_matches_query) {
    db->exec(std::string("SELECT pgtrickle.create_stream_table('region_totals', $q$") + kTotals +
             "$q$, refresh_mode => 'FULL')");
    EXPECT_EQ(count("SELECT * FROM region_totals"), 3);
    EXPECT_MATCHES_QUERY(*db, "region_totals");
    EXPECT_EQ(db->scalar("SELECT action || '/' || status || '/' || initiated_by || '/' || "
                         "rows_inserted || '/' || rows_deleted FROM pgtrickle.pgt_refresh_history"),
              "FULL/SUCCESS/CREATE/3/0");
}

TEST_F(StreamTable, refresh_applies_source_changes) {
    db->exec(std::string("SELECT pgtrickle.create_stream_table('region_totals', $q$") + kTotals +
             "$q$)");
    db->exec(
        "INSERT INTO orders VALUES (5, 2, 100); DELETE FROM orders WHERE id = 4;"
        "UPDATE customers SET region = 'west' WHERE id = 1");
    EXPECT_FALSE(matches_query(*db, "region_totals")) << "oracle must notice a stale table";
    db->exec("SELECT pgtrickle.refresh_stream_table('region_totals')");
    EXPECT_MATCHES_QUERY(*db, "region_totals");
    EXPECT_EQ(db->scalar("SELECT rows_inserted || '/' || rows_deleted || '/' || initiated_by "
                         "FROM pgtrickle.pgt_refresh_history ORDER BY refresh_id DESC LIMIT 1"),
              "2/2/MANUAL");  // inserted counts rows updated in place
}

TEST_F(StreamTable, auto_mode_picks_differential_for_a_filter_and_full_for_a_join) {
    db->exec("SELECT pgtrickle.create_stream_table('o', 'SELECT id, amount FROM orders')");
    EXPECT_TRUE(db->notices.empty());
    db->exec(std::string("SELECT pgtrickle.create_stream_table('t', $q$") + kFullJoin + "$q$)");
    ASSERT_EQ(db->notices.size(), 1u);
    EXPECT_NE(db->notices[0].find("resolved to FULL"), std::string::npos) << db->notices[0];
    EXPECT_EQ(db->scalar("SELECT string_agg(name || ':' || requested_mode || '/' || refresh_mode, "
                         "',' ORDER BY name) FROM pgtrickle.pgt_status()"),
              "public.o:AUTO/DIFFERENTIAL,public.t:AUTO/FULL");
    EXPECT_MATCHES_QUERY(*db, "o");
    EXPECT_MATCHES_QUERY(*db, "t");
}

TEST_F(StreamTable, initialize_false_leaves_table_unpopulated_until_refresh) {
    db->exec(
        "SELECT pgtrickle.create_stream_table('o', 'SELECT id, amount FROM orders', "
        "initialize => false)");
    EXPECT_EQ(count("SELECT * FROM o"), 0);
    EXPECT_EQ(db->scalar("SELECT is_populated FROM pgtrickle.pgt_status()"), "f");
    db->exec("SELECT pgtrickle.refresh_stream_table('o')");
    EXPECT_EQ(db->scalar("SELECT is_populated FROM pgtrickle.pgt_status()"), "t");
    EXPECT_MATCHES_QUERY(*db, "o");
}

TEST_F(StreamTable, quoted_mixed_case_schema_and_name) {
    db->exec("CREATE SCHEMA \"Sales Data\"");
    db->exec(
        "SELECT pgtrickle.create_stream_table('\"Sales Data\".\"Big Orders\"', "
        "'SELECT id AS \"Order Id\", amount FROM orders WHERE amount > 5', schedule => '5m')");
    EXPECT_EQ(db->scalar("SELECT name || ' ' || schedule FROM pgtrickle.pgt_status()"),
              "\"Sales Data\".\"Big Orders\" 5m");
    db->exec("UPDATE orders SET amount = 50 WHERE id = 4");
    db->exec("SELECT pgtrickle.refresh_stream_table('\"Sales Data\".\"Big Orders\"')");
    EXPECT_MATCHES_QUERY(*db, "\"Sales Data\".\"Big Orders\"");
    db->exec("SELECT pgtrickle.drop_stream_table('\"Sales Data\".\"Big Orders\"')");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_stream_tables"), "0");
}

TEST_F(StreamTable, column_types_come_from_the_analyzed_query) {
    db->exec(
        "SELECT pgtrickle.create_stream_table('t', "
        "'SELECT amount, placed, ''x'' AS lit, name::varchar(20) AS n "
        "FROM orders o JOIN customers c ON c.id = o.customer_id')");
    EXPECT_EQ(db->scalar("SELECT string_agg(format_type(atttypid, atttypmod), ',' ORDER BY attnum) "
                         "FROM pg_attribute WHERE attrelid = 't'::regclass AND attnum > 0"),
              "numeric(10,2),date,text,character varying(20),bytea,bytea");
    EXPECT_MATCHES_QUERY(*db, "t");
}

TEST_F(StreamTable, views_are_expanded_and_recorded_as_dependencies) {
    db->exec("CREATE VIEW big AS SELECT * FROM orders WHERE amount > 5");
    db->exec("SELECT pgtrickle.create_stream_table('b', 'SELECT id FROM big')");
    EXPECT_EQ(db->scalar("SELECT string_agg(source_relid::regclass || ':' || source_type, ',' "
                         "ORDER BY source_relid::regclass::text) FROM pgtrickle.pgt_dependencies"),
              "big:VIEW,orders:TABLE");
    EXPECT_MATCHES_QUERY(*db, "b");
}

TEST_F(StreamTable, search_path_change_does_not_change_what_refresh_reads) {
    db->exec("CREATE SCHEMA other; CREATE TABLE other.orders (id int, amount numeric)");
    db->exec("SELECT pgtrickle.create_stream_table('o', 'SELECT id, amount FROM orders')");
    db->exec("SET search_path = other, public");
    db->exec("SELECT pgtrickle.refresh_stream_table('public.o')");
    EXPECT_EQ(count("SELECT * FROM public.o"), 4);
    db->exec("RESET search_path");
    EXPECT_MATCHES_QUERY(*db, "o");
}

TEST_F(StreamTable, stream_table_over_stream_table) {
    db->exec(std::string("SELECT pgtrickle.create_stream_table('totals', $q$") + kTotals + "$q$)");
    db->exec(
        "SELECT pgtrickle.create_stream_table('top', "
        "'SELECT region FROM totals WHERE total > 5')");
    EXPECT_EQ(
        db->scalar("SELECT source_type FROM pgtrickle.pgt_dependencies d "
                   "JOIN pgtrickle.pgt_stream_tables s USING (pgt_id) WHERE s.pgt_name = 'top'"),
        "STREAM_TABLE");
    EXPECT_MATCHES_QUERY(*db, "top");
    SqlError e = db->error_of("SELECT pgtrickle.drop_stream_table('totals')");
    EXPECT_EQ(e.sqlstate, "2BP01");
    EXPECT_NE(e.detail.find("top"), std::string::npos) << e.detail;
    db->exec("SELECT pgtrickle.drop_stream_table('totals', cascade => true)");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_stream_tables"), "0");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pg_class WHERE relname IN ('totals', 'top')"), "0");
}

TEST_F(StreamTable, alter_schedule_mode_status_and_query) {
    db->exec("SELECT pgtrickle.create_stream_table('o', 'SELECT id, amount FROM orders')");
    db->exec(
        "SELECT pgtrickle.alter_stream_table('o', schedule => '1h30m', status => 'suspended')");
    EXPECT_EQ(db->scalar("SELECT schedule || '/' || status FROM pgtrickle.pgt_status()"),
              "1h30m/SUSPENDED");
    db->exec(
        "SELECT pgtrickle.alter_stream_table('o', refresh_mode => 'FULL', status => 'ACTIVE')");
    EXPECT_EQ(db->scalar("SELECT requested_mode || '/' || status FROM pgtrickle.pgt_status()"),
              "FULL/ACTIVE");
    // Same columns: storage kept (same OID); different columns: rebuilt.
    std::string oid = db->scalar("SELECT 'o'::regclass::oid");
    db->exec(
        "SELECT pgtrickle.alter_stream_table('o', query => "
        "'SELECT id, amount FROM orders WHERE amount > 5')");
    EXPECT_EQ(db->scalar("SELECT 'o'::regclass::oid"), oid);
    EXPECT_MATCHES_QUERY(*db, "o");
    db->exec(
        "SELECT pgtrickle.alter_stream_table('o', query => "
        "'SELECT id, amount * 2 AS doubled, placed FROM orders')");
    EXPECT_MATCHES_QUERY(*db, "o");
    EXPECT_EQ(
        db->scalar(
            "SELECT count(*) FROM pgtrickle.pgt_refresh_history WHERE initiated_by = 'ALTER'"),
        "3");  // the mode change and both query changes recompute
}

// pg_trickle's create_stream_table_if_not_exists: creates once; again
// (even with another query) only a NOTICE and nothing changes; a relation
// of that name that is not a stream table is 42P07.
TEST_F(StreamTable, create_stream_table_if_not_exists_is_idempotent) {
    db->exec(
        "SELECT pgtrickle.create_stream_table_if_not_exists('o', 'SELECT id, amount FROM "
        "orders', refresh_mode => 'DIFFERENTIAL')");
    EXPECT_MATCHES_QUERY(*db, "o");
    db->notices.clear();
    db->exec("SELECT pgtrickle.create_stream_table_if_not_exists('o', 'SELECT id FROM orders')");
    std::string all;
    for (const std::string& n : db->notices) {
        all += n;
    }
    EXPECT_NE(all.find("stream table \"o\" already exists, skipping"), std::string::npos) << all;
    EXPECT_EQ(db->scalar("SELECT defining_query FROM pgtrickle.pgt_stream_tables"),
              "SELECT id, amount FROM orders");
    EXPECT_EQ(db->error_of("SELECT pgtrickle.create_stream_table_if_not_exists('orders', "
                           "'SELECT 1 AS x FROM orders')")
                  .sqlstate,
              "42P07");
    db->exec("INSERT INTO orders VALUES (7, 1, 70)");
    db->exec("SELECT pgtrickle.refresh_stream_table('o')");
    EXPECT_EQ(last("o").substr(0, 12), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "o");
}

// resume_stream_table: a suspended stream table is ACTIVE again, with no
// errors counted, and refreshes.
TEST_F(StreamTable, resume_stream_table_reactivates) {
    db->exec(
        "SELECT pgtrickle.create_stream_table('o', 'SELECT id, amount FROM orders', "
        "refresh_mode => 'DIFFERENTIAL')");
    db->exec("SELECT pgtrickle.alter_stream_table('o', status => 'SUSPENDED')");
    db->exec("UPDATE pgtrickle.pgt_stream_tables SET consecutive_errors = 3");
    db->exec("SELECT pgtrickle.resume_stream_table('o')");
    EXPECT_EQ(db->scalar("SELECT status || '/' || consecutive_errors FROM pgtrickle.pgt_status()"),
              "ACTIVE/0");
    EXPECT_EQ(db->error_of("SELECT pgtrickle.resume_stream_table('orders')").sqlstate, "42809");
    db->exec("UPDATE orders SET amount = amount + 1");
    db->exec("SELECT pgtrickle.refresh_stream_table('o')");
    EXPECT_EQ(last("o").substr(0, 12), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "o");
}

TEST_F(StreamTable, drop_table_directly_removes_catalog_rows) {
    db->exec("SELECT pgtrickle.create_stream_table('o', 'SELECT id FROM orders')");
    db->exec("DROP TABLE o");
    EXPECT_EQ(leftovers(), "0/0/0/0");
}

// A stream table's columns are its query's output columns: renaming one is
// refused (the ALTER rolls back). A new name or schema is followed: the
// catalog keeps the current names and the next refresh reinitialises the
// table (its stored statements name it). Before: a rename succeeded and the
// next refresh failed (42P01 relation "public.region_totals" does not exist).
TEST_F(StreamTable, column_rename_is_refused_and_a_new_name_or_schema_followed) {
    db->exec("CREATE SCHEMA elsewhere");
    for (const std::string mode : {"DIFFERENTIAL", "FULL"}) {
        db->exec(std::string("SELECT pgtrickle.create_stream_table('region_totals', $q$") +
                 kTotals + "$q$, refresh_mode => '" + mode + "')");
        for (const std::string alter : {"ALTER TABLE region_totals RENAME COLUMN total TO t",
                                        "ALTER TABLE region_totals RENAME __pgt_row_id TO x"}) {
            SqlError e = db->error_of(alter);
            EXPECT_EQ(e.sqlstate, "0A000") << alter << "\n" << e.message;
            EXPECT_NE(e.message.find("public.region_totals"), std::string::npos) << e.message;
        }
        db->exec("ALTER TABLE region_totals RENAME TO totals");
        db->exec("ALTER TABLE totals SET SCHEMA elsewhere");
        EXPECT_EQ(db->scalar("SELECT name FROM pgtrickle.pgt_status()"), "elsewhere.totals");
        db->exec("INSERT INTO orders VALUES (9, 2, 3.00)");
        db->exec("SELECT pgtrickle.refresh_stream_table('elsewhere.totals')");
        EXPECT_EQ(db->scalar("SELECT action FROM pgtrickle.pgt_refresh_history ORDER BY "
                             "refresh_id DESC LIMIT 1"),
                  "FULL");
        EXPECT_MATCHES_QUERY(*db, "elsewhere.totals");
        db->exec("DELETE FROM orders WHERE id = 9");
        db->exec("SELECT pgtrickle.refresh_stream_table('elsewhere.totals')");
        EXPECT_EQ(db->scalar("SELECT action FROM pgtrickle.pgt_refresh_history ORDER BY "
                             "refresh_id DESC LIMIT 1"),
                  mode);
        EXPECT_MATCHES_QUERY(*db, "elsewhere.totals");
        db->exec("SELECT pgtrickle.drop_stream_table('elsewhere.totals')");
    }
    db->exec("DROP SCHEMA elsewhere");
}

// A FULL refresh takes no lock that blocks readers: while a refresh is
// uncommitted in one session, another session reads the old contents.
TEST_F(StreamTable, refresh_does_not_block_readers) {
    db->exec("SELECT pgtrickle.create_stream_table('o', 'SELECT id, amount FROM orders')");
    db->exec("INSERT INTO orders VALUES (5, 1, 99)");
    Conn writer = connect_db();
    writer.exec("BEGIN; SELECT pgtrickle.refresh_stream_table('o')");
    Conn reader = connect_db();
    reader.exec("SET statement_timeout = '20s'");
    EXPECT_EQ(reader.scalar("SELECT count(*) FROM o"), "4") << "reader must see the old contents";
    writer.exec("COMMIT");
    EXPECT_EQ(reader.scalar("SELECT count(*) FROM o"), "5");
    EXPECT_MATCHES_QUERY(*db, "o");
}

TEST_F(StreamTable, rejects_unknown_relation) {
    expect_rejected("SELECT pgtrickle.create_stream_table('x', 'SELECT * FROM nope')", "42P01",
                    "nope");
}

TEST_F(StreamTable, rejects_for_update) {
    expect_rejected("SELECT pgtrickle.create_stream_table('x', 'SELECT id FROM orders FOR UPDATE')",
                    "0A000", "FOR UPDATE");
}

TEST_F(StreamTable, rejects_tablesample) {
    expect_rejected(
        "SELECT pgtrickle.create_stream_table('x', "
        "'SELECT id FROM orders TABLESAMPLE SYSTEM (50)')",
        "0A000", "TABLESAMPLE");
}

TEST_F(StreamTable, rejects_limit_without_order_by) {
    expect_rejected("SELECT pgtrickle.create_stream_table('x', 'SELECT id FROM orders LIMIT 2')",
                    "0A000", "LIMIT");
    expect_rejected(
        "SELECT pgtrickle.create_stream_table('x', "
        "'SELECT * FROM (SELECT id FROM orders OFFSET 1) s')",
        "0A000", "OFFSET");
}

TEST_F(StreamTable, accepts_limit_with_order_by) {
    db->exec(
        "SELECT pgtrickle.create_stream_table('x', "
        "'SELECT id FROM orders ORDER BY amount DESC, id LIMIT 2')");
    EXPECT_MATCHES_QUERY(*db, "x");
}

TEST_F(StreamTable, rejects_temp_table_source) {
    db->exec("CREATE TEMP TABLE scratch (id int)");
    expect_rejected("SELECT pgtrickle.create_stream_table('x', 'SELECT id FROM scratch')", "0A000",
                    "temporary table");
}

TEST_F(StreamTable, rejects_system_catalog_source) {
    expect_rejected("SELECT pgtrickle.create_stream_table('x', 'SELECT relname FROM pg_class')",
                    "0A000", "pg_catalog.pg_class");
    expect_rejected(
        "SELECT pgtrickle.create_stream_table('x', "
        "'SELECT pgt_id FROM pgtrickle.pgt_stream_tables')",
        "0A000", "pgt_stream_tables");
}

TEST_F(StreamTable, rejects_existing_relation_name) {
    SqlError e = db->error_of("SELECT pgtrickle.create_stream_table('orders', 'SELECT 1 AS one')");
    EXPECT_EQ(e.sqlstate, "42P07");
    EXPECT_EQ(leftovers(), "0/0/0/0");
}

TEST_F(StreamTable, rejects_reserved_column_names) {
    expect_rejected(
        "SELECT pgtrickle.create_stream_table('x', 'SELECT id AS __pgt_row_id FROM orders')",
        "42939", "__pgt_row_id");
}

TEST_F(StreamTable, rejects_duplicate_column_names) {
    expect_rejected("SELECT pgtrickle.create_stream_table('x', 'SELECT id, id FROM orders')",
                    "42701", "\"id\"");
}

TEST_F(StreamTable, rejects_bad_schedule) {
    expect_rejected(
        "SELECT pgtrickle.create_stream_table('x', 'SELECT id FROM orders', "
        "schedule => '10 parsecs')",
        "22023", "10 parsecs");
}

TEST_F(StreamTable, accepts_every_schedule_form) {
    for (const char* s : {"calculated", "30s", "5m", "1h30m", "1d", "1w", "*/5 * * * *",
                          "0 30 9 * * MON-FRI", "@hourly"}) {
        db->exec(std::string("SELECT pgtrickle.create_stream_table('x', 'SELECT id FROM orders', "
                             "schedule => '") +
                 s + "')");
        db->exec("SELECT pgtrickle.drop_stream_table('x')");
    }
    EXPECT_EQ(leftovers(), "0/0/0/0");
}

TEST_F(StreamTable, rejects_modes_that_cannot_maintain_the_query) {
    SqlError e = db->error_of(std::string("SELECT pgtrickle.create_stream_table('x', $q$") +
                              kFullJoin + "$q$, refresh_mode => 'DIFFERENTIAL')");
    EXPECT_EQ(e.sqlstate, "0A000");
    EXPECT_NE(e.message.find("FULL JOIN"), std::string::npos) << e.message;
    EXPECT_NE(e.hint.find("FULL"), std::string::npos);
    expect_rejected(
        "SELECT pgtrickle.create_stream_table('x', 'SELECT id FROM orders UNION "
        "SELECT id + 1 FROM orders', refresh_mode => 'IMMEDIATE')",
        "0A000", "IMMEDIATE");
    expect_rejected(
        "SELECT pgtrickle.create_stream_table('x', 'SELECT id FROM orders', "
        "refresh_mode => 'sometimes')",
        "22023", "sometimes");
}

TEST_F(StreamTable, rejects_non_select_and_multiple_statements) {
    expect_rejected("SELECT pgtrickle.create_stream_table('x', 'DELETE FROM orders')", "0A000",
                    "SELECT");
    expect_rejected("SELECT pgtrickle.create_stream_table('x', 'SELECT 1; SELECT 2')", "42601",
                    "one statement");
    expect_rejected(
        "SELECT pgtrickle.create_stream_table('x', "
        "'WITH d AS (DELETE FROM orders RETURNING id) SELECT id FROM d')",
        "0A000", "data-modifying");
    EXPECT_EQ(count("SELECT * FROM orders"), 4) << "a rejected query must not have run";
}

TEST_F(StreamTable, rejects_null_arguments_and_unknown_stream_tables) {
    expect_rejected("SELECT pgtrickle.create_stream_table(NULL, 'SELECT 1 AS a')", "22004", "name");
    expect_rejected("SELECT pgtrickle.refresh_stream_table('orders')", "42809",
                    "not a stream table");
    expect_rejected("SELECT pgtrickle.refresh_stream_table('missing')", "42P01", "missing");
    expect_rejected("SELECT pgtrickle.drop_stream_table('missing')", "42P01", "missing");
}

TEST_F(StreamTable, non_owner_cannot_refresh_alter_or_drop) {
    db->exec("SELECT pgtrickle.create_stream_table('o', 'SELECT id FROM orders')");
    db->exec("CREATE ROLE intruder; GRANT USAGE ON SCHEMA pgtrickle TO intruder");
    db->exec("SET ROLE intruder");
    for (const char* call : {"SELECT pgtrickle.refresh_stream_table('o')",
                             "SELECT pgtrickle.alter_stream_table('o', schedule => '1m')",
                             "SELECT pgtrickle.drop_stream_table('o')"}) {
        EXPECT_EQ(db->error_of(call).sqlstate, "42501") << call;
    }
    db->exec("RESET ROLE; DROP OWNED BY intruder; DROP ROLE intruder");
}

}  // namespace
}  // namespace pgt::e2e

namespace pgt::e2e {
namespace {

// A role without superuser rights creates, refreshes, alters and drops its
// own stream table; the catalog stays writable only through the API.
TEST_F(StreamTable, non_superuser_owner_manages_own_stream_table) {
    db->exec(
        "CREATE ROLE analyst; GRANT CREATE ON SCHEMA public TO analyst;"
        "GRANT SELECT ON orders TO analyst");
    db->exec("SET ROLE analyst");
    db->exec("SELECT pgtrickle.create_stream_table('mine', 'SELECT id, amount FROM orders')");
    EXPECT_EQ(db->scalar("SELECT tableowner FROM pg_tables WHERE tablename = 'mine'"), "analyst");
    EXPECT_EQ(db->error_of("DELETE FROM pgtrickle.pgt_stream_tables").sqlstate, "42501");
    db->exec("RESET ROLE; INSERT INTO orders VALUES (9, 2, 3.5); SET ROLE analyst");
    db->exec("SELECT pgtrickle.refresh_stream_table('mine')");
    EXPECT_MATCHES_QUERY(*db, "mine");
    db->exec("SELECT pgtrickle.alter_stream_table('mine', schedule => '2m')");
    db->exec("SELECT pgtrickle.drop_stream_table('mine')");
    db->exec("RESET ROLE");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_stream_tables"), "0");
    db->exec("DROP OWNED BY analyst; DROP ROLE analyst");
}

}  // namespace
}  // namespace pgt::e2e

namespace pgt::e2e {
namespace {

class Identity : public StreamTable {
protected:
    // domain|identity columns|unique probe index?
    std::string shape(const std::string& st) {
        return db->scalar(
            "SELECT s.row_identity_domain || '|' || array_to_string(s.row_identity_columns, ',') "
            "|| '|' || i.indisunique FROM pgtrickle.pgt_stream_tables s JOIN pg_index i ON "
            "i.indrelid = s.pgt_relid WHERE s.pgt_relid = $1::regclass",
            {st});
    }
    // Rows whose stored identity or probe differ from a recomputation.
    long wrong_ids(const std::string& st, const std::string& expr) {
        return count("SELECT 1 FROM " + st + " WHERE __pgt_row_id IS DISTINCT FROM " + expr +
                     " OR __pgt_row_probe IS DISTINCT FROM pgtrickle.row_probe_v1(__pgt_row_id)");
    }
};

TEST_F(Identity, primary_key_in_output_gives_scan_key_and_unique_probe) {
    db->exec("SELECT pgtrickle.create_stream_table('o', 'SELECT amount, id FROM orders')");
    EXPECT_EQ(shape("o"), "scan_key|id|true");
    EXPECT_EQ(wrong_ids("o", "pgtrickle.encode_row_id_v2('scan_key', ROW(id))"), 0);
    db->exec("UPDATE orders SET amount = amount + 1; SELECT pgtrickle.refresh_stream_table('o')");
    EXPECT_MATCHES_QUERY(*db, "o");
}

TEST_F(Identity, unbounded_key_type_gets_a_non_unique_probe_index) {
    db->exec(
        "CREATE TABLE tags (tag text PRIMARY KEY, n int);"
        "INSERT INTO tags VALUES ('a', 1), (repeat('x', 400), 2)");
    db->exec("SELECT pgtrickle.create_stream_table('t', 'SELECT tag, n FROM tags')");
    EXPECT_EQ(shape("t"), "scan_key|tag|false");
    EXPECT_EQ(wrong_ids("t", "pgtrickle.encode_row_id_v2('scan_key', ROW(tag))"), 0);
    EXPECT_EQ(db->scalar("SELECT max(length(__pgt_row_probe)) FROM t"), "272");
    EXPECT_MATCHES_QUERY(*db, "t");
}

TEST_F(Identity, group_by_columns_give_group_key) {
    db->exec(std::string("SELECT pgtrickle.create_stream_table('g', $q$") + kTotals + "$q$)");
    EXPECT_EQ(shape("g"), "group_key|region|false");  // text: unbounded, so not unique
    EXPECT_EQ(wrong_ids("g", "pgtrickle.encode_row_id_v2('group_key', ROW(region))"), 0);
    EXPECT_MATCHES_QUERY(*db, "g");
}

TEST_F(Identity, bounded_group_key_gets_unique_probe_index) {
    db->exec(
        "SELECT pgtrickle.create_stream_table('g', "
        "'SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id')");
    EXPECT_EQ(shape("g"), "group_key|customer_id|true");
    EXPECT_MATCHES_QUERY(*db, "g");
}

TEST_F(Identity, scalar_aggregate_is_a_synthetic_singleton) {
    db->exec(
        "SELECT pgtrickle.create_stream_table('s', 'SELECT count(*) AS n, sum(amount) AS total "
        "FROM orders')");
    EXPECT_EQ(shape("s"), "synthetic||true");
    EXPECT_EQ(wrong_ids("s",
                        "pgtrickle.encode_row_id_v2('synthetic', "
                        "'scalar_aggregate_singleton', ROW())"),
              0);
    EXPECT_MATCHES_QUERY(*db, "s");
}

TEST_F(Identity, unproven_key_is_keyless_row_and_keeps_duplicates) {
    db->exec("SELECT pgtrickle.create_stream_table('k', 'SELECT customer_id FROM orders')");
    EXPECT_EQ(shape("k"), "keyless_row|customer_id|false");
    EXPECT_EQ(wrong_ids("k", "pgtrickle.encode_row_id_v2('keyless_row', ROW(customer_id))"), 0);
    EXPECT_EQ(count("SELECT * FROM k WHERE customer_id = 1"), 2);
    EXPECT_MATCHES_QUERY(*db, "k");
}

// An order joined to its customer by the customer's primary key meets one
// customer at most: the order's key stays the join's key. Without the
// order's key selected, or joined on what is not a key, rows are counted.
TEST_F(Identity, join_on_a_unique_key_keeps_the_other_sides_key) {
    db->exec(
        "SELECT pgtrickle.create_stream_table('j', 'SELECT o.id, c.name FROM orders o "
        "JOIN customers c ON c.id = o.customer_id');"
        "SELECT pgtrickle.create_stream_table('n', 'SELECT c.name FROM orders o "
        "JOIN customers c ON c.id = o.customer_id');"
        "SELECT pgtrickle.create_stream_table('x', 'SELECT o.id, c.name FROM orders o "
        "JOIN customers c ON c.id >= o.customer_id')");
    EXPECT_EQ(shape("j"), "scan_key|id|true");
    EXPECT_EQ(wrong_ids("j", "pgtrickle.encode_row_id_v2('scan_key', ROW(id))"), 0);
    EXPECT_EQ(shape("n"), "keyless_row|name|false");
    EXPECT_EQ(shape("x"), "keyless_row|id,name|false");
    EXPECT_MATCHES_QUERY(*db, "j");
    EXPECT_MATCHES_QUERY(*db, "n");
    EXPECT_MATCHES_QUERY(*db, "x");
}

TEST_F(Identity, refresh_refuses_other_identity_versions) {
    db->exec("SELECT pgtrickle.create_stream_table('o', 'SELECT id FROM orders')");
    db->exec("UPDATE pgtrickle.pgt_stream_tables SET row_identity_version = 1");
    SqlError e = db->error_of("SELECT pgtrickle.refresh_stream_table('o')");
    EXPECT_EQ(e.sqlstate, "55000");
    EXPECT_NE(e.message.find("row identity version 1"), std::string::npos) << e.message;
    EXPECT_FALSE(e.hint.empty());
    db->exec(
        "UPDATE pgtrickle.pgt_stream_tables SET row_identity_version = 2, "
        "row_probe_version = 7");
    EXPECT_EQ(db->error_of("SELECT pgtrickle.refresh_stream_table('o')").sqlstate, "55000");
}

TEST_F(Identity, alter_to_other_identity_shape_rebuilds_storage) {
    db->exec("SELECT pgtrickle.create_stream_table('o', 'SELECT id, amount FROM orders')");
    db->exec(
        "SELECT pgtrickle.alter_stream_table('o', query => "
        "'SELECT customer_id AS id, sum(amount) AS amount FROM orders GROUP BY customer_id')");
    EXPECT_EQ(shape("o"), "group_key|id|true");
    EXPECT_MATCHES_QUERY(*db, "o");
}

}  // namespace
}  // namespace pgt::e2e

namespace pgt::e2e {
namespace {

// EC-25/26: only a refresh writes a stream table; every direct write is
// refused before it changes anything, in FULL and DIFFERENTIAL mode.
TEST_F(StreamTable, ec25_direct_writes_to_stream_tables_are_refused) {
    db->exec(
        "SELECT pgtrickle.create_stream_table('f', 'SELECT id, amount FROM orders', "
        "refresh_mode => 'FULL')");
    db->exec(
        "SELECT pgtrickle.create_stream_table('d', 'SELECT id, amount FROM orders', "
        "refresh_mode => 'DIFFERENTIAL')");
    for (const char* st : {"f", "d"}) {
        std::string t(st);
        for (const std::string& sql :
             {"INSERT INTO " + t + " (id, amount, __pgt_row_id) VALUES (99, 1, '\\x00')",
              "UPDATE " + t + " SET amount = 0", "DELETE FROM " + t, "TRUNCATE " + t}) {
            SqlError e = db->error_of(sql);
            EXPECT_EQ(e.sqlstate, "55000") << sql;
            EXPECT_NE(e.message.find("directly"), std::string::npos) << e.message;
        }
        EXPECT_MATCHES_QUERY(*db, t);
    }
    db->exec("UPDATE orders SET amount = amount + 1 WHERE id = 1");
    db->exec(
        "SELECT pgtrickle.refresh_stream_table('f'); SELECT pgtrickle.refresh_stream_table('d')");
    EXPECT_MATCHES_QUERY(*db, "f");
    EXPECT_MATCHES_QUERY(*db, "d");
}

}  // namespace
}  // namespace pgt::e2e

namespace pgt::e2e {
namespace {

// A STABLE cast whose only instability is TimeZone is maintained under the
// settings recorded at creation, without a WARNING.
TEST_F(StreamTable, differential_maintains_a_settings_only_stable_cast_and_ignores_order_by) {
    db->exec(
        "SELECT pgtrickle.create_stream_table('s', 'SELECT id, placed::timestamptz AS at "
        "FROM orders ORDER BY id', refresh_mode => 'DIFFERENTIAL')");
    EXPECT_EQ(db->notices.size(), 0u);  // a WARNING would arrive through the notice receiver
    db->exec("INSERT INTO orders VALUES (7, 1, 3, '2026-03-01')");
    db->exec("SELECT pgtrickle.refresh_stream_table('s')");
    EXPECT_EQ(db->scalar("SELECT action FROM pgtrickle.pgt_refresh_history "
                         "ORDER BY refresh_id DESC LIMIT 1"),
              "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "s");
}

TEST_F(StreamTable, differential_without_initialize_recomputes_on_first_refresh) {
    db->exec(
        "SELECT pgtrickle.create_stream_table('s', 'SELECT id, amount FROM orders', "
        "refresh_mode => 'DIFFERENTIAL', initialize => false)");
    EXPECT_EQ(count("SELECT * FROM s"), 0);
    db->exec("INSERT INTO orders VALUES (7, 1, 3)");
    db->exec("SELECT pgtrickle.refresh_stream_table('s')");
    EXPECT_EQ(db->scalar("SELECT action FROM pgtrickle.pgt_refresh_history "
                         "ORDER BY refresh_id DESC LIMIT 1"),
              "FULL");
    EXPECT_MATCHES_QUERY(*db, "s");
    db->exec("DELETE FROM orders WHERE id = 7");
    db->exec("SELECT pgtrickle.refresh_stream_table('s')");
    EXPECT_EQ(db->scalar("SELECT action FROM pgtrickle.pgt_refresh_history "
                         "ORDER BY refresh_id DESC LIMIT 1"),
              "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "s");
}

TEST_F(StreamTable, switching_modes_sets_up_and_removes_capture) {
    db->exec(
        "SELECT pgtrickle.create_stream_table('s', 'SELECT id, amount FROM orders', "
        "refresh_mode => 'FULL')");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_sources"), "0");
    db->exec("SELECT pgtrickle.alter_stream_table('s', refresh_mode => 'DIFFERENTIAL')");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_sources"), "1");
    db->exec("UPDATE orders SET amount = 0 WHERE id = 2");
    db->exec("SELECT pgtrickle.refresh_stream_table('s')");
    EXPECT_MATCHES_QUERY(*db, "s");
    db->exec("SELECT pgtrickle.alter_stream_table('s', refresh_mode => 'FULL')");
    EXPECT_TRUE(db->notices.empty()) << db->notices.front();
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_sources"), "0");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'pgt_capture%'"), "0");
    EXPECT_MATCHES_QUERY(*db, "s");
}

}  // namespace
}  // namespace pgt::e2e

namespace pgt::e2e {
namespace {

// The buffer holds only the columns consumers read; an UPDATE of other
// columns is not captured; a consumer reading more columns widens it.
TEST_F(StreamTable, capture_holds_only_referenced_columns_and_widens) {
    db->exec(
        "SELECT pgtrickle.create_stream_table('a', 'SELECT id, amount FROM orders "
        "WHERE amount > 2', refresh_mode => 'DIFFERENTIAL')");
    std::string buffer = db->scalar("SELECT buffer_name FROM pgtrickle.pgt_sources");
    EXPECT_EQ(
        db->scalar("SELECT array_to_string(captured_columns, ',') FROM pgtrickle.pgt_sources"),
        "1,3");
    db->exec("UPDATE orders SET placed = '2026-02-02'");
    EXPECT_EQ(count("SELECT * FROM " + buffer), 0)
        << "an unread column changed: nothing to capture";
    db->exec("UPDATE orders SET amount = amount + 1 WHERE id = 4");
    EXPECT_EQ(count("SELECT * FROM " + buffer), 1);
    db->exec(
        "SELECT pgtrickle.create_stream_table('b', 'SELECT id, placed FROM orders', "
        "refresh_mode => 'DIFFERENTIAL')");
    EXPECT_EQ(
        db->scalar("SELECT array_to_string(captured_columns, ',') FROM pgtrickle.pgt_sources"),
        "1,3,4");
    db->exec(
        "UPDATE orders SET placed = '2026-03-03' WHERE id = 1; "
        "INSERT INTO orders VALUES (9, 2, 50, '2026-04-04')");
    db->exec(
        "SELECT pgtrickle.refresh_stream_table('a'); SELECT pgtrickle.refresh_stream_table('b')");
    EXPECT_MATCHES_QUERY(*db, "a");
    EXPECT_MATCHES_QUERY(*db, "b");
    EXPECT_EQ(count("SELECT * FROM " + buffer), 0);
}

}  // namespace
}  // namespace pgt::e2e

namespace pgt::e2e {
namespace {

// encode_row_id_v2(domain, ROW(...)) is planned as the field-wise form; both
// forms give the same bytes for every row.
TEST_F(Identity, row_constructor_is_rewritten_and_gives_the_same_bytes) {
    std::string plan = db->exec(
                             "EXPLAIN (VERBOSE, COSTS OFF) SELECT pgtrickle.encode_row_id_v2("
                             "'keyless_row', ROW(id, amount, placed)) FROM orders")
                           .at(1, 0);
    EXPECT_NE(plan.find("_encode_row_id_v2_fields"), std::string::npos) << plan;
    EXPECT_EQ(count("SELECT 1 FROM (SELECT id, amount, placed, ROW(id, amount, placed) AS r "
                    "FROM orders OFFSET 0) s WHERE pgtrickle.encode_row_id_v2('keyless_row', "
                    "ROW(s.id, s.amount, s.placed)) IS DISTINCT FROM "
                    "pgtrickle.encode_row_id_v2('keyless_row', s.r)"),
              0);
    EXPECT_EQ(count("SELECT 1 FROM orders"), 4);
}

TEST_F(StreamTable, alter_that_would_form_a_cycle_is_refused_with_the_path) {
    db->exec("SELECT pgtrickle.create_stream_table('a', 'SELECT id, amount FROM orders')");
    db->exec("SELECT pgtrickle.create_stream_table('b', 'SELECT id, amount FROM a')");
    db->exec("SELECT pgtrickle.create_stream_table('c', 'SELECT id, amount FROM b')");
    SqlError e = db->error_of(
        "SELECT pgtrickle.alter_stream_table('a', query => 'SELECT id, amount FROM c')");
    EXPECT_EQ(e.sqlstate, "3F000");
    EXPECT_EQ(e.message, "stream table cycle detected");
    EXPECT_NE(e.detail.find("public.a -> public.b -> public.c -> public.a"), std::string::npos)
        << e.detail;
    SqlError self = db->error_of(
        "SELECT pgtrickle.alter_stream_table('b', query => 'SELECT id, amount FROM b')");
    EXPECT_EQ(self.sqlstate, "3F000");
    EXPECT_MATCHES_QUERY(*db, "a");  // unchanged: still reads orders
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_dependencies d JOIN "
                         "pgtrickle.pgt_stream_tables s USING (pgt_id) WHERE s.pgt_name = 'a' AND "
                         "d.source_relid = 'orders'::regclass"),
              "1");
}

}  // namespace
}  // namespace pgt::e2e
