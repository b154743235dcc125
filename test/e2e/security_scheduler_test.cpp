// Attacks on the scheduler as a shared resource: a reader pinning the
// owner's change buffer, a slow or hostile stream table starving the
// others, the launcher or a scheduler worker terminated by an
// administrator. Roles: alice owns data, bob reads it (SELECT only).
// Invariant: every data-changing test checks the oracle as the stream
// table's owner, and waits on recorded outcomes (history rows, statuses,
// pids), never on tight wall-clock durations.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster.hpp"
#include "eventually.hpp"
#include "planted.hpp"
#include "oracle.hpp"
#include "pg_conn.hpp"

namespace pgt::e2e {
namespace {

using namespace std::chrono_literals;

Cluster& limits_cluster() {
    static Cluster c;
    return c;
}

// The settings a test may change cluster-wide, reset after each test.
constexpr const char* kSettings[] = {"pg_trickle.max_buffer_retention",
                                     "pg_trickle.refresh_timeout"};

class SecuritySchedulerLimits : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        const char* dir = std::getenv("PGT_E2E_WORKDIR");
        limits_cluster().start(
            std::string(dir != nullptr ? dir : PGT_E2E_WORKDIR) + "/security_scheduler_limits",
            true);
    }
    static void TearDownTestSuite() {
        limits_cluster().stop();
        std::string crashes = limits_cluster().crash_lines();
        if (!crashes.empty()) {
            ADD_FAILURE() << "scheduler limits cluster's log shows a crash:\n" << crashes;
        }
    }

    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dbname_ = (std::string("sl_") + info->name()).substr(0, 63);
        Conn admin(limits_cluster().conninfo("postgres"));
        admin.exec("DROP DATABASE IF EXISTS \"" + dbname_ + "\" WITH (FORCE)");
        admin.exec("CREATE DATABASE \"" + dbname_ + "\"");
        db = std::make_unique<Conn>(limits_cluster().conninfo(dbname_));
        db->exec("CREATE EXTENSION pg_trickle");
        planted::reset_roles(*db);
        db->exec(
            "GRANT CREATE, USAGE ON SCHEMA public TO alice, bob;"
            "CREATE SCHEMA alice AUTHORIZATION alice; GRANT USAGE ON SCHEMA alice TO bob");
    }

    void TearDown() override {
        try {
            Conn admin(limits_cluster().conninfo("postgres"));
            for (const char* s : kSettings) {
                (void)error_in(admin, std::string("ALTER SYSTEM RESET ") + s);
            }
            admin.exec("SELECT pg_reload_conf()");
            admin.exec("ALTER ROLE alice RESET ALL; ALTER ROLE bob RESET ALL");
        } catch (const std::exception& e) {
            ADD_FAILURE() << "resetting the settings failed: " << e.what();
        }
        db.reset();
        if (HasFailure()) {
            return;  // kept for inspection
        }
        Conn admin(limits_cluster().conninfo("postgres"));
        admin.exec("DROP DATABASE IF EXISTS \"" + dbname_ + "\" WITH (FORCE)");
        admin.exec("DROP OWNED BY alice, bob");
    }

    // ALTER SYSTEM SET name = value, reloaded and seen by a new session.
    ::testing::AssertionResult set_system(const std::string& name, const std::string& value) {
        std::optional<SqlError> e =
            error_in(*db, "ALTER SYSTEM SET " + name + " = '" + value + "'");
        if (e) {
            return ::testing::AssertionFailure() << name << " cannot be set: " << e->message;
        }
        db->exec("SELECT pg_reload_conf()");
        return eventually(
            [&] {
                Conn fresh(limits_cluster().conninfo(dbname_));
                return fresh.scalar("SELECT pg_catalog.current_setting($1)", {name}) == value;
            },
            name + " = " + value + " after reload");
    }

    std::unique_ptr<Conn> session(const std::string& role) {
        auto c = std::make_unique<Conn>(limits_cluster().conninfo(dbname_));
        c->exec("SET ROLE " + role);
        return c;
    }

    ::testing::AssertionResult matches_as(const std::string& owner, const std::string& st) {
        auto c = session(owner);
        return matches_query(*c, st);
    }

    std::string pgt_id(const std::string& name) {
        return db->scalar("SELECT pgt_id FROM pgtrickle.pgt_stream_tables WHERE pgt_name = $1",
                          {name});
    }

    long history_count(const std::string& id, const std::string& where) {
        return std::stol(db->scalar(
            "SELECT count(*) FROM pgtrickle.pgt_refresh_history WHERE pgt_id = $1 AND " + where,
            {id}));
    }

    // The pid of a pg_trickle background process ("" when none runs);
    // `datname`: a scheduler worker's database.
    std::string process_pid(const std::string& type, const std::string& datname = "") {
        Conn admin(limits_cluster().conninfo("postgres"));
        return admin.scalar(
            "SELECT COALESCE(pg_catalog.min(pid)::text, '') FROM pg_catalog.pg_stat_activity "
            "WHERE backend_type = $1 AND ($2 = '' OR datname = $2)",
            {type, datname});
    }

    std::unique_ptr<Conn> db;
    std::string dbname_;
};

// Finding 8: bob, with SELECT only, creates a DIFFERENTIAL stream table
// over alice's captured table and suspends it. His frontier must not keep
// alice's change buffer growing: past pg_trickle.max_buffer_retention rows
// captured since his frontier he is dropped from the buffer (marked for
// reinitialisation, shown by health_check) and the buffer is trimmed.
// Resumed, his stream table recomputes and equals its query.
TEST_F(SecuritySchedulerLimits, suspended_reader_cannot_pin_the_owners_buffer) {
    ASSERT_TRUE(set_system("pg_trickle.max_buffer_retention", "2000"));
    auto alice = session("alice");
    alice->exec(
        "CREATE TABLE alice.t (id int PRIMARY KEY, v int);"
        "INSERT INTO alice.t SELECT g, g FROM generate_series(1, 10) g;"
        "GRANT SELECT ON alice.t TO bob;"
        "SELECT pgtrickle.create_stream_table('alice.mine', 'SELECT id, v FROM alice.t', '1s', "
        "'DIFFERENTIAL')");
    auto bob = session("bob");
    bob->exec(
        "SELECT pgtrickle.create_stream_table('public.reader', 'SELECT id, v FROM alice.t', '1s', "
        "'DIFFERENTIAL');"
        "SELECT pgtrickle.alter_stream_table('public.reader', status => 'SUSPENDED')");
    const std::string buffer = db->scalar(
        "SELECT buffer_name FROM pgtrickle.pgt_sources WHERE source_relid = "
        "'alice.t'::regclass");
    // 5,000 rows in steps alice's own 1-second table keeps up with: only
    // bob's reader falls more than 2,000 rows behind.
    for (int round = 0; round < 10; round++) {
        const int lo = 100 + round * 500;
        alice->exec("INSERT INTO alice.t SELECT g, g FROM generate_series(" + std::to_string(lo) +
                    ", " + std::to_string(lo + 499) + ") g");
        EXPECT_TRUE(eventually([&] { return bool(matches_as("alice", "alice.mine")); },
                               "alice's own stream table keeps up"));
    }
    EXPECT_TRUE(
        eventually([&] { return db->scalar("SELECT count(*) < 500 FROM " + buffer) == "t"; },
                   "alice's buffer trimmed past bob's suspended reader"));
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_stream_tables WHERE pgt_name = "
                         "'mine' AND reinit_reason IS NOT NULL"),
              "0");
    EXPECT_EQ(db->scalar("SELECT reinit_reason IS NOT NULL FROM pgtrickle.pgt_stream_tables "
                         "WHERE pgt_name = 'reader'"),
              "t");
    EXPECT_EQ(db->scalar("SELECT ok::text || ' ' || detail FROM pgtrickle.health_check() WHERE "
                         "check_name = 'buffer_retention'")
                  .substr(0, 6),
              "false ");
    EXPECT_NE(db->scalar("SELECT detail FROM pgtrickle.health_check() WHERE check_name = "
                         "'buffer_retention'")
                  .find("public.reader"),
              std::string::npos);
    // Dropped from the buffer, it has no pending rows to count: its next
    // refresh recomputes.
    EXPECT_EQ(db->scalar("SELECT coalesce(pending_rows::text, 'none') FROM "
                         "pgtrickle.change_buffer_sizes() WHERE stream_table = 'public.reader'"),
              "none");
    EXPECT_TRUE(eventually([&] { return bool(matches_as("alice", "alice.mine")); },
                           "alice's own stream table up to date"));

    bob->exec("SELECT pgtrickle.alter_stream_table('public.reader', status => 'ACTIVE')");
    const std::string reader = pgt_id("reader");
    EXPECT_TRUE(eventually(
        [&] {
            return history_count(reader,
                                 "initiated_by = 'SCHEDULER' AND status = 'SUCCESS' AND action = "
                                 "'FULL'") > 0;
        },
        "bob's reader recomputed by the scheduler"));
    EXPECT_TRUE(matches_as("bob", "public.reader"));
    alice->exec("UPDATE alice.t SET v = v + 1 WHERE id % 7 = 0");
    EXPECT_TRUE(eventually([&] { return bool(matches_as("bob", "public.reader")); },
                           "bob's reader follows alice's next change"));
    EXPECT_TRUE(matches_as("alice", "alice.mine"));
    EXPECT_EQ(
        db->scalar("SELECT ok FROM pgtrickle.health_check() WHERE check_name = 'buffer_retention'"),
        "t");
}

// The hostile table of findings 9: bob's FULL stream table calls his
// function, which sleeps 30 s once he arms it.
void create_hostile(Conn& bob) {
    bob.exec(R"sql(
CREATE TABLE public.bob_src (id int PRIMARY KEY);
INSERT INTO public.bob_src VALUES (1);
CREATE TABLE public.bob_switch (armed boolean);
INSERT INTO public.bob_switch VALUES (false);
CREATE FUNCTION public.bob_slow(x int) RETURNS int LANGUAGE plpgsql AS $f$
BEGIN
  IF (SELECT armed FROM public.bob_switch) THEN PERFORM pg_catalog.pg_sleep(30); END IF;
  RETURN x;
END $f$;
SELECT pgtrickle.create_stream_table('public.hostile',
  'SELECT id, public.bob_slow(id) AS v FROM public.bob_src', '1s', 'FULL');
)sql");
}

// alice's 1-second table, and rounds of her writes: each must reach her
// stream table within a bound that a 30-second refresh would break.
void alice_stays_fresh(Conn& alice, const std::string& what) {
    for (int round = 0; round < 4; round++) {
        const auto began = std::chrono::steady_clock::now();
        alice.exec("INSERT INTO alice.fast VALUES (" + std::to_string(100 + round) + ", 1)");
        EXPECT_TRUE(eventually(
            [&] {
                return alice.scalar("SELECT count(*) FROM alice.fast_st WHERE id = " +
                                    std::to_string(100 + round)) == "1";
            },
            what + ": alice's row " + std::to_string(round) + " reaches her 1-second table", 15s));
        // Printed for the record, not asserted (machines differ).
        std::cout << what << ": round " << round << " visible after "
                  << std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - began)
                         .count()
                  << " ms\n";
    }
}

// Finding 9: bob's slow FULL table next to alice's 1-second table. With
// pg_trickle.refresh_timeout his scheduled refresh is cancelled (recorded
// as FAILED with the statement timeout, backing off) and alice's table
// stays fresh.
TEST_F(SecuritySchedulerLimits, hostile_slow_refresh_is_cancelled_and_others_stay_fresh) {
    ASSERT_TRUE(set_system("pg_trickle.refresh_timeout", "2s"));
    auto alice = session("alice");
    alice->exec(
        "CREATE TABLE alice.fast (id int PRIMARY KEY, v int); INSERT INTO alice.fast VALUES (1, 1);"
        "SELECT pgtrickle.create_stream_table('alice.fast_st', 'SELECT id, v FROM alice.fast', "
        "'1s', 'DIFFERENTIAL')");
    auto bob = session("bob");
    create_hostile(*bob);
    const std::string hostile = pgt_id("hostile");
    bob->exec("UPDATE public.bob_switch SET armed = true");
    EXPECT_TRUE(eventually(
        [&] {
            return history_count(hostile,
                                 "status = 'FAILED' AND initiated_by = 'SCHEDULER' AND "
                                 "error_message LIKE '57014:%statement timeout%'") > 0;
        },
        "bob's refresh cancelled by pg_trickle.refresh_timeout", 60s));
    alice_stays_fresh(*alice, "refresh_timeout 2s");
    EXPECT_TRUE(matches_as("alice", "alice.fast_st"));
    const std::string fast = pgt_id("fast_st");
    EXPECT_GT(history_count(fast,
                            "status = 'SUCCESS' AND initiated_by = 'SCHEDULER' AND action = "
                            "'DIFFERENTIAL'"),
              0);
    // A timed-out refresh is a retryable failure: back-off, no suspension.
    EXPECT_EQ(
        db->scalar("SELECT status FROM pgtrickle.pgt_stream_tables WHERE pgt_id = $1", {hostile}),
        "ACTIVE");
    bob->exec("UPDATE public.bob_switch SET armed = false");
    bob->exec("SELECT pgtrickle.refresh_stream_table('public.hostile')");
    EXPECT_TRUE(matches_as("bob", "public.hostile"));
}

// Finding 9: a statement_timeout set on the owner's role, or on the
// database, bounds the scheduled refreshes of the owner's stream tables
// (PostgreSQL does not apply it to background workers by itself).
TEST_F(SecuritySchedulerLimits, owner_and_database_statement_timeout_bound_scheduled_refresh) {
    auto bob = session("bob");
    create_hostile(*bob);
    const std::string hostile = pgt_id("hostile");
    const std::string timed_out =
        "status = 'FAILED' AND initiated_by = 'SCHEDULER' AND error_message LIKE "
        "'57014:%statement timeout%'";
    db->exec("ALTER ROLE bob SET statement_timeout = '1500ms'");
    bob->exec("UPDATE public.bob_switch SET armed = true");
    EXPECT_TRUE(eventually([&] { return history_count(hostile, timed_out) > 0; },
                           "bob's refresh cancelled by his role's statement_timeout", 60s));
    db->exec("ALTER ROLE bob RESET statement_timeout");
    db->exec("ALTER DATABASE \"" + dbname_ + "\" SET statement_timeout = '1500ms'");
    const long before = history_count(hostile, timed_out);
    EXPECT_TRUE(eventually([&] { return history_count(hostile, timed_out) > before; },
                           "bob's refresh cancelled by the database's statement_timeout", 120s));
    db->exec("ALTER DATABASE \"" + dbname_ + "\" RESET statement_timeout");
    bob->exec("UPDATE public.bob_switch SET armed = false");
    bob->exec("SELECT pgtrickle.refresh_stream_table('public.hostile')");
    EXPECT_TRUE(matches_as("bob", "public.hostile"));
}

// Finding 11: an administrator's pg_terminate_backend of the launcher, and
// then of this database's scheduler worker. Both come back (the postmaster
// restarts the launcher, which adopts the workers it did not start), the
// stop is logged, and the stream table keeps refreshing.
TEST_F(SecuritySchedulerLimits, terminated_launcher_and_worker_come_back) {
    db->exec(
        "CREATE TABLE src (id int PRIMARY KEY, v int); INSERT INTO src VALUES (1, 1);"
        "SELECT pgtrickle.create_stream_table('st', 'SELECT id, v FROM src', '1s', "
        "'DIFFERENTIAL')");
    std::string worker;
    ASSERT_TRUE(
        eventually([&] { return !(worker = process_pid("pg_trickle scheduler", dbname_)).empty(); },
                   "a scheduler worker for this database"));
    const std::string launcher = process_pid("pg_trickle launcher");
    ASSERT_FALSE(launcher.empty());
    db->exec("SELECT pg_terminate_backend($1::int)", {launcher});
    std::string relaunched;
    EXPECT_TRUE(eventually(
        [&] {
            relaunched = process_pid("pg_trickle launcher");
            return !relaunched.empty() && relaunched != launcher;
        },
        "a new launcher after pg_terminate_backend", 60s));
    EXPECT_NE(limits_cluster().log_lines("terminating background worker \"pg_trickle launcher\""),
              "");
    db->exec("INSERT INTO src VALUES (2, 2)");
    EXPECT_TRUE(eventually([&] { return bool(matches_query(*db, "st")); },
                           "st refreshed after the launcher's restart"));

    db->exec("SELECT pg_terminate_backend($1::int)", {worker});
    EXPECT_TRUE(eventually(
        [&] {
            std::string now = process_pid("pg_trickle scheduler", dbname_);
            return !now.empty() && now != worker;
        },
        "a new scheduler worker after pg_terminate_backend", 60s));
    db->exec("INSERT INTO src VALUES (3, 3)");
    EXPECT_TRUE(eventually([&] { return bool(matches_query(*db, "st")); },
                           "st refreshed by the new worker"));
    EXPECT_NE(db->scalar("SELECT count(*) FROM pgtrickle.pgt_refresh_history h JOIN "
                         "pgtrickle.pgt_stream_tables s USING (pgt_id) WHERE s.pgt_name = 'st' "
                         "AND h.initiated_by = 'SCHEDULER' AND h.action = 'DIFFERENTIAL'"),
              "0");
}

}  // namespace
}  // namespace pgt::e2e
