// VALUES lists of constants in FROM and in IN subqueries — the small
// mapping tables users write inline — read as written by every branch and
// recompute: no change can alter them, so the tables around them are
// maintained as without them (src/pg/analyze/join_region.cpp,
// constant_values).
// Invariant: after every round of random changes each stream table equals
// its query, and the refresh that ran was the one asserted.
#include <random>
#include <string>
#include <vector>

#include "construct_cases.hpp"

namespace pgt::e2e {
namespace {

const char* kSchema =
    "CREATE TABLE cu (id int PRIMARY KEY, phone text NOT NULL, bal int);"
    "CREATE TABLE od (id int PRIMARY KEY, cu int, amt int);"
    "CREATE INDEX ON od (cu);"
    "INSERT INTO cu SELECT g, (10 + g % 7)::text || '-' || g, g % 23 - 5 "
    "FROM generate_series(1, 120) g;"
    "INSERT INTO od SELECT g, g % 150, g % 17 FROM generate_series(1, 200) g;";

const std::vector<ConstructCase> kCases = {
    {"mapped",
     "SELECT od.id, v.label, od.amt FROM od JOIN (VALUES (0, 'none'), (1, 'low'), (2, 'mid'), "
     "(3, 'high')) v(tier, label) ON v.tier = od.amt % 4"},
    {"mapped_groups",
     "SELECT v.label, count(*) AS n, sum(od.amt) AS total FROM od, (VALUES (0, 'none'), (1, "
     "'low'), (2, 'mid'), (3, 'high')) v(tier, label) WHERE v.tier = od.amt % 4 GROUP BY "
     "v.label"},
    // Duplicates in the list multiply rows (a multiset, counted identity).
    {"duplicates",
     "SELECT od.id, v.k, cu.phone FROM od JOIN (VALUES (1), (1), (2), (NULL::int)) v(k) ON v.k "
     "= od.amt % 3 JOIN cu ON cu.id = od.cu"},
    {"in_values",
     "SELECT id, phone FROM cu WHERE substring(phone FROM 1 FOR 2) IN (VALUES ('10'), ('12'), "
     "('14')) AND bal > 0"},
    {"not_in_values",
     "SELECT id, bal FROM cu WHERE bal NOT IN (VALUES (1), (2), (3)) AND id IN (SELECT cu "
     "FROM od WHERE amt > 5)"},
    // Every tier, with its orders or none (the list on the preserved side).
    {"all_tiers",
     "SELECT v.label, count(od.id) AS n, sum(od.amt) AS total FROM (VALUES (0, 'none'), (1, "
     "'low'), (5, 'never')) v(tier, label) LEFT JOIN od ON od.amt % 4 = v.tier GROUP BY "
     "v.label"},
    {"with_values",
     "WITH tiers (tier, label) AS (VALUES (0, 'even'), (1, 'odd')) SELECT t.label, count(*) "
     "AS n FROM od JOIN tiers t ON t.tier = od.amt % 2 GROUP BY t.label"},
};

class DifferentialValues : public ConstructTest {
protected:
    const char* schema() const override { return kSchema; }

    void change(std::mt19937& rng, int round) {
        change_orders(rng, round);
        std::uniform_int_distribution<int> id(1, 150), small(0, 30);
        db->exec("UPDATE cu SET bal = $2, phone = $3 || '-x' WHERE id = $1",
                 {std::to_string(id(rng)), std::to_string(small(rng) % 6 - 1),
                  std::to_string(10 + small(rng) % 8)});
    }
};

TEST_F(DifferentialValues, values_lists_are_maintained_differentially) {
    run_cases(kCases, "DIFFERENTIAL", [&](std::mt19937& rng, int round) { change(rng, round); });
}

TEST_F(DifferentialValues, values_lists_are_maintained_immediately) {
    run_cases(kCases, "IMMEDIATE", [&](std::mt19937& rng, int round) { change(rng, round); });
}

// A VALUES list a change can alter (it reads a column, LATERAL, or calls a
// volatile function), or on the nullable side of an outer join, keeps the
// query FULL (AUTO recomputes it).
TEST_F(DifferentialValues, values_lists_that_can_change_are_recomputed) {
    const std::vector<std::string> kept = {
        "SELECT od.id, v.x FROM od CROSS JOIN LATERAL (VALUES (od.amt), (od.amt * 2)) v(x)",
        "SELECT od.id, v.r FROM od JOIN (VALUES (1, clock_timestamp() > '2000-01-01'), (2, "
        "true)) v(k, r) ON v.k = od.amt",
        "SELECT od.id, v.label FROM od LEFT JOIN (VALUES (1, 'one')) v(k, label) ON v.k = "
        "od.amt",
    };
    expect_recomputed(kept, "UPDATE od SET amt = amt + 1 WHERE id < 30");
}

// A query that reads no table has no change to follow: DIFFERENTIAL is
// refused naming why.
TEST_F(DifferentialValues, a_query_of_values_alone_is_refused) {
    try {
        db->exec(
            "SELECT pgtrickle.create_stream_table('only_values', 'SELECT a, b FROM (VALUES (1, "
            "2), (3, 4)) v(a, b)', refresh_mode => 'DIFFERENTIAL')");
        FAIL() << "created";
    } catch (const SqlError& e) {
        EXPECT_EQ(e.sqlstate, "0A000") << e.what();
        EXPECT_NE(std::string(e.what()).find("reads no table"), std::string::npos) << e.what();
    }
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_stream_tables"), "0");
}

}  // namespace
}  // namespace pgt::e2e
