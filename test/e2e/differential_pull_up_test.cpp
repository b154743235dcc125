// A SELECT over one grouped derived table — a WITH query with GROUP BY and
// a final SELECT, as dbt models are written — maintained as the grouped
// query it is (src/pg/analyze/pull_up.cpp): the outer select list over the
// groups' expressions, the outer WHERE as HAVING.
// Invariant: after every round of random changes each stream table equals
// its query, and the refresh that ran was the one asserted.
#include <random>
#include <string>
#include <vector>

#include "construct_cases.hpp"

namespace pgt::e2e {
namespace {

const char* kSchema =
    "CREATE TABLE o (id int PRIMARY KEY, c int, amt int);"
    "CREATE TABLE c (id int PRIMARY KEY, region text);"
    "INSERT INTO o SELECT g, g % 9, g % 31 FROM generate_series(1, 200) g;"
    "INSERT INTO c SELECT g, (ARRAY['eu', 'us'])[g % 2 + 1] FROM generate_series(0, 8) g";

const std::vector<ConstructCase> kCases = {
    {"g_where",
     "WITH x AS (SELECT c, count(*) AS n, sum(amt) AS s FROM o GROUP BY c) SELECT c, n, s "
     "FROM x WHERE n > 20"},
    {"g_expr",
     "SELECT x.c, x.n * 2 AS n2, x.c + 1 AS c1 FROM (SELECT c, count(*) AS n FROM o WHERE amt "
     "> 3 GROUP BY c HAVING sum(amt) > 10 ORDER BY c) x"},
    {"g_star",
     "WITH x AS (SELECT c, max(amt) AS m, min(amt) AS lo FROM o GROUP BY c) SELECT * "
     "FROM x"},
    {"g_key_filter",
     "WITH x AS (SELECT c, avg(amt) AS a FROM o GROUP BY c) SELECT c, a FROM x WHERE c <> 4"},
    // A DISTINCT WITH query read whole: its WHERE filters the rows.
    {"d_star", "WITH x AS (SELECT DISTINCT c, amt % 3 AS r FROM o) SELECT * FROM x WHERE r > 0"},
    {"d_cols", "SELECT x.c FROM (SELECT DISTINCT c FROM o WHERE amt > 4) x"},
    // A DISTINCT ON table read whole (Nexmark q9's winning bid per
    // auction): its ORDER BY still chooses each key's row.
    {"d_on", "SELECT * FROM (SELECT DISTINCT ON (c) c, id, amt FROM o ORDER BY c, amt DESC, id) x"},
    {"d_on_join",
     "WITH w AS (SELECT DISTINCT ON (c.id) c.id, c.region, o.id AS oid, o.amt FROM c JOIN o ON "
     "o.c = c.id ORDER BY c.id, o.amt DESC, o.id) SELECT * FROM w"},
    {"g_join_inside",
     "WITH x AS (SELECT c.region, count(*) AS n FROM o JOIN c ON c.id = o.c GROUP BY "
     "c.region) SELECT region, n FROM x"},
};

class DifferentialPullUp : public ConstructTest {
protected:
    const char* schema() const override { return kSchema; }

    void change(std::mt19937& rng, int round) {
        std::uniform_int_distribution<int> id(1, 200), small(0, 30);
        db->exec(
            "INSERT INTO o VALUES (1000 + $1, $2, $3)",
            {std::to_string(round), std::to_string(small(rng) % 10), std::to_string(small(rng))});
        db->exec(
            "UPDATE o SET amt = $2, c = $3 WHERE id = $1",
            {std::to_string(id(rng)), std::to_string(small(rng)), std::to_string(small(rng) % 9)});
        db->exec("DELETE FROM o WHERE id = $1 OR id = $2",
                 {std::to_string(id(rng)), std::to_string(id(rng))});
        db->exec(
            "UPDATE c SET region = CASE WHEN region = 'eu' THEN 'us' ELSE 'eu' END WHERE id "
            "= $1",
            {std::to_string(small(rng) % 9)});
    }
};

TEST_F(DifferentialPullUp, grouped_derived_tables_are_maintained_differentially) {
    run_cases(kCases, "DIFFERENTIAL", [&](std::mt19937& rng, int round) { change(rng, round); });
}

TEST_F(DifferentialPullUp, grouped_derived_tables_are_maintained_immediately) {
    run_cases(kCases, "IMMEDIATE", [&](std::mt19937& rng, int round) { change(rng, round); });
}

// What is not a plain select over one grouped derived table keeps its
// derived table (AUTO recomputes it); a select that leaves out a group's
// key is refused naming that, as the grouped query itself would be.
TEST_F(DifferentialPullUp, what_is_not_pulled_up_is_named) {
    std::optional<SqlError> e = error_in(
        *db,
        "SELECT pgtrickle.create_stream_table('k', 'WITH x AS (SELECT c, count(*) AS n FROM o "
        "GROUP BY c) SELECT n FROM x', refresh_mode => 'DIFFERENTIAL')");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->sqlstate, "0A000");
    EXPECT_NE(e->message.find("GROUP BY"), std::string::npos) << e->message;
    const std::vector<std::string> kept = {
        "WITH x AS (SELECT c, count(*) AS n FROM o GROUP BY c) SELECT x.c, x.n, c.region FROM x "
        "JOIN c ON c.id = x.c",
        "SELECT x.c, x.n FROM (SELECT DISTINCT c, count(*) AS n FROM o GROUP BY c) x",
        // (A DISTINCT table read in part, whose rows would repeat pulled up,
        // is maintained as a join region: region_grouped.cpp.)
        "SELECT x.c, x.n FROM (SELECT c, count(*) AS n FROM o GROUP BY c ORDER BY c LIMIT 3) x",
        // (a WHERE over DISTINCT ON's rows filters the rows it chose)
        "SELECT * FROM (SELECT DISTINCT ON (c) c, amt FROM o ORDER BY c, amt DESC) x WHERE amt > 5",
    };
    expect_recomputed(kept, "UPDATE o SET c = 2 WHERE id < 30");
}

}  // namespace
}  // namespace pgt::e2e
