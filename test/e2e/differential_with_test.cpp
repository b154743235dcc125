// Non-recursive WITH queries under DIFFERENTIAL and IMMEDIATE: each
// reference is maintained as the derived table it stands for
// (src/pg/analyze/inline_ctes.cpp), so what a derived table may be, a WITH
// query may be. A WITH query that cannot be inlined (volatile, recursive)
// or whose inlined form is not incremental stays, and is refused (naming
// the construct that blocks it) or recomputed.
// Invariant: after every round of random changes each stream table equals
// its query, and the refresh that ran was the one asserted.
#include <random>
#include <string>
#include <vector>

#include "construct_cases.hpp"

namespace pgt::e2e {
namespace {

const char* kSchema =
    "CREATE TABLE o (id int PRIMARY KEY, c int, amt int, note text);"
    "CREATE TABLE c (id int PRIMARY KEY, region text);"
    "INSERT INTO o SELECT g, g % 10, g % 37, 'n' || g FROM generate_series(1, 200) g;"
    "INSERT INTO c SELECT g, (ARRAY['eu', 'us', NULL])[g % 3 + 1] FROM generate_series(0, 9) g";

// Each a shape users write with WITH (dbt models are written this way).
const std::vector<ConstructCase> kCases = {
    {"w_project", "WITH b AS (SELECT id, c, amt FROM o WHERE amt > 10) SELECT id, c FROM b"},
    {"w_join_agg",
     "WITH b AS (SELECT id, c, amt FROM o WHERE amt > 10) SELECT c.region, sum(b.amt) AS s, "
     "count(*) AS n FROM b JOIN c ON c.id = b.c GROUP BY c.region"},
    {"w_two",
     "WITH b AS (SELECT id, c, amt FROM o WHERE amt > 5), r AS (SELECT id, region FROM c "
     "WHERE region IS NOT NULL) SELECT r.region, count(*) AS n FROM b JOIN r ON r.id = b.c "
     "GROUP BY r.region"},
    {"w_chain",
     "WITH a AS (SELECT id, c, amt FROM o), b AS (SELECT id, c FROM a WHERE amt > 20) "
     "SELECT c, count(*) AS n FROM b GROUP BY c"},
    {"w_exists",
     "WITH big AS (SELECT id FROM o WHERE amt > 30) SELECT id, amt FROM o WHERE EXISTS "
     "(SELECT 1 FROM big WHERE big.id = o.id + 1)"},
    {"w_nested",
     "SELECT x.id, x.c FROM (WITH b AS (SELECT id, c FROM o WHERE amt < 9) SELECT id, c FROM b) "
     "x"},
    // A WITH query in a correlated subquery (its body reads the outer row),
    // and one referenced two levels down.
    {"w_correlated",
     "SELECT id FROM o WHERE EXISTS (WITH z AS (SELECT 1 AS one FROM c WHERE c.id = o.c AND "
     "c.region = 'eu') SELECT 1 FROM z)"},
    {"w_two_levels",
     "WITH z AS (SELECT id, region FROM c) SELECT id FROM o WHERE EXISTS (SELECT 1 FROM "
     "(SELECT id FROM z WHERE z.id = o.c AND z.region IS NOT NULL) q)"},
    {"w_materialized",
     "WITH b AS MATERIALIZED (SELECT id, c, amt FROM o WHERE amt > 10) SELECT c, sum(amt) AS s "
     "FROM b GROUP BY c"},
};

class DifferentialWith : public ConstructTest {
protected:
    const char* schema() const override { return kSchema; }

    // A round of random inserts, updates and deletes on both tables.
    void change(std::mt19937& rng, int next_id) {
        std::uniform_int_distribution<int> id(1, next_id), amt(0, 40), cust(0, 11);
        db->exec(
            "INSERT INTO o VALUES ($1, $2, $3, 'x')",
            {std::to_string(next_id + 1), std::to_string(cust(rng)), std::to_string(amt(rng))});
        db->exec("UPDATE o SET amt = $2, c = $3 WHERE id = $1",
                 {std::to_string(id(rng)), std::to_string(amt(rng)), std::to_string(cust(rng))});
        db->exec("DELETE FROM o WHERE id = $1", {std::to_string(id(rng))});
        db->exec("UPDATE c SET region = (ARRAY['eu', 'us', 'asia', NULL])[$2] WHERE id = $1",
                 {std::to_string(cust(rng) % 10), std::to_string(amt(rng) % 4 + 1)});
    }
};

TEST_F(DifferentialWith, with_queries_are_maintained_differentially) {
    run_cases(kCases, "DIFFERENTIAL",
              [&](std::mt19937& rng, int round) { change(rng, 200 + round); });
}

TEST_F(DifferentialWith, with_queries_are_maintained_immediately) {
    run_cases(kCases, "IMMEDIATE", [&](std::mt19937& rng, int round) { change(rng, 200 + round); });
}

// A WITH query that is not a derived table DIFFERENTIAL maintains (here
// groups read by a join on part of their key) is refused naming what blocks it, not "WITH
// queries"; AUTO recomputes it.
// A volatile WITH query (evaluated once, not once per reference) is never
// inlined.
TEST_F(DifferentialWith, what_cannot_be_inlined_or_maintained_is_named) {
    const char* agg =
        "WITH x AS (SELECT c, amt, count(*) AS n FROM o GROUP BY c, amt) SELECT c.region, x.n "
        "FROM x JOIN c ON c.id = x.c";
    std::optional<SqlError> e =
        error_in(*db, "SELECT pgtrickle.create_stream_table('a', $1, refresh_mode => $2)",
                 {agg, "DIFFERENTIAL"});
    ASSERT_TRUE(e);
    EXPECT_EQ(e->sqlstate, "0A000");
    EXPECT_NE(e->message.find("subquery in FROM with aggregates"), std::string::npos) << e->message;
    const char* volatile_with = "WITH b AS (SELECT id, random() AS r FROM o) SELECT id FROM b";
    e = error_in(*db, "SELECT pgtrickle.create_stream_table('v', $1, refresh_mode => $2)",
                 {volatile_with, "DIFFERENTIAL"});
    ASSERT_TRUE(e);
    EXPECT_EQ(e->sqlstate, "0A000");
    EXPECT_NE(e->message.find("WITH queries"), std::string::npos) << e->message;
    for (const char* q : {agg, volatile_with}) {
        db->exec(
            "SELECT pgtrickle.drop_stream_table('s') FROM pgtrickle.pgt_stream_tables "
            "WHERE pgt_name = 's'");
        db->exec("SELECT pgtrickle.create_stream_table('s', $1, refresh_mode => 'AUTO')", {q});
        EXPECT_EQ(modes("s"), "AUTO/FULL") << q;
        // The stored query keeps its WITH (a recompute evaluates it once).
        EXPECT_EQ(db->scalar("SELECT ltrim(effective_query) LIKE 'WITH %' FROM "
                             "pgtrickle.pgt_stream_tables WHERE pgt_name = 's'"),
                  "t")
            << q;
    }
    db->exec("UPDATE o SET c = 3 WHERE id < 20");
    refresh("s");
    EXPECT_EQ(last_action("s"), "FULL");
    EXPECT_EQ(count("SELECT * FROM s"), count("SELECT id FROM o"));
}

}  // namespace
}  // namespace pgt::e2e
