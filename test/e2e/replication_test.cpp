// Logical replication with two clusters on this machine, both ways:
// a stream table published as it is (its replica identity is set at
// creation, so its refreshes keep working under a publication), and a
// stream table on a subscriber over a replicated table (capture fires
// under session_replication_role = replica, which the apply worker uses).
// IMMEDIATE cannot follow the apply worker (it fires no statement trigger):
// refused over a subscription's table, and one made before the
// subscription stops the worker's writes with an error.
// Invariant: every refresh is checked with the oracle and its action; the
// subscriber's copy is compared with the publisher's stream table; a
// stream table never quietly differs from its query.
#include <chrono>
#include <string>
#include <thread>

#include "eventually.hpp"
#include "fixture.hpp"
#include "oracle.hpp"

namespace pgt::e2e {
namespace {

class Replication : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        pub_cluster().start(std::string(PGT_E2E_WORKDIR) + "/logical_pub", false, true, true);
        sub_cluster().start(std::string(PGT_E2E_WORKDIR) + "/logical_sub");
    }
    static void TearDownTestSuite() {
        pub_cluster().stop();
        sub_cluster().stop();
        for (Cluster* c : {&pub_cluster(), &sub_cluster()}) {
            std::string crashes = c->crash_lines();
            if (!crashes.empty()) {
                ADD_FAILURE() << "a replication cluster's log shows a crash:\n" << crashes;
            }
        }
    }
    static Cluster& pub_cluster() {
        static Cluster c;
        return c;
    }
    static Cluster& sub_cluster() {
        static Cluster c;
        return c;
    }
    // A session on a new, empty database `name` of cluster c.
    static Conn fresh_db(Cluster& c, const std::string& name) {
        Conn admin(c.conninfo());
        admin.exec("DROP DATABASE IF EXISTS " + name);
        admin.exec("CREATE DATABASE " + name);
        return Conn(c.conninfo(name));
    }
    // Subscription `sub` on `on` to publication `pub` of database `db` of
    // the publisher cluster.
    static void subscribe(Conn& on, const std::string& sub, const std::string& db,
                          const std::string& pub) {
        on.exec("CREATE SUBSCRIPTION " + sub + " CONNECTION 'host=" + pub_cluster().socket_dir() +
                " port=" + std::to_string(pub_cluster().port()) + " user=postgres dbname=" + db +
                "' PUBLICATION " + pub);
    }
    static std::string rows(Conn& c, const std::string& sql) {
        return c.scalar("SELECT coalesce(string_agg(r::text, ',' ORDER BY r::text), '') FROM (" +
                        sql + ") r");
    }
    static std::string modes(Conn& c, const std::string& st) {
        return c.scalar(
            "SELECT requested_mode || '/' || refresh_mode FROM pgtrickle.pgt_stream_tables "
            "WHERE pgt_relid = $1::regclass",
            {st});
    }
    // Whether every table of subscription `sub` is synchronised (ready).
    static bool synced(Conn& c, const std::string& sub) {
        return c.scalar(
                   "SELECT bool_and(r.srsubstate = 'r') FROM pg_subscription_rel r JOIN "
                   "pg_subscription s ON s.oid = r.srsubid WHERE s.subname = $1",
                   {sub}) == "t";
    }
    // Errors of subscription `sub`'s apply (`apply`) or table
    // synchronisation (`sync`) workers so far.
    static long worker_errors(Conn& c, const std::string& sub, const std::string& kind) {
        return std::stol(c.scalar("SELECT coalesce(sum(" + kind +
                                      "_error_count), 0) FROM pg_stat_subscription_stats WHERE "
                                      "subname = $1",
                                  {sub}));
    }
    static std::string action(Conn& c, const std::string& st) {
        return c.scalar(
            "SELECT h.action FROM pgtrickle.pgt_refresh_history h JOIN "
            "pgtrickle.pgt_stream_tables s USING (pgt_id) WHERE s.pgt_relid = $1::regclass "
            "ORDER BY h.refresh_id DESC LIMIT 1",
            {st});
    }
};

// Finding 2: publishing a stream table broke its refresh ("cannot delete
// from table ... because it does not have a replica identity"). Every
// stream table is REPLICA IDENTITY FULL; the subscriber's copy finds rows
// by __pgt_row_id where the identity is a key (its own unique index).
TEST_F(Replication, published_stream_tables_refresh_and_replicate) {
    Conn pub = fresh_db(pub_cluster(), "pubdb");
    pub.exec(
        "CREATE EXTENSION pg_trickle;"
        "CREATE TABLE t (id int PRIMARY KEY, grp int, v int);"
        "INSERT INTO t SELECT g, g % 4, g FROM generate_series(1, 40) g");
    pub.exec(
        "SELECT pgtrickle.create_stream_table('keyed', 'SELECT id, v FROM t WHERE v > 5', "
        "refresh_mode => 'DIFFERENTIAL')");
    pub.exec(
        "SELECT pgtrickle.create_stream_table('keyless', 'SELECT grp, v FROM t', "
        "refresh_mode => 'DIFFERENTIAL')");
    EXPECT_EQ(
        pub.scalar("SELECT string_agg(relname || ':' || relreplident::text, ',' ORDER BY relname) "
                   "FROM pg_class WHERE relname IN ('keyed', 'keyless')"),
        "keyed:f,keyless:f");
    pub.exec("CREATE PUBLICATION st_pub FOR TABLE keyed, keyless");

    Conn sub = fresh_db(sub_cluster(), "subdb");
    sub.exec(
        "CREATE TABLE keyed (id int, v int, __pgt_row_id bytea NOT NULL);"
        "CREATE UNIQUE INDEX keyed_row ON keyed (__pgt_row_id);"
        "ALTER TABLE keyed REPLICA IDENTITY USING INDEX keyed_row;"
        "CREATE TABLE keyless (grp int, v int, __pgt_row_id bytea);"
        "ALTER TABLE keyless REPLICA IDENTITY FULL");
    subscribe(sub, "st_sub", "pubdb", "st_pub");
    auto caught_up = [&] {
        return rows(sub, "SELECT id, v FROM keyed") == rows(pub, "SELECT id, v FROM keyed") &&
               rows(sub, "SELECT grp, v FROM keyless") == rows(pub, "SELECT grp, v FROM keyless");
    };
    ASSERT_TRUE(eventually(caught_up, "the initial copy"));
    for (int round = 0; round < 2; round++) {
        pub.exec("UPDATE t SET v = v + 3 WHERE id % 5 = " + std::to_string(round) +
                 "; DELETE FROM t WHERE id = " + std::to_string(30 + round) +
                 "; INSERT INTO t VALUES (" + std::to_string(100 + round) + ", 1, 50)");
        for (const char* st : {"keyed", "keyless"}) {
            pub.exec("SELECT pgtrickle.refresh_stream_table($1)", {st});
            EXPECT_EQ(action(pub, st), "DIFFERENTIAL") << st;
            EXPECT_MATCHES_QUERY(pub, st);
        }
        EXPECT_TRUE(eventually(caught_up, "the subscriber to follow the refreshes"));
    }
    sub.exec("DROP SUBSCRIPTION st_sub");
}

// A stream table on a subscriber over a replicated table follows the
// changes the apply worker writes (session_replication_role = replica).
TEST_F(Replication, subscriber_stream_table_follows_replicated_changes) {
    Conn pub = fresh_db(pub_cluster(), "srcdb");
    pub.exec(
        "CREATE TABLE orders (id int PRIMARY KEY, region text, amount int);"
        "INSERT INTO orders SELECT g, 'r' || g % 3, g FROM generate_series(1, 30) g;"
        "CREATE PUBLICATION orders_pub FOR TABLE orders");
    Conn sub = fresh_db(sub_cluster(), "replicadb");
    sub.exec(
        "CREATE EXTENSION pg_trickle;"
        "CREATE TABLE orders (id int PRIMARY KEY, region text, amount int)");
    subscribe(sub, "orders_sub", "srcdb", "orders_pub");
    ASSERT_TRUE(
        eventually([&] { return sub.scalar("SELECT count(*) FROM orders") == "30"; }, "the copy"));
    sub.exec(
        "SELECT pgtrickle.create_stream_table('by_region', 'SELECT region, count(*) AS n, "
        "sum(amount) AS total FROM orders GROUP BY region', refresh_mode => 'DIFFERENTIAL')");
    pub.exec(
        "UPDATE orders SET amount = amount * 2 WHERE id < 10; DELETE FROM orders WHERE id = 20;"
        "INSERT INTO orders VALUES (31, 'r9', 5)");
    ASSERT_TRUE(eventually([&] { return sub.scalar("SELECT count(*) FROM orders") == "30"; },
                           "the changes to arrive"));
    ASSERT_TRUE(
        eventually([&] { return sub.scalar("SELECT amount FROM orders WHERE id = 1") == "2"; },
                   "the update to arrive"));
    sub.exec("SELECT pgtrickle.refresh_stream_table('by_region')");
    EXPECT_EQ(action(sub, "by_region"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(sub, "by_region");
    sub.exec("DROP SUBSCRIPTION orders_sub");
}

// A FULL stream table on a subscriber over a replicated table: the apply
// worker fires no statement triggers, so the table's change notes cannot
// tell when the copy changed; the scheduler recomputes it at every due time
// instead of trusting them, and it follows the publisher's writes.
TEST_F(Replication, subscriber_full_stream_table_follows_replicated_changes) {
    Conn pub = fresh_db(pub_cluster(), "fullsrcdb");
    pub.exec(
        "CREATE TABLE orders (id int PRIMARY KEY, region text, amount int);"
        "INSERT INTO orders SELECT g, 'r' || g % 3, g FROM generate_series(1, 30) g;"
        "CREATE PUBLICATION full_pub FOR TABLE orders");
    Conn sub = fresh_db(sub_cluster(), "fullreplicadb");
    sub.exec(
        "CREATE EXTENSION pg_trickle;"
        "CREATE TABLE orders (id int PRIMARY KEY, region text, amount int)");
    subscribe(sub, "full_sub", "fullsrcdb", "full_pub");
    ASSERT_TRUE(
        eventually([&] { return sub.scalar("SELECT count(*) FROM orders") == "30"; }, "the copy"));
    sub.exec(
        "SELECT pgtrickle.create_stream_table('by_region', 'SELECT region, sum(amount) AS total "
        "FROM orders GROUP BY region', schedule => '1s', refresh_mode => 'FULL')");
    EXPECT_EQ(sub.scalar("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'pgt_note_%'"), "1");
    sub.exec("ALTER SYSTEM SET pg_trickle.enabled = on");
    sub.exec("SELECT pg_reload_conf()");
    // The worker's first refresh of it (it trusts no note before one).
    const bool started = bool(eventually(
        [&] {
            return sub.scalar(
                       "SELECT count(*) FROM pgtrickle.pgt_refresh_history WHERE "
                       "initiated_by = 'SCHEDULER'") != "0";
        },
        "a scheduled refresh"));
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    pub.exec("UPDATE orders SET amount = amount * 2 WHERE id < 10");
    ASSERT_TRUE(
        eventually([&] { return sub.scalar("SELECT amount FROM orders WHERE id = 1") == "2"; },
                   "the update to arrive"));
    const bool followed = bool(eventually([&] { return bool(matches_query(sub, "by_region")); },
                                          "by_region to follow the replicated update"));
    sub.exec("ALTER SYSTEM RESET pg_trickle.enabled");
    sub.exec("SELECT pg_reload_conf()");
    EXPECT_TRUE(started);
    EXPECT_TRUE(followed);
    EXPECT_EQ(action(sub, "by_region"), "FULL");
    sub.exec("DROP SUBSCRIPTION full_sub");
}

// Finding 3: IMMEDIATE over a table a subscription replicates into
// followed none of the replicated rows (the apply worker fires row
// triggers only). It is refused at creation and when altered to, over the
// table itself, a join's table or a partitioned table's partition; AUTO
// and DIFFERENTIAL work there.
TEST_F(Replication, immediate_over_a_subscribed_table_is_refused) {
    Conn pub = fresh_db(pub_cluster(), "refusedsrc");
    pub.exec(
        "CREATE TABLE orders (id int PRIMARY KEY, region text, amount int);"
        "CREATE TABLE parts1 (id int PRIMARY KEY, v int);"
        "INSERT INTO orders SELECT g, 'r' || g % 3, g FROM generate_series(1, 30) g;"
        "CREATE PUBLICATION refused_pub FOR TABLE orders, parts1");
    Conn sub = fresh_db(sub_cluster(), "refuseddb");
    sub.exec(
        "CREATE EXTENSION pg_trickle;"
        "CREATE TABLE orders (id int PRIMARY KEY, region text, amount int);"
        "CREATE TABLE regions (region text PRIMARY KEY, label text);"
        "INSERT INTO regions SELECT 'r' || g, 'R' || g FROM generate_series(0, 2) g;"
        "CREATE TABLE parts (id int PRIMARY KEY, v int) PARTITION BY RANGE (id);"
        "CREATE TABLE parts0 PARTITION OF parts FOR VALUES FROM (-1000) TO (0);"
        "CREATE TABLE parts1 PARTITION OF parts FOR VALUES FROM (0) TO (1000)");
    subscribe(sub, "refused_sub", "refusedsrc", "refused_pub");
    const std::string bare =
        sub.scalar("SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal") + "/" +
        sub.scalar("SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace");
    struct Case {
        std::string query, table;
    };
    for (const Case& c : {
             Case{"SELECT region, sum(amount) AS total FROM orders GROUP BY region",
                  "table \"public.orders\", a target of subscription \"refused_sub\""},
             Case{"SELECT o.id, r.label FROM orders o JOIN regions r ON r.region = o.region",
                  "table \"public.orders\", a target of subscription \"refused_sub\""},
             Case{"SELECT id, v FROM parts",
                  "table \"public.parts\", whose partition \"public.parts1\" is a target "
                  "of subscription \"refused_sub\""},
         }) {
        SqlError e = sub.error_of("SELECT pgtrickle.create_stream_table('imm', '" + c.query +
                                  "', refresh_mode => 'IMMEDIATE')");
        EXPECT_EQ(e.sqlstate, "0A000") << c.query << ": " << e.message;
        EXPECT_NE(e.message.find(c.table), std::string::npos) << e.message;
        EXPECT_NE(e.detail.find("row triggers only"), std::string::npos) << e.detail;
        EXPECT_NE(e.hint.find("refresh_mode => 'DIFFERENTIAL'"), std::string::npos) << e.hint;
        EXPECT_EQ(sub.scalar("SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal") + "/" +
                      sub.scalar("SELECT count(*) FROM pg_class WHERE relnamespace = "
                                 "'public'::regnamespace"),
                  bare)
            << "a refused create leaves nothing behind";
    }
    // Altered to IMMEDIATE: refused, the stream table stays as it was.
    ASSERT_TRUE(eventually([&] { return synced(sub, "refused_sub"); }, "the initial copy"));
    sub.exec(
        "SELECT pgtrickle.create_stream_table('by_region', 'SELECT region, sum(amount) AS total "
        "FROM orders GROUP BY region', refresh_mode => 'DIFFERENTIAL')");
    SqlError e = sub.error_of(
        "SELECT pgtrickle.alter_stream_table('by_region', refresh_mode => 'IMMEDIATE')");
    EXPECT_EQ(e.sqlstate, "0A000") << e.message;
    EXPECT_EQ(modes(sub, "by_region"), "DIFFERENTIAL/DIFFERENTIAL");
    // AUTO never picks IMMEDIATE; a table no subscription writes still
    // takes IMMEDIATE.
    sub.exec(
        "SELECT pgtrickle.create_stream_table('auto', 'SELECT id, amount FROM orders', "
        "refresh_mode => 'AUTO');"
        "SELECT pgtrickle.create_stream_table('labels', 'SELECT label FROM regions', "
        "refresh_mode => 'IMMEDIATE')");
    EXPECT_EQ(modes(sub, "auto"), "AUTO/DIFFERENTIAL");
    EXPECT_EQ(modes(sub, "labels"), "IMMEDIATE/IMMEDIATE");
    pub.exec("UPDATE orders SET amount = amount + 1 WHERE id % 4 = 0");
    ASSERT_TRUE(
        eventually([&] { return sub.scalar("SELECT amount FROM orders WHERE id = 4") == "5"; },
                   "the update to arrive"));
    for (const char* st : {"by_region", "auto"}) {
        sub.exec("SELECT pgtrickle.refresh_stream_table($1)", {st});
        EXPECT_EQ(action(sub, st), "DIFFERENTIAL") << st;
        EXPECT_MATCHES_QUERY(sub, st);
    }
    sub.exec("DROP SUBSCRIPTION refused_sub");
}

// An IMMEDIATE stream table made before the subscription of its table: the
// apply worker's replicated INSERT fails (and is retried) instead of
// passing the stream table by; altered to DIFFERENTIAL, replication
// catches up and a refresh applies what arrived.
TEST_F(Replication, immediate_made_before_a_subscription_stops_the_apply_worker) {
    Conn sub = fresh_db(sub_cluster(), "stalldb");
    sub.exec(
        "CREATE EXTENSION pg_trickle;"
        "CREATE TABLE orders (id int PRIMARY KEY, region text, amount int);"
        "INSERT INTO orders SELECT g, 'r' || g % 3, g FROM generate_series(1, 10) g");
    sub.exec(
        "SELECT pgtrickle.create_stream_table('by_region', 'SELECT region, count(*) AS n, "
        "sum(amount) AS total FROM orders GROUP BY region', refresh_mode => 'IMMEDIATE')");
    EXPECT_EQ(sub.scalar("SELECT ok FROM pgtrickle.health_check() WHERE check_name = "
                         "'immediate_maintenance'"),
              "t");
    // Its row trigger fires under session_replication_role = replica only.
    EXPECT_EQ(sub.scalar("SELECT string_agg(tgenabled::text, '') FROM pg_trigger WHERE "
                         "tgrelid = 'orders'::regclass AND tgname LIKE 'pgt\\_immediate\\_%' "
                         "AND tgtype & 1 = 1"),
              "R");
    Conn pub = fresh_db(pub_cluster(), "stallsrc");
    pub.exec(
        "CREATE TABLE orders (id int PRIMARY KEY, region text, amount int);"
        "CREATE PUBLICATION stall_pub FOR TABLE orders");
    subscribe(sub, "stall_sub", "stallsrc", "stall_pub");
    ASSERT_TRUE(eventually([&] { return synced(sub, "stall_sub"); }, "the (empty) initial copy"));
    pub.exec("INSERT INTO orders VALUES (100, 'r1', 5), (101, 'r9', 7)");
    const bool stopped =
        bool(eventually([&] { return worker_errors(sub, "stall_sub", "apply") > 0; },
                        "the apply worker to fail on the replicated INSERT"));
    EXPECT_TRUE(stopped);
    const std::string logged = sub_cluster().log_lines(
        "IMMEDIATE stream table \"public.by_region\" cannot follow rows logical replication "
        "writes to table \"public.orders\"");
    EXPECT_FALSE(logged.empty()) << "the worker's error is in the server log";
    EXPECT_EQ(sub.scalar("SELECT count(*) FROM orders WHERE id >= 100"), "0");
    EXPECT_MATCHES_QUERY(sub, "by_region");
    // DDL that would rebuild it is refused as creating it would be.
    SqlError e = sub.error_of("ALTER TABLE orders RENAME COLUMN amount TO amt");
    EXPECT_EQ(e.sqlstate, "0A000") << e.message;
    EXPECT_NE(e.message.find("subscription \"stall_sub\""), std::string::npos) << e.message;
    // The subscriber's own writes are still maintained meanwhile.
    sub.exec("INSERT INTO orders VALUES (11, 'r2', 3); UPDATE orders SET amount = 0 WHERE id = 1");
    EXPECT_MATCHES_QUERY(sub, "by_region");
    EXPECT_EQ(sub.scalar("SELECT count(*) FROM orders WHERE id >= 100"), "0");

    sub.exec("SELECT pgtrickle.alter_stream_table('by_region', refresh_mode => 'DIFFERENTIAL')");
    EXPECT_EQ(modes(sub, "by_region"), "DIFFERENTIAL/DIFFERENTIAL");
    EXPECT_EQ(sub.scalar("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'pgt\\_immediate%'"),
              "0");
    ASSERT_TRUE(
        eventually([&] { return sub.scalar("SELECT count(*) FROM orders WHERE id >= 100") == "2"; },
                   "replication to catch up"));
    pub.exec("UPDATE orders SET amount = amount * 10; DELETE FROM orders WHERE id = 101");
    ASSERT_TRUE(
        eventually([&] { return sub.scalar("SELECT amount FROM orders WHERE id = 100") == "50"; },
                   "the update to arrive"));
    ASSERT_TRUE(
        eventually([&] { return sub.scalar("SELECT count(*) FROM orders WHERE id >= 100") == "1"; },
                   "the delete to arrive"));
    sub.exec("SELECT pgtrickle.refresh_stream_table('by_region')");
    EXPECT_EQ(action(sub, "by_region"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(sub, "by_region");
    sub.exec("DROP SUBSCRIPTION stall_sub");
}

// The same for the initial copy (the table synchronisation worker also
// applies changes row by row after it); dropping the stream table lets
// the copy through.
TEST_F(Replication, immediate_made_before_a_subscription_stops_its_initial_copy) {
    Conn pub = fresh_db(pub_cluster(), "copysrc");
    pub.exec(
        "CREATE TABLE orders (id int PRIMARY KEY, region text, amount int);"
        "INSERT INTO orders SELECT g, 'r' || g % 3, g FROM generate_series(100, 120) g;"
        "CREATE PUBLICATION copy_pub FOR TABLE orders");
    Conn sub = fresh_db(sub_cluster(), "copydb");
    sub.exec(
        "CREATE EXTENSION pg_trickle;"
        "CREATE TABLE orders (id int PRIMARY KEY, region text, amount int);"
        "INSERT INTO orders SELECT g, 'r' || g % 3, g FROM generate_series(1, 10) g");
    sub.exec(
        "SELECT pgtrickle.create_stream_table('top', 'SELECT id, amount FROM orders WHERE amount "
        "> 5', refresh_mode => 'IMMEDIATE')");
    subscribe(sub, "copy_sub", "copysrc", "copy_pub");
    const bool stopped = bool(eventually([&] { return worker_errors(sub, "copy_sub", "sync") > 0; },
                                         "the table synchronisation worker to fail on the copy"));
    EXPECT_TRUE(stopped);
    EXPECT_EQ(sub.scalar("SELECT count(*) FROM orders WHERE id >= 100"), "0");
    EXPECT_FALSE(synced(sub, "copy_sub"));
    EXPECT_MATCHES_QUERY(sub, "top");

    sub.exec("SELECT pgtrickle.drop_stream_table('top')");
    ASSERT_TRUE(eventually(
        [&] { return sub.scalar("SELECT count(*) FROM orders WHERE id >= 100") == "21"; },
        "the copy to go through"));
    sub.exec(
        "SELECT pgtrickle.create_stream_table('top', 'SELECT id, amount FROM orders WHERE amount "
        "> 5', refresh_mode => 'DIFFERENTIAL')");
    pub.exec("UPDATE orders SET amount = 0 WHERE id < 105");
    ASSERT_TRUE(
        eventually([&] { return sub.scalar("SELECT amount FROM orders WHERE id = 100") == "0"; },
                   "the update to arrive"));
    sub.exec("SELECT pgtrickle.refresh_stream_table('top')");
    EXPECT_EQ(action(sub, "top"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(sub, "top");
    sub.exec("DROP SUBSCRIPTION copy_sub");
}

// A session of the subscriber's own under session_replication_role =
// replica fires the replication row trigger too: it passes (the session's
// statements fire the statement triggers), and the stream table follows.
TEST_F(Replication, immediate_follows_a_sessions_writes_under_replica_role) {
    Conn sub = fresh_db(sub_cluster(), "replicaroledb");
    sub.exec(
        "CREATE EXTENSION pg_trickle;"
        "CREATE TABLE orders (id int PRIMARY KEY, region text, amount int);"
        "INSERT INTO orders SELECT g, 'r' || g % 3, g FROM generate_series(1, 10) g");
    sub.exec(
        "SELECT pgtrickle.create_stream_table('by_region', 'SELECT region, count(*) AS n, "
        "sum(amount) AS total FROM orders GROUP BY region', refresh_mode => 'IMMEDIATE')");
    sub.exec("SET session_replication_role = replica");
    for (const char* sql : {
             "INSERT INTO orders VALUES (11, 'r9', 4), (12, 'r1', 5)",
             "UPDATE orders SET amount = amount * 2, region = 'r0' WHERE id % 4 = 1",
             "DELETE FROM orders WHERE id IN (2, 12)",
             "COPY orders FROM PROGRAM 'echo 13,r2,6' WITH (FORMAT csv)",
             "TRUNCATE orders",
             "INSERT INTO orders VALUES (1, 'r1', 1)",
         }) {
        sub.exec(sql);
        EXPECT_MATCHES_QUERY(sub, "by_region") << sql;
    }
    sub.exec("RESET session_replication_role");
}

}  // namespace
}  // namespace pgt::e2e
