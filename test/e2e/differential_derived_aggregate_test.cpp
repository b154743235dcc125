// Aggregates over a grouped derived table that read its aggregates outside
// their own aggregates — grouped by them (TPC-H q13: customers per count of
// orders), filtered on them, averaged by a key — maintained through the
// derived table's change as signed rows: its touched groups now (+1) and
// before the change (-1), each table before it read from its change
// images by its unique key (core/diff/derived, pg/analyze/derived_aggregate).
// Invariant: after every round of random changes each stream table equals
// its query, and the refresh that ran was the one asserted.
#include <random>
#include <string>
#include <vector>

#include "construct_cases.hpp"

namespace pgt::e2e {
namespace {

const char* kSchema =
    "CREATE TABLE cu (id int PRIMARY KEY, seg int NOT NULL);"
    "CREATE TABLE od (id int PRIMARY KEY, cu int, amt int NOT NULL, note text NOT NULL);"
    "CREATE INDEX ON od (cu);"
    "CREATE TABLE pair (a int, b int, w int, PRIMARY KEY (a, b));"
    "CREATE TABLE logs (cu int, v int);"  // no unique key
    "INSERT INTO cu SELECT g, g % 4 FROM generate_series(1, 60) g;"
    "INSERT INTO od SELECT g, 1 + (g * 7) % 70, g % 13, CASE WHEN g % 5 = 0 THEN 'special "
    "requests' ELSE 'plain' END FROM generate_series(1, 300) g;"
    "INSERT INTO pair SELECT g % 9, g, g % 5 FROM generate_series(1, 80) g;"
    "INSERT INTO logs SELECT g % 20, g FROM generate_series(1, 100) g;"
    "CREATE VIEW per_cu AS SELECT cu, count(*) AS n, sum(amt) AS total FROM od GROUP BY cu";

const std::vector<ConstructCase> kCases = {
    // TPC-H q13: a LEFT JOIN grouped per customer, counted per count.
    {"q13_shape",
     "SELECT c_count, count(*) AS custdist FROM (SELECT c.id, count(o.id) FROM cu c LEFT JOIN "
     "od o ON c.id = o.cu AND o.note NOT LIKE '%special%' GROUP BY c.id) AS c_orders (c_id, "
     "c_count) GROUP BY c_count"},
    // One table: how many customers have n orders.
    {"histogram",
     "SELECT n, count(*) AS customers FROM (SELECT cu, count(*) AS n FROM od GROUP "
     "BY cu) d GROUP BY n"},
    // Filtered on an aggregate, grouped by a key, averaged.
    {"filtered_on_total",
     "SELECT seg, count(*) AS big, sum(total) AS s, avg(total) AS mean FROM (SELECT c.id, c.seg, "
     "sum(o.amt) AS total FROM cu c JOIN od o ON o.cu = c.id GROUP BY c.id, c.seg) d WHERE total "
     "> 20 GROUP BY seg"},
    // A WITH query and a view as the derived table; HAVING inside it.
    {"with_buckets",
     "WITH per AS (SELECT cu, sum(amt) AS total, count(*) AS n FROM od GROUP BY cu HAVING "
     "count(*) > 1) SELECT total % 5 AS bucket, count(*) AS k, sum(n) AS orders FROM per GROUP BY "
     "total % 5"},
    {"view_counts", "SELECT n, count(*) AS k, max(total) AS top FROM per_cu GROUP BY n"},
    // One row; MIN/MAX over the derived rows (a group that lost its extreme
    // is read again).
    {"overall",
     "SELECT count(*) AS groups, min(n) AS least, max(n) AS most FROM (SELECT cu, "
     "count(*) AS n FROM od WHERE cu IS NOT NULL GROUP BY cu) d WHERE n > 2"},
    // A source keyed by two columns.
    {"pair_weights",
     "SELECT w, count(*) AS k FROM (SELECT a, sum(w) AS w FROM pair GROUP BY a) d "
     "GROUP BY w"},
};

class DifferentialDerivedAggregate : public ConstructTest {
protected:
    const char* schema() const override { return kSchema; }

    void change(std::mt19937& rng, int round) {
        std::uniform_int_distribution<int> od(1, 320), cu(1, 72), amt(0, 12), pick(0, 4);
        const std::string r = std::to_string(round);
        auto n = [&](std::uniform_int_distribution<int>& d) { return std::to_string(d(rng)); };
        db->exec("INSERT INTO od VALUES (1000 + $1, $2, $3, 'plain'), (2000 + $1, NULL, 1, 'x')",
                 {r, n(cu), n(amt)});
        db->exec("UPDATE od SET cu = $2, amt = $3 WHERE id = $1", {n(od), n(cu), n(amt)});
        db->exec(
            "UPDATE od SET note = CASE WHEN note = 'plain' THEN 'special requests' ELSE "
            "'plain' END WHERE id % 5 = $1",
            {n(pick)});
        db->exec("DELETE FROM od WHERE id = $1 OR cu = $2", {n(od), n(cu)});
        db->exec("INSERT INTO cu VALUES (100 + $1, $2) ON CONFLICT DO NOTHING", {r, n(pick)});
        db->exec("UPDATE cu SET id = id + 500 WHERE id = $1", {n(cu)});  // a key moves
        db->exec("UPDATE cu SET seg = $2 WHERE id = $1", {n(cu), n(pick)});
        db->exec("DELETE FROM cu WHERE id = $1", {n(cu)});
        db->exec("UPDATE pair SET w = w + 1 WHERE a = $1", {n(pick)});
        db->exec("DELETE FROM pair WHERE b = $1", {n(od)});
        db->exec("INSERT INTO pair VALUES ($1, 500 + $2, $3)", {n(pick), r, n(pick)});
    }
};

TEST_F(DifferentialDerivedAggregate, aggregates_over_derived_aggregates_differentially) {
    run_cases(
        kCases, "DIFFERENTIAL", [&](std::mt19937& rng, int round) { change(rng, round); }, 8);
}

TEST_F(DifferentialDerivedAggregate, aggregates_over_derived_aggregates_immediately) {
    run_cases(kCases, "IMMEDIATE", [&](std::mt19937& rng, int round) { change(rng, round); });
}

// The strategy that runs, and FULL refreshes between DIFFERENTIAL ones (the
// state before a change is read from the tables and images, never kept).
TEST_F(DifferentialDerivedAggregate, full_refreshes_between_differential_ones_stay_exact) {
    db->exec("SELECT pgtrickle.create_stream_table('h', $1, refresh_mode => 'DIFFERENTIAL')",
             {kCases[0].query});
    EXPECT_EQ(db->scalar("SELECT value FROM pgtrickle.explain_st('h') WHERE property = "
                         "'strategy'"),
              "algebraic_derived");
    full_refreshes_between("h", [&](std::mt19937& rng, int round) { change(rng, round); });
}

// Creation advises an index where the derived table's join probes a table
// by a column no index serves (its branches read one table's changes and
// look the others up).
TEST_F(DifferentialDerivedAggregate, creation_advises_the_index_a_join_inside_would_probe) {
    db->exec("CREATE TABLE lines (id int PRIMARY KEY, cu int NOT NULL, qty int NOT NULL)");
    db->notices.clear();
    db->exec(
        "SELECT pgtrickle.create_stream_table('per_seg', 'SELECT seg, n, count(*) AS k FROM "
        "(SELECT c.id, c.seg, count(*) AS n FROM cu c JOIN lines l ON l.cu = c.id GROUP BY c.id, "
        "c.seg) d GROUP BY seg, n', refresh_mode => 'DIFFERENTIAL')");
    bool advised = false;
    for (const std::string& m : db->notices) {
        advised = advised || m.find("no index on public.lines serves the join columns (cu)") !=
                                 std::string::npos;
    }
    EXPECT_TRUE(advised);
    db->exec("INSERT INTO lines SELECT g, 1 + g % 50, g FROM generate_series(1, 200) g");
    refresh("per_seg");
    EXPECT_EQ(last_action("per_seg"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "per_seg");
}

// A source without a unique key (its state before a change cannot be told
// from its images), and aggregates read elsewhere than a lone derived
// table: AUTO recomputes.
TEST_F(DifferentialDerivedAggregate, without_a_source_key_or_a_lone_derived_table_recomputed) {
    expect_recomputed(
        {"SELECT n, count(*) AS k FROM (SELECT cu, count(*) AS n FROM logs GROUP BY cu) d GROUP "
         "BY n",
         "SELECT c.seg, d.n FROM (SELECT cu, count(*) AS n FROM od GROUP BY cu) d JOIN cu c ON "
         "c.id = d.cu",
         "SELECT n, count(*) AS k FROM (SELECT cu, count(*) AS n FROM od GROUP BY cu) d GROUP BY "
         "n HAVING count(*) > 1"},
        "UPDATE od SET cu = cu + 1 WHERE id < 40; UPDATE logs SET cu = cu + 1 WHERE v < 30");
    // DIFFERENTIAL names the table without a key.
    const SqlError e = db->error_of(
        "SELECT pgtrickle.create_stream_table('no_key', 'SELECT n, count(*) AS k FROM (SELECT cu, "
        "count(*) AS n FROM logs GROUP BY cu) d GROUP BY n', refresh_mode => 'DIFFERENTIAL')");
    EXPECT_EQ(e.sqlstate, "0A000");
    EXPECT_NE(e.message.find("\"public.logs\" has no primary key"), std::string::npos) << e.message;
    // What keeps the derived table itself from DIFFERENTIAL is named.
    const SqlError inner = db->error_of(
        "SELECT pgtrickle.create_stream_table('inner_blocked', 'SELECT n, count(*) AS k FROM "
        "(SELECT cu, count(*) AS n FROM od WHERE now() > ''2020-01-01'' GROUP BY cu) d GROUP BY "
        "n', refresh_mode => 'DIFFERENTIAL')");
    EXPECT_EQ(inner.sqlstate, "0A000");
    EXPECT_NE(inner.message.find(
                  "function now(), whose value can change while no source table changes (in a "
                  "subquery in FROM)"),
              std::string::npos)
        << inner.message;
}

}  // namespace
}  // namespace pgt::e2e
