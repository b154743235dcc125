// Anti-joins written as LEFT JOIN ... WHERE r.k IS NULL, maintained as the
// NOT EXISTS they are (src/pg/analyze/anti_join.cpp), DIFFERENTIAL and
// IMMEDIATE; look-alikes that are not anti-joins (the tested column may be
// NULL in a joined row, or r is read elsewhere) keep their outer join.
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
    "CREATE TABLE c (id int PRIMARY KEY, region text, tier int NOT NULL);"
    "CREATE TABLE p (o_id int, c_id int, note text);"
    "INSERT INTO o SELECT g, g % 14, g % 23 FROM generate_series(1, 150) g;"
    "INSERT INTO c SELECT g, (ARRAY['eu', 'us', NULL])[g % 3 + 1], g % 2 FROM "
    "generate_series(0, 9) g;"
    "INSERT INTO p SELECT g, g % 12, CASE WHEN g % 4 = 0 THEN NULL ELSE 'x' END FROM "
    "generate_series(1, 60) g";

const std::vector<ConstructCase> kCases = {
    // Orders of no known customer (the key is the primary key).
    {"a_pk", "SELECT o.id, o.amt FROM o LEFT JOIN c ON c.id = o.c WHERE c.id IS NULL"},
    // A NOT NULL column, a condition on the right table in ON, and another
    // WHERE condition.
    {"a_notnull",
     "SELECT o.id FROM o LEFT JOIN c ON c.id = o.c AND c.region = 'eu' WHERE c.tier IS NULL "
     "AND o.amt > 3"},
    // A column that is NULL in some rows of p but compared by a strict
    // operator in ON, with an aggregate over the result.
    {"a_strict_agg",
     "SELECT o.c, count(*) AS n, sum(o.amt) AS s FROM o LEFT JOIN p ON p.o_id = o.id AND "
     "p.note = 'x' WHERE p.note IS NULL GROUP BY o.c"},
    // The left side a join of its own.
    {"a_join_left",
     "SELECT o.id, c.region FROM o JOIN c ON c.id = o.c LEFT JOIN p ON p.o_id = o.id WHERE "
     "p.o_id IS NULL"},
};

class DifferentialAntiJoin : public ConstructTest {
protected:
    const char* schema() const override { return kSchema; }

    void change(std::mt19937& rng, int round) {
        std::uniform_int_distribution<int> id(1, 150), small(0, 15);
        const std::string r = std::to_string(round);
        db->exec("INSERT INTO o VALUES (1000 + $1, $2, $3)",
                 {r, std::to_string(small(rng)), std::to_string(small(rng))});
        db->exec("UPDATE o SET c = $2 WHERE id = $1",
                 {std::to_string(id(rng)), std::to_string(small(rng))});
        db->exec("DELETE FROM c WHERE id = $1", {std::to_string(small(rng) % 10)});
        db->exec(
            "INSERT INTO c VALUES ($1, 'eu', 1) ON CONFLICT (id) DO UPDATE SET region = "
            "CASE WHEN c.region = 'eu' THEN NULL ELSE 'eu' END",
            {std::to_string(small(rng) % 12)});
        db->exec("INSERT INTO p VALUES ($1, $2, NULL), ($3, 3, 'x')",
                 {std::to_string(id(rng)), std::to_string(small(rng)), std::to_string(id(rng))});
        db->exec("DELETE FROM p WHERE o_id = $1", {std::to_string(id(rng))});
        db->exec("UPDATE p SET note = CASE WHEN note IS NULL THEN 'x' END WHERE o_id = $1",
                 {std::to_string(id(rng))});
    }
};

TEST_F(DifferentialAntiJoin, anti_joins_are_maintained_differentially) {
    run_cases(kCases, "DIFFERENTIAL", [&](std::mt19937& rng, int round) { change(rng, round); });
}

TEST_F(DifferentialAntiJoin, anti_joins_are_maintained_immediately) {
    run_cases(kCases, "IMMEDIATE", [&](std::mt19937& rng, int round) { change(rng, round); });
}

// Look-alikes keep their outer join (and so AUTO recomputes them): a
// nullable column not required by ON is NULL in joined rows too; a right
// table read in the select list; an IS NULL under OR.
TEST_F(DifferentialAntiJoin, look_alikes_are_not_rewritten) {
    const std::vector<std::string> queries = {
        "SELECT o.id FROM o LEFT JOIN c ON c.id = o.c WHERE c.region IS NULL",
        "SELECT o.id, c.region FROM o LEFT JOIN c ON c.id = o.c WHERE c.id IS NULL",
        "SELECT o.id FROM o LEFT JOIN c ON c.id = o.c WHERE c.id IS NULL OR o.amt > 20",
    };
    expect_recomputed(queries,
                      "UPDATE c SET region = NULL WHERE id = 1; DELETE FROM c WHERE id = 2");
}

}  // namespace
}  // namespace pgt::e2e
