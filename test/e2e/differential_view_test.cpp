// Views as sources — a dbt project's staging models — maintained over the
// tables they read, expanded as the derived tables they stand for
// (src/pg/analyze/expand_views.cpp); a view redefined is followed.
// Invariant: after every round of random changes each stream table equals
// its query, and the refresh that ran was the one asserted.
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "construct_cases.hpp"
#include "planted.hpp"

namespace pgt::e2e {
namespace {

const char* kSchema =
    "CREATE TABLE raw_orders (id int PRIMARY KEY, cu int, amt int, deleted bool NOT NULL "
    "DEFAULT false);"
    "CREATE TABLE raw_customers (id int PRIMARY KEY, name text, region text);"
    "CREATE INDEX ON raw_orders (cu);"
    "INSERT INTO raw_orders SELECT g, g % 40, g % 23, g % 11 = 0 FROM generate_series(1, 200) g;"
    "INSERT INTO raw_customers SELECT g, 'c' || g, (ARRAY['eu', 'us'])[g % 2 + 1] "
    "FROM generate_series(1, 35) g;"
    "CREATE VIEW stg_orders AS SELECT id AS order_id, cu AS customer_id, amt AS amount "
    "FROM raw_orders WHERE NOT deleted;"
    "CREATE VIEW stg_customers (customer_id, customer_name, region) AS SELECT id, name, region "
    "FROM raw_customers;"
    "CREATE VIEW big_orders AS SELECT * FROM stg_orders WHERE amount > 10;"
    "CREATE VIEW customer_totals AS SELECT customer_id, count(*) AS n, sum(amount) AS total "
    "FROM stg_orders GROUP BY customer_id";

const std::vector<ConstructCase> kCases = {
    {"staging", "SELECT order_id, customer_id, amount * 2 AS twice FROM stg_orders"},
    {"join_views",
     "SELECT c.region, count(*) AS n, sum(o.amount) AS total FROM stg_customers c JOIN "
     "stg_orders o ON o.customer_id = c.customer_id GROUP BY c.region"},
    {"view_over_view", "SELECT customer_id, count(*) AS n FROM big_orders GROUP BY customer_id"},
    {"grouped_view_joined",
     "SELECT c.customer_id, c.customer_name, t.n, t.total FROM stg_customers c LEFT JOIN "
     "customer_totals t ON t.customer_id = c.customer_id"},
    // dbt's orders-to-customers shape: staging views on both sides of a
    // LEFT JOIN, the preserved one filtered.
    {"left_join_views",
     "SELECT o.order_id, o.amount, c.customer_name, c.region FROM stg_orders o LEFT JOIN "
     "stg_customers c ON c.customer_id = o.customer_id"},
    // Groups joined to a filtering view, their count read in WHERE (the
    // view's conditions and the join's equality are one flat AND).
    {"filtered_view_joined_to_groups",
     "SELECT b.order_id, t.n FROM big_orders b JOIN customer_totals t ON t.customer_id = "
     "b.customer_id WHERE t.n > 2"},
    {"exists_view",
     "SELECT customer_id, region FROM stg_customers c WHERE EXISTS (SELECT 1 FROM big_orders b "
     "WHERE b.customer_id = c.customer_id)"},
};

class DifferentialView : public ConstructTest {
protected:
    const char* schema() const override { return kSchema; }

    void change(std::mt19937& rng, int round) {
        std::uniform_int_distribution<int> id(1, 200), cust(1, 40), small(0, 30);
        db->exec("INSERT INTO raw_orders VALUES (1000 + $1, $2, $3)",
                 {std::to_string(round), std::to_string(cust(rng)), std::to_string(small(rng))});
        db->exec("UPDATE raw_orders SET amt = $2, cu = $3 WHERE id = $1",
                 {std::to_string(id(rng)), std::to_string(small(rng)), std::to_string(cust(rng))});
        db->exec("UPDATE raw_orders SET deleted = NOT deleted WHERE id = $1 OR id = $2",
                 {std::to_string(id(rng)), std::to_string(id(rng))});
        db->exec("DELETE FROM raw_orders WHERE id = $1", {std::to_string(id(rng))});
        db->exec("UPDATE raw_customers SET region = 'us', name = name || '+' WHERE id = $1",
                 {std::to_string(cust(rng))});
    }
};

TEST_F(DifferentialView, views_are_maintained_over_their_tables_differentially) {
    run_cases(kCases, "DIFFERENTIAL", [&](std::mt19937& rng, int round) { change(rng, round); });
}

TEST_F(DifferentialView, views_are_maintained_over_their_tables_immediately) {
    run_cases(kCases, "IMMEDIATE", [&](std::mt19937& rng, int round) { change(rng, round); });
}

// CREATE OR REPLACE VIEW marks the stream table: its next refresh expands
// the new definition (FULL, reinitialised), later ones are DIFFERENTIAL
// again, and the stored query still names the view.
TEST_F(DifferentialView, a_redefined_view_is_followed) {
    db->exec(
        "SELECT pgtrickle.create_stream_table('s', 'SELECT customer_id, count(*) AS n, "
        "sum(amount) AS total FROM stg_orders GROUP BY customer_id', refresh_mode => "
        "'DIFFERENTIAL')");
    db->exec(
        "CREATE OR REPLACE VIEW stg_orders AS SELECT id AS order_id, cu AS customer_id, amt "
        "AS amount FROM raw_orders WHERE NOT deleted AND amt > 5");
    refresh("s");
    EXPECT_EQ(last_action("s"), "FULL");
    EXPECT_MATCHES_QUERY(*db, "s");
    std::mt19937 rng(7);
    for (int round = 0; round < 3; round++) {
        change(rng, round);
        refresh("s");
        EXPECT_EQ(last_action("s"), "DIFFERENTIAL") << round;
        EXPECT_MATCHES_QUERY(*db, "s");
    }
    EXPECT_EQ(db->scalar("SELECT defining_query LIKE '%stg_orders%' FROM "
                         "pgtrickle.pgt_stream_tables WHERE pgt_name = 's'"),
              "t");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_dependencies d JOIN "
                         "pgtrickle.pgt_stream_tables s USING (pgt_id) WHERE s.pgt_name = 's' "
                         "AND d.source_type = 'VIEW'"),
              "1");
}

// A security-barrier view, and one over a table with row-level security,
// are read as views: AUTO recomputes them, DIFFERENTIAL names the view.
TEST_F(DifferentialView, views_whose_tables_would_read_otherwise_stay_views) {
    db->exec(
        "CREATE VIEW guarded WITH (security_barrier) AS SELECT order_id, amount FROM stg_orders "
        "WHERE amount > 3;"
        "CREATE TABLE secret (id int PRIMARY KEY, v int); INSERT INTO secret VALUES (1, 1), "
        "(2, 20); ALTER TABLE secret ENABLE ROW LEVEL SECURITY;"
        "CREATE VIEW over_secret AS SELECT id, v FROM secret");
    std::optional<SqlError> e =
        error_in(*db,
                 "SELECT pgtrickle.create_stream_table('x', 'SELECT order_id FROM guarded', "
                 "refresh_mode => 'DIFFERENTIAL')");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->sqlstate, "0A000");
    EXPECT_NE(e->message.find("view"), std::string::npos) << e->message;
    expect_recomputed({"SELECT order_id, amount FROM guarded", "SELECT id, v FROM over_secret"},
                      "UPDATE raw_orders SET amt = amt + 7 WHERE id < 50");
}

// A role that may read a view but not its table gets the view's rows, as
// the view's owner reads them, recomputed: reading the table directly is
// not its right.
TEST_F(DifferentialView, a_reader_of_the_view_alone_gets_it_recomputed) {
    planted::reset_roles(*db);
    db->exec(
        "GRANT CREATE, USAGE ON SCHEMA public TO alice;"
        "CREATE TABLE hidden (id int PRIMARY KEY, v int);"
        "INSERT INTO hidden SELECT g, g % 9 FROM generate_series(1, 30) g;"
        "CREATE VIEW shown AS SELECT id, v FROM hidden WHERE v > 2;"
        "GRANT SELECT ON shown TO alice");
    db->exec("SET ROLE alice");
    std::optional<SqlError> e =
        error_in(*db,
                 "SELECT pgtrickle.create_stream_table('a', 'SELECT id, v FROM shown', "
                 "refresh_mode => 'DIFFERENTIAL')");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->sqlstate, "0A000");
    db->exec(
        "SELECT pgtrickle.create_stream_table('a', 'SELECT id, v FROM shown', refresh_mode => "
        "'AUTO')");
    EXPECT_EQ(modes("a"), "AUTO/FULL");
    db->exec("RESET ROLE");
    db->exec("UPDATE hidden SET v = v + 1 WHERE id < 15");
    db->exec("SET ROLE alice");
    refresh("a");
    EXPECT_EQ(last_action("a"), "FULL");
    EXPECT_MATCHES_QUERY(*db, "a");
    db->exec("RESET ROLE");
    db->exec("SELECT pgtrickle.drop_stream_table('a'); DROP OWNED BY alice CASCADE");
}

// A view reads its tables as its owner. Another role's view is expanded
// when both that role and the stream table's owner may read its tables
// (neither has row-level security): the rows are the same read by either.
// One over a table only its owner may read is read as a view (AUTO
// recomputes); a security_invoker view reads them as the reader.
TEST_F(DifferentialView, another_roles_view_is_expanded_when_both_roles_may_read_its_tables) {
    planted::reset_roles(*db);
    db->exec(
        "GRANT CREATE, USAGE ON SCHEMA public TO alice, bob;"
        "CREATE TABLE shared_t (id int PRIMARY KEY, v int);"
        "INSERT INTO shared_t SELECT g, g % 9 FROM generate_series(1, 30) g;"
        "ALTER TABLE shared_t OWNER TO alice; GRANT SELECT ON shared_t TO bob;"
        "CREATE TABLE bobs_t (id int PRIMARY KEY, w int);"
        "INSERT INTO bobs_t SELECT g, g % 4 FROM generate_series(1, 30) g;"
        "ALTER TABLE bobs_t OWNER TO bob;"
        "SET ROLE bob;"
        "CREATE VIEW bobs_view AS SELECT id, v FROM shared_t WHERE v > 2;"
        "CREATE VIEW bobs_private_view AS SELECT s.id, s.v, b.w FROM shared_t s JOIN bobs_t b "
        "ON b.id = s.id;"
        "CREATE VIEW bobs_invoker_view WITH (security_invoker) AS SELECT id, v FROM shared_t "
        "WHERE v > 2;"
        "CREATE VIEW bobs_view_of_views AS SELECT id, v FROM bobs_view WHERE v < 8;"
        "GRANT SELECT ON bobs_view, bobs_private_view, bobs_invoker_view, bobs_view_of_views TO "
        "alice;"
        "SET ROLE alice");
    db->exec(
        "SELECT pgtrickle.create_stream_table('owned', 'SELECT id, v FROM bobs_view', "
        "refresh_mode => 'DIFFERENTIAL');"
        "SELECT pgtrickle.create_stream_table('nested', 'SELECT v, count(*) AS n FROM "
        "bobs_view_of_views GROUP BY v', refresh_mode => 'DIFFERENTIAL');"
        "SELECT pgtrickle.create_stream_table('private', 'SELECT id, v, w FROM bobs_private_view', "
        "refresh_mode => 'AUTO');"
        "SELECT pgtrickle.create_stream_table('invoker', 'SELECT id, v FROM bobs_invoker_view', "
        "refresh_mode => 'DIFFERENTIAL')");
    EXPECT_EQ(modes("private"), "AUTO/FULL");
    EXPECT_EQ(db->scalar("SELECT string_agg(source_relid::regclass::text, ',' ORDER BY "
                         "source_relid::regclass::text) FROM "
                         "pgtrickle.pgt_dependencies d JOIN pgtrickle.pgt_stream_tables s USING "
                         "(pgt_id) WHERE s.pgt_name = 'nested' AND d.source_type = 'VIEW'"),
              "bobs_view,bobs_view_of_views");
    for (int round = 0; round < 3; round++) {
        db->exec("UPDATE shared_t SET v = (v + 1) % 9 WHERE id % 3 = $1", {std::to_string(round)});
        db->exec("RESET ROLE; UPDATE bobs_t SET w = w + 1 WHERE id < 10; SET ROLE alice");
        for (const char* st : {"owned", "nested", "private", "invoker"}) {
            refresh(st);
            EXPECT_EQ(last_action(st), std::string(st) == "private" ? "FULL" : "DIFFERENTIAL")
                << st;
            EXPECT_MATCHES_QUERY(*db, st);
        }
    }
    // Once bob may no longer read the table, his view fails as written,
    // and so does a refresh of its expansion: nothing is read as alice.
    db->exec("RESET ROLE; REVOKE SELECT ON shared_t FROM bob; SET ROLE alice");
    try {
        db->exec(
            "SELECT pgtrickle.create_stream_table('late', 'SELECT id, v FROM bobs_view', "
            "refresh_mode => 'AUTO')");
        FAIL() << "created";
    } catch (const SqlError& e) {
        EXPECT_EQ(e.sqlstate, "42501") << e.what();
    }
    db->exec("RESET ROLE");
    db->exec(
        "SELECT pgtrickle.drop_stream_table(n) FROM unnest(ARRAY['owned', 'nested', 'private', "
        "'invoker']) n; DROP OWNED BY alice, bob CASCADE");
}

}  // namespace
}  // namespace pgt::e2e
