// DIFFERENTIAL refresh of GROUP BY GROUPING SETS / ROLLUP / CUBE over one
// table (core/diff/grouping_sets): one rescan arm per expanded set, rows
// identified by the grouping expressions plus the hidden __pgt_gset
// (GROUPING of every grouping expression).
// Invariant: every refresh after a change must have run DIFFERENTIAL (or
// the mode the test asked for) and match the oracle; a real NULL key and
// the NULL of a rolled-up key are different rows.
#include <string>
#include <utility>
#include <vector>

#include "fixture.hpp"

namespace pgt::e2e {
namespace {

class DifferentialGroupingSets : public DbTest {
protected:
    void create(const std::string& name, const std::string& query,
                const std::string& mode = "DIFFERENTIAL") {
        db->exec("SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => $3)",
                 {name, query, mode});
        EXPECT_MATCHES_QUERY(*db, name);
    }
    void alter_query(const std::string& st, const std::string& query) {
        db->exec("SELECT pgtrickle.alter_stream_table($1, query => $2)", {st, query});
    }

    // The oracle holds for st and its latest refresh ran `action`.
    ::testing::AssertionResult refreshed_as(const std::string& st, const std::string& action) {
        std::string got = last_action(st);
        if (got != action) {
            return ::testing::AssertionFailure()
                   << "latest refresh of " << st << " was " << got << ", not " << action;
        }
        return matches_query(*db, st);
    }
    ::testing::AssertionResult differential_ok(const std::string& st) {
        return refreshed_as(st, "DIFFERENTIAL");
    }
    ::testing::AssertionResult refreshed_ok(const std::string& st) {
        refresh(st);
        return differential_ok(st);
    }
    ::testing::AssertionResult refreshed_full_ok(const std::string& st) {
        refresh(st);
        return refreshed_as(st, "FULL");
    }

    // Type of st's hidden set column ("" when it has none).
    std::string set_column_type(const std::string& st) {
        return db->scalar(
            "SELECT coalesce((SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = $1::regclass AND attname = '__pgt_gset' AND NOT attisdropped), '')",
            {st});
    }
    // The rows of `sql` as one string: each row's text form without its
    // parentheses (NULL is empty), rows separated by ';' in the query's order.
    std::string rows(const std::string& sql) {
        return db->scalar(
            "SELECT coalesce(string_agg(regexp_replace(q::text, '^\\((.*)\\)$', '\\1'), ';'), "
            "'') FROM (" +
            sql + ") q");
    }
    // Relations besides the listed sources, user triggers, stream tables.
    std::string leftovers(const std::string& sources) {
        return db->scalar(
            "SELECT (SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace "
            "AND relname NOT IN (" +
            sources +
            ")) || '/' || (SELECT count(*) FROM pg_trigger t WHERE NOT t.tgisinternal) || '/' || "
            "(SELECT count(*) FROM pgtrickle.pgt_stream_tables) || '/' || "
            "(SELECT count(*) FROM pgtrickle.pgt_dependencies)");
    }
    bool notice_mentions(const std::string& part) {
        for (const auto& n : db->notices) {
            if (n.find(part) != std::string::npos) {
                return true;
            }
        }
        return false;
    }
};

// --- ROLLUP -----------------------------------------------------------------

const char* kRollupAggregates =
    "SELECT a, b, count(*) AS n, sum(v) AS sv, avg(w) AS aw, min(v) AS lo, max(w) AS hi, "
    "string_agg(id::text, ',' ORDER BY id) AS ids, GROUPING(a, b) AS g, GROUPING(b) AS gb "
    "FROM s GROUP BY ROLLUP (a, b)";

TEST_F(DifferentialGroupingSets, rollup_aggregates_follow_inserts_updates_deletes) {
    db->exec(
        "CREATE TABLE s (id int PRIMARY KEY, a text, b int, v int, w numeric(6,2));"
        "INSERT INTO s SELECT g, chr(97 + g % 3), g % 4, g * 3 % 7, (g % 5) * 1.25 "
        "FROM generate_series(1, 30) g");
    create("r", kRollupAggregates);
    EXPECT_EQ(modes("r"), "DIFFERENTIAL/DIFFERENTIAL");
    EXPECT_EQ(set_column_type("r"), "integer");
    // 3 x 4 groups, 3 subtotals, one grand total; the hidden column is GROUPING(a, b).
    EXPECT_EQ(count("SELECT 1 FROM r"), 16);
    EXPECT_EQ(count("SELECT 1 FROM r WHERE __pgt_gset IS DISTINCT FROM g"), 0);
    // The same sets, outputs in another order than the GROUP BY.
    create("r2", "SELECT GROUPING(b, a) AS gba, b, sum(v) AS sv, a FROM s GROUP BY ROLLUP (a, b)");

    // Inserts into groups and a new top-level group.
    db->exec(
        "INSERT INTO s VALUES (31, 'a', 1, 5, 2.50), (32, 'z', 7, 1, 0.25), (33, 'z', 8, 2, 1)");
    EXPECT_FALSE(matches_query(*db, "r")) << "the oracle must notice a stale table";
    EXPECT_TRUE(refreshed_ok("r"));
    EXPECT_TRUE(refreshed_ok("r2"));
    EXPECT_EQ(rows("SELECT n, ids FROM r WHERE a = 'z' AND g = 1"), "2,\"32,33\"");

    // Updates: values only, a moved (its old and new subtotals change), b
    // moved within a, both moved, into a new group.
    db->exec(
        "UPDATE s SET v = v + 100, w = w * 2 WHERE id IN (3, 4);"
        "UPDATE s SET a = 'b' WHERE id = 6;"
        "UPDATE s SET b = 3 WHERE id = 9;"
        "UPDATE s SET a = 'z', b = 7 WHERE id = 12;"
        "UPDATE s SET a = 'y', b = 0 WHERE id = 15");
    EXPECT_TRUE(refreshed_ok("r"));
    EXPECT_TRUE(refreshed_ok("r2"));

    // Deletes: the last rows of group (z, 8) and of top-level group y.
    db->exec("DELETE FROM s WHERE id IN (33, 15, 1)");
    EXPECT_TRUE(refreshed_ok("r"));
    EXPECT_TRUE(refreshed_ok("r2"));
    EXPECT_EQ(count("SELECT 1 FROM r WHERE a = 'y'"), 0);
    EXPECT_EQ(count("SELECT 1 FROM r WHERE a = 'z' AND b = 8"), 0);
    EXPECT_EQ(rows("SELECT n, ids FROM r WHERE a = 'z' AND g = 1"), "2,\"12,32\"");

    // Several cycles of mixed changes.
    for (int cycle = 0; cycle < 4; cycle++) {
        SCOPED_TRACE("cycle " + std::to_string(cycle));
        std::string c = std::to_string(cycle);
        db->exec("INSERT INTO s SELECT 100 + g + 10 * " + c + ", chr(97 + (g + " + c +
                 ") % 4), (g * " + c +
                 ") % 3, g, g * 0.5 FROM generate_series(1, 5) g;"
                 "UPDATE s SET b = (b + 1) % 5 WHERE id % 4 = " +
                 c +
                 ";"
                 "UPDATE s SET a = chr(97 + (ascii(a) - 96 + " +
                 c + ") % 3) WHERE id % 7 = " + c +
                 ";"
                 "DELETE FROM s WHERE id % 11 = " +
                 c);
        EXPECT_TRUE(refreshed_ok("r"));
        EXPECT_TRUE(refreshed_ok("r2"));
    }

    // Everything changed in one window: every group of every set touched.
    db->exec("UPDATE s SET b = b + 1, v = v - 1");
    EXPECT_TRUE(refreshed_ok("r"));
    EXPECT_TRUE(refreshed_ok("r2"));
    db->exec("DELETE FROM s WHERE a <> 'a'");
    EXPECT_TRUE(refreshed_ok("r"));
    EXPECT_TRUE(refreshed_ok("r2"));
    EXPECT_EQ(count("SELECT 1 FROM r WHERE g = 1"), 1) << "one subtotal left";
}

// --- NULL keys ----------------------------------------------------------------

TEST_F(DifferentialGroupingSets, real_null_key_and_rolled_up_null_stay_distinct_rows) {
    db->exec(
        "CREATE TABLE s (id int PRIMARY KEY, a text, b int, v int);"
        "INSERT INTO s VALUES (1, 'x', 1, 10), (2, 'x', NULL, 20), (3, NULL, 1, 30),"
        " (4, NULL, NULL, 40), (5, 'y', 2, 50)");
    create("nk",
           "SELECT a, b, count(*) AS n, sum(v) AS sv, GROUPING(a, b) AS g "
           "FROM s GROUP BY ROLLUP (a, b)");
    // a IS NULL: groups (NULL,1), (NULL,NULL) [g 0], subtotal (NULL) [g 1], total [g 3].
    const std::string null_a = "SELECT b, g, n, sv FROM nk WHERE a IS NULL ORDER BY g, b";
    EXPECT_EQ(rows(null_a), "1,0,1,30;,0,1,40;,1,2,70;,3,5,150");
    // (x, NULL) is a real group; (x) rolled up is another row.
    const std::string x_rows = "SELECT b, g, n FROM nk WHERE a = 'x' ORDER BY g, b";
    EXPECT_EQ(rows(x_rows), "1,0,1;,0,1;,1,2");

    // A row into the real-NULL groups; one out of (x, NULL).
    db->exec("INSERT INTO s VALUES (6, NULL, NULL, 1); UPDATE s SET b = 2 WHERE id = 2");
    EXPECT_TRUE(refreshed_ok("nk"));
    EXPECT_EQ(rows(null_a), "1,0,1,30;,0,2,41;,1,3,71;,3,6,151");
    EXPECT_EQ(rows(x_rows), "1,0,1;2,0,1;,1,2");

    // A real NULL a becomes a value: (NULL, 1) goes, the NULL subtotal shrinks.
    db->exec("UPDATE s SET a = 'x' WHERE id = 3");
    EXPECT_TRUE(refreshed_ok("nk"));
    EXPECT_EQ(rows(null_a), ",0,2,41;,1,2,41;,3,6,151");

    // A value becomes a real NULL b.
    db->exec("UPDATE s SET b = NULL WHERE id = 5");
    EXPECT_TRUE(refreshed_ok("nk"));
    EXPECT_EQ(rows("SELECT b, g, n FROM nk WHERE a = 'y' ORDER BY g, b"), ",0,1;,1,1");

    // Every real-NULL a row disappears: only the grand total has a NULL a.
    db->exec("DELETE FROM s WHERE id = 4; UPDATE s SET a = 'y' WHERE id = 6");
    EXPECT_TRUE(refreshed_ok("nk"));
    EXPECT_EQ(rows(null_a), ",3,5,111");
    EXPECT_EQ(rows("SELECT b, g, n FROM nk WHERE a = 'y' ORDER BY g, b"), ",0,2;,1,2");

    // And they come back, in one window with a net-zero change to another.
    db->exec(
        "BEGIN; INSERT INTO s VALUES (7, NULL, NULL, 7), (8, NULL, 3, 8);"
        "INSERT INTO s VALUES (9, NULL, 1, 9); DELETE FROM s WHERE id = 9; COMMIT");
    EXPECT_TRUE(refreshed_ok("nk"));
    EXPECT_EQ(rows(null_a), "3,0,1,8;,0,1,7;,1,2,15;,3,7,126");
    EXPECT_EQ(count("SELECT 1 FROM nk WHERE __pgt_gset IS DISTINCT FROM g"), 0);
}

// --- CUBE, explicit sets, mixed and DISTINCT --------------------------------

TEST_F(DifferentialGroupingSets, cube_of_three_expressions_keeps_all_eight_sets) {
    db->exec(
        "CREATE TABLE s (id int PRIMARY KEY, a int, b text, c bool, v numeric);"
        "INSERT INTO s SELECT g, g % 3, 'b' || g % 2, g % 5 = 0, g * 1.5 "
        "FROM generate_series(1, 24) g");
    create("cb",
           "SELECT a, b, c, count(*) AS n, sum(v) AS sv, max(v) AS mx, GROUPING(a, b, c) AS g "
           "FROM s GROUP BY CUBE (a, b, c)");
    EXPECT_EQ(modes("cb"), "DIFFERENTIAL/DIFFERENTIAL");
    EXPECT_EQ(count("SELECT DISTINCT __pgt_gset FROM cb"), 8);
    db->exec("INSERT INTO s VALUES (25, 9, 'b9', NULL, 1), (26, NULL, 'b0', true, 2)");
    EXPECT_TRUE(refreshed_ok("cb"));
    db->exec("UPDATE s SET c = NOT c WHERE id % 4 = 0; UPDATE s SET a = 9 WHERE id = 7");
    EXPECT_TRUE(refreshed_ok("cb"));
    db->exec("DELETE FROM s WHERE id IN (25, 26); UPDATE s SET b = 'b2', v = NULL WHERE id = 3");
    EXPECT_TRUE(refreshed_ok("cb"));
    EXPECT_EQ(count("SELECT 1 FROM cb WHERE a IS NULL AND g & 4 = 0"), 0)
        << "the real NULL a is gone";
    db->exec("DELETE FROM s WHERE a = 9");
    EXPECT_TRUE(refreshed_ok("cb"));
}

TEST_F(DifferentialGroupingSets, explicit_grouping_sets_with_the_empty_set) {
    db->exec(
        "CREATE TABLE s (id int PRIMARY KEY, a int, b text, c date, v int);"
        "INSERT INTO s SELECT g, g % 4, chr(65 + g % 3), date '2024-01-01' + g % 2, g "
        "FROM generate_series(1, 20) g");
    create("es",
           "SELECT a, b, c, count(*) AS n, sum(v) AS sv, GROUPING(a, b, c) AS g "
           "FROM s GROUP BY GROUPING SETS ((a, b), (c), ())");
    EXPECT_EQ(modes("es"), "DIFFERENTIAL/DIFFERENTIAL");
    db->exec("INSERT INTO s VALUES (21, 7, 'Z', '2024-02-01', 100)");
    EXPECT_TRUE(refreshed_ok("es"));
    db->exec("UPDATE s SET c = c + 1 WHERE id % 3 = 0; UPDATE s SET b = 'Q' WHERE id = 5");
    EXPECT_TRUE(refreshed_ok("es"));
    db->exec("DELETE FROM s WHERE id = 21 OR c = date '2024-01-02'");
    EXPECT_TRUE(refreshed_ok("es"));
    EXPECT_EQ(count("SELECT 1 FROM es WHERE g = 7"), 1);
}

TEST_F(DifferentialGroupingSets, plain_key_with_rollup_and_composite_rollup) {
    db->exec(
        "CREATE TABLE s (id int PRIMARY KEY, a text, b int, c int, v int);"
        "INSERT INTO s SELECT g, 'a' || g % 2, g % 3, g % 4, g FROM generate_series(1, 24) g");
    // Sets (a, b, c), (a, b), (a): no empty set.
    create("mx",
           "SELECT a, b, c, count(*) AS n, sum(v) AS sv, GROUPING(a, b, c) AS g "
           "FROM s GROUP BY a, ROLLUP (b, c)");
    // Sets (a, b, c), (a, b), ().
    create("cr",
           "SELECT a, b, c, count(*) AS n, min(v) AS lo, GROUPING(a, b, c) AS g "
           "FROM s GROUP BY ROLLUP ((a, b), c)");
    EXPECT_EQ(count("SELECT DISTINCT __pgt_gset FROM mx"), 3);
    EXPECT_EQ(count("SELECT DISTINCT __pgt_gset FROM cr"), 3);
    db->exec("INSERT INTO s VALUES (25, 'a7', NULL, NULL, 1); UPDATE s SET a = 'a1' WHERE id = 2");
    EXPECT_TRUE(refreshed_ok("mx"));
    EXPECT_TRUE(refreshed_ok("cr"));
    db->exec("UPDATE s SET b = b + 1, c = c - 1 WHERE id % 5 = 1; DELETE FROM s WHERE id = 1");
    EXPECT_TRUE(refreshed_ok("mx"));
    EXPECT_TRUE(refreshed_ok("cr"));
    db->exec("DELETE FROM s WHERE a = 'a7' OR v < 5");
    EXPECT_TRUE(refreshed_ok("mx"));
    EXPECT_TRUE(refreshed_ok("cr"));
}

TEST_F(DifferentialGroupingSets, group_by_distinct_removes_duplicate_sets) {
    db->exec(
        "CREATE TABLE s (id int PRIMARY KEY, a int, b int, v int);"
        "INSERT INTO s SELECT g, g % 3, g % 2, g FROM generate_series(1, 12) g");
    // ROLLUP(a), ROLLUP(a): sets (a), (a), (a), () before DISTINCT.
    create("d1",
           "SELECT a, count(*) AS n, sum(v) AS sv, GROUPING(a) AS g "
           "FROM s GROUP BY DISTINCT ROLLUP (a), ROLLUP (a)");
    // a, ROLLUP(a, b): (a, b), (a), (a) before DISTINCT.
    create("d2",
           "SELECT a, b, count(*) AS n, GROUPING(a, b) AS g FROM s GROUP BY DISTINCT a, ROLLUP (a, "
           "b)");
    EXPECT_EQ(count("SELECT 1 FROM d1"), 4);
    EXPECT_EQ(count("SELECT DISTINCT __pgt_gset FROM d2"), 2);
    db->exec("INSERT INTO s VALUES (13, 5, 1, 13); UPDATE s SET a = 1, b = 0 WHERE id = 3");
    EXPECT_TRUE(refreshed_ok("d1"));
    EXPECT_TRUE(refreshed_ok("d2"));
    db->exec("DELETE FROM s WHERE a = 5 OR id = 4");
    EXPECT_TRUE(refreshed_ok("d1"));
    EXPECT_TRUE(refreshed_ok("d2"));
}

// --- the empty grouping set -------------------------------------------------

TEST_F(DifferentialGroupingSets, empty_set_over_an_empty_table_is_one_grand_total_row) {
    db->exec("CREATE TABLE s (id int PRIMARY KEY, a text, b int, v int)");
    create("tot",
           "SELECT a, count(*) AS n, sum(v) AS sv, GROUPING(a) AS g FROM s GROUP BY ROLLUP (a)");
    create("cube", "SELECT a, b, count(*) AS n, sum(v) AS sv FROM s GROUP BY CUBE (a, b)");
    create("ne", "SELECT a, b, count(*) AS n FROM s GROUP BY GROUPING SETS ((a), (a, b))");
    const std::string grand_total = "SELECT a, n, sv, g FROM tot";
    EXPECT_EQ(rows(grand_total), ",0,,1");
    EXPECT_EQ(rows("SELECT a, b, n, sv FROM cube"), ",,0,");
    EXPECT_EQ(count("SELECT 1 FROM ne"), 0);

    for (int round = 0; round < 2; round++) {
        SCOPED_TRACE("round " + std::to_string(round));
        db->exec("INSERT INTO s VALUES (1, 'p', 1, 5), (2, 'q', 1, 6), (3, NULL, 2, 7)");
        EXPECT_TRUE(refreshed_ok("tot"));
        EXPECT_TRUE(refreshed_ok("cube"));
        EXPECT_TRUE(refreshed_ok("ne"));
        EXPECT_EQ(count("SELECT 1 FROM tot"), 4);
        db->exec("DELETE FROM s WHERE id = 1");
        EXPECT_TRUE(refreshed_ok("tot"));
        EXPECT_TRUE(refreshed_ok("cube"));
        EXPECT_TRUE(refreshed_ok("ne"));
        db->exec("DELETE FROM s");
        EXPECT_TRUE(refreshed_ok("tot"));
        EXPECT_TRUE(refreshed_ok("cube"));
        EXPECT_TRUE(refreshed_ok("ne"));
        EXPECT_EQ(rows(grand_total), ",0,,1");
        EXPECT_EQ(rows("SELECT a, b, n, sv FROM cube"), ",,0,");
        EXPECT_EQ(count("SELECT 1 FROM ne"), 0);
    }

    // Inserted and deleted in one window over the empty table: nothing changes.
    db->exec("BEGIN; INSERT INTO s VALUES (9, 'r', 1, 1); DELETE FROM s WHERE id = 9; COMMIT");
    refresh("tot");
    EXPECT_TRUE(matches_query(*db, "tot"));
    EXPECT_EQ(rows(grand_total), ",0,,1");

    // TRUNCATE: the next refresh recomputes; the grand total is back to zero.
    db->exec("INSERT INTO s VALUES (1, 'p', 1, 5)");
    EXPECT_TRUE(refreshed_ok("tot"));
    db->exec("TRUNCATE s");
    refresh("tot");
    EXPECT_TRUE(matches_query(*db, "tot"));
    EXPECT_EQ(rows(grand_total), ",0,,1");
}

// --- HAVING -------------------------------------------------------------------

TEST_F(DifferentialGroupingSets, having_groups_enter_and_leave_in_every_set) {
    db->exec(
        "CREATE TABLE s (id int PRIMARY KEY, a text, b int, v int);"
        "INSERT INTO s VALUES (1, 'x', 1, 5), (2, 'x', 1, 6), (3, 'x', 2, 1), (4, 'y', 1, 2),"
        " (5, 'y', 2, 3), (6, NULL, 1, 4), (7, NULL, 1, 8)");
    create("h1",
           "SELECT a, b, count(*) AS n, sum(v) AS sv FROM s GROUP BY ROLLUP (a, b) "
           "HAVING count(*) >= 2");
    // Subtotals and the total always; detail groups only with a large sum.
    create("h2",
           "SELECT a, b, sum(v) AS sv, GROUPING(a, b) AS g FROM s GROUP BY ROLLUP (a, b) "
           "HAVING GROUPING(b) = 1 OR sum(v) > 5");
    // Absent keys read as NULL in HAVING as in the select list.
    create("h3",
           "SELECT a, b, count(*) AS n FROM s GROUP BY GROUPING SETS ((a, b), (a), (b)) "
           "HAVING a IS NULL OR count(*) > 1");
    auto all_ok = [&] {
        EXPECT_TRUE(refreshed_ok("h1"));
        EXPECT_TRUE(refreshed_ok("h2"));
        EXPECT_TRUE(refreshed_ok("h3"));
    };
    EXPECT_EQ(count("SELECT 1 FROM h1 WHERE a = 'y' AND b IS NOT NULL"), 0);

    // (y, 1) and (y, 2) enter h1; (x, 1) leaves it.
    db->exec("INSERT INTO s VALUES (8, 'y', 1, 1), (9, 'y', 2, 1); DELETE FROM s WHERE id = 1");
    all_ok();
    EXPECT_EQ(count("SELECT 1 FROM h1 WHERE a = 'y' AND b IS NOT NULL"), 2);
    EXPECT_EQ(count("SELECT 1 FROM h1 WHERE a = 'x' AND b = 1"), 0);

    // Sums cross h2's threshold both ways; a group moves between a values.
    db->exec(
        "UPDATE s SET v = 10 WHERE id = 3; UPDATE s SET v = 0 WHERE id = 7;"
        "UPDATE s SET a = 'x' WHERE id = 5");
    all_ok();
    EXPECT_EQ(count("SELECT 1 FROM h2 WHERE a = 'x' AND b = 2"), 1);

    // The subtotal of y leaves h1 (one row left), the total stays.
    db->exec("DELETE FROM s WHERE a = 'y' AND id <> 4");
    all_ok();
    EXPECT_EQ(count("SELECT 1 FROM h1 WHERE a = 'y'"), 0);
    EXPECT_EQ(count("SELECT 1 FROM h2 WHERE a = 'y' AND g = 1"), 1);

    // Everything but one row goes; then the table is emptied (no grand total
    // passes HAVING count(*) >= 2).
    db->exec("DELETE FROM s WHERE id <> 6");
    all_ok();
    db->exec("DELETE FROM s");
    all_ok();
    EXPECT_EQ(count("SELECT 1 FROM h1"), 0);
    EXPECT_EQ(count("SELECT 1 FROM h2"), 1) << "the grand total passes GROUPING(b) = 1";
}

// --- expressions --------------------------------------------------------------

// A grouping key that contains another (x > 20 and x): in a set where x
// is rolled up, x > 20 is still its group's value (found by the property
// test: the arm read NULL > 20; wrong rows, or 23505 when several groups
// collapsed into one identity).
TEST_F(DifferentialGroupingSets, a_key_containing_a_rolled_up_key_keeps_its_value) {
    db->exec(
        "CREATE TABLE nk (id int PRIMARY KEY, x int, t text);"
        "INSERT INTO nk VALUES (1, 1, 'ab'), (2, 25, 'ac'), (3, NULL, 'b'), (4, 30, NULL)");
    create("gt", "SELECT (x > 20) AS k0, x AS k1, count(*) AS c FROM nk GROUP BY ROLLUP (1, 2)");
    create("cube",
           "SELECT (x / 20) AS k0, x AS k1, count(*) AS c FROM nk GROUP BY (x / 20), CUBE (x)");
    create("pre",
           "SELECT left(t, 1) AS p, t, count(*) AS c, GROUPING(left(t, 1), t) AS g FROM nk "
           "GROUP BY ROLLUP (left(t, 1), t) HAVING left(t, 1) IS NOT NULL OR count(*) > 1");
    db->exec("INSERT INTO nk VALUES (5, 3, 'ad'), (6, 26, 'bb'), (7, 2, NULL)");
    for (const char* st : {"gt", "cube", "pre"}) {
        EXPECT_TRUE(refreshed_ok(st)) << st;
    }
    EXPECT_EQ(db->scalar("SELECT c FROM gt WHERE k0 = false AND k1 IS NULL"), "3");
    db->exec(
        "UPDATE nk SET x = x + 20 WHERE id IN (1, 5); DELETE FROM nk WHERE id = 2;"
        "UPDATE nk SET t = 'zz' WHERE id = 6");
    for (const char* st : {"gt", "cube", "pre"}) {
        EXPECT_TRUE(refreshed_ok(st)) << st;
    }
}

TEST_F(DifferentialGroupingSets, expressions_as_keys_and_aggregates_of_absent_keys) {
    db->exec(
        "CREATE TABLE s (id int PRIMARY KEY, a int, b text, v numeric);"
        "INSERT INTO s SELECT g, g * 7 % 10, (ARRAY['Ab', 'aB', 'cd', 'CD', NULL])[g % 5 + 1], "
        "g / 4.0 FROM generate_series(1, 30) g");
    create("ex",
           "SELECT a % 3 AS m, lower(b) AS lb, (a % 3) * 10 AS m10, coalesce(lower(b), '(all)') "
           "AS label, upper(lower(b)) AS ub, count(*) AS n, sum(a) AS sa, sum(a % 3) AS sm, "
           "count(lower(b)) AS nb, max(v) FILTER (WHERE a % 3 = 1) AS mv, "
           "GROUPING(a % 3, lower(b)) AS g FROM s GROUP BY ROLLUP (a % 3, lower(b))");
    // Aggregates of the keys themselves in sets where they are rolled up.
    create("ab",
           "SELECT a, b, sum(a) AS sa, max(a) AS ma, string_agg(b, '' ORDER BY b, id) AS bs, "
           "count(b) AS nb, GROUPING(a, b) AS g FROM s GROUP BY ROLLUP (a, b)");
    EXPECT_EQ(db->scalar("SELECT sa FROM ab WHERE g = 3"), db->scalar("SELECT sum(a) FROM s"));
    EXPECT_EQ(db->scalar("SELECT sm FROM ex WHERE g = 3"), db->scalar("SELECT sum(a % 3) FROM s"));

    db->exec("INSERT INTO s VALUES (31, 11, 'AB', 100), (32, NULL, 'Zz', 1), (33, 5, NULL, 2)");
    EXPECT_TRUE(refreshed_ok("ex"));
    EXPECT_TRUE(refreshed_ok("ab"));
    // a changes but a % 3 does not; b changes but lower(b) does not; both move.
    db->exec(
        "UPDATE s SET a = a + 3 WHERE id IN (1, 2);"
        "UPDATE s SET b = upper(b) WHERE id IN (3, 4);"
        "UPDATE s SET a = a + 1, b = 'new' WHERE id IN (5, 6, 7)");
    EXPECT_TRUE(refreshed_ok("ex"));
    EXPECT_TRUE(refreshed_ok("ab"));
    db->exec("DELETE FROM s WHERE a % 3 = 2 OR b IS NULL");
    EXPECT_TRUE(refreshed_ok("ex"));
    EXPECT_TRUE(refreshed_ok("ab"));
    EXPECT_EQ(db->scalar("SELECT sa FROM ab WHERE g = 3"), db->scalar("SELECT sum(a) FROM s"));
    EXPECT_EQ(db->scalar("SELECT sm FROM ex WHERE g = 3"), db->scalar("SELECT sum(a % 3) FROM s"));
}

TEST_F(DifferentialGroupingSets, labels_repeated_keys_distinct_aggregates_and_order_by) {
    db->exec(
        "CREATE TABLE s (id int PRIMARY KEY, a text, b int, c int, v int);"
        "INSERT INTO s SELECT g, 'a' || g % 3, g % 4, g % 2, g FROM generate_series(1, 24) g;"
        "INSERT INTO s VALUES (25, NULL, 1, 0, 25)");
    // The usual report: a label from GROUPING(), a key selected twice, a
    // DISTINCT aggregate, ordered output.
    create("lab",
           "SELECT CASE WHEN GROUPING(a) = 1 THEN 'all' ELSE coalesce(a, '(none)') END AS label, "
           "a AS a1, a AS a2, b, count(DISTINCT b) AS nb, string_agg(DISTINCT c::text, ',') "
           "AS cs, sum(v) AS sv FROM s GROUP BY ROLLUP (a, b) ORDER BY GROUPING(a, b), a, b");
    // Keys over two columns: rows move when a + b does.
    create("sum2", "SELECT b + c AS bc, a, count(*) AS n FROM s GROUP BY CUBE (b + c, a)");
    EXPECT_EQ(modes("lab"), "DIFFERENTIAL/DIFFERENTIAL");
    EXPECT_EQ(modes("sum2"), "DIFFERENTIAL/DIFFERENTIAL");
    EXPECT_EQ(rows("SELECT label, sv FROM lab WHERE a1 IS NULL ORDER BY label"),
              "\"(none)\",25;\"(none)\",25;all,325");
    db->exec(
        "UPDATE s SET b = b + 1, c = c - 1 WHERE id % 3 = 0;"
        "UPDATE s SET a = NULL WHERE id = 1; UPDATE s SET a = 'a9' WHERE id = 25;"
        "INSERT INTO s VALUES (26, 'a0', 7, 7, 1)");
    EXPECT_TRUE(refreshed_ok("lab"));
    EXPECT_TRUE(refreshed_ok("sum2"));
    db->exec("DELETE FROM s WHERE b = 1 OR a IS NULL");
    EXPECT_TRUE(refreshed_ok("lab"));
    EXPECT_TRUE(refreshed_ok("sum2"));
    EXPECT_EQ(count("SELECT 1 FROM lab WHERE label = '(none)'"), 0);
}

TEST_F(DifferentialGroupingSets, more_than_31_grouping_expressions_fall_to_full) {
    db->exec(
        "CREATE TABLE s (id int PRIMARY KEY, a int);"
        "INSERT INTO s SELECT g, g % 2 FROM generate_series(1, 4) g");
    std::string cols, keys;
    for (int i = 1; i <= 32; i++) {
        cols += "a + " + std::to_string(i) + " AS k" + std::to_string(i) + ", ";
        keys += std::string(i > 1 ? ", " : "") + "a + " + std::to_string(i);
    }
    const std::string query =
        "SELECT " + cols + "count(*) AS n FROM s GROUP BY GROUPING SETS ((" + keys + "), (a + 1))";
    SqlError e = db->error_of("SELECT pgtrickle.create_stream_table('w', $q$" + query +
                              "$q$, refresh_mode => 'DIFFERENTIAL')");
    EXPECT_EQ(e.sqlstate, "0A000") << e.message;
    EXPECT_NE(e.message.find("31"), std::string::npos) << e.message;
    create("w", query, "AUTO");
    EXPECT_EQ(modes("w"), "AUTO/FULL");
    db->exec("INSERT INTO s VALUES (5, 7); DELETE FROM s WHERE id = 1");
    EXPECT_TRUE(refreshed_full_ok("w"));
}

// --- WHERE --------------------------------------------------------------------

TEST_F(DifferentialGroupingSets, where_clause_rows_move_in_and_out) {
    db->exec(
        "CREATE TABLE s (id int PRIMARY KEY, a text, b int, v int, keep bool);"
        "INSERT INTO s SELECT g, 'a' || g % 3, g % 2, g, g % 4 <> 0 FROM generate_series(1, 20) g");
    create("w",
           "SELECT a, b, count(*) AS n, sum(v) AS sv, GROUPING(a, b) AS g FROM s "
           "WHERE keep AND v < 100 GROUP BY ROLLUP (a, b)");
    create("wn",
           "SELECT a, b, count(*) AS n FROM s WHERE keep GROUP BY GROUPING SETS ((a, b), (b))");
    // In, out, in with another key, a change of a row that stays out.
    db->exec(
        "UPDATE s SET keep = true WHERE id = 4;"
        "UPDATE s SET keep = false WHERE id = 5;"
        "UPDATE s SET keep = true, a = 'new' WHERE id = 8;"
        "UPDATE s SET a = 'gone' WHERE id = 12");
    EXPECT_TRUE(refreshed_ok("w"));
    EXPECT_TRUE(refreshed_ok("wn"));
    EXPECT_EQ(count("SELECT 1 FROM w WHERE a = 'gone'"), 0);
    // Out through the other conjunct; a whole group filtered out.
    db->exec(
        "UPDATE s SET v = v + 100 WHERE id IN (1, 2); UPDATE s SET keep = false WHERE a = 'new'");
    EXPECT_TRUE(refreshed_ok("w"));
    EXPECT_TRUE(refreshed_ok("wn"));
    EXPECT_EQ(count("SELECT 1 FROM w WHERE a = 'new'"), 0);
    // Rows inserted outside the filter only: nothing visible changes.
    db->exec("INSERT INTO s VALUES (50, 'a1', 1, 500, true), (51, 'a1', 1, 1, false)");
    EXPECT_TRUE(refreshed_ok("w"));
    EXPECT_TRUE(refreshed_ok("wn"));
    // Everything filtered out: only the grand total, counting nothing.
    db->exec("UPDATE s SET keep = false");
    EXPECT_TRUE(refreshed_ok("w"));
    EXPECT_TRUE(refreshed_ok("wn"));
    EXPECT_EQ(rows("SELECT a, b, n, sv, g FROM w"), ",,0,,3");
    EXPECT_EQ(count("SELECT 1 FROM wn"), 0);
    db->exec("UPDATE s SET keep = true WHERE id % 2 = 0");
    EXPECT_TRUE(refreshed_ok("w"));
    EXPECT_TRUE(refreshed_ok("wn"));
}

// --- AUTO ---------------------------------------------------------------------

TEST_F(DifferentialGroupingSets, auto_takes_full_only_with_the_empty_set) {
    db->exec(
        "CREATE TABLE s (id int PRIMARY KEY, a int, b int, v int);"
        "INSERT INTO s SELECT g, g % 3, g % 5, g FROM generate_series(1, 40) g; ANALYZE s");
    db->notices.clear();
    create("no_total", "SELECT a, b, sum(v) AS sv FROM s GROUP BY GROUPING SETS ((a, b), (a))",
           "AUTO");
    EXPECT_EQ(modes("no_total"), "AUTO/DIFFERENTIAL");
    EXPECT_FALSE(notice_mentions("grouping set")) << db->notices.size();
    db->notices.clear();
    create("total", "SELECT a, sum(v) AS sv FROM s GROUP BY ROLLUP (a)", "AUTO");
    EXPECT_EQ(modes("total"), "AUTO/FULL");
    EXPECT_TRUE(notice_mentions("empty grouping set"))
        << (db->notices.empty() ? "no NOTICE" : db->notices.front());
    db->exec("UPDATE s SET a = 7 WHERE id = 3; DELETE FROM s WHERE id = 4");
    EXPECT_TRUE(refreshed_ok("no_total"));
    EXPECT_TRUE(refreshed_full_ok("total"));
    // DIFFERENTIAL asked for explicitly still maintains the empty set.
    create("total_d", "SELECT a, sum(v) AS sv FROM s GROUP BY ROLLUP (a)");
    EXPECT_EQ(modes("total_d"), "DIFFERENTIAL/DIFFERENTIAL");
    db->exec("INSERT INTO s VALUES (41, 7, 1, 1)");
    EXPECT_TRUE(refreshed_ok("total_d"));
}

// --- the branch limit -------------------------------------------------------

TEST_F(DifferentialGroupingSets, branch_limit_setting_rejects_or_falls_back) {
    db->exec(
        "CREATE TABLE s (id int PRIMARY KEY, a int, b int, c int, v int);"
        "INSERT INTO s SELECT g, g % 3, g % 4, g % 2, g FROM generate_series(1, 24) g");
    EXPECT_EQ(db->scalar("SHOW pg_trickle.max_grouping_set_branches"), "64");
    EXPECT_EQ(db->error_of("SET pg_trickle.max_grouping_set_branches = 0").sqlstate, "22023");
    EXPECT_EQ(db->error_of("SET pg_trickle.max_grouping_set_branches = 65537").sqlstate, "22023");
    const std::string cube = "SELECT a, b, count(*) AS n, sum(v) AS sv FROM s GROUP BY CUBE (a, b)";
    // Four sets, no empty one: AUTO would keep it DIFFERENTIAL under the limit.
    const std::string four =
        "SELECT a, b, c, count(*) AS n, sum(v) AS sv FROM s GROUP BY a, CUBE (b, c)";
    const std::string sources = "'s', 's_pkey'";
    ASSERT_EQ(leftovers(sources), "0/0/0/0");

    db->exec("SET pg_trickle.max_grouping_set_branches = 3");
    SqlError e = db->error_of("SELECT pgtrickle.create_stream_table('c', $q$" + cube +
                              "$q$, refresh_mode => 'DIFFERENTIAL')");
    EXPECT_EQ(e.sqlstate, "54000") << e.message;
    EXPECT_NE(e.hint.find("pg_trickle.max_grouping_set_branches"), std::string::npos) << e.hint;
    EXPECT_EQ(leftovers(sources), "0/0/0/0") << "a rejected create left objects behind";
    EXPECT_EQ(db->scalar("SELECT to_regclass('c') IS NULL"), "t");

    // AUTO: FULL, saying why.
    db->notices.clear();
    create("c", cube, "AUTO");
    EXPECT_EQ(modes("c"), "AUTO/FULL");
    db->notices.clear();
    create("f", four, "AUTO");
    EXPECT_EQ(modes("f"), "AUTO/FULL");
    EXPECT_TRUE(notice_mentions("max_grouping_set_branches"))
        << (db->notices.empty() ? "no NOTICE" : db->notices.front());
    db->exec("UPDATE s SET b = 9 WHERE id < 4; DELETE FROM s WHERE id = 10");
    EXPECT_TRUE(refreshed_full_ok("c"));
    EXPECT_TRUE(refreshed_full_ok("f"));
    // Asking for DIFFERENTIAL over the limit fails and leaves the table as it was.
    EXPECT_EQ(db->error_of("SELECT pgtrickle.alter_stream_table('f', refresh_mode => "
                           "'DIFFERENTIAL')")
                  .sqlstate,
              "54000");
    EXPECT_EQ(modes("f"), "AUTO/FULL");

    // At four sets the same queries are maintained differentially.
    db->exec("SET pg_trickle.max_grouping_set_branches = 4");
    create("c4", cube);
    EXPECT_EQ(modes("c4"), "DIFFERENTIAL/DIFFERENTIAL");
    alter_mode("f", "AUTO");
    EXPECT_EQ(modes("f"), "AUTO/DIFFERENTIAL");
    alter_mode("c", "DIFFERENTIAL");
    EXPECT_EQ(modes("c"), "DIFFERENTIAL/DIFFERENTIAL");
    db->exec("RESET pg_trickle.max_grouping_set_branches");
    EXPECT_EQ(db->scalar("SHOW pg_trickle.max_grouping_set_branches"), "64");
    db->exec("INSERT INTO s VALUES (100, 1, 1, 1, 1); UPDATE s SET a = 5 WHERE id = 11");
    EXPECT_TRUE(refreshed_ok("c4"));
    EXPECT_TRUE(refreshed_ok("f"));
    EXPECT_TRUE(refreshed_ok("c"));
    // A lower limit later does not stop refreshes of existing tables.
    db->exec("SET pg_trickle.max_grouping_set_branches = 1");
    db->exec("DELETE FROM s WHERE id = 100");
    EXPECT_TRUE(refreshed_ok("c4"));
    db->exec("RESET pg_trickle.max_grouping_set_branches");
}

// --- joins and derived tables ------------------------------------------------

TEST_F(DifferentialGroupingSets, grouping_sets_over_a_join_and_a_derived_table) {
    db->exec(
        "CREATE TABLE s (id int PRIMARY KEY, uid int, a int, v int);"
        "CREATE TABLE u (id int PRIMARY KEY, k text);"
        "INSERT INTO u SELECT g, (ARRAY['p', 'q', NULL])[g % 3 + 1] FROM generate_series(1, 6) g;"
        "INSERT INTO s SELECT g, g % 7 + 1, g % 4, g FROM generate_series(1, 30) g");
    // u 7 is missing: s rows with uid 7 join nothing.
    create("j1",
           "SELECT u.k, s.a, count(*) AS n, sum(s.v) AS sv, GROUPING(u.k, s.a) AS g "
           "FROM s JOIN u ON u.id = s.uid GROUP BY GROUPING SETS ((u.k, s.a), (u.k))");
    create("j2",
           "SELECT u.k, s.a, count(*) AS n, max(s.v) AS mx, GROUPING(u.k, s.a) AS g "
           "FROM s JOIN u ON u.id = s.uid GROUP BY ROLLUP (u.k, s.a)");
    create("d1",
           "SELECT a, count(*) AS n, sum(v) AS sv FROM (SELECT a, v FROM s WHERE v > 2) q "
           "GROUP BY ROLLUP (a)");
    EXPECT_EQ(modes("j1"), "DIFFERENTIAL/DIFFERENTIAL");
    EXPECT_EQ(modes("j2"), "DIFFERENTIAL/DIFFERENTIAL");
    EXPECT_EQ(modes("d1"), "DIFFERENTIAL/DIFFERENTIAL");
    EXPECT_EQ(set_column_type("j1"), "integer");
    // The real NULL k and the rolled-up k are different rows.
    EXPECT_EQ(count("SELECT 1 FROM j1 WHERE k IS NULL AND g = 1"), 1);
    // d1 reads only s: a window with changes to u alone has no data for it.
    auto all_ok = [&](bool s_changed = true) {
        EXPECT_TRUE(refreshed_ok("j1"));
        EXPECT_TRUE(refreshed_ok("j2"));
        refresh("d1");
        EXPECT_TRUE(refreshed_as("d1", s_changed ? "DIFFERENTIAL" : "NO_DATA"));
    };
    // Changes on the grouped side: a moved, a row to another u, one joining
    // nothing yet, a delete.
    db->exec(
        "UPDATE s SET a = 9 WHERE id IN (1, 2);"
        "UPDATE s SET uid = 1 WHERE id = 3;"
        "INSERT INTO s VALUES (31, 8, 1, 31), (32, 2, 1, 1);"
        "DELETE FROM s WHERE id = 4");
    all_ok();
    // Changes on the other side: a key renamed (its rows move between
    // groups), a key becoming a real NULL, a missing row arriving, a row
    // going (its s rows join nothing any more).
    db->exec(
        "UPDATE u SET k = 'r' WHERE id = 1;"
        "UPDATE u SET k = NULL WHERE id = 2;"
        "INSERT INTO u VALUES (7, 'p'), (8, NULL);"
        "DELETE FROM u WHERE id = 5");
    all_ok(false);
    // Both sides in one window; every real NULL k goes.
    db->exec(
        "UPDATE u SET k = 'q' WHERE k IS NULL;"
        "UPDATE s SET uid = 5, a = 0 WHERE id % 5 = 0;"
        "DELETE FROM s WHERE v BETWEEN 10 AND 14");
    all_ok();
    EXPECT_EQ(count("SELECT 1 FROM j1 WHERE k IS NULL"), 0);
    EXPECT_EQ(count("SELECT 1 FROM j2 WHERE k IS NULL"), 1) << "only the grand total";
    db->exec("DELETE FROM u");
    all_ok(false);
    EXPECT_EQ(count("SELECT 1 FROM j1"), 0);
    EXPECT_EQ(rows("SELECT k, a, n, mx, g FROM j2"), ",,0,,3");

    // AUTO: DIFFERENTIAL without the empty set, FULL with it.
    create("j1_auto",
           "SELECT u.k, s.a, count(*) AS n FROM s JOIN u ON u.id = s.uid "
           "GROUP BY GROUPING SETS ((u.k, s.a), (s.a))",
           "AUTO");
    EXPECT_EQ(modes("j1_auto"), "AUTO/DIFFERENTIAL");
    create("j2_auto",
           "SELECT u.k, count(*) AS n FROM s JOIN u ON u.id = s.uid GROUP BY ROLLUP (u.k)", "AUTO");
    EXPECT_EQ(modes("j2_auto"), "AUTO/FULL");
    db->exec("INSERT INTO u VALUES (1, 'p'), (2, NULL)");
    EXPECT_TRUE(refreshed_ok("j1_auto"));
    EXPECT_TRUE(refreshed_full_ok("j2_auto"));
}

// --- shapes DIFFERENTIAL rejects --------------------------------------------

TEST_F(DifferentialGroupingSets, rejected_shapes_are_named_and_auto_keeps_them_with_full) {
    db->exec(
        "CREATE TABLE s (id int PRIMARY KEY, a int, b int, v int);"
        "CREATE TABLE u (id int PRIMARY KEY, k text);"
        "INSERT INTO s SELECT g, g % 3, g % 2, g FROM generate_series(1, 12) g;"
        "INSERT INTO u SELECT g, 'k' || g % 2 FROM generate_series(1, 12) g");
    const std::string sources = "'s', 's_pkey', 'u', 'u_pkey'";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"SELECT a, count(*) AS n FROM s GROUP BY GROUPING SETS ((a), (a))",
         "duplicate grouping sets"},
        {"SELECT a, b, count(*) AS n, sum(v) AS sv FROM s GROUP BY a, ROLLUP (a, b)",
         "duplicate grouping sets"},
        {"SELECT a, b, count(*) AS n FROM s GROUP BY GROUPING SETS ((a, b), (b, a), ())",
         "duplicate grouping sets"},
        {"SELECT u.k, s.a, count(*) AS n FROM s JOIN u ON u.id = s.id "
         "GROUP BY GROUPING SETS ((u.k), (u.k), (s.a))",
         "duplicate grouping sets"},
        {"SELECT count(*) AS n, sum(v) AS sv FROM s GROUP BY ROLLUP (a)", "not in the select list"},
        {"SELECT u.k, s.a, count(*) AS n FROM s FULL JOIN (SELECT * FROM u WHERE u.id > 0) u ON "
         "u.id = s.id "
         "GROUP BY ROLLUP (u.k, s.a)",
         "FULL JOIN"},
    };
    for (const auto& [query, construct] : cases) {
        SCOPED_TRACE(query);
        SqlError e = db->error_of("SELECT pgtrickle.create_stream_table('x', $q$" + query +
                                  "$q$, refresh_mode => 'DIFFERENTIAL')");
        EXPECT_EQ(e.sqlstate, "0A000") << e.message;
        EXPECT_NE(e.message.find(construct), std::string::npos) << e.message;
        EXPECT_EQ(leftovers(sources), "0/0/0/0");
    }
    for (std::size_t i = 0; i < cases.size(); i++) {
        SCOPED_TRACE(cases[i].first);
        create("x" + std::to_string(i), cases[i].first, "AUTO");
        EXPECT_EQ(modes("x" + std::to_string(i)), "AUTO/FULL");
    }
    for (int cycle = 0; cycle < 2; cycle++) {
        db->exec("INSERT INTO s VALUES (20 + " + std::to_string(cycle) +
                 ", 5, 1, 50); UPDATE s SET a = (a + 1) % 4 WHERE id % 3 = 0;"
                 "DELETE FROM s WHERE id = 1 + " +
                 std::to_string(cycle) + "; UPDATE u SET k = 'k9' WHERE id = 2 + " +
                 std::to_string(cycle));
        for (std::size_t i = 0; i < cases.size(); i++) {
            SCOPED_TRACE(cases[i].first);
            EXPECT_TRUE(refreshed_full_ok("x" + std::to_string(i)));
        }
    }
}

// --- mode and query changes -------------------------------------------------

TEST_F(DifferentialGroupingSets, mode_round_trip_keeps_the_table_correct) {
    db->exec(
        "CREATE TABLE s (id int PRIMARY KEY, a text, b int, v int, w numeric(6,2));"
        "INSERT INTO s SELECT g, chr(97 + g % 3), g % 4, g, g * 0.5 FROM generate_series(1, 20) g");
    create("m", kRollupAggregates);
    db->exec("UPDATE s SET a = 'q' WHERE id < 4");
    EXPECT_TRUE(refreshed_ok("m"));

    alter_mode("m", "FULL");
    EXPECT_EQ(modes("m"), "FULL/FULL");
    EXPECT_MATCHES_QUERY(*db, "m");
    EXPECT_EQ(set_column_type("m"), "integer") << "FULL stores the hidden column too";
    db->exec("INSERT INTO s VALUES (30, NULL, NULL, 1, 1); DELETE FROM s WHERE id = 5");
    EXPECT_TRUE(refreshed_full_ok("m"));
    EXPECT_EQ(count("SELECT 1 FROM m WHERE __pgt_gset IS DISTINCT FROM g"), 0);

    alter_mode("m", "DIFFERENTIAL");
    EXPECT_EQ(modes("m"), "DIFFERENTIAL/DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "m");
    db->exec("UPDATE s SET b = NULL WHERE id = 30; UPDATE s SET a = NULL WHERE id = 6");
    EXPECT_TRUE(refreshed_ok("m"));

    alter_mode("m", "AUTO");  // the empty set: AUTO takes FULL
    EXPECT_EQ(modes("m"), "AUTO/FULL");
    db->exec("DELETE FROM s WHERE a IS NULL");
    EXPECT_TRUE(refreshed_full_ok("m"));
    alter_mode("m", "DIFFERENTIAL");
    db->exec("INSERT INTO s VALUES (31, NULL, 2, 2, 2)");
    EXPECT_TRUE(refreshed_ok("m"));
}

TEST_F(DifferentialGroupingSets, altering_the_query_between_group_by_and_rollup) {
    db->exec(
        "CREATE TABLE s (id int PRIMARY KEY, a text, b int, v int);"
        "INSERT INTO s SELECT g, 'a' || g % 3, g % 2, g FROM generate_series(1, 15) g;"
        "INSERT INTO s VALUES (16, NULL, 0, 16)");
    const std::string plain = "SELECT a, count(*) AS n, sum(v) AS sv FROM s GROUP BY a";
    const std::string rollup = "SELECT a, count(*) AS n, sum(v) AS sv FROM s GROUP BY ROLLUP (a)";
    create("q", plain);
    db->exec("UPDATE s SET a = 'a9' WHERE id = 1");
    EXPECT_TRUE(refreshed_ok("q"));
    EXPECT_EQ(set_column_type("q"), "");

    alter_query("q", rollup);
    EXPECT_EQ(modes("q"), "DIFFERENTIAL/DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "q");
    EXPECT_EQ(set_column_type("q"), "integer");
    EXPECT_EQ(count("SELECT 1 FROM q WHERE a IS NULL"), 2) << "the real NULL group and the total";
    db->exec("INSERT INTO s VALUES (17, NULL, 1, 17); DELETE FROM s WHERE id = 2");
    EXPECT_TRUE(refreshed_ok("q"));

    alter_query("q", plain);
    EXPECT_MATCHES_QUERY(*db, "q");
    EXPECT_EQ(set_column_type("q"), "");
    db->exec("UPDATE s SET a = NULL WHERE id = 3; DELETE FROM s WHERE id = 16");
    EXPECT_TRUE(refreshed_ok("q"));

    // And to a query with other columns and sets.
    alter_query("q", "SELECT a, b, count(*) AS n FROM s GROUP BY GROUPING SETS ((a, b), (b))");
    EXPECT_MATCHES_QUERY(*db, "q");
    db->exec("UPDATE s SET b = 5 WHERE id = 4");
    EXPECT_TRUE(refreshed_ok("q"));
}

// --- keyless sources ----------------------------------------------------------

TEST_F(DifferentialGroupingSets, keyless_source_with_duplicate_rows) {
    db->exec(
        "CREATE TABLE s (a text, b int, v int);"
        "INSERT INTO s VALUES ('x', 1, 5), ('x', 1, 5), ('x', 1, 5), ('x', 2, 5), ('y', 1, 1),"
        " ('y', 1, 1), (NULL, NULL, 3), (NULL, NULL, 3)");
    create("k",
           "SELECT a, b, count(*) AS n, sum(v) AS sv, GROUPING(a, b) AS g "
           "FROM s GROUP BY ROLLUP (a, b)");
    EXPECT_EQ(modes("k"), "DIFFERENTIAL/DIFFERENTIAL");
    // One of three equal rows deleted, one of two updated, another duplicated.
    db->exec(
        "DELETE FROM s WHERE ctid = (SELECT min(ctid) FROM s WHERE a = 'x' AND b = 1);"
        "UPDATE s SET b = 3 WHERE ctid = (SELECT max(ctid) FROM s WHERE a = 'y');"
        "INSERT INTO s VALUES (NULL, NULL, 3)");
    EXPECT_TRUE(refreshed_ok("k"));
    EXPECT_EQ(rows("SELECT n, sv FROM k WHERE a = 'x' AND b = 1"), "2,10");
    EXPECT_EQ(rows("SELECT n, sv FROM k WHERE a IS NULL AND g = 0"), "3,9");
    // All copies of a row go, while equal rows arrive elsewhere.
    db->exec("DELETE FROM s WHERE a IS NULL; INSERT INTO s VALUES ('x', 2, 5), ('x', 2, 5)");
    EXPECT_TRUE(refreshed_ok("k"));
    EXPECT_EQ(count("SELECT 1 FROM k WHERE a IS NULL AND g < 3"), 0);
    for (int cycle = 0; cycle < 3; cycle++) {
        SCOPED_TRACE("cycle " + std::to_string(cycle));
        db->exec(
            "INSERT INTO s SELECT a, b, v FROM s WHERE a = 'x';"
            "DELETE FROM s WHERE ctid IN (SELECT ctid FROM s WHERE b = 2 LIMIT 1);"
            "UPDATE s SET v = v + 1 WHERE ctid = (SELECT min(ctid) FROM s)");
        EXPECT_TRUE(refreshed_ok("k"));
    }
}

// --- netting within a transaction -----------------------------------------------

TEST_F(DifferentialGroupingSets, changes_netted_within_one_transaction) {
    db->exec(
        "CREATE TABLE s (id int PRIMARY KEY, a text, b int, v int);"
        "INSERT INTO s VALUES (1, 'x', 1, 1), (2, 'x', 2, 2), (3, 'y', 1, 3), (4, 'z', 9, 4)");
    create("t",
           "SELECT a, b, count(*) AS n, sum(v) AS sv, GROUPING(a, b) AS g "
           "FROM s GROUP BY ROLLUP (a, b)");
    create("tc", "SELECT a, b, count(*) AS n FROM s GROUP BY GROUPING SETS ((a, b), (b))");
    // A key moved then deleted; a row inserted then deleted; one inserted,
    // moved and moved back; z's only row moved to a new group and back.
    db->exec(
        "BEGIN;"
        "UPDATE s SET a = 'w', b = 7 WHERE id = 1;"
        "DELETE FROM s WHERE id = 1;"
        "INSERT INTO s VALUES (10, 'v', 5, 10);"
        "DELETE FROM s WHERE id = 10;"
        "INSERT INTO s VALUES (11, 'y', 1, 11);"
        "UPDATE s SET a = 'u' WHERE id = 11;"
        "UPDATE s SET a = 'y' WHERE id = 11;"
        "UPDATE s SET a = 'q', b = 0 WHERE id = 4;"
        "UPDATE s SET a = 'z', b = 9 WHERE id = 4;"
        "COMMIT");
    EXPECT_TRUE(refreshed_ok("t"));
    EXPECT_TRUE(refreshed_ok("tc"));
    EXPECT_EQ(count("SELECT 1 FROM t WHERE a IN ('w', 'v', 'u', 'q')"), 0);
    EXPECT_EQ(rows("SELECT n, sv FROM t WHERE a = 'x' AND g = 1"), "1,2");
    // A primary key deleted and inserted again in another group, and a
    // savepoint rolled back.
    db->exec(
        "BEGIN;"
        "DELETE FROM s WHERE id = 2;"
        "INSERT INTO s VALUES (2, NULL, 2, 20);"
        "SAVEPOINT sp; DELETE FROM s; ROLLBACK TO sp;"
        "UPDATE s SET b = NULL WHERE id = 3;"
        "COMMIT");
    EXPECT_TRUE(refreshed_ok("t"));
    EXPECT_TRUE(refreshed_ok("tc"));
    EXPECT_EQ(count("SELECT 1 FROM t WHERE a = 'x'"), 0);
    // A rolled-back transaction leaves nothing to refresh.
    db->exec("BEGIN; DELETE FROM s; INSERT INTO s VALUES (50, 'r', 1, 1); ROLLBACK");
    refresh("t");
    EXPECT_TRUE(matches_query(*db, "t"));
}

}  // namespace
}  // namespace pgt::e2e
