// Aggregates over aggregates whose keys pass through: a grouped derived
// table (or WITH query) in the FROM of a query that groups or selects by
// its grouping columns and reads its aggregates only inside its own
// aggregates (Nexmark q4: the average winning price per category) — one
// join region whose branches find the touched groups by their keys
// (src/pg/analyze/region_grouped.cpp).
// Invariant: after every round of random changes each stream table equals
// its query, and the refresh that ran was the one asserted.
#include <random>
#include <string>
#include <vector>

#include "construct_cases.hpp"

namespace pgt::e2e {
namespace {

const char* kSchema =
    "CREATE TABLE category (id int PRIMARY KEY, name text NOT NULL);"
    "CREATE TABLE auction (id int PRIMARY KEY, category int NOT NULL, date_time timestamp NOT "
    "NULL, expires timestamp NOT NULL);"
    "CREATE TABLE bid (id int PRIMARY KEY, auction int NOT NULL, price int NOT NULL, date_time "
    "timestamp NOT NULL);"
    "CREATE INDEX ON bid (auction);"
    "INSERT INTO category SELECT g, 'c' || g FROM generate_series(0, 5) g;"
    "INSERT INTO auction SELECT g, g % 6, timestamp '2026-01-01' + g * interval '1 hour', "
    "timestamp '2026-01-01' + (g + 30) * interval '1 hour' FROM generate_series(1, 60) g;"
    "INSERT INTO bid SELECT g, 1 + g % 60, (g * 37) % 100, timestamp '2026-01-01' + (g % 90) * "
    "interval '1 hour' FROM generate_series(1, 400) g";

const std::vector<ConstructCase> kCases = {
    {"nexmark_q4",
     "SELECT q.category, avg(q.final) AS avg FROM (SELECT max(b.price) AS final, a.category "
     "FROM auction a, bid b WHERE a.id = b.auction AND b.date_time BETWEEN a.date_time AND "
     "a.expires GROUP BY a.id, a.category) q GROUP BY q.category"},
    {"daily_to_monthly",
     "WITH daily AS (SELECT date_trunc('day', date_time) AS day, date_trunc('month', "
     "date_time) AS month, sum(price) AS total, count(*) AS n FROM bid GROUP BY 1, 2) SELECT "
     "month, sum(total) AS total, sum(n) AS bids, count(*) AS days, max(total) AS best FROM "
     "daily GROUP BY month"},
    {"busy_auctions",
     "SELECT q.category, count(*) AS busy FROM (SELECT a.id, a.category FROM auction a JOIN bid "
     "b ON b.auction = a.id GROUP BY a.id, a.category HAVING count(*) > 6) q GROUP BY "
     "q.category HAVING count(*) > 1"},
    {"named_categories",
     "SELECT c.name, sum(q.n) AS bids, min(q.top) AS lowest_top FROM category c JOIN (SELECT "
     "a.category, a.id, count(*) AS n, max(b.price) AS top FROM auction a JOIN bid b ON "
     "b.auction = a.id GROUP BY a.category, a.id) q ON q.category = c.id GROUP BY c.name"},
    {"overall",
     "SELECT avg(q.final) AS overall, count(*) AS auctions FROM (SELECT b.auction, max(b.price) "
     "AS final FROM bid b GROUP BY b.auction) q"},
    // A SELECT DISTINCT derived table: every column a key.
    {"distinct_bidders",
     "SELECT q.category, count(*) AS bidders FROM (SELECT DISTINCT a.category, b.price % 7 AS "
     "bidder FROM auction a JOIN bid b ON b.auction = a.id) q GROUP BY q.category"},
    {"distinct_joined",
     "SELECT c.name, q.bucket FROM (SELECT DISTINCT a.category, b.price / 25 AS bucket FROM "
     "auction a JOIN bid b ON b.auction = a.id WHERE b.price > 20) q JOIN category c ON c.id "
     "= q.category"},
    // Read in part: each category once per distinct price bucket.
    {"distinct_in_part",
     "SELECT q.category FROM (SELECT DISTINCT a.category, b.price % 5 AS p FROM auction a JOIN "
     "bid b ON b.auction = a.id) q"},
    {"distinct_keys",
     "SELECT DISTINCT q.category FROM (SELECT a.category, a.id, sum(b.price) AS s FROM auction "
     "a JOIN bid b ON b.auction = a.id GROUP BY a.category, a.id) q, category c WHERE c.id = "
     "q.category AND c.name <> 'c3'"},
};

// The same in a subquery's FROM: the subquery reads the grouped table's
// aggregates only inside its own aggregates (TPC-H q15's shape: the top
// total, compared with each total).
const std::vector<ConstructCase> kInSubqueries = {
    {"q15_shape",
     "WITH rev AS (SELECT b.auction, sum(b.price) AS total FROM bid b WHERE b.price > 10 GROUP "
     "BY b.auction) SELECT a.id, a.category, r.total FROM auction a, rev r WHERE a.id = "
     "r.auction AND r.total = (SELECT max(total) FROM rev)"},
    {"exists_busy",
     "SELECT c.id, c.name FROM category c WHERE EXISTS (SELECT 1 FROM (SELECT a.category, a.id, "
     "count(*) AS n FROM auction a JOIN bid b ON b.auction = a.id GROUP BY a.category, a.id "
     "HAVING count(*) > 8) q WHERE q.category = c.id)"},
    {"scalar_per_category",
     "SELECT c.id, (SELECT avg(q.top) FROM (SELECT a.category, a.id, max(b.price) AS top FROM "
     "auction a JOIN bid b ON b.auction = a.id GROUP BY a.category, a.id) q WHERE q.category = "
     "c.id) AS avg_top FROM category c"},
    {"in_grouping_column",
     "SELECT a.id, a.category FROM auction a WHERE a.id IN (SELECT q.auction FROM (SELECT "
     "b.auction, count(*) AS n FROM bid b GROUP BY b.auction HAVING count(*) >= 8) q)"},
    {"not_in_distinct",
     "SELECT c.id FROM category c WHERE c.id NOT IN (SELECT d.category FROM (SELECT DISTINCT "
     "a.category, b.price % 3 AS r FROM auction a JOIN bid b ON b.auction = a.id WHERE b.price "
     "> 90) d)"},
};

class DifferentialGroupedDerived : public ConstructTest {
protected:
    const char* schema() const override { return kSchema; }

    void change(std::mt19937& rng, int round) {
        std::uniform_int_distribution<int> bid(1, 420), auction(1, 62), price(0, 120), cat(0, 5);
        const std::string r = std::to_string(round);
        db->exec(
            "INSERT INTO bid VALUES (1000 + $1, $2, $3, timestamp '2026-01-01' + $1 * "
            "interval '7 hours')",
            {r, std::to_string(auction(rng)), std::to_string(price(rng))});
        db->exec(
            "UPDATE bid SET price = $2, auction = $3 WHERE id = $1",
            {std::to_string(bid(rng)), std::to_string(price(rng)), std::to_string(auction(rng))});
        db->exec("DELETE FROM bid WHERE id = $1 OR auction = $2",
                 {std::to_string(bid(rng)), std::to_string(auction(rng))});
        db->exec("UPDATE auction SET category = $2 WHERE id = $1",
                 {std::to_string(auction(rng)), std::to_string(cat(rng))});
        db->exec("UPDATE category SET name = name || '+' WHERE id = $1",
                 {std::to_string(cat(rng))});
    }
};

TEST_F(DifferentialGroupedDerived, aggregates_over_aggregates_are_maintained_differentially) {
    run_cases(kCases, "DIFFERENTIAL", [&](std::mt19937& rng, int round) { change(rng, round); });
}

TEST_F(DifferentialGroupedDerived, aggregates_over_aggregates_are_maintained_immediately) {
    run_cases(kCases, "IMMEDIATE", [&](std::mt19937& rng, int round) { change(rng, round); });
}

TEST_F(DifferentialGroupedDerived, aggregates_over_aggregates_in_subqueries_differentially) {
    run_cases(kInSubqueries, "DIFFERENTIAL",
              [&](std::mt19937& rng, int round) { change(rng, round); });
}

TEST_F(DifferentialGroupedDerived, aggregates_over_aggregates_in_subqueries_immediately) {
    run_cases(kInSubqueries, "IMMEDIATE",
              [&](std::mt19937& rng, int round) { change(rng, round); });
}

// Where the query reads a group's aggregate outside its own aggregates
// next to other tables (selected, joined), or a subquery does (filtered on,
// selected), the images cannot say which groups change: AUTO recomputes.
// (An aggregate over a lone grouped derived table that groups or filters by
// its aggregates takes its change as signed rows: derived_aggregate_test.)
TEST_F(DifferentialGroupedDerived, aggregates_read_outside_aggregates_are_recomputed) {
    const std::vector<std::string> kept = {
        "SELECT c.name, q.top FROM (SELECT a.category, a.id, max(b.price) AS top FROM auction a "
        "JOIN bid b ON b.auction = a.id GROUP BY a.category, a.id) q JOIN category c ON c.id = "
        "q.category",
        // in a subquery: filtered on, selected
        "SELECT a.id FROM auction a WHERE EXISTS (SELECT 1 FROM (SELECT b.auction, count(*) AS n "
        "FROM bid b GROUP BY b.auction) q WHERE q.auction = a.id AND q.n > 7)",
        "SELECT c.id FROM category c WHERE 60 IN (SELECT q.top FROM (SELECT a.category, "
        "max(b.price) AS top FROM auction a JOIN bid b ON b.auction = a.id GROUP BY a.category) "
        "q WHERE q.category = c.id)",
    };
    expect_recomputed(kept, "UPDATE bid SET price = price + 1 WHERE id < 50");
}

}  // namespace
}  // namespace pgt::e2e
