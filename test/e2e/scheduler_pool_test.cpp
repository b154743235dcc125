// The scheduler's pool of workers: 50 databases with a 1 s stream table
// each, on a cluster of its own with PostgreSQL's default
// max_worker_processes (8) and pg_trickle.max_scheduler_workers at its
// default (4). Every database must be refreshed by the scheduler after a
// change, no more than 4 scheduler workers may run at once, no WARNING may
// repeat, and health_check() must say why a database has no worker now.
// Invariant: waits are polling loops with generous deadlines; nothing
// asserts on how long a refresh took.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "eventually.hpp"
#include "oracle.hpp"
#include "own_cluster.hpp"
#include "pg_conn.hpp"

namespace pgt::e2e {
namespace {

using namespace std::chrono_literals;

constexpr int kDatabases = 50;

class SchedulerPool : public OwnClusterTest {
protected:
    static std::string name(int i) { return "pool_" + std::to_string(i); }

    // Scheduler workers running now, and the most seen so far.
    int workers_now(Conn& admin) {
        const int n = std::stoi(admin.scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_trickle scheduler'"));
        most_workers_ = std::max(most_workers_, n);
        return n;
    }

    int most_workers_ = 0;
};

TEST_F(SchedulerPool, fifty_databases_share_four_workers_and_all_stay_fresh) {
    cluster_.start(PGT_E2E_WORKDIR "/scheduler_pool", /*scheduler=*/true);
    Conn admin(cluster_.conninfo());
    ASSERT_EQ(admin.scalar("SHOW max_worker_processes"), "8");
    ASSERT_EQ(admin.scalar("SHOW pg_trickle.max_scheduler_workers"), "4");
    for (int i = 0; i < kDatabases; i++) {
        admin.exec("CREATE DATABASE " + name(i));
        Conn db(cluster_.conninfo(name(i)));
        db.exec(
            "CREATE EXTENSION pg_trickle;"
            "CREATE TABLE src (id int PRIMARY KEY, v int);"
            "INSERT INTO src VALUES (1, 1);"
            "SELECT pgtrickle.create_stream_table('st', 'SELECT id, v FROM src', '1s', "
            "'DIFFERENTIAL')");
        (void)workers_now(admin);
    }
    // A change in every database reaches its stream table through the
    // scheduler.
    for (int i = 0; i < kDatabases; i++) {
        Conn(cluster_.conninfo(name(i)))
            .exec("INSERT INTO src VALUES (2, " + std::to_string(i) + ")");
    }
    std::vector<bool> fresh(kDatabases, false);
    int remaining = kDatabases;
    const auto deadline = std::chrono::steady_clock::now() + 180s;
    while (remaining > 0 && std::chrono::steady_clock::now() < deadline) {
        for (int i = 0; i < kDatabases; i++) {
            if (fresh[i]) {
                continue;
            }
            Conn db(cluster_.conninfo(name(i)));
            if (db.scalar("SELECT count(*) FROM pgtrickle.pgt_refresh_history WHERE "
                          "initiated_by = 'SCHEDULER' AND action = 'DIFFERENTIAL'") != "0" &&
                matches_query(db, "st")) {
                fresh[i] = true;
                remaining--;
            }
        }
        (void)workers_now(admin);
        std::this_thread::sleep_for(200ms);
    }
    for (int i = 0; i < kDatabases; i++) {
        EXPECT_TRUE(fresh[i]) << name(i) << " was not refreshed by the scheduler";
    }
    EXPECT_LE(most_workers_, 4);
    EXPECT_GE(most_workers_, 1);
    // A database without a worker now says why; none is left unserved.
    for (int i = 0; i < kDatabases; i++) {
        Conn db(cluster_.conninfo(name(i)));
        Result r = db.exec(
            "SELECT ok, detail FROM pgtrickle.health_check() WHERE check_name = 'scheduler'");
        EXPECT_EQ(r.at(0, 0), "t") << name(i) << ": " << r.at(0, 1);
        EXPECT_EQ(r.at(0, 1).find("no scheduler worker runs"), std::string::npos)
            << name(i) << ": " << r.at(0, 1);
    }
    EXPECT_EQ(cluster_.log_lines("could not start a scheduler"), "");
    EXPECT_EQ(cluster_.log_lines("WARNING"), "");
}

}  // namespace
}  // namespace pgt::e2e
