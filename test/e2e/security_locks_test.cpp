// Attacks through locks (/work/shared/notes/security.md, "Locks"): the keys
// of pg_trickle's locks are computable from its catalog, so they must be
// locks no SQL statement can take. mallory has no privilege on alice's
// tables; she takes session advisory locks on every key the catalog gives
// her and holds them. Scheduled refreshes that are skipped again and again
// (a lock a trusted role holds) are reported by health_check().
// Invariant: every data-changing test checks the oracle as the owner.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster.hpp"
#include "eventually.hpp"
#include "fixture.hpp"
#include "planted.hpp"

namespace pgt::e2e {
namespace {

// The two int4 classes pg_trickle's advisory locks used ("PGTI" IMMEDIATE
// writers, "PGTT" refreshes), object key pgt_id: what an attacker reads
// from the catalog and the source. Held as session locks, then they last.
constexpr const char* kAttackerLocks =
    "SELECT pg_catalog.count(pg_catalog.pg_advisory_lock(c.k, s.pgt_id::int)) "
    "FROM pgtrickle.pgt_stream_tables s, (VALUES (1346851913), (1346851924)) c(k)";

// alice's schema with a table t(id, grp, v) of 100 rows in 5 groups.
void make_alice_data(Conn& su) {
    planted::reset_roles(su);
    su.exec(
        "CREATE SCHEMA alice AUTHORIZATION alice;"
        "CREATE TABLE alice.t (id int PRIMARY KEY, grp int NOT NULL, v int NOT NULL);"
        "ALTER TABLE alice.t OWNER TO alice;"
        "INSERT INTO alice.t SELECT g, g % 5, g FROM generate_series(1, 100) g");
}

void drop_alice_data(Conn& su) {
    su.exec("ROLLBACK");
    su.exec("RESET ROLE");
    su.exec("DROP OWNED BY alice, mallory");
}

class SecurityLocks : public DbTest {
protected:
    void SetUp() override {
        DbTest::SetUp();
        make_alice_data(*db);
    }
    void TearDown() override {
        if (db) {
            drop_alice_data(*db);
        }
        DbTest::TearDown();
    }
    std::unique_ptr<Conn> session(const std::string& role) {
        auto c = std::make_unique<Conn>(conninfo());
        c->exec("SET ROLE " + role);
        return c;
    }
    ::testing::AssertionResult matches_as_alice(const std::string& st) {
        db->exec("SET ROLE alice");
        ::testing::AssertionResult r = matches_query(*db, st);
        db->exec("RESET ROLE");
        return r;
    }
};

// Attack: mallory holds the IMMEDIATE writers' lock keys of alice's stream
// tables (an algebraic aggregate: shared lock plus one lock per group; a
// MIN/MAX aggregate: one writer at a time). alice's writes must not wait.
TEST_F(SecurityLocks, advisory_locks_on_catalog_keys_block_no_immediate_writer) {
    auto alice = session("alice");
    alice->exec(
        "SELECT pgtrickle.create_stream_table('alice.sums', 'SELECT grp, sum(v) AS s, count(*) "
        "AS c FROM alice.t GROUP BY grp', refresh_mode => 'IMMEDIATE');"
        "SELECT pgtrickle.create_stream_table('alice.tops', 'SELECT grp, max(v) AS m FROM "
        "alice.t GROUP BY grp', refresh_mode => 'IMMEDIATE')");
    auto mallory = session("mallory");
    EXPECT_EQ(mallory->scalar(kAttackerLocks), "4");

    alice->exec("SET lock_timeout = '2s'");
    alice->exec("BEGIN");
    EXPECT_EQ(sqlstate_of(*alice, "UPDATE alice.t SET v = v + 1000 WHERE id IN (1, 2, 7)"), "");
    EXPECT_EQ(sqlstate_of(*alice, "INSERT INTO alice.t VALUES (101, 9, 5)"), "");
    // While alice's transaction is open: the locks it holds are none a SQL
    // advisory function can take (objsubid 1 and 2 are theirs).
    const std::string pid = std::to_string(alice->backend_pid());
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pg_catalog.pg_locks WHERE pid = $1 AND locktype "
                         "= 'advisory' AND objsubid IN (1, 2)",
                         {pid}),
              "0");
    EXPECT_NE(db->scalar("SELECT count(*) FROM pg_catalog.pg_locks WHERE pid = $1 AND locktype "
                         "= 'advisory' AND granted",
                         {pid}),
              "0");
    alice->exec("COMMIT");
    for (const char* st : {"alice.sums", "alice.tops"}) {
        EXPECT_EQ(modes(st), "IMMEDIATE/IMMEDIATE") << st;
        EXPECT_TRUE(matches_as_alice(st)) << st;
    }
    EXPECT_EQ(db->scalar("SELECT s FROM alice.sums WHERE grp = 9"), "5");
}

// Attack: mallory holds the refresh lock keys of alice's DIFFERENTIAL
// stream table; alice's own refresh must not wait for her.
TEST_F(SecurityLocks, advisory_locks_on_catalog_keys_block_no_refresh) {
    auto alice = session("alice");
    alice->exec(
        "SELECT pgtrickle.create_stream_table('alice.sums', 'SELECT grp, sum(v) AS s FROM "
        "alice.t GROUP BY grp', refresh_mode => 'DIFFERENTIAL')");
    auto mallory = session("mallory");
    EXPECT_EQ(mallory->scalar(kAttackerLocks), "2");
    alice->exec("UPDATE alice.t SET v = 0 WHERE grp = 3");
    alice->exec("SET lock_timeout = '2s'");
    EXPECT_EQ(sqlstate_of(*alice, "SELECT pgtrickle.refresh_stream_table('alice.sums')"), "");
    EXPECT_EQ(last_action("alice.sums"), "DIFFERENTIAL");
    EXPECT_TRUE(matches_as_alice("alice.sums"));
}

// --- The scheduler ------------------------------------------------------------

Cluster& locks_cluster() {
    static Cluster c;
    return c;
}

class SecurityLocksScheduler : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        const char* dir = std::getenv("PGT_E2E_WORKDIR");
        locks_cluster().start(
            std::string(dir != nullptr ? dir : PGT_E2E_WORKDIR) + "/security_locks_scheduler",
            true);
        Conn admin(locks_cluster().conninfo("postgres"));
        // Skips come fast; the tests need several.
        admin.exec("ALTER SYSTEM SET pg_trickle.lock_timeout = '200ms'");
        admin.exec("SELECT pg_reload_conf()");
    }
    static void TearDownTestSuite() {
        locks_cluster().stop();
        std::string crashes = locks_cluster().crash_lines();
        if (!crashes.empty()) {
            ADD_FAILURE() << "scheduler cluster's log shows a crash:\n" << crashes;
        }
    }
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dbname_ = (std::string("sl_") + info->name()).substr(0, 63);
        Conn admin(locks_cluster().conninfo("postgres"));
        admin.exec("DROP DATABASE IF EXISTS \"" + dbname_ + "\" WITH (FORCE)");
        admin.exec("CREATE DATABASE \"" + dbname_ + "\"");
        db = std::make_unique<Conn>(locks_cluster().conninfo(dbname_));
        db->exec("CREATE EXTENSION pg_trickle");
        make_alice_data(*db);
        ASSERT_TRUE(eventually(
            [&] {
                Conn fresh(locks_cluster().conninfo(dbname_));
                return fresh.scalar("SHOW pg_trickle.lock_timeout") == "200ms";
            },
            "pg_trickle.lock_timeout = 200ms after reload"));
    }
    void TearDown() override {
        if (db) {
            drop_alice_data(*db);
        }
        db.reset();
        if (!HasFailure()) {
            Conn admin(locks_cluster().conninfo("postgres"));
            admin.exec("DROP DATABASE IF EXISTS \"" + dbname_ + "\" WITH (FORCE)");
        }
    }
    std::unique_ptr<Conn> session(const std::string& role) {
        auto c = std::make_unique<Conn>(locks_cluster().conninfo(dbname_));
        c->exec("SET ROLE " + role);
        return c;
    }
    void create_scheduled(Conn& alice) {
        alice.exec(
            "SELECT pgtrickle.create_stream_table('alice.sums', 'SELECT grp, sum(v) AS s FROM "
            "alice.t GROUP BY grp', '1s', 'DIFFERENTIAL')");
    }
    long history(const std::string& where) {
        return std::stol(db->scalar(
            "SELECT count(*) FROM pgtrickle.pgt_refresh_history h JOIN "
            "pgtrickle.pgt_stream_tables s USING (pgt_id) WHERE s.pgt_name = 'sums' AND " +
            where));
    }
    std::string skipped_check() {
        return db->scalar(
            "SELECT CASE WHEN ok THEN 't' ELSE 'f' END || '|' || detail FROM "
            "pgtrickle.health_check() WHERE check_name = "
            "'skipped_refreshes'");
    }
    bool sums_match() {
        db->exec("SET ROLE alice");
        const bool ok = matches_query(*db, "alice.sums");
        db->exec("RESET ROLE");
        return ok;
    }

    std::unique_ptr<Conn> db;
    std::string dbname_;
};

// Attack: mallory holds the lock keys of alice's scheduled stream table;
// its refreshes must go on, none skipped.
TEST_F(SecurityLocksScheduler, advisory_locks_on_catalog_keys_stall_no_schedule) {
    auto alice = session("alice");
    create_scheduled(*alice);
    auto mallory = session("mallory");
    EXPECT_EQ(mallory->scalar(kAttackerLocks), "2");
    alice->exec("UPDATE alice.t SET v = v + 1 WHERE grp = 2");
    EXPECT_TRUE(eventually([&] { return sums_match(); },
                           "the scheduler to refresh alice.sums while mallory holds her locks"));
    alice->exec("INSERT INTO alice.t VALUES (500, 4, 1)");
    EXPECT_TRUE(eventually([&] { return sums_match(); }, "a second scheduled refresh"));
    EXPECT_EQ(history("h.status = 'SKIPPED'"), 0);
    EXPECT_GE(history("h.initiated_by = 'SCHEDULER' AND h.status = 'SUCCESS' AND h.action = "
                      "'DIFFERENTIAL'"),
              1);
    EXPECT_EQ(skipped_check().substr(0, 2), "t|");
}

// A trusted role (here the superuser) holds a lock on the stream table: the
// scheduler skips it each time; from the third skip in a row
// health_check() names it, and stops once a refresh goes through.
TEST_F(SecurityLocksScheduler, repeated_skips_are_reported_by_health_check) {
    auto alice = session("alice");
    create_scheduled(*alice);
    EXPECT_EQ(skipped_check().substr(0, 2), "t|");
    Conn locker(locks_cluster().conninfo(dbname_));
    locker.exec("BEGIN; LOCK TABLE alice.sums IN ACCESS EXCLUSIVE MODE");
    alice->exec("UPDATE alice.t SET v = v + 1 WHERE grp = 1");
    EXPECT_TRUE(eventually([&] { return history("h.status = 'SKIPPED'") >= 3; },
                           "three skipped refreshes of alice.sums"));
    const std::string check = skipped_check();
    EXPECT_EQ(check.substr(0, 2), "f|") << check;
    EXPECT_NE(check.find("alice.sums ("), std::string::npos) << check;
    EXPECT_NE(check.find("pg_trickle.lock_timeout"), std::string::npos) << check;
    locker.exec("COMMIT");
    EXPECT_TRUE(eventually([&] { return sums_match(); }, "alice.sums to catch up"));
    EXPECT_TRUE(eventually([&] { return skipped_check().substr(0, 2) == "t|"; },
                           "health_check to clear skipped_refreshes"));
    EXPECT_GE(history("h.status = 'SUCCESS' AND h.action = 'DIFFERENTIAL'"), 1);
}

}  // namespace
}  // namespace pgt::e2e
