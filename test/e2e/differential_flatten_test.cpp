// Plain derived tables — what a WITH query without aggregates inlines to,
// and the subselects dbt staging models wrap their sources in — merged into
// the query that reads them (src/pg/analyze/flatten_derived.cpp), so that
// their WHERE subqueries, expressions and joins are maintained as the
// query's own.
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
    "CREATE TABLE rg (code text PRIMARY KEY, name text);"
    "INSERT INTO cu SELECT g, (10 + g % 7)::text || '-' || g, g % 23 - 5 "
    "FROM generate_series(1, 120) g;"
    "INSERT INTO od SELECT g, g % 150, g % 17 FROM generate_series(1, 200) g;"
    "INSERT INTO rg SELECT (10 + g)::text, 'r' || g FROM generate_series(0, 5) g";

const std::vector<ConstructCase> kCases = {
    // TPC-H q22's shape: an expression and two WHERE subqueries inside.
    {"q22_shape",
     "SELECT code, count(*) AS n, sum(bal) AS total FROM (SELECT substring(phone FROM 1 FOR "
     "2) AS code, bal FROM cu WHERE bal > (SELECT avg(bal) FROM cu WHERE bal > 0) AND NOT "
     "EXISTS (SELECT 1 FROM od WHERE od.cu = cu.id)) s GROUP BY code"},
    {"cte_join",
     "WITH stg AS (SELECT id AS customer_id, substring(phone FROM 1 FOR 2) AS code FROM cu "
     "WHERE bal >= 0), big AS (SELECT id, cu, amt * 2 AS amt2 FROM od WHERE amt > 3) "
     "SELECT s.customer_id, s.code, b.id AS order_id, b.amt2 FROM stg s JOIN big b ON "
     "b.cu = s.customer_id"},
    {"nested",
     "SELECT x.id, x.code FROM (SELECT y.id, y.code FROM (SELECT id, substring(phone FROM 1 "
     "FOR 2) AS code FROM cu WHERE id IN (SELECT cu FROM od WHERE amt > 10)) y WHERE y.id % "
     "2 = 0) x"},
    {"join_inside",
     "SELECT s.code, count(*) AS n FROM (SELECT substring(cu.phone FROM 1 FOR 2) AS code, "
     "od.amt FROM cu JOIN od ON od.cu = cu.id WHERE od.amt > 2) s GROUP BY s.code"},
    // One table on a join side is read as that table: its WHERE joins the
    // ON of the join whose nullable side it is, or the WHERE for a
    // preserved side.
    {"nullable_side",
     "SELECT cu.id, s.twice FROM cu LEFT JOIN (SELECT cu AS c, amt * 2 AS twice FROM od WHERE "
     "amt > 3) s ON s.c = cu.id"},
    {"preserved_side",
     "SELECT s.id, s.code, rg.name FROM (SELECT id, substring(phone FROM 1 FOR 2) AS code FROM "
     "cu WHERE bal < 12) s LEFT JOIN rg ON rg.code = s.code"},
    // A subquery in an inner join's ON is the WHERE subquery it equals.
    {"on_subquery",
     "SELECT od.id, cu.phone FROM od JOIN cu ON cu.id = od.cu AND EXISTS (SELECT 1 FROM rg "
     "WHERE rg.code = substring(cu.phone FROM 1 FOR 2) AND rg.name NOT LIKE '%+++%')"},
};

class DifferentialFlatten : public ConstructTest {
protected:
    const char* schema() const override { return kSchema; }

    void change(std::mt19937& rng, int round) {
        change_orders(rng, round);
        std::uniform_int_distribution<int> id(1, 150), small(0, 30);
        db->exec("UPDATE cu SET bal = $2, phone = $3 || '-x' WHERE id = $1",
                 {std::to_string(id(rng)), std::to_string(small(rng) - 8),
                  std::to_string(10 + small(rng) % 8)});
        db->exec("UPDATE rg SET name = name || '+' WHERE code = $1",
                 {std::to_string(10 + small(rng) % 6)});
    }
};

TEST_F(DifferentialFlatten, plain_derived_tables_are_maintained_differentially) {
    run_cases(kCases, "DIFFERENTIAL", [&](std::mt19937& rng, int round) { change(rng, round); });
}

TEST_F(DifferentialFlatten, plain_derived_tables_are_maintained_immediately) {
    run_cases(kCases, "IMMEDIATE", [&](std::mt19937& rng, int round) { change(rng, round); });
}

// A derived table whose rows can be padded with NULLs, one read as a whole
// row, and one with a volatile select list keep their derived table (AUTO
// recomputes them): merged, each would say something else.
TEST_F(DifferentialFlatten, what_is_not_merged_stays_a_derived_table) {
    const std::vector<std::string> kept = {
        "SELECT cu.id, s.n FROM cu LEFT JOIN (SELECT od.cu, 1 AS n FROM od WHERE EXISTS "
        "(SELECT 1 FROM rg WHERE rg.code = od.amt::text)) s ON s.cu = cu.id",
        "SELECT s.id, s::text AS t FROM (SELECT id, bal FROM cu WHERE bal > (SELECT avg(bal) "
        "FROM cu)) s",
        "SELECT s.id, s.r > 2 AS big FROM (SELECT id, random() * 0 + bal AS r FROM cu WHERE id "
        "IN (SELECT cu FROM od)) s",
        // (a column that is not NULL on a padded row: the padding differs)
        "SELECT cu.id, s.z FROM cu LEFT JOIN (SELECT cu AS c, coalesce(amt, 0) AS z FROM od) s "
        "ON s.c = cu.id",
    };
    expect_recomputed(kept, "UPDATE cu SET bal = bal + 1 WHERE id < 30");
}

}  // namespace
}  // namespace pgt::e2e
