// DIFFERENTIAL stream tables end to end: capture into the shared change
// buffer, exactly-once frontiers across transactions and sessions, keyless
// sources (seed EC-06), TRUNCATE (EC-24), chains, mode choice, clean-up.
// Invariant: every refresh that follows a source change is checked against
// the oracle; a data-changing test without the oracle is incomplete.
#include <algorithm>
#include <cctype>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "fixture.hpp"

namespace pgt::e2e {
namespace {

class Differential : public DbTest {
protected:
    void SetUp() override {
        DbTest::SetUp();
        db->exec(
            "CREATE TABLE t (id int PRIMARY KEY, name text, amount numeric(10,2));"
            "INSERT INTO t VALUES (1, 'ada', 50), (2, 'bo', 5), (3, 'cy', 20), (4, NULL, 30),"
            " (5, 'dee', 10), (6, 'eve', 11.5)");
    }

    void create(const std::string& name, const std::string& query,
                const std::string& mode = "DIFFERENTIAL") {
        db->exec("SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => $3)",
                 {name, query, mode});
    }
    // The stream table of most tests: filter + projection over keyed `t`.
    void create_s() {
        create("s",
               "SELECT id, upper(name) AS uname, amount * 2 AS double_amount FROM t "
               "WHERE amount > 10");
    }
    // Refreshes st, then the oracle.
    ::testing::AssertionResult refreshed_ok(const std::string& st) {
        refresh(st);
        return matches_query(*db, st);
    }

    // "rows_inserted/rows_deleted" of st's latest refresh.
    std::string last_written(const std::string& st) {
        std::string l = last(st);
        return l.substr(l.find('/') + 1);
    }
    // Moves row `id` of t to id + 100, refreshes st and returns st's column
    // col for the moved row (a setting the refresh ran with).
    std::string setting_seen(const std::string& st, const std::string& col, int id) {
        db->exec("UPDATE t SET id = " + std::to_string(id + 100) +
                 " WHERE id = " + std::to_string(id));
        refresh(st);
        return db->scalar("SELECT " + col + " FROM " + st +
                          " WHERE id = " + std::to_string(id + 100));
    }
    std::string last_reason(const std::string& st) {
        return db->scalar(
            "SELECT coalesce(h.reason, '') FROM pgtrickle.pgt_refresh_history h "
            "JOIN pgtrickle.pgt_stream_tables s USING (pgt_id) "
            "WHERE s.pgt_relid = $1::regclass ORDER BY h.refresh_id DESC LIMIT 1",
            {st});
    }

    // The change buffer of src, as a qualified relation name ("" if none);
    // buffer_name may be stored with or without its schema.
    std::string buffer_of(const std::string& src) {
        Result r = db->exec(
            "SELECT coalesce(to_regclass(buffer_name::text), "
            "to_regclass('pgtrickle_changes.' || quote_ident(buffer_name::text)))::text "
            "FROM pgtrickle.pgt_sources WHERE source_relid = $1::regclass",
            {src});
        return r.size() == 0 ? "" : r.at(0, 0);
    }
    long buffered(const std::string& src) {
        std::string buf = buffer_of(src);
        EXPECT_FALSE(buf.empty() || buf == "<NULL>") << "no change buffer for " << src;
        return buf.empty() || buf == "<NULL>" ? -1 : count("SELECT * FROM " + buf);
    }
    // Triggers on src other than FULL stream tables' change notes.
    long capture_triggers(const std::string& src) {
        return count("SELECT 1 FROM pg_trigger WHERE tgrelid = '" + src +
                     "'::regclass AND NOT tgisinternal AND tgname NOT LIKE 'pgt\\_note\\_%'");
    }
    // Physical version of every row of st, to see whether a refresh rewrote it.
    std::string row_versions(const std::string& st) {
        return db->scalar(
            "SELECT coalesce(string_agg(ctid::text || xmin::text, ',' ORDER BY ctid), '') FROM " +
            st);
    }

    // The keyless source of the EC-06 tests and its stream table, with
    // exact duplicates and NULLs from the start.
    void create_keyless() {
        db->exec(
            "CREATE TABLE k (a int, b text);"
            "INSERT INTO k VALUES (1, 'x'), (1, 'x'), (1, 'x'), (2, 'y'), (2, 'y'),"
            " (3, NULL), (3, NULL), (NULL, 'z')");
        create("kd", "SELECT a, upper(b) AS ub FROM k");
    }
};

bool mentions(const std::string& message, const std::vector<std::string>& words) {
    // A word starting with '!' is matched case-sensitively (e.g. "!WITH").
    std::string lower = message;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    for (const auto& w : words) {
        if (w[0] == '!' ? message.find(w.substr(1)) != std::string::npos
                        : lower.find(w) != std::string::npos) {
            return true;
        }
    }
    return false;
}

// --- creation and capture ---------------------------------------------------

TEST_F(Differential, create_records_shared_buffer_and_initial_full_refresh) {
    create_s();
    EXPECT_EQ(modes("s"), "DIFFERENTIAL/DIFFERENTIAL");
    EXPECT_EQ(db->scalar("SELECT action || '/' || status || '/' || initiated_by "
                         "FROM pgtrickle.pgt_refresh_history"),
              "FULL/SUCCESS/CREATE");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_sources "
                         "WHERE source_relid = 't'::regclass"),
              "1");
    EXPECT_EQ(
        db->scalar("SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = $1::regclass",
                   {buffer_of("t")}),
        "pgtrickle_changes");
    EXPECT_EQ(buffered("t"), 0);
    EXPECT_GT(capture_triggers("t"), 0);
    EXPECT_MATCHES_QUERY(*db, "s");
}

TEST_F(Differential, insert_applies_only_the_new_qualifying_rows) {
    create_s();
    db->exec("INSERT INTO t VALUES (7, 'fay', 70), (8, 'gil', 3), (9, NULL, 90)");
    EXPECT_FALSE(matches_query(*db, "s")) << "oracle must notice a stale table";
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last("s"), "DIFFERENTIAL/2/0");
}

TEST_F(Differential, update_rewrites_projected_values) {
    create_s();
    db->exec(
        "UPDATE t SET name = 'Ada Lovelace' WHERE id = 1;"
        "UPDATE t SET amount = amount + 1 WHERE id IN (3, 4);"
        "UPDATE t SET name = NULL, amount = 99 WHERE id = 6");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last_action("s"), "DIFFERENTIAL");
    EXPECT_EQ(db->scalar("SELECT uname FROM s WHERE id = 1"), "ADA LOVELACE");
}

TEST_F(Differential, delete_removes_only_the_deleted_rows) {
    create_s();
    db->exec("DELETE FROM t WHERE id IN (1, 2, 4)");  // 2 is outside the filter
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last("s"), "DIFFERENTIAL/0/2");
}

TEST_F(Differential, rows_move_into_and_out_of_the_filter) {
    create_s();
    db->exec(
        "UPDATE t SET amount = 1 WHERE id = 1;"       // leaves
        "UPDATE t SET amount = 100 WHERE id = 2;"     // enters
        "UPDATE t SET amount = 10 WHERE id = 6;"      // boundary: leaves (10 > 10 is false)
        "UPDATE t SET amount = NULL WHERE id = 3;"    // NULL: leaves
        "UPDATE t SET amount = 10.01 WHERE id = 5");  // enters
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(db->scalar("SELECT string_agg(id::text, ',' ORDER BY id) FROM s"), "2,4,5");
    db->exec("UPDATE t SET amount = 20 WHERE id IN (1, 3); UPDATE t SET amount = 0 WHERE id = 2");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(db->scalar("SELECT string_agg(id::text, ',' ORDER BY id) FROM s"), "1,3,4,5");
}

TEST_F(Differential, primary_key_change_moves_the_row) {
    create_s();
    db->exec("UPDATE t SET id = id + 100 WHERE amount > 15");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(db->scalar("SELECT string_agg(id::text, ',' ORDER BY id) FROM s"), "6,101,103,104");
    // A key change and a value change on the same row; then a key swap through
    // a free key.
    db->exec("UPDATE t SET id = 7, amount = 12 WHERE id = 101");
    db->exec(
        "UPDATE t SET id = 0 WHERE id = 6; UPDATE t SET id = 6 WHERE id = 7;"
        "UPDATE t SET id = 7 WHERE id = 0");
    EXPECT_TRUE(refreshed_ok("s"));
}

TEST_F(Differential, delete_then_reinsert_same_key_in_one_window) {
    create_s();
    db->exec(
        "DELETE FROM t WHERE id = 1; INSERT INTO t VALUES (1, 'ada', 50);"    // same values
        "DELETE FROM t WHERE id = 3; INSERT INTO t VALUES (3, 'cyrus', 30);"  // new values
        "DELETE FROM t WHERE id = 4; INSERT INTO t VALUES (4, 'dot', 2);"     // now filtered out
        "DELETE FROM t WHERE id = 2; INSERT INTO t VALUES (2, 'bo', 200)");   // now in
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last_action("s"), "DIFFERENTIAL");
}

TEST_F(Differential, many_changes_to_one_key_in_one_window) {
    create_s();
    db->exec(
        "UPDATE t SET amount = 60 WHERE id = 1; UPDATE t SET name = 'x' WHERE id = 1;"
        "UPDATE t SET amount = 5 WHERE id = 1; UPDATE t SET amount = 70 WHERE id = 1;"
        "DELETE FROM t WHERE id = 1; INSERT INTO t VALUES (1, 'y', 1);"
        "UPDATE t SET amount = 80, name = 'z' WHERE id = 1;"
        "INSERT INTO t VALUES (50, 'tmp', 99); DELETE FROM t WHERE id = 50;"  // born and dead
        "INSERT INTO t VALUES (51, 'a', 1); UPDATE t SET amount = 500 WHERE id = 51;"
        "UPDATE t SET id = 52 WHERE id = 51; UPDATE t SET amount = 501 WHERE id = 52");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(db->scalar("SELECT uname || '/' || double_amount FROM s WHERE id = 1"), "Z/160.00");
    EXPECT_EQ(count("SELECT * FROM s WHERE id IN (50, 51)"), 0);
}

// --- history and writes -----------------------------------------------------

TEST_F(Differential, history_says_differential_after_changes_and_no_data_without) {
    create_s();
    db->exec("INSERT INTO t VALUES (7, 'fay', 70)");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last("s"), "DIFFERENTIAL/1/0");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last("s"), "NO_DATA/0/0");
    EXPECT_EQ(db->scalar("SELECT string_agg(action || ':' || status || ':' || initiated_by, ',' "
                         "ORDER BY refresh_id) FROM pgtrickle.pgt_refresh_history"),
              "FULL:SUCCESS:CREATE,DIFFERENTIAL:SUCCESS:MANUAL,NO_DATA:SUCCESS:MANUAL");
}

TEST_F(Differential, no_data_refresh_writes_nothing) {
    create_s();
    db->exec("UPDATE t SET amount = 77 WHERE id = 1");
    EXPECT_TRUE(refreshed_ok("s"));
    std::string before = row_versions("s");
    // Heap tuples written into s, as counted by this backend's pending
    // statistics (PG15 may carry earlier transactions' counts in them, so
    // compare before and after within one transaction).
    const std::string written =
        "SELECT n_tup_ins || '/' || n_tup_upd || '/' || n_tup_del "
        "FROM pg_stat_xact_user_tables WHERE relid = 's'::regclass";
    db->exec("BEGIN");
    std::string stats_before = db->scalar(written);
    refresh("s");
    EXPECT_EQ(db->scalar(written), stats_before);
    db->exec("COMMIT");
    EXPECT_EQ(last("s"), "NO_DATA/0/0");
    EXPECT_EQ(row_versions("s"), before);
    EXPECT_MATCHES_QUERY(*db, "s");
}

TEST_F(Differential, noop_update_writes_no_buffer_row) {
    create_s();
    db->exec("UPDATE t SET name = name; UPDATE t SET amount = amount, id = id WHERE id < 4");
    EXPECT_EQ(buffered("t"), 0);
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last("s"), "NO_DATA/0/0");
}

TEST_F(Differential, same_output_update_keeps_the_stream_row_version) {
    create_s();
    std::string row1 = db->scalar("SELECT ctid::text || xmin::text FROM s WHERE id = 1");
    std::string row3 = db->scalar("SELECT ctid::text || xmin::text FROM s WHERE id = 3");
    // id 1: 'ada' -> 'ADA' keeps upper(name); id 3 changes, so the refresh
    // has real work to do next to the unchanged row.
    db->exec("UPDATE t SET name = 'ADA' WHERE id = 1; UPDATE t SET amount = 21 WHERE id = 3");
    EXPECT_GT(buffered("t"), 0);
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last_action("s"), "DIFFERENTIAL");
    EXPECT_EQ(db->scalar("SELECT ctid::text || xmin::text FROM s WHERE id = 1"), row1);
    EXPECT_NE(db->scalar("SELECT ctid::text || xmin::text FROM s WHERE id = 3"), row3);
}

// An update another stream table sees (its column is captured) but that
// leaves every column this one reads as it was writes nothing here (the
// buffer scan drops it; netting would cancel it too, so this shows the
// result, not the skip); one that leaves a column equal but stored
// differently (1.0 -> 1.00, 0 -> -0, json respaced: no `=` at all) or
// moves it to or from NULL reaches the stream table.
TEST_F(Differential, update_of_columns_it_does_not_read_is_skipped_but_equal_new_looks_are_not) {
    db->exec(
        "CREATE TABLE w (id int PRIMARY KEY, a numeric, f float8, j json, c text, note text);"
        "INSERT INTO w VALUES (1, 1.0, 2, '{\"k\":1}', 'x', 'n'), (2, 2, 0, NULL, NULL, 'n'),"
        " (3, NULL, NULL, '[1]', 'y', 'n'), (4, 4, 4, '[]', NULL, 'n'), (5, 5, 5, '{}', 'x', 'n')");
    create("wv", "SELECT id, a, f, j::text AS jt, c FROM w");
    create("wn", "SELECT id, note FROM w");
    std::string versions = row_versions("wv");
    db->exec("UPDATE w SET note = 'm'");
    EXPECT_GT(buffered("w"), 0);
    EXPECT_TRUE(refreshed_ok("wv"));
    EXPECT_EQ(last("wv"), "DIFFERENTIAL/0/0");
    EXPECT_EQ(row_versions("wv"), versions);
    EXPECT_TRUE(refreshed_ok("wn"));
    // One column per row, the others (note too) as they were.
    db->exec(
        "UPDATE w SET a = 1.00 WHERE id = 1; UPDATE w SET f = '-0' WHERE id = 2;"
        "UPDATE w SET j = '[ 1 ]' WHERE id = 3; UPDATE w SET c = 'z' WHERE id = 4;"
        "UPDATE w SET c = NULL WHERE id = 5");
    EXPECT_FALSE(matches_query(*db, "wv")) << "the oracle must notice a stale table";
    EXPECT_TRUE(refreshed_ok("wv"));
    EXPECT_EQ(last_action("wv"), "DIFFERENTIAL");
    EXPECT_EQ(db->scalar("SELECT a::text FROM wv WHERE id = 1"), "1.00");
    EXPECT_EQ(db->scalar("SELECT f::text FROM wv WHERE id = 2"), "-0");
    // The same value back and forth within one window, next to a real change.
    db->exec(
        "UPDATE w SET a = 1.0, note = 'q' WHERE id = 1; UPDATE w SET a = 1.00 WHERE id = 1;"
        "UPDATE w SET f = 6 WHERE id = 4");
    EXPECT_TRUE(refreshed_ok("wv"));
    EXPECT_TRUE(refreshed_ok("wn"));
}

// --- EC-06: keyless sources with exact duplicates ---------------------------

TEST_F(Differential, ec06_keyless_duplicate_rows_inserted) {
    create_keyless();
    EXPECT_EQ(count("SELECT * FROM kd WHERE a = 1"), 3);
    db->exec(
        "INSERT INTO k VALUES (1, 'x'), (1, 'x'), (4, 'w'), (4, 'w'), (NULL, NULL), (NULL, NULL)");
    EXPECT_TRUE(refreshed_ok("kd"));
    EXPECT_EQ(last("kd"), "DIFFERENTIAL/6/0");
    EXPECT_EQ(count("SELECT * FROM kd WHERE a = 1"), 5);
    EXPECT_EQ(count("SELECT * FROM kd WHERE a IS NULL AND ub IS NULL"), 2);
}

TEST_F(Differential, ec06_keyless_delete_one_of_duplicates) {
    create_keyless();
    db->exec("DELETE FROM k WHERE ctid = (SELECT ctid FROM k WHERE a = 1 LIMIT 1)");
    EXPECT_TRUE(refreshed_ok("kd"));
    EXPECT_EQ(last("kd"), "DIFFERENTIAL/0/1");
    EXPECT_EQ(count("SELECT * FROM kd WHERE a = 1"), 2);
    db->exec("DELETE FROM k WHERE ctid = (SELECT ctid FROM k WHERE a = 3 LIMIT 1)");
    EXPECT_TRUE(refreshed_ok("kd"));
    EXPECT_EQ(count("SELECT * FROM kd WHERE a = 3"), 1);
}

TEST_F(Differential, ec06_keyless_update_one_of_duplicates) {
    create_keyless();
    db->exec("UPDATE k SET b = 'q' WHERE ctid = (SELECT ctid FROM k WHERE a = 1 LIMIT 1)");
    EXPECT_TRUE(refreshed_ok("kd"));
    EXPECT_EQ(count("SELECT * FROM kd WHERE a = 1 AND ub = 'X'"), 2);
    EXPECT_EQ(count("SELECT * FROM kd WHERE a = 1 AND ub = 'Q'"), 1);
    // Turn one row into a duplicate of another, and a NULL into a value.
    db->exec(
        "UPDATE k SET a = 1, b = 'x' WHERE ctid = (SELECT ctid FROM k WHERE a = 2 LIMIT 1);"
        "UPDATE k SET b = 'n' WHERE ctid = (SELECT ctid FROM k WHERE b IS NULL LIMIT 1)");
    EXPECT_TRUE(refreshed_ok("kd"));
    EXPECT_EQ(count("SELECT * FROM kd WHERE a = 1 AND ub = 'X'"), 3);
}

TEST_F(Differential, ec06_keyless_unique_content_multi_cycle) {
    db->exec(
        "CREATE TABLE k (a int, b text); INSERT INTO k SELECT g, 'v' || g FROM generate_series(1, "
        "20) g");
    create("kd", "SELECT a, b FROM k WHERE a % 3 <> 0");
    for (int cycle = 0; cycle < 6; cycle++) {
        SCOPED_TRACE("cycle " + std::to_string(cycle));
        std::string c = std::to_string(cycle);
        db->exec("INSERT INTO k VALUES (100 + " + c + ", 'new" + c +
                 "');"
                 "UPDATE k SET b = b || '+' WHERE a % 6 = " +
                 c +
                 ";"
                 "UPDATE k SET a = a + 1 WHERE a = " +
                 std::to_string(5 + cycle * 2) +
                 ";"
                 "DELETE FROM k WHERE a = " +
                 std::to_string(2 + cycle * 3));
        ASSERT_TRUE(refreshed_ok("kd"));
        EXPECT_EQ(last_action("kd"), "DIFFERENTIAL");
    }
}

TEST_F(Differential, ec06_keyless_delete_all_then_reinsert) {
    create_keyless();
    db->exec("DELETE FROM k");
    EXPECT_TRUE(refreshed_ok("kd"));
    EXPECT_EQ(count("SELECT * FROM kd"), 0);
    db->exec("INSERT INTO k VALUES (1, 'x'), (1, 'x'), (3, NULL)");
    EXPECT_TRUE(refreshed_ok("kd"));
    EXPECT_EQ(count("SELECT * FROM kd"), 3);
    // Both in one window: delete everything and put part of it back.
    db->exec("DELETE FROM k; INSERT INTO k VALUES (1, 'x'), (1, 'x'), (1, 'x'), (NULL, NULL)");
    EXPECT_TRUE(refreshed_ok("kd"));
    EXPECT_EQ(count("SELECT * FROM kd WHERE a = 1"), 3);
}

TEST_F(Differential, ec06_keyless_mixed_dml_stress) {
    create_keyless();
    create("kf", "SELECT b, a * 10 AS a10 FROM k WHERE a IS DISTINCT FROM 2");
    std::mt19937 rng(20260605);
    auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
    const std::vector<std::string> as = {"1", "2", "3", "NULL"};
    const std::vector<std::string> bs = {"'x'", "'y'", "NULL"};
    for (int cycle = 0; cycle < 40; cycle++) {
        std::string sql;
        for (int n = 1 + rng() % 4; n > 0; n--) {
            const std::string a = pick(as);
            const std::string b = pick(bs);
            const std::string a2 = pick(as);
            const std::string b2 = pick(bs);
            const std::string copies = std::to_string(1 + rng() % 3);
            std::string match = "a IS NOT DISTINCT FROM " + a + " AND b IS NOT DISTINCT FROM " + b;
            switch (rng() % 7) {
                case 0:
                case 1:
                    sql += "INSERT INTO k SELECT " + a + ", " + b + " FROM generate_series(1, " +
                           copies + ");";
                    break;
                case 2:
                    sql += "DELETE FROM k WHERE ctid = (SELECT ctid FROM k WHERE " + match +
                           " LIMIT 1);";
                    break;
                case 3:
                    sql += "UPDATE k SET a = " + a2 + ", b = " + b2 +
                           " WHERE ctid = (SELECT ctid FROM k WHERE " + match + " LIMIT 1);";
                    break;
                case 4:
                    sql += "UPDATE k SET b = " + b2 + " WHERE a IS NOT DISTINCT FROM " + a + ";";
                    break;
                case 5:
                    sql += "DELETE FROM k WHERE " + match + ";";
                    break;
                default:
                    sql += "INSERT INTO k SELECT a, b FROM k WHERE a IS NOT DISTINCT FROM " + a +
                           " AND (SELECT count(*) FROM k) < 200;";
            }
        }
        if (rng() % 6 == 0) {
            sql = "BEGIN;" + sql + "ROLLBACK;";
        }
        SCOPED_TRACE("cycle " + std::to_string(cycle) + ": " + sql);
        db->exec(sql);
        ASSERT_TRUE(refreshed_ok("kd"));
        ASSERT_TRUE(refreshed_ok("kf"));
    }
    EXPECT_EQ(buffered("k"), 0);
}

// Aggregates are not DIFFERENTIAL yet: AUTO maintains them by FULL refresh,
// and they still count duplicates of a keyless source right, next to a
// DIFFERENTIAL stream table on the same source.
TEST_F(Differential, ec06_keyless_aggregate_over_duplicates) {
    create_keyless();
    create("kagg", "SELECT a, count(*) AS n, count(b) AS nb FROM k GROUP BY a");
    EXPECT_EQ(modes("kagg"), "DIFFERENTIAL/DIFFERENTIAL");
    db->exec(
        "INSERT INTO k VALUES (1, 'x'), (1, NULL), (2, 'y');"
        "DELETE FROM k WHERE ctid = (SELECT ctid FROM k WHERE a = 3 LIMIT 1);"
        "UPDATE k SET a = 2 WHERE ctid = (SELECT ctid FROM k WHERE a = 1 LIMIT 1)");
    EXPECT_TRUE(refreshed_ok("kagg"));
    EXPECT_EQ(last_action("kagg"), "DIFFERENTIAL");
    EXPECT_TRUE(refreshed_ok("kd"));
    EXPECT_EQ(db->scalar("SELECT n || '/' || nb FROM kagg WHERE a = 1"), "4/3");
    db->exec("DELETE FROM k WHERE a = 1");
    EXPECT_TRUE(refreshed_ok("kagg"));
    EXPECT_TRUE(refreshed_ok("kd"));
    EXPECT_EQ(buffered("k"), 0);
}

// Rows equal as values but written differently (numeric 0 and 0.00 have
// the same row identity): deleting one must remove that one, not its twin.
// Found by the property test (PGT_PROPERTY_SEED=107 PGT_PROPERTY_CYCLES=4000).
TEST_F(Differential, keyless_delete_keeps_the_twin_with_another_numeric_scale) {
    db->exec(
        "CREATE TABLE m (tag text, z numeric(8,2)); INSERT INTO m VALUES ('a', 0), ('b', NULL)");
    create("mz", "SELECT coalesce(z, 0) AS z0 FROM m");
    EXPECT_EQ(db->scalar("SELECT string_agg(z0::text, ',' ORDER BY z0::text) FROM mz"), "0,0.00");
    db->exec("DELETE FROM m WHERE tag = 'b'");
    EXPECT_TRUE(refreshed_ok("mz"));
    db->exec("INSERT INTO m VALUES ('c', NULL); DELETE FROM m WHERE tag = 'a'");
    EXPECT_TRUE(refreshed_ok("mz"));
}

// --- transactions -----------------------------------------------------------

TEST_F(Differential, rolled_back_transaction_leaves_no_trace) {
    create_s();
    db->exec(
        "BEGIN; INSERT INTO t VALUES (7, 'fay', 70); UPDATE t SET amount = 1 WHERE id = 1;"
        "DELETE FROM t WHERE id = 3; ROLLBACK");
    EXPECT_EQ(buffered("t"), 0);
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last("s"), "NO_DATA/0/0");
}

TEST_F(Differential, savepoint_rollback_removes_only_its_part) {
    create_s();
    db->exec(
        "BEGIN; INSERT INTO t VALUES (7, 'kept', 70);"
        "SAVEPOINT sp; INSERT INTO t VALUES (8, 'gone', 80); UPDATE t SET amount = 1 WHERE id = 1;"
        "ROLLBACK TO SAVEPOINT sp;"
        "UPDATE t SET name = 'kept too' WHERE id = 3;"
        "SAVEPOINT sp2; DELETE FROM t WHERE id = 4; RELEASE SAVEPOINT sp2; COMMIT");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(
        db->scalar(
            "SELECT string_agg(id::text || ':' || coalesce(uname, '-'), ',' ORDER BY id) FROM s"),
        "1:ADA,3:KEPT TOO,6:EVE,7:KEPT");
}

// A writer that stays open across refreshes: its changes appear at the first
// refresh after its commit, exactly once (the keyless-output stream table
// `s2` would show a second application as duplicates).
TEST_F(Differential, transaction_open_across_refresh_applies_once_after_commit) {
    create_s();
    create("s2", "SELECT upper(name) AS uname, amount FROM t WHERE amount > 10");
    db->exec("SET statement_timeout = '30s'");  // a refresh that waits fails, not hangs
    Conn w = connect_db();
    w.exec(
        "BEGIN; INSERT INTO t VALUES (10, 'late', 100); UPDATE t SET amount = 99 WHERE id = 1;"
        "DELETE FROM t WHERE id = 3");
    db->exec("INSERT INTO t VALUES (11, 'early', 60)");  // commits after w took its xid
    for (const char* st : {"s", "s2"}) {
        EXPECT_TRUE(refreshed_ok(st)) << st;
    }
    EXPECT_EQ(count("SELECT * FROM s WHERE id IN (10, 11)"), 1);
    w.exec("INSERT INTO t VALUES (12, 'later', 120)");
    db->exec("UPDATE t SET amount = 61 WHERE id = 11");
    for (const char* st : {"s", "s2"}) {
        EXPECT_TRUE(refreshed_ok(st)) << st;
    }
    w.exec("COMMIT");
    for (const char* st : {"s", "s2"}) {
        EXPECT_TRUE(refreshed_ok(st)) << st;
        EXPECT_EQ(last_action(st), "DIFFERENTIAL") << st;
    }
    EXPECT_EQ(count("SELECT * FROM s WHERE id IN (10, 12)"), 2);
    for (const char* st : {"s", "s2"}) {
        EXPECT_TRUE(refreshed_ok(st)) << st;
        EXPECT_EQ(last(st), "NO_DATA/0/0") << st;
    }
    EXPECT_EQ(buffered("t"), 0);
}

TEST_F(Differential, unrelated_open_transaction_does_not_stall_refresh) {
    create_s();
    db->exec("SET statement_timeout = '30s'");  // a refresh that waits fails, not hangs
    Conn idle = connect_db();
    idle.exec("BEGIN; SELECT txid_current()");
    db->exec("INSERT INTO t VALUES (7, 'fay', 70), (8, 'gil', 80)");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last("s"), "DIFFERENTIAL/2/0");
    EXPECT_EQ(buffered("t"), 0);
    db->exec("DELETE FROM t WHERE id = 7");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last("s"), "DIFFERENTIAL/0/1");
    EXPECT_EQ(buffered("t"), 0);
    idle.exec("ROLLBACK");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last("s"), "NO_DATA/0/0");
}

// A refresh whose window is provably empty (nothing captured since the
// frontier, no writer that was open at it has committed) reads no change
// buffer: not to count its window, not to trim it. Neither after a large
// consumed change (dead rows) nor while rows wait for another consumer.
TEST_F(Differential, zero_change_refresh_reads_no_change_buffer) {
    create_s();
    create("s2", "SELECT id, amount FROM t");
    const std::string buf = buffer_of("t");
    // The buffer reads of one refresh of s: the backend's counters not yet
    // flushed, before and after it in one transaction (nothing is flushed
    // inside a transaction).
    auto reads_once = [&] {
        const std::string reads =
            "SELECT seq_scan + coalesce(idx_scan, 0) FROM pg_stat_xact_all_tables WHERE relid = "
            "$1::regclass";
        db->exec("BEGIN");
        const long before = std::stol(db->scalar(reads, {buf}));
        refresh("s");
        const long after = std::stol(db->scalar(reads, {buf}));
        db->exec("COMMIT");
        return std::to_string(after - before);
    };
    // A transaction of the cluster (autovacuum's ANALYZE) that was running
    // when the frontier was taken and has committed since makes the proof
    // fail and the refresh read: the next try has a fresh frontier.
    auto buffer_reads = [&] {
        std::string reads;
        for (int i = 0; i < 10 && reads != "0"; i++) {
            reads = reads_once();
        }
        return reads;
    };
    db->exec("UPDATE t SET amount = amount + 1");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last_action("s"), "DIFFERENTIAL");
    EXPECT_EQ(buffer_reads(), "0") << "rows pending for s2 only";
    EXPECT_EQ(last("s"), "NO_DATA/0/0");
    EXPECT_TRUE(refreshed_ok("s2"));
    EXPECT_EQ(buffered("t"), 0);
    EXPECT_EQ(buffer_reads(), "0") << "after every consumer consumed the change";
    EXPECT_EQ(last("s"), "NO_DATA/0/0");
    db->exec("INSERT INTO t VALUES (40, 'new', 40)");
    EXPECT_NE(reads_once(), "0") << "a captured row is read";
    EXPECT_EQ(last_action("s"), "DIFFERENTIAL");
    EXPECT_TRUE(matches_query(*db, "s"));
}

// The proof that a window is empty rests on the buffer's sequence read
// before the frontier's snapshot. A REPEATABLE READ refresh runs under the
// transaction's older snapshot: a row committed after that snapshot but
// before the read must still reach the next refresh.
TEST_F(Differential, refresh_under_repeatable_read_misses_nothing_committed_meanwhile) {
    create_s();
    Conn w = connect_db();
    db->exec("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM t");
    w.exec("INSERT INTO t VALUES (30, 'rr', 90)");  // after db's snapshot
    refresh("s");
    EXPECT_EQ(last_action("s"), "NO_DATA") << "the row is not in the snapshot";
    db->exec("COMMIT");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last("s"), "DIFFERENTIAL/1/0");
}

TEST_F(Differential, refresh_inside_writing_transaction_applies_writes_once) {
    create_s();
    create("s2", "SELECT upper(name) AS uname, amount FROM t WHERE amount > 10");
    db->exec("INSERT INTO t VALUES (20, 'pre', 70)");  // committed before
    db->exec(
        "BEGIN; INSERT INTO t VALUES (21, 'in', 80); UPDATE t SET amount = 77 WHERE id = 1;"
        "DELETE FROM t WHERE id = 4");
    for (const char* st : {"s", "s2"}) {
        EXPECT_TRUE(refreshed_ok(st)) << st;
    }
    db->exec("COMMIT");
    for (const char* st : {"s", "s2"}) {
        EXPECT_TRUE(refreshed_ok(st)) << st;
        EXPECT_EQ(last_written(st), "0/0") << st << ": the transaction's writes applied twice";
    }
    // Writes after the in-transaction refresh are applied by the next one.
    db->exec("BEGIN; INSERT INTO t VALUES (22, 'a', 90)");
    for (const char* st : {"s", "s2"}) {
        EXPECT_TRUE(refreshed_ok(st)) << st;
    }
    db->exec("INSERT INTO t VALUES (23, 'b', 95); COMMIT");
    for (const char* st : {"s", "s2"}) {
        EXPECT_TRUE(refreshed_ok(st)) << st;
        EXPECT_EQ(last(st), "DIFFERENTIAL/1/0") << st;
    }
    EXPECT_EQ(buffered("t"), 0);
}

// --- several consumers, TRUNCATE, chains ------------------------------------

TEST_F(Differential, two_stream_tables_consume_each_change_once_at_own_pace) {
    create_s();
    create("cheap", "SELECT id, name FROM t WHERE amount <= 20");
    db->exec(
        "INSERT INTO t VALUES (7, 'fay', 7), (8, 'gil', 80); UPDATE t SET amount = 15 WHERE id = "
        "1");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_GT(buffered("t"), 0) << "cheap has not consumed the changes yet";
    db->exec("DELETE FROM t WHERE id = 2; UPDATE t SET amount = 25 WHERE id = 7");
    EXPECT_TRUE(refreshed_ok("cheap"));
    EXPECT_GT(buffered("t"), 0) << "s has not consumed the second batch yet";
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(buffered("t"), 0);
    for (const char* st : {"s", "cheap"}) {
        EXPECT_TRUE(refreshed_ok(st)) << st;
        EXPECT_EQ(last(st), "NO_DATA/0/0") << st;
    }
}

TEST_F(Differential, truncate_source_makes_next_refresh_full) {
    create_s();
    db->exec("INSERT INTO t VALUES (7, 'fay', 70)");
    EXPECT_TRUE(refreshed_ok("s"));
    db->exec(
        "UPDATE t SET amount = 1 WHERE id = 1; TRUNCATE t; INSERT INTO t VALUES (1, 'new', 40), "
        "(2, 'low', 1)");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last_action("s"), "FULL");
    EXPECT_TRUE(mentions(last_reason("s"), {"truncate"})) << last_reason("s");
    db->exec("UPDATE t SET amount = 41 WHERE id = 1; INSERT INTO t VALUES (3, 'c', 30)");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last_action("s"), "DIFFERENTIAL");
    EXPECT_EQ(buffered("t"), 0);
    // TRUNCATE inside a transaction between other writes.
    db->exec(
        "BEGIN; INSERT INTO t VALUES (4, 'd', 44); TRUNCATE t;"
        "INSERT INTO t VALUES (5, 'e', 55); UPDATE t SET amount = 56 WHERE id = 5; COMMIT");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last_action("s"), "FULL");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last_action("s"), "NO_DATA");
}

// AUTO finds the TRUNCATE marker (through the buffer's index over markers,
// wherever it is in the window) and recomputes for it; a change count past
// its limit recomputes too. Never DIFFERENTIAL over a TRUNCATE.
TEST_F(Differential, truncate_source_makes_next_auto_refresh_full) {
    create("sa", "SELECT id, upper(name) AS uname, amount FROM t WHERE amount > 10", "AUTO");
    EXPECT_EQ(modes("sa"), "AUTO/DIFFERENTIAL");
    db->exec("INSERT INTO t VALUES (7, 'fay', 70)");
    EXPECT_TRUE(refreshed_ok("sa"));
    for (const char* writes :
         {"INSERT INTO t VALUES (8, 'gus', 80); UPDATE t SET amount = 12 WHERE id = 2;"
          "DELETE FROM t WHERE id = 3; TRUNCATE t",
          "TRUNCATE t; INSERT INTO t VALUES (1, 'new', 40), (2, 'low', 1)",
          "INSERT INTO t VALUES (9, 'hal', 90); TRUNCATE t; INSERT INTO t VALUES (3, 'x', 33)"}) {
        db->exec(writes);
        EXPECT_TRUE(refreshed_ok("sa")) << writes;
        EXPECT_EQ(last_action("sa"), "FULL") << writes;
        // AUTO looks for a TRUNCATE marker before any estimate or count.
        EXPECT_TRUE(mentions(last_reason("sa"), {"truncate"})) << last_reason("sa");
    }
}

TEST_F(Differential, chain_of_differential_stream_tables) {
    create("a", "SELECT id, name, amount FROM t WHERE amount > 5");
    create("b", "SELECT id, upper(name) AS uname FROM a WHERE amount > 20");
    EXPECT_EQ(modes("b"), "DIFFERENTIAL/DIFFERENTIAL");
    db->exec(
        "INSERT INTO t VALUES (7, 'fay', 70); UPDATE t SET amount = 21 WHERE id = 3;"
        "DELETE FROM t WHERE id = 1; UPDATE t SET id = 40 WHERE id = 4");
    EXPECT_TRUE(refreshed_ok("b"));  // a not refreshed yet: nothing to see
    EXPECT_EQ(last("b"), "NO_DATA/0/0");
    EXPECT_TRUE(refreshed_ok("a"));
    EXPECT_EQ(last_action("a"), "DIFFERENTIAL");
    EXPECT_TRUE(refreshed_ok("b"));
    EXPECT_EQ(last_action("b"), "DIFFERENTIAL");
    db->exec("UPDATE t SET name = 'Fay' WHERE id = 7; UPDATE t SET amount = 6 WHERE id = 40");
    EXPECT_TRUE(refreshed_ok("a"));
    EXPECT_TRUE(refreshed_ok("b"));
    EXPECT_EQ(buffered("t"), 0);
    EXPECT_EQ(buffered("a"), 0);
}

// --- what DIFFERENTIAL accepts ----------------------------------------------

struct Shape {
    const char* query;
    std::vector<std::string> names;  // the message must mention one of these
};

const std::vector<Shape>& unsupported_shapes() {
    static const std::vector<Shape> shapes = {
        {"SELECT t.id FROM t FULL JOIN (SELECT * FROM u WHERE u.id > 0) v ON v.id = t.id",
         {"join"}},
        {"SELECT t.id, u.x FROM t LEFT JOIN u ON u.id = t.id WHERE u.x IS NULL", {"join"}},
        {"SELECT t1.id FROM t t1, t t2, t t3, u, u u2, t t4, t t5, t t6, u u3 WHERE u.id = t1.id",
         {"more than 8 tables"}},
        {"SELECT sum(amount) AS total FROM t GROUP BY name", {"group by"}},
        {"SELECT name, sum(amount) AS total FROM t GROUP BY GROUPING SETS ((name), (name))",
         {"duplicate grouping sets"}},
        {"SELECT DISTINCT ON (name) id FROM t ORDER BY name, id", {"distinct on"}},
        {"SELECT id, row_number() OVER (ORDER BY id) AS rn FROM t", {"window"}},
        {"SELECT id FROM (SELECT id FROM t ORDER BY id LIMIT 5) sub", {"subquer"}},
        {"SELECT id FROM t WHERE id IN (SELECT (SELECT max(u2.id) FROM u u2 WHERE u2.x = u.x) "
         "FROM u)",
         {"subquer"}},
        {"SELECT t.id FROM t LEFT JOIN u ON u.id = t.id AND EXISTS (SELECT 1 FROM u u2 WHERE "
         "u2.x = u.x || 'a')",
         {"subquer", "outer join", "LEFT"}},
        {"SELECT id FROM t ORDER BY id LIMIT 2", {"limit"}},
        {"SELECT id FROM t ORDER BY id OFFSET 1", {"offset", "limit"}},
        {"SELECT id FROM t UNION ALL SELECT count(*)::int FROM u", {"union", "set operation"}},
        {"SELECT id FROM t EXCEPT SELECT id FROM u", {"except", "set operation"}},
        // A WITH query is read as the derived table it stands for: refused
        // only for what that derived table does, or when it cannot be
        // inlined (a volatile function runs once per WITH query).
        {"WITH c AS (SELECT id FROM t ORDER BY id LIMIT 3) SELECT id FROM c", {"subquer"}},
        {"WITH c AS (SELECT id, noisy(id) AS n FROM t) SELECT id FROM c", {"!WITH", "noisy"}},
        {"SELECT id FROM tv", {"view"}},
    };
    return shapes;
}

class DifferentialShapes : public Differential {
protected:
    void SetUp() override {
        Differential::SetUp();
        db->exec(
            "CREATE TABLE u (id int PRIMARY KEY, x text); INSERT INTO u VALUES (1, 'one'), (3, "
            "'three');"
            "CREATE VIEW tv WITH (security_barrier) AS SELECT * FROM t WHERE amount > 10;"
            "CREATE FUNCTION noisy(int) RETURNS int VOLATILE LANGUAGE sql AS 'SELECT $1'");
    }
    void expect_rejected(const std::string& query, const std::vector<std::string>& names,
                         const std::string& mode = "DIFFERENTIAL") {
        std::string before = state();
        SqlError e = db->error_of("SELECT pgtrickle.create_stream_table('x', $q$" + query +
                                  "$q$, refresh_mode => '" + mode + "')");
        EXPECT_EQ(e.sqlstate, "0A000") << query << "\n" << e.message;
        EXPECT_TRUE(mentions(e.message, names))
            << query << "\nmessage does not name the construct: " << e.message;
        EXPECT_EQ(state(), before) << "a rejected create left objects behind: " << query;
    }
};

TEST_F(DifferentialShapes, unsupported_shapes_are_rejected_and_nothing_is_created) {
    for (const auto& shape : unsupported_shapes()) {
        expect_rejected(shape.query, shape.names);
    }
}

TEST_F(DifferentialShapes, volatile_functions_are_rejected_by_name) {
    expect_rejected("SELECT id, random() AS r FROM t", {"random"});
    expect_rejected("SELECT id FROM t WHERE amount > random() * 10", {"random"});
    expect_rejected("SELECT id, noisy(id) AS n FROM t", {"noisy"});
    expect_rejected("SELECT id, clock_timestamp() AS ts FROM t", {"clock_timestamp"});
}

// IMMEDIATE maintains what DIFFERENTIAL maintains: every shape DIFFERENTIAL
// refuses is refused for IMMEDIATE too, naming the construct.
TEST_F(DifferentialShapes, immediate_mode_rejects_what_it_cannot_maintain) {
    for (const auto& shape : unsupported_shapes()) {
        expect_rejected(shape.query, shape.names, "IMMEDIATE");
    }
}

// The same shapes keep working in FULL mode.
TEST_F(DifferentialShapes, unsupported_shapes_still_work_in_full_mode) {
    int i = 0;
    for (const auto& shape : unsupported_shapes()) {
        std::string name = "f" + std::to_string(i++);
        create(name, shape.query, "FULL");
    }
    db->exec(
        "INSERT INTO t VALUES (7, 'fay', 70); INSERT INTO u VALUES (7, 'seven');"
        "DELETE FROM t WHERE id = 2");
    for (int j = 0; j < i; j++) {
        EXPECT_TRUE(refreshed_ok("f" + std::to_string(j))) << unsupported_shapes()[j].query;
    }
}

TEST_F(DifferentialShapes, supported_expressions_are_accepted) {
    create("e",
           "SELECT id, CASE WHEN amount > 20 THEN 'big' WHEN amount IS NULL THEN 'none' "
           "ELSE 'small' END AS size, coalesce(name, '?') AS n, amount::int AS whole, "
           "length(name) AS len, (amount IS NULL) AS no_amount "
           "FROM t WHERE coalesce(name, '') <> 'bo' AND (amount > 5 OR name IS NULL)");
    db->exec(
        "INSERT INTO t VALUES (7, NULL, NULL), (8, 'bo', 100);"
        "UPDATE t SET name = NULL WHERE id = 5; UPDATE t SET amount = NULL WHERE id = 6");
    EXPECT_TRUE(refreshed_ok("e"));
    EXPECT_EQ(last_action("e"), "DIFFERENTIAL");
}

TEST_F(DifferentialShapes, auto_mode_uses_differential_for_a_filter) {
    create("d", "SELECT id, upper(name) AS uname FROM t WHERE amount > 10", "AUTO");
    EXPECT_EQ(modes("d"), "AUTO/DIFFERENTIAL");
    db->exec("INSERT INTO t VALUES (7, 'fay', 70); DELETE FROM t WHERE id = 1");
    EXPECT_TRUE(refreshed_ok("d"));
    EXPECT_EQ(last_action("d"), "DIFFERENTIAL");
}

TEST_F(DifferentialShapes, auto_mode_uses_full_with_notice_for_a_join) {
    db->notices.clear();
    create("j", "SELECT t.id, u.x FROM t FULL JOIN u ON u.id = t.id", "AUTO");
    EXPECT_EQ(modes("j"), "AUTO/FULL");
    bool says_why = false;
    for (const auto& n : db->notices) {
        says_why = says_why || (mentions(n, {"full"}) && mentions(n, {"join"}));
    }
    EXPECT_TRUE(says_why) << "no NOTICE saying FULL was chosen because of the join";
    db->exec(
        "INSERT INTO t VALUES (7, 'fay', 70); INSERT INTO u VALUES (7, 'seven');"
        "DELETE FROM u WHERE id = 1");
    EXPECT_TRUE(refreshed_ok("j"));
    EXPECT_EQ(last_action("j"), "FULL");
}

// An aggregate without GROUP BY over one table without a filter is
// recomputed whole by DIFFERENTIAL on any change: AUTO takes FULL for it and
// says why; DIFFERENTIAL still works.
TEST_F(DifferentialShapes, auto_mode_takes_full_for_an_aggregate_without_group_by) {
    // count(DISTINCT ...) is not kept algebraically: DIFFERENTIAL would
    // recompute the one row from the whole table on every change.
    const std::string q = "SELECT count(DISTINCT name) AS n, sum(amount) AS total FROM t";
    db->notices.clear();
    create("s", q, "AUTO");
    EXPECT_EQ(modes("s"), "AUTO/FULL");
    bool says_why = false;
    for (const auto& n : db->notices) {
        says_why = says_why || mentions(n, {"without group by"});
    }
    EXPECT_TRUE(says_why) << "no NOTICE naming the aggregate without GROUP BY";
    create("d", q, "DIFFERENTIAL");
    db->exec("INSERT INTO t VALUES (7, 'fay', 70); DELETE FROM t WHERE id = 1");
    EXPECT_TRUE(refreshed_ok("d"));
    EXPECT_EQ(last_action("d"), "DIFFERENTIAL");
    // COUNT and SUM are kept from the change alone: AUTO keeps DIFFERENTIAL.
    create("a", "SELECT count(*) AS n, sum(amount) AS total FROM t", "AUTO");
    EXPECT_EQ(modes("a"), "AUTO/DIFFERENTIAL");
}

// With a filter or a join, a change can miss an aggregate without GROUP BY
// altogether, and then costs DIFFERENTIAL next to nothing: AUTO keeps the
// choice per refresh (TPC-H q17) instead of FULL, and says nothing.
TEST_F(DifferentialShapes, auto_mode_keeps_differential_for_a_filtered_aggregate_without_group_by) {
    const std::vector<std::string> queries = {
        "SELECT count(DISTINCT t.name) AS n, sum(t.amount) AS total FROM t JOIN u ON u.id = t.id",
        "SELECT count(DISTINCT name) AS n, sum(amount) AS total FROM t WHERE amount > 25"};
    for (std::size_t i = 0; i < queries.size(); i++) {
        const std::string st = "f" + std::to_string(i);
        db->notices.clear();
        create(st, queries[i], "AUTO");
        EXPECT_EQ(modes(st), "AUTO/DIFFERENTIAL") << queries[i];
        for (const auto& n : db->notices) {
            EXPECT_EQ(n.find("without GROUP BY"), std::string::npos) << n;
        }
    }
    db->exec("INSERT INTO t VALUES (7, 'fay', 7)");  // no partner in u, fails amount > 25
    for (const char* st : {"f0", "f1"}) {
        EXPECT_TRUE(refreshed_ok(st));
        EXPECT_EQ(last_action(st), "DIFFERENTIAL") << st;
    }
    // From here AUTO chooses by the times it measured (on rows this few,
    // either mode may be the cheaper): the result is exact either way.
    db->exec("INSERT INTO u VALUES (7, 'seven'); UPDATE t SET amount = 70 WHERE id = 7");
    for (const char* st : {"f0", "f1"}) {
        EXPECT_TRUE(refreshed_ok(st));
        EXPECT_NE(last_action(st), "NO_DATA") << st;
    }
}

// AUTO decides per refresh: without a measured DIFFERENTIAL refresh, FULL
// when the changes exceed a quarter of the source rows (pg_class.reltuples),
// with the reason in history; the changes applied are recorded. Rows
// captured since the last refresh, by the capture sequence, decide without
// counting when they are past the limit (rolled-back writes count there).
TEST_F(DifferentialShapes, auto_mode_recomputes_when_changes_are_a_large_share) {
    db->exec("INSERT INTO t SELECT g, 'n' || g % 7, g FROM generate_series(100, 299) g; ANALYZE t");
    create("a", "SELECT name, sum(amount) AS total, count(*) AS n FROM t GROUP BY name", "AUTO");
    EXPECT_EQ(modes("a"), "AUTO/DIFFERENTIAL");
    db->exec("UPDATE t SET amount = amount + 1 WHERE id >= 100");  // 200 of ~206 rows
    EXPECT_TRUE(refreshed_ok("a"));
    EXPECT_EQ(last_action("a"), "FULL");
    EXPECT_EQ(db->scalar("SELECT reason FROM pgtrickle.pgt_refresh_history ORDER BY refresh_id "
                         "DESC LIMIT 1"),
              "AUTO: 200 change rows captured since the last refresh (by the capture sequence, "
              "not counted), more than 51 (a quarter of about 206 source rows): recomputed");
    // A rolled-back write moves the sequence too: FULL again, still exact.
    db->exec(
        "BEGIN; UPDATE t SET amount = 0 WHERE id >= 100; ROLLBACK;"
        "UPDATE t SET amount = amount + 1 WHERE id = 100");
    EXPECT_TRUE(refreshed_ok("a"));
    EXPECT_EQ(last_action("a"), "FULL");
    // Below the limit by the sequence: counted, DIFFERENTIAL.
    db->exec("UPDATE t SET amount = amount + 1 WHERE id BETWEEN 100 AND 119");
    EXPECT_TRUE(refreshed_ok("a"));
    EXPECT_EQ(last_action("a"), "DIFFERENTIAL");
    EXPECT_EQ(db->scalar("SELECT source_changes FROM pgtrickle.pgt_refresh_history ORDER BY "
                         "refresh_id DESC LIMIT 1"),
              "20");
    EXPECT_EQ(modes("a"), "AUTO/DIFFERENTIAL") << "the choice is per refresh, not a mode change";
}

// AUTO weighs the predicted DIFFERENTIAL time against the fastest of the
// last three FULL refreshes, not the last one: one slow FULL refresh does
// not make DIFFERENTIAL look cheaper than FULL usually is. The history
// rows here are written by the test (a DIFFERENTIAL refresh at 50 ms per
// change, then FULL refreshes of 10, 10 and 100,000 ms).
TEST_F(DifferentialShapes, auto_mode_compares_with_the_fastest_recent_full_refresh) {
    create("a", "SELECT name, sum(amount) AS total, count(*) AS n FROM t GROUP BY name", "AUTO");
    // FULL durations written, then the action AUTO must take for a change.
    auto after_fulls = [&](const std::vector<int>& fulls) {
        for (int ms : fulls) {
            write_history("a", "FULL", ms, 0);
        }
        db->exec("UPDATE t SET amount = amount + 1 WHERE id IN (1, 2)");
        EXPECT_TRUE(refreshed_ok("a"));
        return last_action("a");
    };
    write_history("a", "DIFFERENTIAL", 50, 1);
    EXPECT_EQ(after_fulls({10, 10, 100000}), "FULL");
    EXPECT_NE(db->scalar("SELECT reason FROM pgtrickle.pgt_refresh_history ORDER BY refresh_id "
                         "DESC LIMIT 1")
                  .find("FULL took 10 ms at best"),
              std::string::npos);
    // Three slow FULL refreshes in a row: DIFFERENTIAL is the cheaper again.
    EXPECT_EQ(after_fulls({100000, 100000, 100000}), "DIFFERENTIAL");
}

// One FULL time may be a cold cache's (the refresh at creation): while
// only one FULL refresh is known and the last DIFFERENTIAL one cost more
// than half of it, AUTO measures FULL again, once. The history rows here
// are written by the test.
TEST_F(DifferentialShapes, auto_mode_measures_full_again_while_few_full_times_are_known) {
    create("a", "SELECT name, sum(amount) AS total, count(*) AS n FROM t GROUP BY name", "AUTO");
    // A change to row id, then the refresh (with the oracle): its action.
    auto after_change = [&](int id) {
        db->exec("UPDATE t SET amount = amount + 1 WHERE id = " + std::to_string(id));
        EXPECT_TRUE(refreshed_ok("a"));
        return last_action("a");
    };
    // The creation's FULL refresh is one sample; make it slow.
    db->exec(
        "UPDATE pgtrickle.pgt_refresh_history SET end_time = start_time + interval '250 ms' "
        "WHERE action = 'FULL'");
    write_history("a", "DIFFERENTIAL", 209, 1);
    EXPECT_EQ(after_change(1), "FULL");
    EXPECT_EQ(last_reason("a"),
              "AUTO: FULL measured again (the best of 1 FULL refresh took 250 ms, the last "
              "DIFFERENTIAL refresh 209 ms)");
    // Two FULL times known (250 ms and the one just measured, a few ms):
    // the costs decide, and 209 ms a change against the best is FULL.
    EXPECT_EQ(after_change(2), "FULL");
    EXPECT_EQ(last_reason("a").find("measured again"), std::string::npos) << last_reason("a");
    // A DIFFERENTIAL refresh at under half of FULL's best: no re-measuring.
    db->exec("DELETE FROM pgtrickle.pgt_refresh_history");
    write_history("a", "FULL", 250, 0);
    write_history("a", "DIFFERENTIAL", 100, 1);
    EXPECT_EQ(after_change(3), "DIFFERENTIAL");
}

// --- privileges and clean-up ------------------------------------------------

TEST_F(Differential, capture_works_for_a_writer_without_rights_on_the_change_schema) {
    create_s();
    db->exec(
        "CREATE ROLE pgt_diff_writer; GRANT INSERT, UPDATE, DELETE, SELECT, TRUNCATE ON t TO "
        "pgt_diff_writer");
    EXPECT_EQ(db->scalar("SELECT has_table_privilege('pgt_diff_writer', buffer_name, 'INSERT') "
                         "OR has_table_privilege('pgt_diff_writer', buffer_name, 'SELECT') FROM "
                         "pgtrickle.pgt_sources"),
              "f");
    db->exec(
        "SET ROLE pgt_diff_writer;"
        "INSERT INTO t VALUES (7, 'fay', 70); UPDATE t SET amount = 1 WHERE id = 1;"
        "DELETE FROM t WHERE id = 3; RESET ROLE");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last_action("s"), "DIFFERENTIAL");
    EXPECT_EQ(buffered("t"), 0);
    // Its TRUNCATE marker is written as the buffer's owner, and the index
    // over markers (what a refresh looks markers up in) holds it.
    db->exec(
        "SET ROLE pgt_diff_writer; TRUNCATE t; INSERT INTO t VALUES (8, 'gil', 80); RESET ROLE");
    db->exec("SET enable_seqscan = off; SET enable_bitmapscan = off");
    EXPECT_EQ(count("SELECT 1 FROM " + buffer_of("t") + " WHERE action = 'T'"), 1);
    EXPECT_NE(
        db->scalar("EXPLAIN SELECT 1 FROM " + buffer_of("t") + " WHERE action = 'T'").find("Index"),
        std::string::npos);
    db->exec("RESET enable_seqscan; RESET enable_bitmapscan");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last_action("s"), "FULL");
    db->exec("DROP OWNED BY pgt_diff_writer; DROP ROLE pgt_diff_writer");
}

// Another role cannot point a capture trigger of its own at a buffer: the
// capture functions are not executable by PUBLIC, so such a trigger is
// refused and no forged change reaches the stream table.
TEST_F(Differential, capture_functions_cannot_be_used_by_other_roles) {
    create_s();
    db->exec(
        "CREATE ROLE pgt_forger; GRANT CREATE ON SCHEMA public TO pgt_forger;"
        "SET ROLE pgt_forger; CREATE TABLE forged (id int, name text, amount numeric(10,2))");
    const std::string buffer = db->scalar("SELECT buffer_name FROM pgtrickle.pgt_sources");
    for (const char* fn : {"_capture_row", "_capture_statement", "_capture_truncate"}) {
        SqlError e =
            db->error_of(std::string("CREATE TRIGGER f AFTER INSERT ON forged FOR EACH ") +
                         (std::string(fn) == "_capture_row" ? "ROW" : "STATEMENT") +
                         " EXECUTE FUNCTION pgtrickle." + fn + "('" + buffer + "', '1,2,3')");
        EXPECT_EQ(e.sqlstate, "42501") << fn << ": " << e.message;
    }
    db->exec("INSERT INTO forged VALUES (666, 'evil', 666); RESET ROLE");
    EXPECT_EQ(buffered("t"), 0);
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(count("SELECT 1 FROM s WHERE id = 666"), 0);
    db->exec("DROP OWNED BY pgt_forger; DROP ROLE pgt_forger");
}

TEST_F(Differential, dropping_last_consumer_removes_buffer_triggers_and_source_row) {
    create_s();
    create("cheap", "SELECT id, name FROM t WHERE amount <= 20");
    create("all_rows", "SELECT id, name FROM t", "FULL");
    std::string buf = buffer_of("t");
    ASSERT_FALSE(buf.empty());
    db->exec("INSERT INTO t VALUES (7, 'fay', 7)");  // pending for both consumers
    db->exec("SELECT pgtrickle.drop_stream_table('s')");
    EXPECT_EQ(buffer_of("t"), buf) << "cheap still reads t";
    EXPECT_GT(capture_triggers("t"), 0);
    EXPECT_TRUE(refreshed_ok("cheap"));
    EXPECT_EQ(buffered("t"), 0);
    db->exec("SELECT pgtrickle.drop_stream_table('cheap')");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_sources"), "0");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pg_class WHERE oid = to_regclass($1)", {buf}), "0");
    EXPECT_EQ(capture_triggers("t"), 0);
    EXPECT_EQ(count("SELECT 1 FROM pg_trigger WHERE tgrelid = 't'::regclass AND tgname = "
                    "'pgt_note_' || (SELECT pgt_id FROM pgtrickle.pgt_stream_tables WHERE "
                    "pgt_name = 'all_rows')"),
              1)
        << "the FULL stream table keeps its change notes";
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pg_class "
                         "WHERE relnamespace = 'pgtrickle_changes'::regnamespace"),
              "0");
    db->exec("INSERT INTO t VALUES (8, 'gil', 8); TRUNCATE t");  // writes still work
    EXPECT_TRUE(refreshed_ok("all_rows"));
}

TEST_F(Differential, drop_table_of_last_consumer_removes_capture) {
    create_s();
    db->exec("DROP TABLE s");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_sources"), "0");
    EXPECT_EQ(capture_triggers("t"), 0);
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pg_class "
                         "WHERE relnamespace = 'pgtrickle_changes'::regnamespace"),
              "0");
    db->exec("INSERT INTO t VALUES (7, 'fay', 70)");
}

// A FULL refresh writes only the difference: unchanged rows keep their row
// version, a changed keyed row is updated in place, keyless duplicates are
// counted per exact image.
// A stream table's first population writes the query's rows in the
// order the query gives them, as CREATE MATERIALIZED VIEW does (a join
// with the empty stored side could write them in its hash table's order,
// which scatters rows that later change together).
TEST_F(Differential, first_population_keeps_the_querys_order) {
    db->exec(
        "CREATE TABLE big (id int PRIMARY KEY, grp int, val int);"
        "INSERT INTO big SELECT g, g % 10, g FROM generate_series(1, 50000) g; ANALYZE big");
    for (const char* mode : {"FULL", "DIFFERENTIAL"}) {
        const std::string st = std::string("ord_") + mode;
        create(st, "SELECT id, val FROM big WHERE grp < 5", mode);
        EXPECT_EQ(db->scalar("SELECT count(*) FROM (SELECT ctid, lag(ctid) OVER (ORDER BY id) AS p "
                             "FROM " +
                             st + ") x WHERE ctid < p"),
                  "0")
            << mode;
        EXPECT_MATCHES_QUERY(*db, st);
        EXPECT_EQ(last(st), "FULL/25000/0");
    }
}

TEST_F(Differential, full_refresh_rewrites_only_changed_rows) {
    create_s();
    db->exec("SELECT pgtrickle.alter_stream_table('s', refresh_mode => 'FULL')");
    refresh("s");
    std::string before = row_versions("s");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last("s"), "FULL/0/0");
    EXPECT_EQ(row_versions("s"), before) << "nothing changed, nothing rewritten";
    db->exec("UPDATE t SET name = 'ADA' WHERE id = 1");  // same upper(name): no change
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last("s"), "FULL/0/0");
    EXPECT_EQ(row_versions("s"), before);
    db->exec(
        "UPDATE t SET amount = 51 WHERE id = 1; DELETE FROM t WHERE id = 3;"
        " INSERT INTO t VALUES (9, 'ivy', 99)");
    EXPECT_TRUE(refreshed_ok("s"));
    EXPECT_EQ(last("s"), "FULL/2/1");  // one updated in place, one inserted, one deleted

    // Applies change, refreshes st (the oracle) and expects its last
    // history entry to read `written`.
    auto change_and_refresh = [&](const std::string& change, const std::string& st,
                                  const std::string& written) {
        SCOPED_TRACE(change);
        db->exec(change);
        EXPECT_TRUE(refreshed_ok(st));
        EXPECT_EQ(last(st), written);
    };
    // Values equal by their type's equality but shown otherwise are
    // rewritten (numeric scale, float signed zero); equal ones of a type
    // whose equal values look alike are compared by equality alone.
    db->exec(
        "CREATE TABLE sc (id int PRIMARY KEY, n numeric, f float8, s text, d date);"
        "INSERT INTO sc VALUES (1, 1.0, 0, 'a', '2024-01-01'), (2, 2, 1, 'b', NULL)");
    create("sc_st", "SELECT id, n, f, s, d FROM sc", "FULL");
    const std::string sc_before = row_versions("sc_st");
    change_and_refresh("UPDATE sc SET n = 1.00 WHERE id = 1", "sc_st", "FULL/1/0");
    EXPECT_EQ(db->scalar("SELECT n::text FROM sc_st WHERE id = 1"), "1.00");
    change_and_refresh("UPDATE sc SET f = '-0' WHERE id = 1", "sc_st", "FULL/1/0");
    change_and_refresh("UPDATE sc SET s = 'B', d = '2024-01-02' WHERE id = 2", "sc_st", "FULL/1/0");
    change_and_refresh("UPDATE sc SET d = NULL WHERE id = 1; UPDATE sc SET s = 'B' WHERE id = 2",
                       "sc_st", "FULL/1/0");
    EXPECT_NE(row_versions("sc_st"), sc_before);
    const std::string sc_after = row_versions("sc_st");
    EXPECT_TRUE(refreshed_ok("sc_st"));
    EXPECT_EQ(last("sc_st"), "FULL/0/0");
    EXPECT_EQ(row_versions("sc_st"), sc_after);

    // Keys: one of text matches stored rows by value, one of numeric by
    // identity (1.0 and 1.00 are one identity, shown otherwise: updated in
    // place); a text key that changes is a deleted row and an inserted
    // one; every stored identity is its row's.
    db->exec(
        "CREATE TABLE nk (k numeric PRIMARY KEY, v int); INSERT INTO nk VALUES (1.0, 1), (2, 2);"
        "CREATE TABLE tk (k text PRIMARY KEY, v int); INSERT INTO tk VALUES ('a', 1), ('b', 2)");
    create("nk_st", "SELECT k, v FROM nk", "FULL");
    create("tk_st", "SELECT k, v FROM tk", "FULL");
    change_and_refresh("UPDATE nk SET k = 1.00 WHERE k = 1; UPDATE nk SET v = 3 WHERE k = 2",
                       "nk_st", "FULL/2/0");
    EXPECT_EQ(db->scalar("SELECT k::text FROM nk_st WHERE v = 1"), "1.00");
    change_and_refresh("UPDATE tk SET k = 'c' WHERE k = 'a'; UPDATE tk SET v = 5 WHERE k = 'b'",
                       "tk_st", "FULL/2/1");
    for (const char* st : {"nk_st", "tk_st"}) {
        EXPECT_EQ(db->scalar(std::string("SELECT count(*) FROM ") + st +
                             " WHERE __pgt_row_id IS DISTINCT FROM "
                             "pgtrickle.encode_row_id_v2('scan_key', ROW(k))"),
                  "0")
            << st;
    }

    db->exec(
        "CREATE TABLE bag (v int, w text);"
        "INSERT INTO bag VALUES (1, 'a'), (1, 'a'), (1, 'a'), (2, NULL), (3, 'c')");
    create("bag_st", "SELECT v, w FROM bag", "FULL");
    std::string bag_before = row_versions("bag_st");
    EXPECT_TRUE(refreshed_ok("bag_st"));
    EXPECT_EQ(row_versions("bag_st"), bag_before);
    db->exec(
        "DELETE FROM bag WHERE ctid = (SELECT min(ctid) FROM bag WHERE v = 1);"
        " INSERT INTO bag VALUES (2, NULL), (4, 'd')");
    EXPECT_TRUE(refreshed_ok("bag_st"));
    EXPECT_EQ(last("bag_st"), "FULL/2/1");
    db->exec("TRUNCATE bag");
    EXPECT_TRUE(refreshed_ok("bag_st"));
    EXPECT_EQ(last("bag_st"), "FULL/0/6");
}

// Output expressions run only on source states that were committed at a
// frontier (or are current), never on a transient row or an intermediate
// version: 100 / d must not fail for a d = 0 that no refresh could see.
TEST_F(Differential, transient_rows_are_netted_out_before_expressions_run) {
    db->exec(
        "CREATE TABLE dv (id int PRIMARY KEY, d int);"
        "INSERT INTO dv SELECT g, g FROM generate_series(1, 5) g");
    create("q", "SELECT id, 100 / d AS q FROM dv");
    db->exec("BEGIN; INSERT INTO dv VALUES (7, 0); DELETE FROM dv WHERE id = 7; COMMIT");
    db->exec("BEGIN; UPDATE dv SET d = 0 WHERE id = 1; UPDATE dv SET d = 4 WHERE id = 1; COMMIT");
    EXPECT_TRUE(refreshed_ok("q"));
    EXPECT_EQ(last("q"), "DIFFERENTIAL/1/0");      // only id 1 changed (100/1 -> 100/4)
    db->exec("UPDATE dv SET d = 0 WHERE id = 2");  // a real, committed d = 0
    SqlError e = db->error_of("SELECT pgtrickle.refresh_stream_table('q')");
    EXPECT_EQ(e.sqlstate, "22012");  // as the query itself would fail
    db->exec("UPDATE dv SET d = 5 WHERE id = 2");
    EXPECT_TRUE(refreshed_ok("q")) << "recovers once the data is fixed";
    db->exec(
        "INSERT INTO dv VALUES (8, 8), (9, 9); UPDATE dv SET d = d WHERE id = 8;"
        " DELETE FROM dv WHERE id = 9");
    EXPECT_TRUE(refreshed_ok("q"));
    EXPECT_EQ(last("q"), "DIFFERENTIAL/1/0");

    // Keyless: two inserts and one delete of one image net to +1, the
    // survivor's representative is an insert even though a delete came last.
    db->exec("CREATE TABLE dup (v int); INSERT INTO dup VALUES (1)");
    create("dq", "SELECT 10 / v AS r FROM dup");
    db->exec(
        "INSERT INTO dup VALUES (2), (2); DELETE FROM dup WHERE ctid = (SELECT min(ctid) "
        "FROM dup WHERE v = 2); INSERT INTO dup VALUES (0); DELETE FROM dup WHERE v = 0");
    EXPECT_TRUE(refreshed_ok("dq"));
    EXPECT_EQ(last("dq"), "DIFFERENTIAL/1/0");
}

// WHERE conjuncts that cannot raise (comparisons) drop change images
// before netting; one that can raise (100 / d) still sees committed
// states only.
TEST_F(Differential, images_are_filtered_by_safe_conjuncts_before_netting) {
    db->exec(
        "CREATE TABLE dv (id int PRIMARY KEY, d int);"
        "INSERT INTO dv SELECT g, g FROM generate_series(1, 9) g");
    create("q", "SELECT id, d FROM dv WHERE d > 2 AND 100 / d > 1 AND id = ANY (ARRAY[1, 3, 5])");
    std::string delta = db->scalar(
        "SELECT delta_program ->> 'main' FROM pgtrickle.pgt_stream_tables WHERE pgt_name = 'q'");
    EXPECT_NE(delta.find("LATERAL (SELECT (((__pgt_src.d > 2)) AND ((__pgt_src.id = ANY "
                         "(ARRAY[1, 3, 5])))) AS k"),
              std::string::npos)
        << "the comparisons filter the images, the division does not: " << delta;
    db->exec("BEGIN; UPDATE dv SET d = 0 WHERE id = 3; UPDATE dv SET d = 4 WHERE id = 3; COMMIT");
    db->exec("BEGIN; INSERT INTO dv VALUES (10, 0); DELETE FROM dv WHERE id = 10; COMMIT");
    db->exec("UPDATE dv SET d = 1 WHERE id = 5; UPDATE dv SET d = 7 WHERE id = 1");
    EXPECT_TRUE(refreshed_ok("q"));
    EXPECT_EQ(last_action("q"), "DIFFERENTIAL");
    db->exec("UPDATE dv SET d = 0 WHERE id = 1");  // fails d > 2: never divided
    EXPECT_TRUE(refreshed_ok("q"));
    EXPECT_EQ(last_action("q"), "DIFFERENTIAL");
}

// A projection keyed by its source's key: each identity the window touches
// is looked up in the stream table once (one index probe), and its row is
// then written by address. 2,000 rows, 1,000 of them with grp < 5; grp <
// 5 filters the images, so changes to rows outside it touch nothing:
// 200 updated rows (100 inside), 50 inserted (25), 40 deleted (20), 10
// keys moved (5 inside: 5 leave, 5 arrive), one row updated twice: 156
// identities, each probed once.
TEST_F(Differential, keyed_projection_probes_each_touched_identity_once) {
    db->exec(
        "CREATE TABLE kp (id int PRIMARY KEY, grp int NOT NULL, val int);"
        "INSERT INTO kp SELECT g, g % 10, g FROM generate_series(1, 2000) g");
    create("kps", "SELECT id, val * 2 AS v2 FROM kp WHERE grp < 5");
    db->exec(
        "BEGIN;"
        "UPDATE kp SET val = val + 1 WHERE id <= 200;"
        "INSERT INTO kp SELECT g, g % 10, 0 FROM generate_series(3001, 3050) g;"
        "DELETE FROM kp WHERE id BETWEEN 1001 AND 1040;"
        "UPDATE kp SET id = id + 100000 WHERE id BETWEEN 1501 AND 1510;"
        "UPDATE kp SET val = -1 WHERE id = 1600; UPDATE kp SET val = -2 WHERE id = 1600;"
        "COMMIT");
    // Counted in this backend, from before the refresh to after it.
    auto reads = [&] {
        Result r = db->exec(
            "SELECT coalesce(seq_scan, 0), coalesce(idx_scan, 0) FROM "
            "pg_stat_xact_user_tables WHERE relid = 'kps'::regclass");
        return std::make_pair(std::stol(r.at(0, 0)), std::stol(r.at(0, 1)));
    };
    db->exec("BEGIN");
    const auto before = reads();
    refresh("kps");
    const auto after = reads();
    db->exec("COMMIT");
    EXPECT_EQ(after.first - before.first, 0) << "sequential scans of the stream table";
    EXPECT_EQ(after.second - before.second, 156) << "index probes of the stream table";
    EXPECT_EQ(last_action("kps"), "DIFFERENTIAL");
    EXPECT_TRUE(matches_query(*db, "kps"));
    // Rows leave and enter the filter, a key moves out of it and back.
    db->exec(
        "UPDATE kp SET grp = 7 WHERE id BETWEEN 10 AND 20;"
        "UPDATE kp SET grp = 2 WHERE id BETWEEN 30 AND 40;"
        "UPDATE kp SET id = 5000, grp = 9 WHERE id = 2;"
        "UPDATE kp SET id = 2, grp = 1 WHERE id = 5000");
    EXPECT_TRUE(refreshed_ok("kps"));
    EXPECT_EQ(last_action("kps"), "DIFFERENTIAL");
}

// A key of a type whose equal values can look different (numeric 1.0 and
// 1.00) is another identity once it looks different: the row leaves its
// old identity and arrives at the new one, in one window.
TEST_F(Differential, keyed_projection_follows_a_key_changed_to_an_equal_value) {
    db->exec(
        "CREATE TABLE nk (k numeric PRIMARY KEY, v int);"
        "INSERT INTO nk VALUES (1.0, 1), (2.0, 2), (3.0, 3)");
    create("nks", "SELECT k, v FROM nk WHERE v > 0");
    db->exec(
        "UPDATE nk SET k = 1.00 WHERE k = 1;"
        "BEGIN; UPDATE nk SET k = 2.000, v = 20 WHERE k = 2; UPDATE nk SET k = 2.0 WHERE k = 2;"
        " COMMIT;"
        "BEGIN; DELETE FROM nk WHERE k = 3; INSERT INTO nk VALUES (3.00, 3); COMMIT");
    EXPECT_TRUE(refreshed_ok("nks"));
    EXPECT_EQ(last_action("nks"), "DIFFERENTIAL");
    EXPECT_EQ(db->scalar("SELECT string_agg(k::text || ':' || v, ',' ORDER BY k) FROM nks"),
              "1.00:1,2.0:20,3.00:3");
}

// HAVING without GROUP BY or aggregates makes the query one group: at most
// one row however many source rows pass, not a row per source row (which
// the scan strategy produced when the tree did not see the grouping).
TEST_F(Differential, having_without_aggregates_is_one_group) {
    create("h1", "SELECT 1 AS x FROM t HAVING 1 > 0");
    create("h2", "SELECT 'k' AS x FROM t WHERE amount > 20 HAVING 2 > 1");
    for (const char* st : {"h1", "h2"}) {
        EXPECT_EQ(db->scalar("SELECT row_identity_domain || '/' || delta_strategy FROM "
                             "pgtrickle.pgt_stream_tables WHERE pgt_relid = $1::regclass",
                             {st}),
                  "synthetic/join_region")
            << st;
    }
    for (const char* change :
         {"INSERT INTO t VALUES (7, 'fay', 70), (8, 'gus', 1)", "DELETE FROM t WHERE amount > 20",
          "UPDATE t SET amount = amount + 100 WHERE id IN (2, 5)", "DELETE FROM t"}) {
        SCOPED_TRACE(change);
        db->exec(change);
        for (const char* st : {"h1", "h2"}) {
            EXPECT_TRUE(refreshed_ok(st)) << st;
            EXPECT_EQ(last_action(st), "DIFFERENTIAL") << st;
            EXPECT_EQ(count(std::string("SELECT * FROM ") + st), 1) << st;
        }
    }
}

// DIFFERENTIAL refreshes run with at least pg_trickle.refresh_work_mem;
// the session's own work_mem is left alone, a larger one is kept, and -1
// turns the setting off. A FULL recompute runs with the session's
// work_mem, as REFRESH MATERIALIZED VIEW does.
TEST_F(Differential, refreshes_run_with_at_least_refresh_work_mem) {
    db->exec("SET work_mem = '4MB'");
    EXPECT_EQ(db->scalar("SHOW pg_trickle.refresh_work_mem"), "64MB");
    // Declared IMMUTABLE to be maintained at all: it shows the setting the
    // statement computing a row ran under.
    db->exec(
        "CREATE FUNCTION setting_now(s text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS "
        "$$BEGIN RETURN pg_catalog.current_setting(s); END$$");
    create("wm", "SELECT id, setting_now('work_mem') AS wm FROM t");
    create("wf", "SELECT id, setting_now('work_mem') AS wm FROM t", "FULL");
    EXPECT_EQ(db->scalar("SELECT string_agg(DISTINCT wm, ',') FROM wm"), "4MB")
        << "populated by a FULL recompute";
    EXPECT_EQ(db->scalar("SELECT string_agg(DISTINCT wm, ',') FROM wf"), "4MB");
    EXPECT_EQ(setting_seen("wm", "wm", 2), "64MB");
    EXPECT_EQ(last_action("wm"), "DIFFERENTIAL");
    EXPECT_EQ(db->scalar("SHOW work_mem"), "4MB") << "the session's value is restored";
    db->exec("SET work_mem = '128MB'");
    EXPECT_EQ(setting_seen("wm", "wm", 3), "128MB") << "never lowered";
    db->exec("SET work_mem = '4MB'; SET pg_trickle.refresh_work_mem = -1");
    EXPECT_EQ(setting_seen("wm", "wm", 4), "4MB");
    refresh("wf");
    EXPECT_EQ(db->scalar("SELECT string_agg(DISTINCT wm, ',') FROM wf"), "4MB");
    EXPECT_TRUE(matches_query(*db, "wf"));
    // wm's rows keep the setting of the refresh that wrote them, so its
    // oracle is its rows without that column.
    const std::string ids = "SELECT string_agg(id::text, ',' ORDER BY id) FROM ";
    EXPECT_EQ(db->scalar(ids + "wm"), db->scalar(ids + "t"));
    EXPECT_THROW(db->exec("SET pg_trickle.refresh_work_mem = -2"), std::exception);
}

// Delta statements are planned with random_page_cost at most
// pg_trickle.delta_random_page_cost; FULL and the session keep theirs.
TEST_F(Differential, delta_statements_plan_with_at_most_delta_random_page_cost) {
    EXPECT_EQ(db->scalar("SHOW pg_trickle.delta_random_page_cost"), "1.1");
    EXPECT_EQ(db->scalar("SHOW random_page_cost"), "4");
    // Declared IMMUTABLE to be maintained at all: it shows the setting the
    // statement computing a row ran under.
    db->exec(
        "CREATE FUNCTION setting_now(s text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS "
        "$$BEGIN RETURN pg_catalog.current_setting(s); END$$");
    create("rp", "SELECT id, setting_now('random_page_cost') AS rpc FROM t");
    EXPECT_EQ(setting_seen("rp", "rpc", 2), "1.1");
    EXPECT_EQ(last_action("rp"), "DIFFERENTIAL");
    EXPECT_EQ(db->scalar("SHOW random_page_cost"), "4") << "the session's value is restored";
    db->exec("SET random_page_cost = 1");
    EXPECT_EQ(setting_seen("rp", "rpc", 3), "1") << "never raised";
    db->exec("SET random_page_cost = 4; SET pg_trickle.delta_random_page_cost = -1");
    EXPECT_EQ(setting_seen("rp", "rpc", 4), "4");
    const std::string ids = "SELECT string_agg(id::text, ',' ORDER BY id) FROM ";
    EXPECT_EQ(db->scalar(ids + "rp"), db->scalar(ids + "t"));
    EXPECT_THROW(db->exec("SET pg_trickle.delta_random_page_cost = -2"), std::exception);
}

// A buffer row goes once every consumer has it, whichever refreshes last
// (a consumer with an older frontier makes the others skip the trim).
TEST_F(Differential, buffer_rows_go_when_the_last_consumer_has_them_in_any_order) {
    create_s();
    create("s2", "SELECT id, amount FROM t");
    create("s3", "SELECT id, name FROM t WHERE id > 2");
    const std::vector<std::vector<const char*>> orders = {
        {"s", "s2", "s3"}, {"s3", "s2", "s"}, {"s2", "s3", "s"}, {"s", "s3", "s2"}};
    int n = 20;
    for (const auto& order : orders) {
        db->exec("INSERT INTO t VALUES (" + std::to_string(n) +
                 ", 'x', 15); UPDATE t SET amount = "
                 "amount + 1 WHERE id = 3; DELETE FROM t WHERE id = " +
                 std::to_string(n - 1));
        n++;
        for (std::size_t i = 0; i < order.size(); i++) {
            EXPECT_TRUE(refreshed_ok(order[i])) << order[i];
            if (i + 1 < order.size()) {
                EXPECT_GT(buffered("t"), 0) << order[i] << " is not the last consumer";
            }
        }
        EXPECT_EQ(buffered("t"), 0) << "after " << order.back();
    }
}

// --- GROUP BY over one table: touched groups are recomputed -----------------

TEST_F(Differential, group_by_recomputes_only_touched_groups) {
    db->exec(
        "CREATE TABLE sales (id int PRIMARY KEY, region text, amt numeric(10,2), qty int);"
        "INSERT INTO sales SELECT g, (ARRAY['n', 's', 'e', NULL])[1 + g % 4], g * 1.5, "
        "g % 7 FROM generate_series(1, 40) g");
    create("by_region",
           "SELECT region, count(*) AS n, sum(amt) AS total, avg(qty) AS aq, min(amt) AS lo, "
           "max(amt) AS hi, string_agg(id::text, ',' ORDER BY id) AS ids, "
           "count(DISTINCT qty) AS dq FROM sales WHERE qty > 0 GROUP BY region");
    EXPECT_EQ(modes("by_region"), "DIFFERENTIAL/DIFFERENTIAL");
    std::string others = db->scalar(
        "SELECT string_agg(ctid::text || xmin::text, ',' ORDER BY ctid) FROM by_region "
        "WHERE region IS DISTINCT FROM 'n'");
    db->exec("UPDATE sales SET amt = amt + 1 WHERE id = 4");  // region n (4 % 4 = 0 -> 'n')
    EXPECT_TRUE(refreshed_ok("by_region"));
    EXPECT_EQ(last("by_region"), "DIFFERENTIAL/1/0");
    EXPECT_EQ(db->scalar("SELECT string_agg(ctid::text || xmin::text, ',' ORDER BY ctid) FROM "
                         "by_region WHERE region IS DISTINCT FROM 'n'"),
              others)
        << "untouched groups keep their row versions";
    db->exec("UPDATE sales SET region = 'w' WHERE id IN (1, 2)");  // moves rows between groups
    EXPECT_TRUE(refreshed_ok("by_region"));
    db->exec("DELETE FROM sales WHERE region = 'w'");  // the last rows of a group
    EXPECT_TRUE(refreshed_ok("by_region"));
    EXPECT_EQ(count("SELECT 1 FROM by_region WHERE region = 'w'"), 0);
    db->exec("UPDATE sales SET qty = 0 WHERE region IS NULL");  // NULL group leaves via WHERE
    EXPECT_TRUE(refreshed_ok("by_region"));
    EXPECT_EQ(count("SELECT 1 FROM by_region WHERE region IS NULL"), 0);
    db->exec("INSERT INTO sales VALUES (100, NULL, 1, 1), (101, NULL, NULL, NULL)");
    EXPECT_TRUE(refreshed_ok("by_region"));
    EXPECT_EQ(count("SELECT 1 FROM by_region WHERE region IS NULL"), 1);
}

TEST_F(Differential, select_distinct_is_maintained_as_groups_of_whole_rows) {
    db->exec(
        "CREATE TABLE tags (id int PRIMARY KEY, tag text, score numeric);"
        "INSERT INTO tags VALUES (1, 'a', 1.0), (2, 'a', 1.00), (3, 'b', NULL), (4, NULL, 2),"
        " (5, NULL, 2)");
    create("dt", "SELECT DISTINCT tag, score > 1 AS high FROM tags");
    EXPECT_EQ(modes("dt"), "DIFFERENTIAL/DIFFERENTIAL");
    EXPECT_EQ(db->scalar("SELECT row_identity_domain FROM pgtrickle.pgt_stream_tables "
                         "WHERE pgt_name = 'dt'"),
              "group_key");
    db->exec("DELETE FROM tags WHERE id = 1");  // 'a' still there through id 2
    EXPECT_TRUE(refreshed_ok("dt"));
    EXPECT_EQ(last_written("dt"), "0/0");
    db->exec("DELETE FROM tags WHERE id = 2; UPDATE tags SET tag = 'c' WHERE id = 4");
    EXPECT_TRUE(refreshed_ok("dt"));
    db->exec("INSERT INTO tags VALUES (6, NULL, 3), (7, 'b', NULL)");
    EXPECT_TRUE(refreshed_ok("dt"));
    create("dk", "SELECT DISTINCT id, tag FROM tags");  // a key in the output: a plain scan
    EXPECT_EQ(db->scalar("SELECT row_identity_domain FROM pgtrickle.pgt_stream_tables "
                         "WHERE pgt_name = 'dk'"),
              "scan_key");
    db->exec("UPDATE tags SET tag = 'z' WHERE id = 3");
    EXPECT_TRUE(refreshed_ok("dk"));
    EXPECT_TRUE(refreshed_ok("dt"));
}

// EC-33: statistical aggregates. The touched groups are recomputed from the
// source, so nothing drifts across refreshes: over numeric inputs (stddev,
// variance) the results are exact and equal the query's. The float8-only
// ones (corr, covar, regr) depend on the order rows are summed in, which
// neither PostgreSQL nor we fix: they are compared with a relative
// tolerance of 1e-12 (the documented float tolerance of this check).
TEST_F(Differential, ec33_statistical_aggregates_are_recomputed_per_group) {
    db->exec(
        "CREATE TABLE obs (id int PRIMARY KEY, g int, x numeric, y numeric);"
        "INSERT INTO obs SELECT i, i % 3, (i * 7) % 11, (i * 5) % 13 FROM "
        "generate_series(1, 60) i");
    create("exact",
           "SELECT g, stddev_pop(x) AS sp, stddev_samp(x) AS ss, var_pop(y) AS vp, "
           "var_samp(y) AS vs, regr_count(y, x) AS rc FROM obs GROUP BY g");
    const std::string floats =
        "SELECT g, corr(y, x) AS c, covar_pop(y, x) AS cp, covar_samp(y, x) AS cs, "
        "regr_slope(y, x) AS sl, regr_intercept(y, x) AS ic, regr_r2(y, x) AS r2, "
        "regr_sxx(y, x) AS sxx, regr_syy(y, x) AS syy, regr_sxy(y, x) AS sxy, "
        "regr_avgx(y, x) AS ax, regr_avgy(y, x) AS ay FROM obs GROUP BY g";
    create("floats", floats);
    EXPECT_EQ(modes("floats"), "DIFFERENTIAL/DIFFERENTIAL");
    auto floats_match = [&] {
        std::string cmp;
        for (const char* c : {"c", "cp", "cs", "sl", "ic", "r2", "sxx", "syy", "sxy", "ax", "ay"}) {
            std::string a = std::string("s.") + c, b = std::string("q.") + c;
            cmp += (cmp.empty() ? "" : " OR ") + std::string("(") + a + " IS NULL) <> (" + b +
                   " IS NULL) OR abs(" + a + " - " + b + ") > 1e-12 * greatest(1, abs(" + b + "))";
        }
        return count("SELECT 1 FROM floats s FULL JOIN (" + floats +
                     ") q USING (g) WHERE s.g IS NULL OR q.g IS NULL OR " + cmp) == 0 &&
               count("SELECT 1 FROM floats") == count(floats);
    };
    EXPECT_TRUE(floats_match());
    db->exec(
        "UPDATE obs SET x = x + 0.5 WHERE id % 4 = 0; DELETE FROM obs WHERE id % 9 = 0;"
        " INSERT INTO obs VALUES (100, 0, 3, NULL), (101, 1, NULL, 2), (102, 5, 1, 1)");
    EXPECT_TRUE(refreshed_ok("exact"));
    refresh("floats");
    EXPECT_EQ(last_action("floats"), "DIFFERENTIAL");
    EXPECT_TRUE(floats_match());
    db->exec("DELETE FROM obs WHERE g = 5");  // a one-row group leaves
    EXPECT_TRUE(refreshed_ok("exact"));
    refresh("floats");
    EXPECT_TRUE(floats_match());
    EXPECT_EQ(count("SELECT 1 FROM floats WHERE g = 5"), 0);
}

TEST_F(Differential, group_by_having_groups_enter_and_leave) {
    db->exec(
        "CREATE TABLE ev (id int PRIMARY KEY, k int, v int);"
        "INSERT INTO ev VALUES (1, 1, 1), (2, 1, 2), (3, 2, 3)");
    create("busy", "SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k HAVING count(*) > 1");
    EXPECT_EQ(count("SELECT * FROM busy"), 1);
    db->exec("INSERT INTO ev VALUES (4, 2, 4)");  // group 2 enters
    EXPECT_TRUE(refreshed_ok("busy"));
    EXPECT_EQ(count("SELECT * FROM busy"), 2);
    db->exec("DELETE FROM ev WHERE id = 1");  // group 1 leaves
    EXPECT_TRUE(refreshed_ok("busy"));
    EXPECT_EQ(count("SELECT * FROM busy WHERE k = 1"), 0);
    db->exec("UPDATE ev SET k = 1 WHERE id = 4");  // 2 -> 1: group 2 leaves, 1 enters
    EXPECT_TRUE(refreshed_ok("busy"));
    EXPECT_EQ(db->scalar("SELECT string_agg(k::text, ',' ORDER BY k) FROM busy"), "1");
}

TEST_F(Differential, grouped_shapes_it_cannot_maintain_are_named) {
    db->exec("CREATE TABLE g (id int PRIMARY KEY, k int, v int)");
    for (const auto& [query, construct] : std::vector<std::pair<std::string, std::string>>{
             {"SELECT k, count(*) AS n FROM g GROUP BY GROUPING SETS ((k), (k))",
              "duplicate grouping sets"},
             {"SELECT count(*) AS n FROM g GROUP BY k", "GROUP BY expression"},
             {"SELECT DISTINCT ON (k) v FROM g ORDER BY k, v", "DISTINCT ON"},
             {"SELECT DISTINCT k, count(*) AS n FROM g GROUP BY k", "DISTINCT over aggregates"}}) {
        SCOPED_TRACE(query);
        SqlError e = db->error_of("SELECT pgtrickle.create_stream_table('x', $q$" + query +
                                  "$q$, refresh_mode => 'DIFFERENTIAL')");
        EXPECT_EQ(e.sqlstate, "0A000");
        EXPECT_NE(e.message.find(construct), std::string::npos) << e.message;
        EXPECT_EQ(count("SELECT 1 FROM pg_class WHERE relname = 'x'"), 0);
    }
}

// The statement-level capture (the measured alternative, docs/benchmarks.md
// §3) must write exactly what the row-level capture writes.
TEST_F(Differential, statement_level_capture_writes_what_row_level_writes) {
    const std::string cols = "(k int, v text, n numeric)";  // keyless: duplicates allowed
    db->exec("CREATE TABLE r " + cols + "; CREATE TABLE st_src " + cols);
    for (const char* src : {"r", "st_src"}) {
        db->exec(std::string("INSERT INTO ") + src +
                 " SELECT g % 5, repeat('v', g), g FROM generate_series(1, 40) g");
        create(std::string(src) + "_view",
               std::string("SELECT k, v, n * 2 AS n2 FROM ") + src + " WHERE n > 3");
    }
    const std::string args = db->scalar(
        "SELECT substring(pg_get_triggerdef(oid), '_capture_row\\((.*)\\)$') FROM pg_trigger "
        "WHERE tgrelid = 'st_src'::regclass AND tgname NOT LIKE '%truncate'");
    const std::string trig = db->scalar(
        "SELECT tgname FROM pg_trigger WHERE tgrelid = 'st_src'::regclass "
        "AND tgname NOT LIKE '%truncate' AND NOT tgisinternal");
    // (Renamed first, dropped once the statement triggers are there: the
    // last capture trigger of a table stream tables read cannot be dropped.)
    db->exec("ALTER TRIGGER " + trig + " ON st_src RENAME TO " + trig + "_replaced");
    for (const auto& [event, tables] : std::vector<std::pair<std::string, std::string>>{
             {"INSERT", "NEW TABLE AS n"},
             {"UPDATE", "OLD TABLE AS o NEW TABLE AS n"},
             {"DELETE", "OLD TABLE AS o"}}) {
        // The INSERT one takes the row trigger's name (ENABLE ALWAYS, as
        // refreshes check capture is).
        const std::string name = event == "INSERT" ? trig : "cs_" + event;
        db->exec("CREATE TRIGGER " + name + " AFTER " + event + " ON st_src REFERENCING " + tables +
                 " FOR EACH STATEMENT EXECUTE FUNCTION pgtrickle._capture_statement(" + args +
                 "); ALTER TABLE st_src ENABLE ALWAYS TRIGGER " + name);
    }
    db->exec("DROP TRIGGER " + trig + "_replaced ON st_src");
    for (const char* src : {"r", "st_src"}) {
        const std::string t = src;
        db->exec("INSERT INTO " + t +
                 " SELECT g % 3, repeat('w', 3000 + g), g FROM "
                 "generate_series(1, 2500) g");  // > one batch, TOASTed values
        db->exec("UPDATE " + t + " SET n = n + 1 WHERE k = 1");
        db->exec("UPDATE " + t + " SET v = v WHERE k = 2");  // changes nothing: not captured
        db->exec("BEGIN; DELETE FROM " + t + " WHERE n < 10; SAVEPOINT a; UPDATE " + t +
                 " SET k = 9; ROLLBACK TO a; UPDATE " + t +
                 " SET k = k + 10 WHERE n > 2000;"
                 " COMMIT");
        db->exec("INSERT INTO " + t + " VALUES (1, 'dup', 5), (1, 'dup', 5)");
    }
    const std::string image =
        "SELECT action, o1, n1, o2, n2, o3, n3 FROM %s EXCEPT ALL SELECT action, o1, n1, o2, n2, "
        "o3, n3 FROM %s";
    const std::string rb = buffer_of("r"), sb = buffer_of("st_src");
    auto diff = [&](const std::string& a, const std::string& b) {
        std::string q = image;
        q.replace(q.find("%s"), 2, a);
        q.replace(q.find("%s"), 2, b);
        return count(q);
    };
    EXPECT_GT(count("SELECT * FROM " + sb), 2500);
    EXPECT_EQ(diff(rb, sb), 0);
    EXPECT_EQ(diff(sb, rb), 0);
    EXPECT_EQ(count("SELECT * FROM " + sb +
                    " WHERE action = 'U' AND o2 = n2 AND o1 = n1 AND "
                    "o3 = n3"),
              0);
    EXPECT_TRUE(refreshed_ok("r_view"));
    EXPECT_TRUE(refreshed_ok("st_src_view"));
    EXPECT_EQ(last_action("st_src_view"), "DIFFERENTIAL");
}

}  // namespace
}  // namespace pgt::e2e
