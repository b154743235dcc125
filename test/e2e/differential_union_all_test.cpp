// UNION ALL of SELECTs that each read one table, maintained as the sum of
// its arms' Δ: each arm's netted change images evaluated through its WHERE
// and select list, the signed rows added and removed by count
// (core/diff/union_all, pg/analyze/union_all); a select over a view or
// WITH query of such a union as the union of its arms selected
// (pull_up_union_all).
// Invariant: after every round of random changes each stream table equals
// its query, and the refresh that ran was the one asserted.
#include <random>
#include <string>
#include <vector>

#include "construct_cases.hpp"

namespace pgt::e2e {
namespace {

bool mentions(const std::string& message, const std::string& what) {
    return message.find(what) != std::string::npos;
}

const char* kSchema =
    "CREATE TABLE stripe (id int PRIMARY KEY, amount numeric NOT NULL, status text);"
    "CREATE TABLE paypal (pid bigint PRIMARY KEY, cents int, ok boolean);"
    "CREATE TABLE refunds (id int, amount numeric);"  // no key: duplicates
    "INSERT INTO stripe SELECT g, g * 1.5, CASE g % 3 WHEN 0 THEN 'paid' WHEN 1 THEN NULL ELSE "
    "'open' END FROM generate_series(1, 40) g;"
    "INSERT INTO paypal SELECT g, g * 100, g % 4 <> 0 FROM generate_series(1, 30) g;"
    "INSERT INTO refunds SELECT g % 7, (g % 5) * 2.0 FROM generate_series(1, 25) g;"
    "CREATE VIEW all_payments AS SELECT id, amount, 'stripe' AS src FROM stripe UNION ALL "
    "SELECT pid, cents / 100.0, 'paypal' FROM paypal;";

const std::vector<ConstructCase> kCases = {
    // Two providers' payments as one table: types resolved over the arms
    // (int and bigint, numeric and a numeric expression, unknown literals).
    {"payments",
     "SELECT id, amount, 'stripe' AS src FROM stripe WHERE status = 'paid' UNION ALL SELECT pid, "
     "cents / 100.0, 'paypal' FROM paypal WHERE ok"},
    // One table read by two arms, and a table without a key: equal rows
    // are counted copies.
    {"amounts",
     "SELECT amount FROM stripe WHERE amount / 2 > 5 UNION ALL SELECT amount FROM stripe WHERE "
     "status IS NULL UNION ALL SELECT amount FROM refunds"},
    // A view of the union (as a dbt model reads its staging tables), its
    // select list and WHERE pushed into every arm: stripe's int id is cast
    // to the union's bigint before the + 1, as the union casts it.
    {"view_of_union",
     "SELECT id + 1 AS next_id, amount * 2 AS twice, src FROM all_payments WHERE amount > 5"},
    {"with_union",
     "WITH u AS (SELECT id, status FROM stripe UNION ALL SELECT id, NULL FROM refunds) SELECT * "
     "FROM u WHERE status IS DISTINCT FROM 'open'"},
    // Aggregates over the union (a dbt model's totals per provider), kept
    // algebraically: the arms' signed rows added into the stored state.
    {"totals",
     "SELECT src, count(*) AS n, sum(amount) AS total, avg(amount) AS mean, min(amount) AS lo, "
     "max(amount) AS hi FROM all_payments GROUP BY src"},
    {"overall",
     "SELECT count(*) AS n, sum(amount) AS total FROM (SELECT amount FROM stripe WHERE status IS "
     "NOT NULL UNION ALL SELECT amount FROM refunds UNION ALL SELECT amount FROM refunds WHERE "
     "id > 3) u WHERE amount > 2"},
    // Nested in parentheses, with NULLs in the output.
    {"nested",
     "SELECT id, status FROM stripe UNION ALL (SELECT pid::int, NULL FROM paypal WHERE cents > "
     "500 UNION ALL SELECT id, 'refund' FROM refunds WHERE amount > 0)"},
};

class DifferentialUnionAll : public ConstructTest {
protected:
    const char* schema() const override { return kSchema; }

    void change(std::mt19937& rng, int round) {
        std::uniform_int_distribution<int> id(1, 45), pick(0, 3);
        const std::string r = std::to_string(round);
        auto n = [&](std::uniform_int_distribution<int>& d) { return std::to_string(d(rng)); };
        db->exec("INSERT INTO stripe VALUES (100 + $1, $2, 'paid'), (200 + $1, 3, NULL)",
                 {r, n(id)});
        db->exec(
            "UPDATE stripe SET status = CASE WHEN status IS NULL THEN 'paid' WHEN status = 'paid' "
            "THEN 'open' ELSE NULL END WHERE id % 4 = $1",
            {n(pick)});
        db->exec("UPDATE stripe SET amount = amount + 7 WHERE id = $1", {n(id)});
        db->exec("UPDATE stripe SET id = id + 1000 WHERE id = $1", {n(id)});  // a key moves
        db->exec("DELETE FROM stripe WHERE id = $1", {n(id)});
        db->exec("INSERT INTO paypal VALUES (300 + $1, $2, true)", {r, n(id)});
        db->exec("UPDATE paypal SET ok = NOT ok, cents = cents + 250 WHERE pid % 5 = $1",
                 {n(pick)});
        db->exec("DELETE FROM paypal WHERE pid = $1", {n(id)});
        db->exec("INSERT INTO refunds VALUES ($1, 2.0), ($1, 2.0)", {n(pick)});
        db->exec("UPDATE refunds SET amount = amount + 1 WHERE id = $1", {n(pick)});
        db->exec(
            "DELETE FROM refunds WHERE ctid IN (SELECT ctid FROM refunds WHERE id = $1 LIMIT 1)",
            {n(pick)});
    }
};

TEST_F(DifferentialUnionAll, arms_of_one_table_each_differentially) {
    run_cases(
        kCases, "DIFFERENTIAL", [&](std::mt19937& rng, int round) { change(rng, round); }, 8);
}

TEST_F(DifferentialUnionAll, arms_of_one_table_each_immediately) {
    run_cases(kCases, "IMMEDIATE", [&](std::mt19937& rng, int round) { change(rng, round); });
}

// Several changes to one row between two refreshes (an insert deleted
// again, an update updated again, one transaction rolled back) net out
// per arm before anything is evaluated; FULL refreshes in between leave
// the next DIFFERENTIAL one exact.
TEST_F(DifferentialUnionAll, changes_net_out_and_full_refreshes_in_between_stay_exact) {
    db->exec("SELECT pgtrickle.create_stream_table('u', $1, refresh_mode => 'DIFFERENTIAL')",
             {kCases[0].query});
    EXPECT_EQ(db->scalar("SELECT value FROM pgtrickle.explain_st('u') WHERE property = "
                         "'strategy'"),
              "union_all");
    db->exec(
        "INSERT INTO stripe VALUES (500, 1, 'paid'); DELETE FROM stripe WHERE id = 500;"
        "UPDATE paypal SET cents = 1 WHERE pid = 1; UPDATE paypal SET cents = 2 WHERE pid = 1");
    db->exec("BEGIN; DELETE FROM stripe; ROLLBACK");
    refresh("u");
    EXPECT_EQ(last_action("u"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "u");
    full_refreshes_between("u", [&](std::mt19937& rng, int round) { change(rng, round); });
}

// What the sum of arms cannot maintain is refused with 0A000 naming it
// (AUTO recomputes it), and the plan shows each arm's steps.
TEST_F(DifferentialUnionAll, other_set_operations_and_arms_are_refused_by_name) {
    for (const char* q : {
             "SELECT id FROM stripe UNION SELECT pid FROM paypal",
             "SELECT id FROM stripe INTERSECT SELECT pid FROM paypal",
             "SELECT id FROM stripe UNION ALL SELECT count(*) FROM paypal",
             "SELECT id FROM stripe UNION ALL SELECT s.id FROM stripe s JOIN paypal p ON p.pid = "
             "s.id",
             "SELECT id FROM stripe UNION ALL SELECT pid FROM paypal ORDER BY 1 LIMIT 3",
         }) {
        SCOPED_TRACE(q);
        const std::string before = state();
        SqlError e = db->error_of(std::string("SELECT pgtrickle.create_stream_table('x', $q$") + q +
                                  "$q$, refresh_mode => 'DIFFERENTIAL')");
        EXPECT_EQ(e.sqlstate, "0A000") << e.message;
        EXPECT_TRUE(mentions(e.message, "UNION ALL of SELECTs that each read one table"))
            << e.message;
        EXPECT_EQ(state(), before);
    }
    SqlError e = db->error_of(
        "SELECT pgtrickle.create_stream_table('x', 'SELECT id, ctid::text FROM stripe UNION ALL "
        "SELECT pid, NULL FROM paypal', refresh_mode => 'DIFFERENTIAL')");
    EXPECT_EQ(e.sqlstate, "0A000") << e.message;
    EXPECT_TRUE(mentions(e.message, "ctid")) << e.message;
    db->exec(
        "SELECT pgtrickle.create_stream_table('auto_u', 'SELECT id FROM stripe UNION SELECT pid "
        "FROM paypal')");
    EXPECT_EQ(modes("auto_u"), "AUTO/FULL");
    // An aggregate over the union without an algebraic form is recomputed.
    db->exec(
        "SELECT pgtrickle.create_stream_table('auto_n', 'SELECT src, string_agg(id::text, '','' "
        "ORDER BY id) AS ids FROM all_payments GROUP BY src')");
    EXPECT_EQ(modes("auto_n"), "AUTO/FULL");
    // A union whose columns share a name cannot be read by name: refused
    // DIFFERENTIAL, recomputed by AUTO.
    const std::string dup =
        "SELECT count(*) AS n FROM (SELECT id, id FROM stripe UNION ALL SELECT pid, pid FROM "
        "paypal) u";
    EXPECT_EQ(db->error_of("SELECT pgtrickle.create_stream_table('auto_d', $q$" + dup +
                           "$q$, refresh_mode => 'DIFFERENTIAL')")
                  .sqlstate,
              "0A000");
    db->exec("SELECT pgtrickle.create_stream_table('auto_d', $1)", {dup});
    EXPECT_EQ(modes("auto_d"), "AUTO/FULL");
    db->exec("DELETE FROM paypal WHERE pid = 7");
    refresh("auto_d");
    EXPECT_EQ(last_action("auto_d"), "FULL");
    EXPECT_MATCHES_QUERY(*db, "auto_d");
    db->exec(
        "SELECT pgtrickle.create_stream_table('plan_u', 'SELECT id FROM stripe WHERE amount > 3 "
        "UNION ALL SELECT pid FROM paypal', refresh_mode => 'DIFFERENTIAL')");
    const std::string tree = db->scalar(
        "SELECT value FROM pgtrickle.explain_st('plan_u') WHERE property = "
        "'operator_tree'");
    EXPECT_EQ(tree.rfind("SetOp UNION ALL  [KEYLESS_ROW]  rule: union_all (delta: the sum of its "
                         "arms' signed rows; apply: each row's net count adds or removes that many "
                         "copies of it)",
                         0),
              0U)
        << tree;
    EXPECT_NE(tree.find("rule: evaluated on each netted image: signed rows of the union"),
              std::string::npos)
        << tree;
    db->exec("UPDATE stripe SET amount = amount * 2; DELETE FROM paypal WHERE pid < 5");
    refresh("plan_u");
    EXPECT_EQ(last_action("plan_u"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "plan_u");
}

}  // namespace
}  // namespace pgt::e2e
