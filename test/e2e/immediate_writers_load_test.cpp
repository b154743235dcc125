// IMMEDIATE under concurrent multi-row writers (issue 45, finding 10): 8
// sessions whose transactions update 50 rows of a and 30 rows of b in two
// statements, a first or b first at random, over an IMMEDIATE aggregate of
// a (10 groups) and an IMMEDIATE join of b with a keyed by b.id. Each
// session writes rows of its own (id % 8), so a deadlock (40P01) can only
// come from locks pg_trickle takes, never from the writers' own rows.
// The full-size run with shared rows is bench/immediate_writers/bench.sh.
// Invariant: both stream tables equal their queries at the end, and each
// session's statements were applied incrementally (no recompute).
#include <atomic>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fixture.hpp"

namespace pgt::e2e {
namespace {

constexpr int kWriters = 8;
constexpr int kRows = 20000;  // of a and of b
constexpr const char* kAgg = "SELECT grp, sum(v) AS s, count(*) AS c FROM a GROUP BY grp";
constexpr const char* kJoin = "SELECT b.id, b.w, a.v FROM b JOIN a ON a.id = b.a_id";

struct Outcome {
    std::atomic<int> committed{0}, deadlocks{0};
    std::mutex m;
    std::vector<std::string> other_errors, counters;
};

class ImmediateWritersLoad : public DbTest {
protected:
    void SetUp() override {
        DbTest::SetUp();
        db->exec(
            "CREATE TABLE a (id int PRIMARY KEY, grp int NOT NULL, v bigint NOT NULL);"
            "INSERT INTO a SELECT g, g % 10, g FROM generate_series(1, " +
            std::to_string(kRows) +
            ") g;"
            "CREATE TABLE b (id int PRIMARY KEY, a_id int NOT NULL, w bigint NOT NULL);"
            "INSERT INTO b SELECT g, 1 + (g * 7919) % " +
            std::to_string(kRows) + ", g FROM generate_series(1, " + std::to_string(kRows) +
            ") g; ANALYZE a; ANALYZE b");
    }

    void create(const std::string& name, const std::string& query) {
        db->exec("SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => 'IMMEDIATE')",
                 {name, query});
        ASSERT_EQ(modes(name), "IMMEDIATE/IMMEDIATE");
    }

    // n ids of this writer's own rows (id % kWriters == writer), as an array.
    static std::string ids(std::mt19937& rng, int writer, int n) {
        std::uniform_int_distribution<int> pick(0, kRows / kWriters - 1);
        std::string out = "{";
        for (int i = 0; i < n; i++) {
            out += (i ? "," : "") + std::to_string(1 + writer + kWriters * pick(rng));
        }
        return out + "}";
    }

    // One writer's session: `txns` transactions, then its counters of the
    // stream tables it maintained ("name:incremental/recomputed").
    void writer(int w, int txns, bool both_orders, const std::vector<std::string>& sts,
                unsigned seed, Outcome& out) {
        Conn c(conninfo());
        std::mt19937 rng(seed + static_cast<unsigned>(w));
        for (int i = 0; i < txns; i++) {
            const std::string ua =
                "UPDATE a SET v = v + 1 WHERE id = ANY('" + ids(rng, w, 50) + "'::int[])";
            const std::string ub =
                "UPDATE b SET w = w + 1 WHERE id = ANY('" + ids(rng, w, 30) + "'::int[])";
            const bool b_first = both_orders && (rng() & 1);
            try {
                c.exec("BEGIN");
                c.exec(b_first ? ub : ua);
                c.exec(b_first ? ua : ub);
                c.exec("COMMIT");
                out.committed++;
            } catch (const SqlError& e) {
                c.exec("ROLLBACK");
                if (e.sqlstate == "40P01") {
                    out.deadlocks++;
                } else {
                    std::lock_guard<std::mutex> g(out.m);
                    out.other_errors.push_back(e.sqlstate + ": " + e.message);
                }
            }
        }
        for (const std::string& st : sts) {
            const std::string n = c.scalar(
                "SELECT incremental || '/' || recomputed FROM "
                "pgtrickle._immediate_counters($1)",
                {st});
            std::lock_guard<std::mutex> g(out.m);
            out.counters.push_back(st + ":" + n);
        }
    }

    // Runs the writers; the seed is printed so that a run can be replayed
    // (PGT_LOAD_SEED).
    void run(int txns, bool both_orders, const std::vector<std::string>& sts, Outcome& out) {
        const char* env = std::getenv("PGT_LOAD_SEED");
        const unsigned seed =
            env != nullptr ? static_cast<unsigned>(std::stoul(env)) : std::random_device{}();
        std::cout << "[ seed ] PGT_LOAD_SEED=" << seed << "\n";
        std::vector<std::thread> threads;
        for (int w = 0; w < kWriters; w++) {
            threads.emplace_back([&, w] { writer(w, txns, both_orders, sts, seed, out); });
        }
        for (std::thread& t : threads) {
            t.join();
        }
        std::cout << "[ load ] committed " << out.committed << ", deadlocks " << out.deadlocks
                  << "\n";
    }

    void expect_incremental(const Outcome& out) {
        for (const std::string& c : out.counters) {
            EXPECT_EQ(c.substr(c.rfind('/')), "/0") << "a statement recomputed: " << c;
            EXPECT_NE(c.substr(c.find(':'), 3), ":0/") << "nothing applied: " << c;
        }
    }
};

// The join alone, both orders: a transaction writing b (the key's table)
// and then a used to hold the join's lock shared and then wait to hold it
// alone, as did the other transactions doing the same.
TEST_F(ImmediateWritersLoad, join_writers_in_both_orders_never_deadlock) {
    create("j", kJoin);
    Outcome out;
    run(25, true, {"j"}, out);
    EXPECT_TRUE(out.other_errors.empty()) << out.other_errors.front();
    EXPECT_EQ(out.deadlocks, 0);
    EXPECT_EQ(out.committed, kWriters * 25);
    expect_incremental(out);
    EXPECT_MATCHES_QUERY(*db, "j");
}

// Aggregate and join, every transaction writing a first: one order of the
// stream tables' locks in every transaction.
TEST_F(ImmediateWritersLoad, aggregate_and_join_in_one_order_never_deadlock) {
    create("agg", kAgg);
    create("j", kJoin);
    Outcome out;
    run(25, false, {"agg", "j"}, out);
    EXPECT_TRUE(out.other_errors.empty()) << out.other_errors.front();
    EXPECT_EQ(out.deadlocks, 0);
    expect_incremental(out);
    EXPECT_MATCHES_QUERY(*db, "agg");
    EXPECT_MATCHES_QUERY(*db, "j");
}

// Aggregate and join, both orders: a transaction writing b first holds the
// join's lock when its statement on a takes the aggregate's group locks;
// one writing a first took its group locks before waiting for the join's
// lock. Every statement now takes its stream tables' locks before its
// rows and group locks.
TEST_F(ImmediateWritersLoad, aggregate_and_join_in_both_orders_never_deadlock) {
    create("agg", kAgg);
    create("j", kJoin);
    Outcome out;
    run(25, true, {"agg", "j"}, out);
    EXPECT_TRUE(out.other_errors.empty()) << out.other_errors.front();
    EXPECT_EQ(out.deadlocks, 0);
    EXPECT_EQ(out.committed, kWriters * 25);
    expect_incremental(out);
    EXPECT_MATCHES_QUERY(*db, "agg");
    EXPECT_MATCHES_QUERY(*db, "j");
}

}  // namespace
}  // namespace pgt::e2e
