// Lookup chains of outer joins — `orders o LEFT JOIN customers c ON c.id =
// o.cust LEFT JOIN regions r ON r.id = c.region`, the way dbt models reach
// their dimensions — where a later join's ON reads an earlier join's
// nullable table through a strict condition (a padded customer pads its
// region): one join region whose branches pad each join in every way a row
// can have it (src/pg/analyze/join_region.cpp,
// nullable_read_only_where_allowed).
// Invariant: after every round of random changes each stream table equals
// its query, and the refresh that ran was the one asserted.
#include <random>
#include <string>
#include <vector>

#include "construct_cases.hpp"

namespace pgt::e2e {
namespace {

const char* kSchema =
    "CREATE TABLE co (id int PRIMARY KEY, name text NOT NULL);"
    "CREATE TABLE rg (id int PRIMARY KEY, country int, name text NOT NULL, active bool NOT NULL);"
    "CREATE TABLE cu (id int PRIMARY KEY, rg int, name text NOT NULL);"
    "CREATE TABLE pr (id int PRIMARY KEY, title text NOT NULL);"
    "CREATE TABLE od (id int PRIMARY KEY, cu int, pr int, amt int);"
    "INSERT INTO co SELECT g, 'country ' || g FROM generate_series(0, 3) g;"
    "INSERT INTO rg SELECT g, CASE WHEN g % 5 = 4 THEN NULL ELSE g % 4 END, 'region ' || g, g "
    "% 3 <> 0 FROM generate_series(0, 9) g;"
    "INSERT INTO cu SELECT g, CASE WHEN g % 7 = 0 THEN NULL ELSE g % 12 END, 'cust ' || g FROM "
    "generate_series(1, 60) g;"
    "INSERT INTO pr SELECT g, 'product ' || g FROM generate_series(1, 8) g;"
    "INSERT INTO od SELECT g, g % 70, g % 10, g % 17 FROM generate_series(1, 200) g;";

const std::vector<ConstructCase> kCases = {
    {"chain3",
     "SELECT o.id, o.amt, c.name AS customer, r.name AS region FROM od o LEFT JOIN cu c ON c.id "
     "= o.cu LEFT JOIN rg r ON r.id = c.rg"},
    {"chain4",
     "SELECT o.id, c.name AS customer, r.name AS region, k.name AS country FROM od o LEFT JOIN "
     "cu c ON c.id = o.cu LEFT JOIN rg r ON r.id = c.rg AND r.active LEFT JOIN co k ON k.id = "
     "r.country"},
    {"chain_groups",
     "SELECT r.name AS region, count(*) AS orders, sum(o.amt) AS total, count(c.id) AS "
     "customers FROM od o LEFT JOIN cu c ON c.id = o.cu LEFT JOIN rg r ON r.id = c.rg GROUP "
     "BY r.name"},
    {"tree",
     "SELECT o.id, r.name AS region, p.title FROM od o LEFT JOIN cu c ON c.id = o.cu LEFT JOIN "
     "rg r ON r.id = c.rg LEFT JOIN pr p ON p.id = o.pr"},
    {"right_form",
     "SELECT o.id, c.name, r.name AS region FROM rg r RIGHT JOIN (od o LEFT JOIN cu c ON c.id "
     "= o.cu) ON r.id = c.rg"},
    {"inner_head",
     "SELECT o.id, p.title, r.name AS region FROM od o JOIN pr p ON p.id = o.pr LEFT JOIN cu c "
     "ON c.id = o.cu LEFT JOIN rg r ON r.id = c.rg"},
};

// Outer joins whose padded rows WHERE (or an inner join's ON above them)
// removes: reduced to the inner joins they are (reduce_outer.cpp).
const std::vector<ConstructCase> kReduced = {
    {"where_on_nullable",
     "SELECT o.id, c.name FROM od o LEFT JOIN cu c ON c.id = o.cu WHERE c.name LIKE 'cust 1%'"},
    {"chain_reduced",
     "SELECT o.id, c.name AS customer, r.name AS region FROM od o LEFT JOIN cu c ON c.id = "
     "o.cu LEFT JOIN rg r ON r.id = c.rg WHERE r.active"},
    {"full_reduced",
     "SELECT o.id, o.amt, c.name FROM od o FULL JOIN cu c ON c.id = o.cu WHERE o.amt > 3"},
    {"grouped_reduced",
     "SELECT r.name AS region, count(*) AS n FROM od o LEFT JOIN cu c ON c.id = o.cu LEFT "
     "JOIN rg r ON r.id = c.rg WHERE r.country IS NOT NULL GROUP BY r.name"},
    {"right_reduced",
     "SELECT o.id, c.name FROM cu c RIGHT JOIN od o ON c.id = o.cu WHERE c.rg > 2 AND o.amt "
     "< 15"},
};

// WHERE subqueries over the preserved tables, and a scalar subquery over a
// nullable one, next to outer joins.
const std::vector<ConstructCase> kWithSubqueries = {
    {"exists_next_to_chain",
     "SELECT o.id, c.name, r.name AS region FROM od o LEFT JOIN cu c ON c.id = o.cu LEFT JOIN "
     "rg r ON r.id = c.rg WHERE EXISTS (SELECT 1 FROM pr p WHERE p.id = o.pr AND p.title <> "
     "'product 3')"},
    {"in_next_to_left",
     "SELECT o.id, c.name FROM od o LEFT JOIN cu c ON c.id = o.cu WHERE o.cu IN (SELECT id FROM "
     "cu WHERE rg > 3)"},
    {"not_exists_grouped",
     "SELECT c.name, count(*) AS n FROM od o LEFT JOIN cu c ON c.id = o.cu WHERE NOT EXISTS "
     "(SELECT 1 FROM rg x WHERE x.id = o.amt % 12 AND x.active) GROUP BY c.name"},
    {"scalar_over_nullable",
     "SELECT o.id, c.name, (SELECT count(*) FROM od x WHERE x.cu = c.id) AS orders_of_customer "
     "FROM od o LEFT JOIN cu c ON c.id = o.cu"},
};

class DifferentialOuterChain : public ConstructTest {
protected:
    const char* schema() const override { return kSchema; }

    void change(std::mt19937& rng, int round) {
        change_orders(rng, round);
        std::uniform_int_distribution<int> cu(1, 65), rg(0, 11), co(0, 4);
        const std::string r = std::to_string(round);
        db->exec("UPDATE cu SET rg = CASE WHEN $2 > 10 THEN NULL ELSE $2 END WHERE id = $1",
                 {std::to_string(cu(rng)), std::to_string(rg(rng))});
        db->exec("INSERT INTO cu VALUES (100 + $1, $2, $3) ON CONFLICT DO NOTHING",
                 {r, std::to_string(rg(rng)), "new " + r});
        db->exec("DELETE FROM cu WHERE id = $1", {std::to_string(cu(rng))});
        db->exec("UPDATE rg SET name = name || '+', active = NOT active WHERE id = $1",
                 {std::to_string(rg(rng))});
        if (round % 2 == 1) {
            db->exec("DELETE FROM rg WHERE id = $1", {std::to_string(rg(rng))});
            const std::string id = std::to_string(rg(rng));
            db->exec("INSERT INTO rg VALUES ($1, $2, $3, true) ON CONFLICT DO NOTHING",
                     {id, std::to_string(co(rng)), "back " + id});
        }
        db->exec("UPDATE co SET name = name || '+' WHERE id = $1", {std::to_string(co(rng))});
    }
};

TEST_F(DifferentialOuterChain, lookup_chains_are_maintained_differentially) {
    run_cases(
        kCases, "DIFFERENTIAL", [&](std::mt19937& rng, int round) { change(rng, round); }, 8);
}

TEST_F(DifferentialOuterChain, lookup_chains_are_maintained_immediately) {
    run_cases(
        kCases, "IMMEDIATE", [&](std::mt19937& rng, int round) { change(rng, round); }, 8);
}

TEST_F(DifferentialOuterChain, outer_joins_where_makes_inner_are_maintained_differentially) {
    run_cases(
        kReduced, "DIFFERENTIAL", [&](std::mt19937& rng, int round) { change(rng, round); }, 8);
}

TEST_F(DifferentialOuterChain, outer_joins_where_makes_inner_are_maintained_immediately) {
    run_cases(
        kReduced, "IMMEDIATE", [&](std::mt19937& rng, int round) { change(rng, round); }, 8);
}

TEST_F(DifferentialOuterChain, subqueries_next_to_outer_joins_are_maintained_differentially) {
    run_cases(
        kWithSubqueries, "DIFFERENTIAL", [&](std::mt19937& rng, int round) { change(rng, round); },
        8);
}

TEST_F(DifferentialOuterChain, subqueries_next_to_outer_joins_are_maintained_immediately) {
    run_cases(
        kWithSubqueries, "IMMEDIATE", [&](std::mt19937& rng, int round) { change(rng, round); }, 8);
}

// A later ON that can be true on a padded row (COALESCE), or a WHERE over
// a nullable table that a padded row can pass, keeps the query FULL (AUTO
// recomputes it).
TEST_F(DifferentialOuterChain, chains_the_padding_cannot_follow_are_recomputed) {
    const std::vector<std::string> kept = {
        "SELECT o.id, r.name FROM od o LEFT JOIN cu c ON c.id = o.cu LEFT JOIN rg r ON r.id = "
        "coalesce(c.rg, 0)",
        "SELECT o.id, r.name FROM od o LEFT JOIN cu c ON c.id = o.cu LEFT JOIN rg r ON r.id = "
        "c.rg OR c.rg IS NULL",
        "SELECT o.id, r.name FROM od o LEFT JOIN cu c ON c.id = o.cu LEFT JOIN rg r ON r.id = "
        "c.rg WHERE r.active IS NOT TRUE",
        "SELECT o.id, c.name FROM od o LEFT JOIN cu c ON c.id = o.cu WHERE coalesce(c.rg, 0) = 0",
        "SELECT o.id, c.name FROM od o LEFT JOIN cu c ON c.id = o.cu WHERE c.rg IS NULL OR c.rg "
        "> 3",
    };
    expect_recomputed(kept, "UPDATE cu SET rg = NULL WHERE id < 20");
}

}  // namespace
}  // namespace pgt::e2e
