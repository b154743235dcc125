// DIFFERENTIAL refresh of aggregates kept algebraically (core/diff/algebraic):
// groups updated from their stored row and hidden __pgt_* state, recomputed
// from the source only when that state cannot give the answer.
// Invariant: every refresh after a change must have run DIFFERENTIAL and
// match the oracle; source reads are measured (pg_stat_get_xact_*), not guessed.
#include <string>
#include <vector>

#include "fixture.hpp"

namespace pgt::e2e {
namespace {

class DifferentialAlgebraic : public DbTest {
protected:
    void create(const std::string& name, const std::string& query,
                const std::string& mode = "DIFFERENTIAL") {
        db->exec("SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => $3)",
                 {name, query, mode});
        EXPECT_MATCHES_QUERY(*db, name);
    }

    // The oracle holds for st and its latest refresh ran DIFFERENTIAL.
    ::testing::AssertionResult differential_ok(const std::string& st) {
        std::string action = last_action(st);
        if (action != "DIFFERENTIAL") {
            return ::testing::AssertionFailure()
                   << "latest refresh of " << st << " was " << action << ", not DIFFERENTIAL";
        }
        return matches_query(*db, st);
    }
    ::testing::AssertionResult refreshed_ok(const std::string& st) {
        refresh(st);
        return differential_ok(st);
    }

    // The hidden state columns of st (every __pgt_* column but the
    // identity's), in column order.
    std::string aux_columns(const std::string& st) {
        return db->scalar(
            "SELECT coalesce(string_agg(attname::text, ',' ORDER BY attnum), '') "
            "FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 "
            "AND NOT attisdropped AND attname LIKE '\\_\\_pgt\\_%' "
            "AND attname NOT IN ('__pgt_row_id', '__pgt_row_probe')",
            {st});
    }
    bool algebraic(const std::string& st) { return aux_columns(st).rfind("__pgt_count", 0) == 0; }

    // Rows of src read so far in this transaction: returned by sequential
    // scans or fetched through indexes.
    long rows_read(const std::string& src) {
        return std::stol(
            db->scalar("SELECT pg_stat_get_xact_tuples_returned($1::regclass) + "
                       "pg_stat_get_xact_tuples_fetched($1::regclass)",
                       {src}));
    }
    // Refreshes st in a transaction of its own; how many rows of src the
    // refresh read. At most kProbeRows when every touched group came from
    // its stored state: the statement that recomputes groups always runs,
    // and a hash join in it may fetch one source row before it finds no
    // group to recompute.
    long refresh_reading(const std::string& st, const std::string& src) {
        db->exec("BEGIN");
        try {
            long before = rows_read(src);
            refresh(st);
            long after = rows_read(src);
            db->exec("COMMIT");
            return after - before;
        } catch (...) {
            db->exec("ROLLBACK");
            throw;
        }
    }
    static constexpr long kProbeRows = 1;

    // Physical version of the rows of st matching `where`.
    std::string row_versions(const std::string& st, const std::string& where) {
        return db->scalar(
            "SELECT coalesce(string_agg(ctid::text || '@' || xmin::text, ',' "
            "ORDER BY ctid), '') FROM " +
            st + " WHERE " + where);
    }
};

// --- COUNT, SUM, AVG --------------------------------------------------------

// The delta reads every captured image without netting them first (for
// COUNT/SUM/AVG pairs of an image inserted and deleted again cancel; for
// MIN/MAX see min_max_read_every_image). An expression that raises on a
// state that was never committed (100 / d with a transient d = 0) makes the
// refresh run the netted statement instead; one that raises on a committed
// state still fails the refresh.
TEST_F(DifferentialAlgebraic, linear_aggregates_fall_back_to_netted_images_on_a_raising_state) {
    db->exec(
        "CREATE TABLE lr (id int PRIMARY KEY, g int, d int);"
        "INSERT INTO lr SELECT i, i % 3, i FROM generate_series(1, 12) i");
    create("lin", "SELECT g, count(*) AS n, sum(100 / d) AS s, avg(d) AS a FROM lr GROUP BY g");
    create("lmx", "SELECT g, max(100 / d) AS hi FROM lr GROUP BY g");
    // explain_st's delta_statement is the main statement (formatted: only
    // whitespace differs, no line over 200 characters), which nets
    // nothing; the netted statement is the program's fallback.
    std::string main = stored_program("lin").main;
    EXPECT_EQ(db->scalar("SELECT regexp_replace(value, '\\s+', ' ', 'g') FROM "
                         "pgtrickle.explain_st('lin') WHERE property = 'delta_statement'"),
              db->scalar("SELECT regexp_replace($1, '\\s+', ' ', 'g')", {main}));
    EXPECT_EQ(db->scalar("SELECT max(length(l)) <= 200 FROM pgtrickle.explain_st('lin'), "
                         "regexp_split_to_table(value, E'\\n') l WHERE property = "
                         "'delta_statement'"),
              "t");
    EXPECT_EQ(main.find("__pgt_src_img"), std::string::npos)
        << "the main statement nets nothing: " << main;
    EXPECT_NE(stored_program("lin").fallback.find("__pgt_src_img"), std::string::npos);
    EXPECT_EQ(stored_program("lmx").main.find("__pgt_src_img"), std::string::npos);
    EXPECT_NE(stored_program("lmx").fallback.find("__pgt_src_img"), std::string::npos);
    // Cancelling pairs without any raising state: the plain path.
    db->exec(
        "BEGIN; INSERT INTO lr VALUES (20, 1, 5); UPDATE lr SET d = d + 1 WHERE id = 20;"
        "DELETE FROM lr WHERE id = 20; UPDATE lr SET g = 2 WHERE id = 4; COMMIT");
    EXPECT_TRUE(refreshed_ok("lin"));
    EXPECT_TRUE(refreshed_ok("lmx"));
    // A transient d = 0 (in one transaction, and across two).
    db->exec("BEGIN; UPDATE lr SET d = 0 WHERE id = 5; UPDATE lr SET d = 7 WHERE id = 5; COMMIT");
    db->exec("UPDATE lr SET d = 0, g = 0 WHERE id = 6");
    db->exec("UPDATE lr SET d = 3 WHERE id = 6");
    EXPECT_TRUE(refreshed_ok("lin"));
    EXPECT_TRUE(refreshed_ok("lmx"));
    // d = 0 committed and still there: FULL fails too, and so does the refresh.
    db->exec("UPDATE lr SET d = 0 WHERE id = 7");
    std::string before = db->scalar("SELECT string_agg(lin::text, ' ' ORDER BY g) FROM lin");
    SqlError e = db->error_of("SELECT pgtrickle.refresh_stream_table('lin')");
    EXPECT_EQ(e.sqlstate, "22012") << e.message;
    EXPECT_EQ(db->scalar("SELECT string_agg(lin::text, ' ' ORDER BY g) FROM lin"), before);
    db->exec("UPDATE lr SET d = 9 WHERE id = 7");
    EXPECT_TRUE(refreshed_ok("lin"));
}

// Join deltas read every captured image (no netting sort): sums and counts
// over a join, and the key region of other aggregates. A state that a
// later change in the window replaced can make an expression raise; the
// refresh then runs over netted images. MIN/MAX read netted images only.
TEST_F(DifferentialAlgebraic, join_deltas_read_unnetted_images_and_fall_back_on_a_raising_state) {
    db->exec(
        "CREATE TABLE jo (id int PRIMARY KEY, g int);"
        "CREATE TABLE jl (id int PRIMARY KEY, o int, d int);"
        "INSERT INTO jo SELECT i, i % 3 FROM generate_series(1, 6) i;"
        "INSERT INTO jl SELECT i, i % 6 + 1, i FROM generate_series(1, 18) i");
    const std::string from = " FROM jo JOIN jl ON jl.o = jo.id GROUP BY jo.g";
    create("jsum", "SELECT jo.g, count(*) AS n, sum(100 / jl.d) AS s, avg(jl.d) AS a" + from);
    create("jkey", "SELECT jo.g, string_agg((100 / jl.d)::text, ',' ORDER BY jl.id) AS s" + from);
    create("jmax", "SELECT jo.g, max(100 / jl.d) AS hi" + from);
    EXPECT_FALSE(stored_program("jsum").fallback_images.empty());
    EXPECT_FALSE(stored_program("jkey").fallback_images.empty());
    EXPECT_TRUE(stored_program("jmax").fallback_images.empty());
    const std::vector<std::string> sts{"jsum", "jkey", "jmax"};
    // Cancelling pairs on both sides, a join key and a group key moving.
    db->exec(
        "BEGIN; INSERT INTO jl VALUES (30, 2, 5); UPDATE jl SET d = d + 1 WHERE id = 30;"
        "DELETE FROM jl WHERE id = 30; INSERT INTO jo VALUES (9, 1); DELETE FROM jo WHERE id = 9;"
        "UPDATE jl SET o = 3 WHERE id = 4; UPDATE jo SET g = 2 WHERE id = 1; COMMIT");
    for (const std::string& st : sts) {
        EXPECT_TRUE(refreshed_ok(st)) << st;
    }
    // A transient d = 0 (in one transaction, and across two), next to
    // changes of the other side.
    db->exec("BEGIN; UPDATE jl SET d = 0 WHERE id = 5; UPDATE jl SET d = 7 WHERE id = 5; COMMIT");
    db->exec("UPDATE jl SET d = 0, o = 1 WHERE id = 6; UPDATE jo SET g = 0 WHERE id = 2");
    db->exec("UPDATE jl SET d = 3 WHERE id = 6; DELETE FROM jo WHERE id = 3");
    for (const std::string& st : sts) {
        EXPECT_TRUE(refreshed_ok(st)) << st;
    }
    // d = 0 committed and still joined: FULL fails too, and so does the refresh.
    db->exec("UPDATE jl SET d = 0 WHERE id = 7");
    for (const std::string& st : sts) {
        std::string before =
            db->scalar("SELECT string_agg(x::text, ' ' ORDER BY x::text) FROM " + st + " x");
        SqlError e = db->error_of("SELECT pgtrickle.refresh_stream_table('" + st + "')");
        EXPECT_EQ(e.sqlstate, "22012") << st << ": " << e.message;
        EXPECT_EQ(db->scalar("SELECT string_agg(x::text, ' ' ORDER BY x::text) FROM " + st + " x"),
                  before);
    }
    db->exec("UPDATE jl SET d = 9 WHERE id = 7");
    for (const std::string& st : sts) {
        EXPECT_TRUE(refreshed_ok(st)) << st;
    }
}

TEST_F(DifferentialAlgebraic, group_counts_sums_averages_follow_inserts_updates_deletes) {
    db->exec(
        "CREATE TABLE sales (id int PRIMARY KEY, region text, qty int, amt numeric(10,2),"
        " big int8, small int2);"
        "INSERT INTO sales VALUES (1, 'n', 5, 10.50, 9000000000000000000, 1),"
        " (2, 'n', NULL, 2.25, 5, 2), (3, 's', 7, NULL, NULL, NULL), (4, 's', 1, 1.00, -4, 3),"
        " (5, NULL, 3, 4.75, 1, 1), (6, 'z', NULL, NULL, NULL, NULL), (7, 'e', 2, 3.00, 2, 2),"
        " (8, 'w', 4, 0.10, 8, 8)");
    create("by_region",
           "SELECT region, count(*) AS n, count(qty) AS nq, sum(qty) AS sq, avg(qty) AS aq, "
           "sum(amt) AS sa, avg(amt) AS aa, sum(big) AS sb, avg(big) AS ab, sum(small) AS ss, "
           "avg(small) AS asm FROM sales GROUP BY region");
    EXPECT_EQ(modes("by_region"), "DIFFERENTIAL/DIFFERENTIAL");
    EXPECT_TRUE(algebraic("by_region")) << aux_columns("by_region");
    const std::string z_state =
        "SELECT n || '/' || nq || '/' || coalesce(sq::text, 'NULL') || '/' || "
        "coalesce(aq::text, 'NULL') FROM by_region WHERE region = 'z'";
    EXPECT_EQ(db->scalar(z_state), "1/0/NULL/NULL") << "only NULL arguments";

    // Inserts into groups, a new group, the NULL group; a sum(int8) beyond
    // int8. Untouched groups are neither read nor rewritten.
    const std::string untouched = "region IN ('s', 'z', 'e', 'w')";
    std::string before = row_versions("by_region", untouched);
    db->exec(
        "INSERT INTO sales VALUES (9, 'n', 4, 1.25, 9000000000000000000, 4),"
        " (10, 'x', 6, 6.00, 6, 6), (11, NULL, NULL, 1.50, NULL, NULL)");
    EXPECT_LE(refresh_reading("by_region", "sales"), kProbeRows) << "inserts need no source rows";
    EXPECT_TRUE(differential_ok("by_region"));
    EXPECT_EQ(row_versions("by_region", untouched), before);
    EXPECT_EQ(db->scalar("SELECT sb FROM by_region WHERE region = 'n'"), "18000000000000000005");

    // Updates of values, a row moving between groups, into the NULL group;
    // group w loses its only row and disappears.
    db->exec(
        "UPDATE sales SET qty = qty + 1, amt = amt * 2 WHERE id IN (1, 4);"
        "UPDATE sales SET region = 'e' WHERE id = 3;"
        "UPDATE sales SET qty = NULL WHERE id = 5;"
        "UPDATE sales SET region = NULL WHERE id = 8");
    EXPECT_LE(refresh_reading("by_region", "sales"), kProbeRows);
    EXPECT_TRUE(differential_ok("by_region"));
    EXPECT_EQ(count("SELECT 1 FROM by_region WHERE region = 'w'"), 0);

    db->exec("DELETE FROM sales WHERE region = 'x'");  // the last row of a group
    EXPECT_TRUE(refreshed_ok("by_region"));
    EXPECT_EQ(last("by_region"), "DIFFERENTIAL/0/1");
    EXPECT_EQ(count("SELECT 1 FROM by_region WHERE region = 'x'"), 0);

    // A group whose arguments all become NULL: SUM/AVG NULL, COUNT(x) 0.
    db->exec("UPDATE sales SET qty = NULL WHERE region = 'e'");
    EXPECT_TRUE(refreshed_ok("by_region"));
    EXPECT_EQ(db->scalar("SELECT n || '/' || nq || '/' || coalesce(sq::text, 'NULL') || '/' || "
                         "coalesce(aq::text, 'NULL') FROM by_region WHERE region = 'e'"),
              "2/0/NULL/NULL");
    db->exec("UPDATE sales SET qty = 3 WHERE id = 6");
    EXPECT_TRUE(refreshed_ok("by_region"));
    EXPECT_EQ(db->scalar(z_state), "1/1/3/3.0000000000000000");

    // One transaction: a row inserted, updated and deleted again; a row
    // inserted then moved; a key deleted and reinserted in another group.
    db->exec(
        "BEGIN;"
        "INSERT INTO sales VALUES (20, 'n', 100, 100.00, 100, 100);"
        "UPDATE sales SET qty = 200, region = 's' WHERE id = 20;"
        "DELETE FROM sales WHERE id = 20;"
        "INSERT INTO sales VALUES (21, 'q', 1, 0.01, 1, 1);"
        "UPDATE sales SET region = 'n', qty = 2 WHERE id = 21;"
        "DELETE FROM sales WHERE id = 2;"
        "INSERT INTO sales VALUES (2, NULL, 9, 9.99, 9, 9);"
        "COMMIT");
    EXPECT_TRUE(refreshed_ok("by_region"));
    EXPECT_EQ(count("SELECT 1 FROM by_region WHERE region = 'q'"), 0);

    // A row replaced by an equal one: the group's values do not change, so
    // its stored row is not rewritten.
    std::string e_row = row_versions("by_region", "region = 'e'");
    db->exec(
        "BEGIN; DELETE FROM sales WHERE id = 7;"
        "INSERT INTO sales VALUES (30, 'e', NULL, 3.00, 2, 2); COMMIT");
    EXPECT_TRUE(refreshed_ok("by_region"));
    EXPECT_EQ(last("by_region"), "DIFFERENTIAL/0/0");
    EXPECT_EQ(row_versions("by_region", "region = 'e'"), e_row);
}

// --- MIN and MAX ------------------------------------------------------------

TEST_F(DifferentialAlgebraic, min_max_deleting_the_extreme_recomputes_the_group) {
    db->exec(
        "CREATE TABLE m (id int PRIMARY KEY, g text, v int, n numeric, d date, s text, f float8);"
        "INSERT INTO m VALUES"
        " (1, 'a', 5, 2.0, '2024-01-05', 'kiwi', 1.5),"
        " (2, 'a', 1, 3, '2024-01-01', 'apple', 0),"
        " (3, 'a', 9, 1.5, '2024-01-09', 'zebra', 2),"
        " (4, 'a', 1, 4, '2024-01-01', 'mango', -1),"
        " (5, 'b', 3, 3.0, '2024-02-01', 'b', 3),"
        " (6, 'b', NULL, NULL, NULL, NULL, NULL),"
        " (7, 'c', 7, 7, '2024-03-01', 'c', 7),"
        " (8, 'n', NULL, NULL, NULL, NULL, NULL)");
    create("mm",
           "SELECT g, min(v) AS lo, max(v) AS hi, min(n) AS nlo, max(n) AS nhi, "
           "min(d) AS first_day, max(d) AS last_day, min(s) AS first_s, max(s) AS last_s, "
           "max(f) AS fhi, count(*) AS rows FROM m GROUP BY g");
    EXPECT_TRUE(algebraic("mm")) << aux_columns("mm");

    // A new extreme, and a value moving inside the range: from the state.
    db->exec("INSERT INTO m VALUES (10, 'a', 0, 0.5, '2023-12-31', 'aardvark', 9)");
    EXPECT_LE(refresh_reading("mm", "m"), kProbeRows);
    EXPECT_TRUE(differential_ok("mm"));
    db->exec("UPDATE m SET v = 6, n = 2.5, s = 'lemon' WHERE id = 1");
    EXPECT_LE(refresh_reading("mm", "m"), kProbeRows);
    EXPECT_TRUE(differential_ok("mm"));

    // Deleting the current MIN, then the current MAX: the group is recomputed.
    db->exec("DELETE FROM m WHERE id = 10");
    EXPECT_GT(refresh_reading("mm", "m"), kProbeRows);
    EXPECT_TRUE(differential_ok("mm"));
    EXPECT_EQ(db->scalar("SELECT lo || '/' || nlo || '/' || first_day || '/' || first_s "
                         "FROM mm WHERE g = 'a'"),
              "1/1.5/2024-01-01/apple");
    db->exec("DELETE FROM m WHERE id = 3");
    EXPECT_GT(refresh_reading("mm", "m"), kProbeRows);
    EXPECT_TRUE(differential_ok("mm"));
    EXPECT_EQ(db->scalar("SELECT hi || '/' || last_s FROM mm WHERE g = 'a'"), "6/mango");

    // The MIN updated upward (another row ties with it) becomes the MAX.
    db->exec("UPDATE m SET v = 100 WHERE id = 2");
    EXPECT_TRUE(refreshed_ok("mm"));
    EXPECT_EQ(db->scalar("SELECT lo || '/' || hi FROM mm WHERE g = 'a'"), "1/100");

    // int ties look alike: a second 1 needs no recomputation; deleting one
    // of the two keeps 1.
    db->exec("INSERT INTO m VALUES (9, 'a', 1, 3.5, '2024-01-03', 'grape', 1)");
    EXPECT_LE(refresh_reading("mm", "m"), kProbeRows);
    EXPECT_TRUE(differential_ok("mm"));
    db->exec("DELETE FROM m WHERE id = 4");
    EXPECT_TRUE(refreshed_ok("mm"));
    EXPECT_EQ(db->scalar("SELECT lo FROM mm WHERE g = 'a'"), "1");

    // numeric and float8 ties may look different (3.0 = 3.00, 0 = -0): the
    // query decides which one shows; then only one is left.
    db->exec("INSERT INTO m VALUES (11, 'b', 3, 3.00, '2024-02-01', 'b', 3)");
    EXPECT_GT(refresh_reading("mm", "m"), kProbeRows);
    EXPECT_TRUE(differential_ok("mm"));
    db->exec("DELETE FROM m WHERE id = 5");
    EXPECT_TRUE(refreshed_ok("mm"));
    EXPECT_EQ(db->scalar("SELECT nlo || '/' || nhi FROM mm WHERE g = 'b'"), "3.00/3.00");
    db->exec("UPDATE m SET f = 0 WHERE id = 7");
    EXPECT_TRUE(refreshed_ok("mm"));
    db->exec("INSERT INTO m VALUES (12, 'c', 8, 8, '2024-03-02', 'd', '-0')");
    EXPECT_TRUE(refreshed_ok("mm"));
    db->exec("DELETE FROM m WHERE id = 7");
    EXPECT_TRUE(refreshed_ok("mm"));
    EXPECT_EQ(db->scalar("SELECT fhi::text FROM mm WHERE g = 'c'"), "-0");

    // A group of only NULLs gets a value and loses it again.
    db->exec("INSERT INTO m VALUES (13, 'n', 4, 4, '2024-04-04', 'n', 4)");
    EXPECT_TRUE(refreshed_ok("mm"));
    db->exec("DELETE FROM m WHERE id = 13");
    EXPECT_TRUE(refreshed_ok("mm"));
    EXPECT_EQ(db->scalar("SELECT coalesce(lo::text, 'NULL') || '/' || rows FROM mm "
                         "WHERE g = 'n'"),
              "NULL/1");

    // One transaction: the same row updated below the MIN, above the MAX,
    // deleted, and its key reinserted in another group.
    db->exec(
        "BEGIN;"
        "UPDATE m SET v = -5 WHERE id = 11;"
        "UPDATE m SET v = 50, n = 0.001 WHERE id = 11;"
        "DELETE FROM m WHERE id = 11;"
        "INSERT INTO m VALUES (11, 'c', -1, 0.10, '2020-01-01', 'a', -7);"
        "UPDATE m SET v = v + 1 WHERE g = 'a';"
        "COMMIT");
    EXPECT_TRUE(refreshed_ok("mm"));

    db->exec("DELETE FROM m WHERE g = 'b'");  // extremes and the group gone
    EXPECT_TRUE(refreshed_ok("mm"));
    EXPECT_EQ(count("SELECT 1 FROM mm WHERE g = 'b'"), 0);
}

// MIN/MAX read every captured image, not netted ones: a value that came and
// went within the window is a deletion there. At or beyond the stored
// extreme it recomputes the group (the value may have been counted as the
// new extreme); short of it, it changes nothing and nothing is read again.
TEST_F(DifferentialAlgebraic, min_max_read_every_image) {
    db->exec(
        "CREATE TABLE mt (id int PRIMARY KEY, g int, v int);"
        "INSERT INTO mt SELECT i, i % 3, i * 10 FROM generate_series(1, 30) i");
    create("mtx", "SELECT g, min(v) AS lo, max(v) AS hi, count(*) AS n FROM mt GROUP BY g");
    EXPECT_EQ(stored_program("mtx").main.find("__pgt_src_img"), std::string::npos)
        << stored_program("mtx").main;
    std::string tree = db->scalar(
        "SELECT value FROM pgtrickle.explain_st('mtx') WHERE property = 'operator_tree'");
    EXPECT_NE(tree.find("a group whose MIN/MAX lost its extreme is read again"), std::string::npos)
        << tree;
    // Below the MIN and above the MAX, gone again before the refresh (one
    // transaction, then two): the group is read again, its row unchanged.
    db->exec("BEGIN; INSERT INTO mt VALUES (100, 0, -5); DELETE FROM mt WHERE id = 100; COMMIT");
    EXPECT_GT(refresh_reading("mtx", "mt"), kProbeRows);
    EXPECT_TRUE(differential_ok("mtx"));
    db->exec("INSERT INTO mt VALUES (100, 1, 999)");
    db->exec("DELETE FROM mt WHERE id = 100");
    EXPECT_GT(refresh_reading("mtx", "mt"), kProbeRows);
    EXPECT_TRUE(differential_ok("mtx"));
    // A row through a new extreme and back; another through a new group,
    // then into an old one.
    db->exec("UPDATE mt SET v = -1 WHERE id = 4");
    db->exec("UPDATE mt SET v = 40 WHERE id = 4; UPDATE mt SET g = 7 WHERE id = 5");
    db->exec("UPDATE mt SET g = 2, v = 1000 WHERE id = 5");
    EXPECT_TRUE(refreshed_ok("mtx"));
    EXPECT_EQ(count("SELECT 1 FROM mtx WHERE g = 7"), 0);
    // Values inside the range that came and went, and moves inside it:
    // from the stored state alone.
    db->exec("INSERT INTO mt VALUES (101, 0, 55), (102, 1, 65)");
    db->exec("UPDATE mt SET v = 56 WHERE id = 101; DELETE FROM mt WHERE id = 102");
    db->exec("DELETE FROM mt WHERE id = 101; UPDATE mt SET v = 75 WHERE id = 7");
    EXPECT_LE(refresh_reading("mtx", "mt"), kProbeRows);
    EXPECT_TRUE(differential_ok("mtx"));
    // The extreme deleted and an equal value inserted in the same window.
    db->exec("BEGIN; DELETE FROM mt WHERE id = 1; INSERT INTO mt VALUES (103, 1, 10); COMMIT");
    EXPECT_TRUE(refreshed_ok("mtx"));
    EXPECT_EQ(db->scalar("SELECT lo || '/' || n FROM mtx WHERE g = 1"), "10/10");
}

// The touched groups' rows are read with one `= ANY (array)` filter when the
// one grouping key is an indexed column of a type with a pg_catalog
// equality (a bitmap over every touched value reads each page once), else
// by a semi-join on the keys; NULL keys are matched in both.
TEST_F(DifferentialAlgebraic, touched_groups_are_read_by_array_on_an_indexed_key) {
    db->exec(
        "CREATE TABLE gi (id int PRIMARY KEY, g int, v int);"
        "CREATE INDEX ON gi (g);"
        "CREATE TABLE gn (id int PRIMARY KEY, g int, v int);"
        "INSERT INTO gi SELECT i, nullif(i % 50, 7), i FROM generate_series(1, 2000) i;"
        "INSERT INTO gn SELECT * FROM gi");
    create("gi_mm", "SELECT g, min(v) AS lo, max(v) AS hi FROM gi GROUP BY g");
    create("gi_agg", "SELECT g, string_agg(v::text, ',' ORDER BY v) AS vs FROM gi GROUP BY g");
    create("gn_mm", "SELECT g, min(v) AS lo, max(v) AS hi FROM gn GROUP BY g");
    create("gi_expr", "SELECT g % 5 AS h, max(v) AS hi FROM gi GROUP BY g % 5");
    const std::string by_array = "ANY (ARRAY(SELECT DISTINCT k.__pgt_k1 FROM keys k";
    for (const std::string st : {"gi_mm", "gi_agg"}) {
        EXPECT_NE(stored_program(st).main.find(by_array), std::string::npos) << st;
    }
    for (const std::string st : {"gn_mm", "gi_expr"}) {
        EXPECT_EQ(stored_program(st).main.find(by_array), std::string::npos) << st;
    }
    const std::vector<std::string> sts{"gi_mm", "gi_agg", "gn_mm", "gi_expr"};
    // Every group's extremes deleted, the NULL group's too; values moved
    // between groups and into and out of the NULL group.
    for (const std::string t : {"gi", "gn"}) {
        db->exec("DELETE FROM " + t + " WHERE id <= 50 OR id > 1950 OR g IS NULL AND id < 1000;" +
                 "UPDATE " + t + " SET g = CASE WHEN g = 3 THEN NULL ELSE g + 1 END " +
                 "WHERE id % 7 = 0; INSERT INTO " + t +
                 " VALUES (5000, NULL, -1), (5001, 3, 9999)");
    }
    for (const std::string& st : sts) {
        EXPECT_TRUE(refreshed_ok(st)) << st;
    }
    // One group touched.
    db->exec("DELETE FROM gi WHERE id = 5001; DELETE FROM gn WHERE id = 5001");
    for (const std::string& st : sts) {
        EXPECT_TRUE(refreshed_ok(st)) << st;
    }
}

// --- numeric display scale, NaN and infinities ------------------------------

TEST_F(DifferentialAlgebraic, numeric_display_scale_follows_the_inputs) {
    db->exec(
        "CREATE TABLE p (id int PRIMARY KEY, g int, x numeric);"
        "INSERT INTO p VALUES (100, 2, 7.000), (101, 2, 1)");
    create("ps", "SELECT g, sum(x) AS s, avg(x) AS a, count(x) AS c FROM p GROUP BY g");
    create("pt", "SELECT sum(x) AS s, avg(x) AS a FROM p");
    EXPECT_TRUE(algebraic("ps"));
    EXPECT_TRUE(algebraic("pt"));
    auto step = [&](const std::string& change, const std::string& sum) {
        SCOPED_TRACE(change);
        db->exec(change);
        EXPECT_TRUE(refreshed_ok("ps"));
        EXPECT_TRUE(refreshed_ok("pt"));
        EXPECT_EQ(db->scalar("SELECT coalesce((SELECT s::text FROM ps WHERE g = 1), 'gone')"), sum);
    };
    step("INSERT INTO p VALUES (1, 1, 1.5)", "1.5");
    step("INSERT INTO p VALUES (2, 1, 2.125)", "3.625");
    step("DELETE FROM p WHERE id = 2", "1.5");  // the inputs of scale 3 are gone
    step("INSERT INTO p VALUES (3, 1, 2.50)", "4.00");
    step("DELETE FROM p WHERE id = 3", "1.5");
    step("UPDATE p SET x = 1.50 WHERE id = 1", "1.50");
    step("INSERT INTO p VALUES (4, 1, 3)", "4.50");
    step("UPDATE p SET x = 1.5 WHERE id = 1", "4.5");
    step("INSERT INTO p VALUES (5, 1, -4.500)", "0.000");
    step("DELETE FROM p WHERE id = 5", "4.5");
    step(
        "BEGIN; INSERT INTO p VALUES (6, 1, 0.0001); UPDATE p SET x = 0.01 WHERE id = 6;"
        " DELETE FROM p WHERE id = 4; COMMIT",
        "1.51");
    step("INSERT INTO p VALUES (7, 1, 0.49), (8, 1, 0.490)", "2.490");
    step("DELETE FROM p WHERE id = 8", "2.00");  // 1.5 + 0.01 + 0.49
    step("DELETE FROM p WHERE g = 1", "gone");
    EXPECT_EQ(db->scalar("SELECT s || '/' || a FROM pt"), "8.000/4.0000000000000000");
}

TEST_F(DifferentialAlgebraic, nan_and_infinity_in_numeric_sums) {
    db->exec(
        "CREATE TABLE q (id int PRIMARY KEY, g int, x numeric);"
        "INSERT INTO q VALUES (1, 1, 1.5), (2, 1, 2), (3, 2, 10)");
    create("qs",
           "SELECT g, sum(x) AS s, avg(x) AS a, count(x) AS c, min(x) AS lo, max(x) AS hi "
           "FROM q GROUP BY g");
    EXPECT_TRUE(algebraic("qs"));
    auto step = [&](const std::string& change, int g, const std::string& sum) {
        SCOPED_TRACE(change);
        db->exec(change);
        EXPECT_TRUE(refreshed_ok("qs"));
        EXPECT_EQ(db->scalar("SELECT coalesce((SELECT s::text FROM qs WHERE g = " +
                             std::to_string(g) + "), 'gone')"),
                  sum);
    };
    step("INSERT INTO q VALUES (4, 1, 'NaN')", 1, "NaN");
    step("INSERT INTO q VALUES (5, 1, 'Infinity')", 1, "NaN");
    step("DELETE FROM q WHERE id = 4", 1, "Infinity");
    step("INSERT INTO q VALUES (6, 1, '-Infinity')", 1, "NaN");
    step("DELETE FROM q WHERE id = 5", 1, "-Infinity");
    step("INSERT INTO q VALUES (7, 1, 0.125)", 1, "-Infinity");
    step("DELETE FROM q WHERE id = 6", 1, "3.625");
    // A group of only non-finite values.
    step("INSERT INTO q VALUES (8, 3, 'NaN')", 3, "NaN");
    step("UPDATE q SET x = 'Infinity' WHERE id = 8", 3, "Infinity");
    step("UPDATE q SET x = 1.25 WHERE id = 8", 3, "1.25");
    step("DELETE FROM q WHERE id = 8", 3, "gone");
    // Non-finite values that come and go inside one transaction.
    step(
        "BEGIN; INSERT INTO q VALUES (9, 2, 'NaN'); DELETE FROM q WHERE id = 9;"
        " UPDATE q SET x = 'Infinity' WHERE id = 3; UPDATE q SET x = 10.0 WHERE id = 3; COMMIT",
        2, "10.0");
    // Finite changes while a NaN stays, then the NaN leaves.
    step("UPDATE q SET x = 'NaN' WHERE id = 1", 1, "NaN");
    step("UPDATE q SET x = 3 WHERE id = 2", 1, "NaN");
    step("INSERT INTO q VALUES (10, 1, '-Infinity'), (11, 1, 0.5)", 1, "NaN");
    step("UPDATE q SET x = 1.5 WHERE id = 1", 1, "-Infinity");
    step("DELETE FROM q WHERE id = 10", 1, "5.125");
}

// Sums whose inputs all show one display scale (numeric(p,s) columns and
// +, -, * of them, of integers and of constants) keep no per-row scale state
// and still show exactly what the query shows, NaN included (a column with
// a scale cannot hold an infinity); x / y has no fixed scale and keeps the
// state.
TEST_F(DifferentialAlgebraic, numeric_sums_of_fixed_scale_inputs_show_the_query_scale) {
    db->exec(
        "CREATE TABLE f (id int PRIMARY KEY, g int, x numeric(10,2), y numeric(8,3), i int);"
        "INSERT INTO f VALUES (1, 1, 1.50, 2.125, 3), (2, 1, 4.00, 0.500, -1), "
        "(3, 2, 7.25, 1.000, 2)");
    const std::string fixed =
        "SELECT g, sum(x) AS sx, avg(x) AS ax, sum(x * y) AS sxy, sum(x - y) AS sd, "
        "sum(1 - x) AS s1, sum(x * 1.50) AS sc, sum(-y) AS sn, avg(i * x) AS ai, "
        "sum(x) FILTER (WHERE i > 0) AS sf, count(*) AS c FROM f GROUP BY g";
    create("ff", fixed);
    create("ft", "SELECT sum(x * y) AS s, avg(y - x) AS a FROM f");
    create("fv", "SELECT g, sum(x / y) AS q, sum(x) AS s FROM f GROUP BY g");
    for (const char* st : {"ff", "ft", "fv"}) {
        EXPECT_TRUE(algebraic(st)) << st;
    }
    auto delta = [&](const std::string& st) { return delta_program(st); };
    EXPECT_EQ(delta("ff").find("numeric_scale_state"), std::string::npos);
    EXPECT_EQ(delta("ft").find("numeric_scale_state"), std::string::npos);
    EXPECT_NE(delta("fv").find("numeric_scale_state"), std::string::npos);  // x / y
    auto step = [&](const std::string& change) {
        SCOPED_TRACE(change);
        db->exec(change);
        for (const char* st : {"ff", "ft", "fv"}) {
            EXPECT_TRUE(refreshed_ok(st)) << st;
        }
    };
    step("INSERT INTO f VALUES (4, 1, 0.01, 0.001, 0), (5, 3, 2, 3, 4)");
    step("UPDATE f SET x = x + 1, y = 0.250 WHERE g = 1");
    step("DELETE FROM f WHERE id IN (1, 4)");
    step("INSERT INTO f VALUES (6, 2, 'NaN', 1, 1)");
    step("UPDATE f SET x = 2, y = 'NaN' WHERE id = 6");
    step("UPDATE f SET y = 'NaN' WHERE id = 3");
    step("DELETE FROM f WHERE id = 6");
    step("UPDATE f SET y = 2.5 WHERE id = 3");
    step("BEGIN; INSERT INTO f VALUES (7, 3, 'NaN', 1, 1); DELETE FROM f WHERE id = 7; COMMIT");
    step("DELETE FROM f WHERE g = 3");
    step("DELETE FROM f");
    step("INSERT INTO f VALUES (8, 1, 3.10, 1.005, 1)");
}

// --- aggregates without GROUP BY --------------------------------------------

TEST_F(DifferentialAlgebraic, scalar_aggregate_over_one_table_stays_one_row) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, x numeric, k int);"
        "INSERT INTO t VALUES (1, 1.5, 1), (2, 2, 1), (3, NULL, 2), (4, 10, 3)");
    const std::string query =
        "SELECT count(*) AS n, count(x) AS nx, sum(x) AS s, avg(x) AS a, min(x) AS lo, "
        "max(x) AS hi, sum(k) AS sk FROM t WHERE k < 3";
    // AUTO keeps it DIFFERENTIAL now (it took FULL while the one row was
    // recomputed on every change), without a NOTICE about it.
    db->notices.clear();
    create("auto_total", query, "AUTO");
    EXPECT_EQ(modes("auto_total"), "AUTO/DIFFERENTIAL");
    for (const auto& n : db->notices) {
        EXPECT_EQ(n.find("without GROUP BY"), std::string::npos) << n;
    }
    EXPECT_TRUE(algebraic("auto_total")) << aux_columns("auto_total");
    // Not every output algebraic: recomputed whole on any change, so AUTO
    // still takes FULL.
    create("listed", "SELECT count(*) AS n, string_agg(id::text, ',' ORDER BY id) AS ids FROM t",
           "AUTO");
    EXPECT_EQ(modes("listed"), "AUTO/FULL");
    // The steps below change most of this small table: AUTO would recompute
    // them with FULL, so they run on a DIFFERENTIAL twin.
    create("total", query);
    EXPECT_TRUE(algebraic("total")) << aux_columns("total");

    const std::string row =
        "SELECT n || '/' || nx || '/' || coalesce(s::text, 'NULL') || '/' || "
        "coalesce(a::text, 'NULL') || '/' || coalesce(lo::text, 'NULL') || '/' || "
        "coalesce(hi::text, 'NULL') || '/' || coalesce(sk::text, 'NULL') FROM total";
    db->exec("INSERT INTO t VALUES (5, 0.25, 2), (6, 7, 9)");  // 6 fails WHERE
    EXPECT_LE(refresh_reading("total", "t"), kProbeRows);
    EXPECT_TRUE(differential_ok("total"));
    db->exec("UPDATE t SET k = 5 WHERE id = 1; UPDATE t SET k = 0 WHERE id = 4");  // out, in
    EXPECT_TRUE(refreshed_ok("total"));
    EXPECT_EQ(db->scalar(row), "4/3/12.25/4.0833333333333333/0.25/10/5");

    db->exec("DELETE FROM t");
    EXPECT_TRUE(refreshed_ok("total"));
    EXPECT_EQ(count("SELECT 1 FROM total"), 1);
    EXPECT_EQ(db->scalar(row), "0/0/NULL/NULL/NULL/NULL/NULL");

    db->exec("INSERT INTO t VALUES (1, 3.25, 1), (2, NULL, 2)");
    EXPECT_TRUE(refreshed_ok("total"));
    EXPECT_EQ(db->scalar(row), "2/1/3.25/3.2500000000000000/3.25/3.25/3");

    db->exec(
        "BEGIN; INSERT INTO t VALUES (3, 1, 1); UPDATE t SET x = 100 WHERE id = 3;"
        " DELETE FROM t WHERE id = 3; UPDATE t SET x = 0.5 WHERE id = 2;"
        " DELETE FROM t WHERE id = 1; INSERT INTO t VALUES (1, -1, 0); COMMIT");
    EXPECT_TRUE(refreshed_ok("total"));
    EXPECT_EQ(count("SELECT 1 FROM total"), 1);
    EXPECT_EQ(db->scalar(row), "2/2/-0.5/-0.25000000000000000000/-1/0.5/2");
    refresh("auto_total");
    EXPECT_MATCHES_QUERY(*db, "auto_total");
}

// --- hidden state across mode changes and FULL refreshes --------------------

TEST_F(DifferentialAlgebraic, auxiliary_columns_refill_after_mode_round_trip) {
    db->exec(
        "CREATE TABLE r (id int PRIMARY KEY, g int, x int, y numeric);"
        "INSERT INTO r SELECT i, i % 4, i, i * 0.5 FROM generate_series(1, 40) i");
    create("rt",
           "SELECT g, count(*) AS n, sum(x) AS sx, avg(y) AS ay, max(y) AS hi FROM r GROUP BY g");
    const std::string aux = "__pgt_count,__pgt_n2,__pgt_s2,__pgt_n3,__pgt_s3,__pgt_sc3";
    EXPECT_EQ(aux_columns("rt"), aux);
    const std::string unfilled = "SELECT 1 FROM rt WHERE __pgt_count IS NULL";

    alter_mode("rt", "FULL");
    EXPECT_EQ(modes("rt"), "FULL/FULL");
    EXPECT_EQ(aux_columns("rt"), "") << "no hidden state outside DIFFERENTIAL";
    db->exec("UPDATE r SET x = x + 1 WHERE g = 1; DELETE FROM r WHERE id = 2");
    refresh("rt");
    EXPECT_EQ(last_action("rt"), "FULL");
    EXPECT_MATCHES_QUERY(*db, "rt");

    alter_mode("rt", "DIFFERENTIAL");
    EXPECT_EQ(aux_columns("rt"), aux);
    EXPECT_EQ(count(unfilled), 0) << "the ALTER's FULL refresh fills the state";
    EXPECT_MATCHES_QUERY(*db, "rt");
    db->exec("INSERT INTO r VALUES (100, 1, 7, 0.5); UPDATE r SET x = 0 WHERE id = 6");
    EXPECT_LE(refresh_reading("rt", "r"), kProbeRows) << "the refilled state is used";
    EXPECT_TRUE(differential_ok("rt"));
    db->exec(
        "BEGIN; DELETE FROM r WHERE id = 40; INSERT INTO r VALUES (40, 3, 1, 1.25);"
        " UPDATE r SET g = 3 WHERE id = 40; UPDATE r SET y = 0.75 WHERE id = 40; COMMIT");
    EXPECT_TRUE(refreshed_ok("rt"));

    // TRUNCATE makes the next refresh FULL; it refills the state too.
    db->exec("TRUNCATE r; INSERT INTO r VALUES (1, 1, 1, 1.5), (2, 2, 2, 2.5), (3, 1, 3, 0.5)");
    refresh("rt");
    EXPECT_EQ(last_action("rt"), "FULL");
    EXPECT_MATCHES_QUERY(*db, "rt");
    EXPECT_EQ(count(unfilled), 0);
    db->exec("INSERT INTO r VALUES (4, 2, 4, 1)");
    EXPECT_LE(refresh_reading("rt", "r"), kProbeRows);
    EXPECT_TRUE(differential_ok("rt"));

    // AUTO recomputes a large change with FULL, keeping the state filled.
    db->exec(
        "INSERT INTO r SELECT i, i % 5, i, i * 0.25 FROM generate_series(10, 209) i; ANALYZE r");
    alter_mode("rt", "AUTO");
    EXPECT_EQ(modes("rt"), "AUTO/DIFFERENTIAL");
    EXPECT_EQ(aux_columns("rt"), aux);
    db->exec("UPDATE r SET x = x + 1 WHERE id >= 10");
    refresh("rt");
    EXPECT_EQ(last_action("rt"), "FULL");
    EXPECT_MATCHES_QUERY(*db, "rt");
    EXPECT_EQ(count(unfilled), 0);
    db->exec("UPDATE r SET x = x - 1 WHERE id = 11");
    EXPECT_LE(refresh_reading("rt", "r"), kProbeRows);
    EXPECT_TRUE(differential_ok("rt"));
}

// --- FILTER and expressions -------------------------------------------------

TEST_F(DifferentialAlgebraic, filter_clauses_and_expressions_as_arguments) {
    db->exec(
        "CREATE TABLE f (id int PRIMARY KEY, tag text, x int, s text, amt numeric);"
        "INSERT INTO f VALUES (1, 'A', 1, 'Bob', 1.5), (2, 'a', 2, NULL, 2.25),"
        " (3, 'B', 3, 'ann', NULL), (4, 'b', NULL, 'Cy', 4), (5, NULL, 5, 'dee', 5.5),"
        " (6, 'A', 7, 'Al', 0.5)");
    create("ff",
           "SELECT tag, count(*) AS n, sum(x * 2) FILTER (WHERE x > 1) AS big2, "
           "count(*) FILTER (WHERE s IS NOT NULL) AS named, min(lower(s)) AS first_name, "
           "max(upper(s)) FILTER (WHERE x < 5) AS last_small, "
           "avg(amt + x) FILTER (WHERE s <> 'skip') AS mixed, "
           "count(x) FILTER (WHERE amt > 2) AS cx FROM f GROUP BY tag");
    create("fl",
           "SELECT lower(tag) AS ltag, count(*) AS n, sum(x) FILTER (WHERE s IS NULL) AS unnamed, "
           "min(amt * 2) AS lo FROM f WHERE id < 100 GROUP BY lower(tag)");
    EXPECT_TRUE(algebraic("ff")) << aux_columns("ff");
    EXPECT_TRUE(algebraic("fl")) << aux_columns("fl");
    auto both_ok = [&] {
        EXPECT_TRUE(refreshed_ok("ff"));
        EXPECT_TRUE(refreshed_ok("fl"));
    };

    db->exec("UPDATE f SET x = 0 WHERE id = 2");  // leaves the x > 1 filter
    both_ok();
    EXPECT_EQ(db->scalar("SELECT coalesce(big2::text, 'NULL') FROM ff WHERE tag = 'a'"), "NULL");
    db->exec("UPDATE f SET s = NULL WHERE id = 6");  // leaves `named`; its MIN ('al') goes
    both_ok();
    db->exec("UPDATE f SET x = 9 WHERE id = 4");  // enters x > 1, not x < 5
    both_ok();
    db->exec("INSERT INTO f VALUES (7, 'A', 4, 'skip', 1), (8, 'a', 3, 'zed', 2)");
    both_ok();
    db->exec("INSERT INTO f VALUES (100, 'a', 50, NULL, 0)");  // fails WHERE of fl only
    both_ok();

    db->exec(
        "BEGIN; INSERT INTO f VALUES (9, 'b', 2, 'Eve', 2);"
        " UPDATE f SET s = 'eve', x = 3 WHERE id = 9; UPDATE f SET tag = 'A' WHERE id = 9;"
        " DELETE FROM f WHERE id = 3; UPDATE f SET s = 'skip' WHERE id = 1;"
        " UPDATE f SET s = NULL WHERE id = 1; COMMIT");
    both_ok();

    db->exec("DELETE FROM f WHERE tag IN ('B', 'b') OR tag IS NULL");  // whole groups go
    both_ok();
    EXPECT_EQ(count("SELECT 1 FROM ff WHERE tag IN ('B', 'b') OR tag IS NULL"), 0);
    EXPECT_EQ(count("SELECT 1 FROM fl WHERE ltag = 'b' OR ltag IS NULL"), 0);
}

// --- outputs that are not all algebraic -------------------------------------

TEST_F(DifferentialAlgebraic, non_algebraic_outputs_still_maintained) {
    db->exec(
        "CREATE TABLE na (id int PRIMARY KEY, g int, x int, s text, f float8);"
        "INSERT INTO na VALUES (1, 1, 1, 'b', 0.5), (2, 1, 2, 'a', 0.25), (3, 2, 3, NULL, -2),"
        " (4, NULL, 4, 'c', 1.75), (5, 3, NULL, 'd', NULL)");
    const std::vector<std::string> queries = {
        "SELECT g, sum(x) + g AS s1, count(*) AS n FROM na GROUP BY g",
        "SELECT g, count(*) AS n, sum(x) AS sx FROM na GROUP BY g HAVING count(*) > 1",
        "SELECT g, string_agg(s, ',' ORDER BY s) AS names, count(*) AS n FROM na GROUP BY g",
        "SELECT g, sum(f) AS sf, avg(f) AS af, count(*) AS n FROM na GROUP BY g",
        "SELECT g, count(DISTINCT x) AS dx, sum(x) AS sx FROM na GROUP BY g",
        "SELECT count(*) AS n, string_agg(s, ',' ORDER BY s) AS names FROM na",
    };
    for (std::size_t i = 0; i < queries.size(); i++) {
        SCOPED_TRACE(queries[i]);
        create("na" + std::to_string(i), queries[i]);
        EXPECT_EQ(modes("na" + std::to_string(i)), "DIFFERENTIAL/DIFFERENTIAL");
        EXPECT_EQ(aux_columns("na" + std::to_string(i)), "") << "no hidden state";
    }
    auto all_ok = [&](const std::string& change) {
        db->exec(change);
        for (std::size_t i = 0; i < queries.size(); i++) {
            EXPECT_TRUE(refreshed_ok("na" + std::to_string(i))) << queries[i] << "\n" << change;
        }
    };
    all_ok("INSERT INTO na VALUES (6, 2, 6, 'e', 0.5), (7, 4, 7, 'f', 3)");
    all_ok(
        "UPDATE na SET x = x * 10, f = f * 2 WHERE id IN (1, 3); UPDATE na SET g = 1 WHERE id = 7");
    all_ok("DELETE FROM na WHERE id IN (2, 5)");
    all_ok(
        "BEGIN; INSERT INTO na VALUES (8, 1, 8, 'g', 0.125); UPDATE na SET g = 2 WHERE id = 8;"
        " DELETE FROM na WHERE id = 8; UPDATE na SET g = NULL WHERE id = 6; COMMIT");
    all_ok("DELETE FROM na WHERE g = 1");
}

// --- expressions over aggregates ---------------------------------------------

// An output that computes over aggregates only (a ratio, a percentage) keeps
// each aggregate hidden (__pgt_v<i> for COUNT/MIN/MAX, sums for SUM/AVG)
// and recomputes the expression from them; one table and a join.
TEST_F(DifferentialAlgebraic, expressions_over_aggregates_keep_each_aggregate_hidden) {
    db->exec(
        "CREATE TABLE ex (id int PRIMARY KEY, g int, x int, p numeric, d date);"
        "CREATE TABLE exk (g int PRIMARY KEY, label text);"
        "INSERT INTO exk VALUES (1, 'one'), (2, 'two'), (3, 'three');"
        "INSERT INTO ex VALUES (1, 1, 10, 2.5, '2026-01-01'), (2, 1, 20, 1.25, '2026-02-01'),"
        " (3, 2, NULL, 4, '2026-03-01'), (4, 2, 5, NULL, NULL), (5, 3, 0, 0, '2026-01-15')");
    const std::vector<std::string> queries = {
        "SELECT g, 100.00 * sum(p) / NULLIF(sum(x), 0) AS pct, count(*) + 1 AS n1, "
        "max(d) - min(d) AS span FROM ex GROUP BY g",
        "SELECT 100.00 * sum(CASE WHEN x > 5 THEN p ELSE 0 END) / sum(p) AS promo, "
        "avg(x) * 2 AS ax2 FROM ex",
        "SELECT k.label, sum(e.p) / count(*) AS per_row, coalesce(max(e.x), -1) AS mx "
        "FROM ex e JOIN exk k ON k.g = e.g GROUP BY k.label",
        "SELECT sum(e.x) FILTER (WHERE k.g > 1) * 1.0 / count(*) AS share FROM ex e, exk k "
        "WHERE k.g = e.g",
        // count(*) alone over a join: the join's rows carry no column.
        "SELECT count(*) AS n FROM ex e JOIN exk k ON k.g = e.g",
        // A group that vanishes has count(x) = 0: never divided by.
        "SELECT g, 100 / count(x) AS inv FROM ex WHERE x IS NOT NULL GROUP BY g",
    };
    for (std::size_t i = 0; i < queries.size(); i++) {
        SCOPED_TRACE(queries[i]);
        create("ex" + std::to_string(i), queries[i]);
        EXPECT_EQ(modes("ex" + std::to_string(i)), "DIFFERENTIAL/DIFFERENTIAL");
        EXPECT_TRUE(algebraic("ex" + std::to_string(i))) << aux_columns("ex" + std::to_string(i));
    }
    EXPECT_NE(aux_columns("ex0").find("__pgt_v"), std::string::npos)
        << "count, max and min inside expressions keep their values: " << aux_columns("ex0");
    auto all_ok = [&](const std::string& change) {
        db->exec(change);
        for (std::size_t i = 0; i < queries.size(); i++) {
            EXPECT_TRUE(refreshed_ok("ex" + std::to_string(i))) << queries[i] << "\n" << change;
        }
    };
    all_ok("INSERT INTO ex VALUES (6, 1, 30, 0.5, '2025-12-01'), (7, 3, 7, 1, '2026-06-01')");
    all_ok("UPDATE ex SET x = x + 1, p = p * 2 WHERE g = 1; UPDATE ex SET g = 3 WHERE id = 3");
    all_ok("DELETE FROM ex WHERE d = (SELECT max(d) FROM ex)");  // a MAX inside an expression
    all_ok(
        "BEGIN; INSERT INTO ex VALUES (8, 2, 8, 8, '2026-08-08'); UPDATE ex SET x = NULL WHERE "
        "id = 8; DELETE FROM ex WHERE id = 1; UPDATE exk SET g = 4 WHERE g = 2; COMMIT");
    all_ok("DELETE FROM ex WHERE g = 3; UPDATE exk SET g = 2 WHERE g = 4");
    all_ok("DELETE FROM ex");
}

// --- sources without a key, transactions, chains ----------------------------

// Exact duplicate rows of a keyless source net to one image with a weight:
// each counts, sums and ties once per copy.
TEST_F(DifferentialAlgebraic, keyless_source_duplicates_count_with_their_multiplicity) {
    db->exec(
        "CREATE TABLE k (g int, x numeric);"
        "INSERT INTO k VALUES (1, 1.5), (1, 1.5), (1, 2), (2, NULL), (2, NULL)");
    create("ks",
           "SELECT g, count(*) AS n, count(x) AS nx, sum(x) AS s, avg(x) AS a, min(x) AS lo, "
           "max(x) AS hi FROM k GROUP BY g");
    EXPECT_TRUE(algebraic("ks"));
    db->exec("INSERT INTO k VALUES (1, 1.50), (1, 1.50), (1, 1.50), (3, 0.125), (3, 0.125)");
    EXPECT_TRUE(refreshed_ok("ks"));
    db->exec("DELETE FROM k WHERE x = 1.5");  // five rows of two looks
    EXPECT_TRUE(refreshed_ok("ks"));
    db->exec("DELETE FROM k WHERE ctid = (SELECT min(ctid) FROM k WHERE g = 3)");  // one twin
    EXPECT_TRUE(refreshed_ok("ks"));
    EXPECT_EQ(db->scalar("SELECT n || '/' || s FROM ks WHERE g = 3"), "1/0.125");
    db->exec(
        "BEGIN; UPDATE k SET x = 2.000 WHERE g = 2; INSERT INTO k VALUES (2, 2), (2, 2);"
        " DELETE FROM k WHERE g = 2 AND x::text = '2.000'; COMMIT");
    EXPECT_TRUE(refreshed_ok("ks"));
    EXPECT_EQ(db->scalar("SELECT n || '/' || nx || '/' || s FROM ks WHERE g = 2"), "2/2/4");
}

// The state is added to, so a change applied twice (or not at all) would
// stay visible: a writer open across refreshes, a refresh inside a writing
// transaction, savepoints, a rollback, and two stream tables consuming the
// same changes at their own pace.
TEST_F(DifferentialAlgebraic, changes_apply_exactly_once_across_open_transactions) {
    db->exec(
        "CREATE TABLE e (id int PRIMARY KEY, g int, x numeric);"
        "INSERT INTO e SELECT i, i % 3, i * 0.5 FROM generate_series(1, 12) i;"
        "SET statement_timeout = '30s'");  // a refresh that waits fails, not hangs
    create("fast",
           "SELECT g, count(*) AS n, sum(x) AS s, avg(x) AS a, max(x) AS hi FROM e GROUP BY g");
    create("slow", "SELECT count(*) AS n, sum(x) AS s, min(x) AS lo FROM e");
    Conn w = connect_db();
    w.exec(
        "BEGIN; INSERT INTO e VALUES (100, 1, 10); UPDATE e SET x = x + 1 WHERE id = 1;"
        "DELETE FROM e WHERE id = 2");
    db->exec("INSERT INTO e VALUES (101, 2, 3.25)");  // commits while w is open
    EXPECT_TRUE(refreshed_ok("fast"));
    w.exec("INSERT INTO e VALUES (102, 0, 1)");
    db->exec("UPDATE e SET x = 0 WHERE id = 101");
    EXPECT_TRUE(refreshed_ok("fast"));
    w.exec("COMMIT");
    EXPECT_TRUE(refreshed_ok("fast"));
    EXPECT_TRUE(refreshed_ok("slow"));
    refresh("fast");
    EXPECT_EQ(last("fast"), "NO_DATA/0/0");
    EXPECT_MATCHES_QUERY(*db, "fast");

    db->exec("BEGIN; INSERT INTO e VALUES (103, 1, 2); UPDATE e SET g = 2 WHERE id = 3");
    EXPECT_TRUE(refreshed_ok("fast")) << "inside the writing transaction";
    db->exec("INSERT INTO e VALUES (104, 0, 0.5); COMMIT");
    EXPECT_TRUE(refreshed_ok("fast"));
    EXPECT_TRUE(refreshed_ok("slow"));

    db->exec(
        "BEGIN; INSERT INTO e VALUES (105, 1, 7); SAVEPOINT sp;"
        " UPDATE e SET x = 100 WHERE id = 105; DELETE FROM e WHERE id = 4;"
        " ROLLBACK TO SAVEPOINT sp; UPDATE e SET x = 7.5 WHERE id = 105; COMMIT");
    EXPECT_TRUE(refreshed_ok("fast"));
    db->exec("BEGIN; DELETE FROM e; ROLLBACK");
    refresh("fast");
    EXPECT_EQ(last("fast"), "NO_DATA/0/0");
    EXPECT_MATCHES_QUERY(*db, "fast");
    EXPECT_TRUE(refreshed_ok("slow"));
}

// A stream table maintained algebraically over another one: the upstream's
// in-place updates of its groups are changes like any other.
TEST_F(DifferentialAlgebraic, chain_of_algebraic_stream_tables) {
    db->exec(
        "CREATE TABLE base (id int PRIMARY KEY, g int, x int);"
        "INSERT INTO base SELECT i, i % 5, i FROM generate_series(1, 30) i");
    create("up", "SELECT g, count(*) AS n, sum(x) AS sx FROM base GROUP BY g");
    create("down",
           "SELECT n, count(*) AS groups, sum(sx) AS total, min(sx) AS lo, max(g) AS top "
           "FROM up GROUP BY n");
    EXPECT_TRUE(algebraic("up"));
    EXPECT_TRUE(algebraic("down"));
    auto both_ok = [&] {
        EXPECT_TRUE(refreshed_ok("up"));
        EXPECT_TRUE(refreshed_ok("down"));
    };
    db->exec("INSERT INTO base VALUES (31, 1, 100), (32, 7, 1)");  // n of group 1 changes
    both_ok();
    db->exec("UPDATE base SET x = x + 1 WHERE g = 2; DELETE FROM base WHERE g = 3");
    both_ok();
    db->exec(
        "BEGIN; UPDATE base SET g = 7 WHERE id = 31; INSERT INTO base VALUES (33, 8, 5);"
        " DELETE FROM base WHERE id = 33; COMMIT");
    both_ok();
}

// --- grouping keys and output shapes ----------------------------------------

// A grouping key shows the value of the group's rows that the query shows;
// equal keys may look different (numeric 1.0 = 1.00, float8 0 = -0,
// interval '1 mon' = '30 days'). Once only one look is left, the stream
// table must show it.
TEST_F(DifferentialAlgebraic, equal_group_keys_that_look_different_show_the_remaining_one) {
    db->exec(
        "CREATE TABLE gk (id int PRIMARY KEY, k numeric, f float8, iv interval, x int);"
        "INSERT INTO gk VALUES (1, 1.0, 0, '1 mon', 1), (2, 1.00, '-0', '30 days', 2)");
    const std::vector<std::string> keys = {"k", "f", "iv"};
    for (const std::string& k : keys) {
        create("by_" + k, "SELECT " + k + ", count(*) AS n, sum(x) AS sx FROM gk GROUP BY " + k);
        EXPECT_TRUE(algebraic("by_" + k));
    }
    auto shown = [&] {
        std::string out;
        for (const std::string& k : keys) {
            out += (out.empty() ? "" : "|") +
                   db->scalar("SELECT string_agg(" + k + "::text, ',') FROM by_" + k);
        }
        return out;
    };
    db->exec("DELETE FROM gk WHERE id = 1");
    for (const std::string& k : keys) {
        EXPECT_TRUE(refreshed_ok("by_" + k));
    }
    EXPECT_EQ(shown(), "1.00|-0|30 days");
    db->exec(
        "BEGIN; INSERT INTO gk VALUES (3, 1.000, 0, '720 hours', 3); DELETE FROM gk "
        "WHERE id = 2; COMMIT");
    for (const std::string& k : keys) {
        EXPECT_TRUE(refreshed_ok("by_" + k));
    }
    EXPECT_EQ(shown(), "1.000|0|720:00:00");
}

TEST_F(DifferentialAlgebraic, outputs_in_any_order_with_quoted_names_and_two_keys) {
    db->exec(
        "CREATE TABLE o (id int PRIMARY KEY, a text, b int, x int);"
        "INSERT INTO o VALUES (1, 'p', 1, 10), (2, 'p', 1, 20), (3, 'p', NULL, 5),"
        " (4, NULL, NULL, 7), (5, NULL, 2, NULL), (6, 'q', 2, 1)");
    create("o2",
           "SELECT count(*), a AS \"Key A\", sum(x) AS \"Sum X\", b, sum(x) AS again, max(x) "
           "FROM o GROUP BY a, b");
    EXPECT_EQ(aux_columns("o2"), "__pgt_count,__pgt_n2,__pgt_s2,__pgt_n3,__pgt_s3");
    db->exec("INSERT INTO o VALUES (7, 'p', 1, 30), (8, NULL, NULL, 1), (9, 'q', NULL, 2)");
    EXPECT_LE(refresh_reading("o2", "o"), kProbeRows);
    EXPECT_TRUE(differential_ok("o2"));
    db->exec("UPDATE o SET b = NULL WHERE id = 1; UPDATE o SET a = NULL WHERE id = 6");
    EXPECT_TRUE(refreshed_ok("o2"));
    db->exec(
        "BEGIN; DELETE FROM o WHERE id = 7; INSERT INTO o VALUES (7, NULL, 2, 3);"
        " UPDATE o SET x = NULL WHERE id = 7; DELETE FROM o WHERE a = 'q'; COMMIT");
    EXPECT_TRUE(refreshed_ok("o2"));
    EXPECT_EQ(db->scalar("SELECT \"count\" || '/' || coalesce(\"Sum X\"::text, 'NULL') || '/' "
                         "|| coalesce(again::text, 'NULL') || '/' || coalesce(max::text, 'NULL') "
                         "FROM o2 WHERE \"Key A\" IS NULL AND b = 2"),
              "3/1/1/1");
}

}  // namespace
}  // namespace pgt::e2e
