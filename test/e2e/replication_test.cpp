// Logical replication with two clusters on this machine, both ways:
// a stream table published as it is (its replica identity is set at
// creation, so its refreshes keep working under a publication), and a
// stream table on a subscriber over a replicated table (capture fires
// under session_replication_role = replica, which the apply worker uses).
// Invariant: every refresh is checked with the oracle and its action; the
// subscriber's copy is compared with the publisher's stream table.
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

}  // namespace
}  // namespace pgt::e2e
