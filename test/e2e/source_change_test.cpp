// Sources that change under DIFFERENTIAL stream tables (issue: schema
// changes, writes that skip triggers): a change capture cannot follow must
// fail loudly, never crash the server or store a wrong value.
// Invariant: every refresh that follows a source change is checked against
// the oracle; the harness fails the run on a crash in the server log.
#include <string>

#include "fixture.hpp"

namespace pgt::e2e {
namespace {

class SourceChange : public DbTest {
protected:
    void create(const std::string& name, const std::string& query) {
        db->exec("SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => 'DIFFERENTIAL')",
                 {name, query});
    }
};

// ALTER COLUMN ... TYPE and DROP COLUMN of a captured column are refused
// by PostgreSQL (the capture trigger depends on the columns it captures);
// columns nobody reads stay free to change. Before: text -> int then an
// INSERT crashed the server (SIGSEGV); int -> bigint stored 5000000000 as
// 705032704 and refreshed as a success; DROP COLUMN made writes fail.
TEST_F(SourceChange, captured_columns_cannot_change_type_or_be_dropped) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, c text, n int, free int);"
        "INSERT INTO t VALUES (1, '10', 1, 0), (2, '20', 2, 0)");
    create("s", "SELECT id, c, n FROM t");
    SqlError e = db->error_of("ALTER TABLE t ALTER COLUMN c TYPE int USING c::int");
    EXPECT_EQ(e.sqlstate, "0A000") << e.message;
    EXPECT_NE(e.detail.find("column \"c\""), std::string::npos) << e.detail;
    EXPECT_EQ(db->error_of("ALTER TABLE t ALTER COLUMN n TYPE bigint").sqlstate, "0A000");
    EXPECT_EQ(db->error_of("ALTER TABLE t DROP COLUMN n").sqlstate, "2BP01");
    e = db->error_of("ALTER TABLE t DROP COLUMN n CASCADE");  // would drop the capture trigger
    EXPECT_EQ(e.sqlstate, "2BP01") << e.message;
    EXPECT_NE(e.detail.find("public.s"), std::string::npos) << e.detail;
    const std::string trigger = db->scalar(
        "SELECT tgname FROM pg_trigger WHERE tgrelid = 't'::regclass AND tgname NOT "
        "LIKE '%truncate' AND NOT tgisinternal");
    EXPECT_EQ(db->error_of("DROP TRIGGER " + trigger + " ON t").sqlstate, "2BP01");
    db->exec("ALTER TABLE t ALTER COLUMN free TYPE bigint; ALTER TABLE t DROP COLUMN free");
    db->exec("INSERT INTO t VALUES (3, '30', 3); UPDATE t SET c = 'x' WHERE id = 1");
    refresh("s");
    EXPECT_EQ(last_action("s"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "s");
}

// Should a captured column change type anyway (here: its dependency
// removed by hand), a session that captured a row before (its capture plan
// kept) and a new session both get 55000 naming the column on the next
// write, and nothing is captured wrong.
TEST_F(SourceChange, capture_refuses_a_column_of_another_type_than_its_buffer) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, c text, n int);"
        "INSERT INTO t VALUES (1, '10', 1), (2, '20', 2)");
    create("s", "SELECT id, c, n FROM t");
    db->exec("INSERT INTO t VALUES (3, '30', 3)");  // this session keeps a capture plan
    refresh("s");
    EXPECT_MATCHES_QUERY(*db, "s");
    db->exec(
        "DELETE FROM pg_depend WHERE classid = 'pg_trigger'::regclass AND refobjid = "
        "'t'::regclass AND refobjsubid > 0");

    db->exec("ALTER TABLE t ALTER COLUMN c TYPE int USING c::int");
    SqlError e = db->error_of("INSERT INTO t VALUES (4, 40, 4)");
    EXPECT_EQ(e.sqlstate, "55000") << e.message;
    EXPECT_NE(e.message.find("column c"), std::string::npos) << e.message;
    Conn other = connect_db();
    EXPECT_EQ(other.error_of("INSERT INTO t VALUES (5, 50, 5)").sqlstate, "55000");

    db->exec("ALTER TABLE t ALTER COLUMN c TYPE text, ALTER COLUMN n TYPE bigint");
    e = db->error_of("INSERT INTO t VALUES (6, '60', 5000000000)");
    EXPECT_EQ(e.sqlstate, "55000") << e.message;
    EXPECT_NE(e.message.find("column n"), std::string::npos) << e.message;
    EXPECT_EQ(db->scalar("SELECT count(*) FROM t WHERE id >= 4"), "0");
    refresh("s");
    EXPECT_EQ(last_action("s"), "NO_DATA");
    EXPECT_MATCHES_QUERY(*db, "s");

    // Back to the captured types, capture follows again.
    db->exec("ALTER TABLE t ALTER COLUMN n TYPE int");
    db->exec("INSERT INTO t VALUES (7, '70', 7); UPDATE t SET c = 'x' WHERE id = 1");
    refresh("s");
    EXPECT_EQ(last_action("s"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "s");
}

// A stream table depends on what it reads the way a view does (pg_depend):
// DROP TABLE of a source, or of a stream table another reads, is refused
// with 2BP01 naming the dependent stream table; CASCADE drops them all and
// leaves no catalog row, trigger or buffer. A new query with other
// columns for a stream table another one reads is refused the same way.
// Before: the DROP succeeded and the DIFFERENTIAL stream table stayed
// ACTIVE, failing every refresh with XX000.
TEST_F(SourceChange, dropping_a_source_is_refused_and_cascade_drops_the_stream_tables) {
    const std::string before = state();
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, v int);"
        "INSERT INTO t SELECT g, g FROM generate_series(1, 5) g");
    create("s", "SELECT id, v FROM t");
    db->exec(
        "SELECT pgtrickle.create_stream_table('f', 'SELECT id FROM t', refresh_mode => "
        "'FULL')");
    create("s3", "SELECT id, v * 2 AS w FROM s");

    SqlError e = db->error_of("DROP TABLE t");
    EXPECT_EQ(e.sqlstate, "2BP01");
    EXPECT_NE(e.detail.find("table s depends on table t"), std::string::npos) << e.detail;
    EXPECT_NE(e.detail.find("table f depends on table t"), std::string::npos) << e.detail;
    e = db->error_of("DROP TABLE s");
    EXPECT_EQ(e.sqlstate, "2BP01");
    EXPECT_NE(e.detail.find("table s3 depends on table s"), std::string::npos) << e.detail;
    e = db->error_of("SELECT pgtrickle.alter_stream_table('s', query => 'SELECT id AS k FROM t')");
    EXPECT_EQ(e.sqlstate, "2BP01") << e.message;

    db->exec("UPDATE t SET v = v + 10 WHERE id < 3");
    refresh("s");
    refresh("s3");
    EXPECT_EQ(last_action("s3"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "s");
    EXPECT_MATCHES_QUERY(*db, "s3");

    db->exec("DROP TABLE t CASCADE");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_stream_tables"), "0");
    EXPECT_EQ(state(), before);
}

// The same for a function the query calls (EC-16's DROP FUNCTION ...
// CASCADE): refused with 2BP01 naming the stream table, CASCADE drops it.
// Before: the DROP succeeded and every later refresh failed.
TEST_F(SourceChange, dropping_a_function_the_query_calls_is_refused) {
    const std::string before = state();
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, v int);"
        "INSERT INTO t SELECT g, g FROM generate_series(1, 5) g;"
        "CREATE FUNCTION twice(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 2'");
    create("s", "SELECT id, twice(v) AS w FROM t");
    SqlError e = db->error_of("DROP FUNCTION twice(int)");
    EXPECT_EQ(e.sqlstate, "2BP01");
    EXPECT_NE(e.detail.find("table s depends on function twice(integer)"), std::string::npos)
        << e.detail;
    db->exec("UPDATE t SET v = 7 WHERE id = 1");
    refresh("s");
    EXPECT_EQ(last_action("s"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "s");
    db->exec("DROP FUNCTION twice(int) CASCADE");
    db->exec("DROP TABLE t");
    EXPECT_EQ(state(), before);
}

// Writes under session_replication_role = replica (what a logical
// replication subscriber's apply worker and pg_restore --disable-triggers
// run as) are captured: the capture triggers are ENABLE ALWAYS. Before:
// they were skipped, and the stream table stayed ACTIVE and wrong.
TEST_F(SourceChange, writes_under_replica_role_are_captured) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, v int);"
        "INSERT INTO t SELECT g, g FROM generate_series(1, 5) g");
    create("s", "SELECT id, v FROM t WHERE v > 1");
    db->exec(
        "SET session_replication_role = replica;"
        "INSERT INTO t VALUES (6, 6); UPDATE t SET v = 0 WHERE id = 2; DELETE FROM t WHERE id = 3;"
        "RESET session_replication_role");
    refresh("s");
    EXPECT_EQ(last_action("s"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "s");
}

// Foreign keys on a stream table or referencing one are refused (seed
// EC-27), by ALTER TABLE and by CREATE TABLE; the ALTER or CREATE rolls
// back. Before: both were accepted.
TEST_F(SourceChange, ec27_foreign_keys_involving_stream_tables_are_refused) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, v int); CREATE TABLE d (v int PRIMARY KEY);"
        "INSERT INTO d VALUES (1), (2); INSERT INTO t VALUES (1, 1), (2, 2)");
    create("s", "SELECT id, v FROM t");
    db->exec("CREATE UNIQUE INDEX ON s (id)");
    EXPECT_EQ(db->error_of("ALTER TABLE s ADD FOREIGN KEY (v) REFERENCES d (v)").sqlstate, "0A000");
    EXPECT_EQ(db->error_of("CREATE TABLE child (id int REFERENCES s (id))").sqlstate, "0A000");
    db->exec("CREATE TABLE child (id int)");
    EXPECT_EQ(db->error_of("ALTER TABLE child ADD FOREIGN KEY (id) REFERENCES s (id)").sqlstate,
              "0A000");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND "
                         "connamespace = 'public'::regnamespace"),
              "0");
    db->exec("DELETE FROM t WHERE id = 1");
    refresh("s");
    EXPECT_EQ(last_action("s"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "s");
}

// A capture trigger someone disabled (the table's owner may) is reported
// by health_check() with the table and what to do; enabled again as
// ENABLE ALWAYS, the check is green. Before: health_check stayed green.
TEST_F(SourceChange, health_check_reports_a_disabled_capture) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, v int);"
        "INSERT INTO t SELECT g, g FROM generate_series(1, 5) g");
    create("s", "SELECT id, v FROM t");
    auto capture_check = [&] {
        return db->scalar(
            "SELECT ok || '|' || detail FROM pgtrickle.health_check() WHERE check_name = "
            "'change_capture'");
    };
    EXPECT_EQ(capture_check().substr(0, 5), "true|");
    db->exec("ALTER TABLE t DISABLE TRIGGER USER");
    std::string c = capture_check();
    EXPECT_EQ(c.substr(0, 6), "false|") << c;
    EXPECT_NE(c.find("enabled never"), std::string::npos) << c;
    db->exec("ALTER TABLE t ENABLE TRIGGER USER");  // back, but on origin only
    c = capture_check();
    EXPECT_NE(c.find("enabled on origin only"), std::string::npos) << c;
    for (const char* kind : {"", "_truncate"}) {
        db->exec("ALTER TABLE t ENABLE ALWAYS TRIGGER pgt_capture_" +
                 db->scalar("SELECT source_id FROM pgtrickle.pgt_sources") + kind);
    }
    EXPECT_EQ(capture_check().substr(0, 5), "true|");
    db->exec("UPDATE t SET v = 0 WHERE id = 1");
    refresh("s");
    EXPECT_EQ(last_action("s"), "FULL") << "the DISABLE marked it: writes meanwhile were lost";
    EXPECT_MATCHES_QUERY(*db, "s");
    db->exec("UPDATE t SET v = 1 WHERE id = 1");
    refresh("s");
    EXPECT_EQ(last_action("s"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "s");
}

// Seed EC-15: a * in the select list gets a WARNING naming the columns it
// was expanded to (also t.*); count(*) and named columns do not.
TEST_F(SourceChange, ec15_select_star_warns_with_the_expanded_columns) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, v int);"
        "INSERT INTO t SELECT g, g FROM generate_series(1, 5) g");
    auto notices_of = [&](const std::string& name, const std::string& query) {
        db->notices.clear();
        create(name, query);
        std::string all;
        for (const std::string& n : db->notices) {
            all += n;
        }
        return all;
    };
    std::string n = notices_of("s", "SELECT * FROM t");
    EXPECT_NE(n.find("stream table query selects *, expanded to (id, v)"), std::string::npos) << n;
    n = notices_of("s2", "SELECT t.* FROM t WHERE v > 2");
    EXPECT_NE(n.find("expanded to (id, v)"), std::string::npos) << n;
    n = notices_of("s3", "SELECT v, count(*) AS n FROM t GROUP BY v");
    EXPECT_EQ(n.find("selects *"), std::string::npos) << n;
    db->exec("UPDATE t SET v = 1");
    for (const char* st : {"s", "s2", "s3"}) {
        refresh(st);
        EXPECT_EQ(last_action(st), "DIFFERENTIAL");
        EXPECT_MATCHES_QUERY(*db, st);
    }
}

// Finding 6: capture disabled by ALTER TABLE ... DISABLE TRIGGER (the
// table's owner may) loses the changes made meanwhile. The DISABLE marks
// every stream table reading the table; the next refresh of each enables
// capture ALWAYS again and recomputes (FULL, with the reason), once; then
// DIFFERENTIAL again. Before: refreshes stayed DIFFERENTIAL and wrong.
TEST_F(SourceChange, disabled_capture_is_repaired_and_recomputed) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, v int);"
        "INSERT INTO t SELECT g, g FROM generate_series(1, 5) g");
    create("s1", "SELECT id, v FROM t");
    create("s2", "SELECT id, v * 2 AS w FROM t WHERE v > 1");
    db->exec("ALTER TABLE t DISABLE TRIGGER USER");
    db->exec("UPDATE t SET v = v + 10 WHERE id < 3; DELETE FROM t WHERE id = 5");
    db->exec("ALTER TABLE t ENABLE TRIGGER USER");  // on origin only: still not ALWAYS
    db->exec("INSERT INTO t VALUES (6, 6)");
    refresh("s1");
    EXPECT_EQ(last_action("s1"), "FULL");
    const std::string reason = db->scalar(
        "SELECT reason FROM pgtrickle.pgt_refresh_history ORDER BY refresh_id DESC LIMIT 1");
    EXPECT_NE(reason.find("change capture of table public.t was disabled"), std::string::npos)
        << reason;
    EXPECT_MATCHES_QUERY(*db, "s1");
    refresh("s2");
    EXPECT_EQ(last_action("s2"), "FULL");
    EXPECT_MATCHES_QUERY(*db, "s2");
    EXPECT_EQ(db->scalar("SELECT ok FROM pgtrickle.health_check() WHERE check_name = "
                         "'change_capture'"),
              "t");
    db->exec("UPDATE t SET v = 0 WHERE id = 6");
    for (const char* st : {"s1", "s2"}) {
        refresh(st);
        EXPECT_EQ(last_action(st), "DIFFERENTIAL");
        EXPECT_MATCHES_QUERY(*db, st);
    }
}

}  // namespace
}  // namespace pgt::e2e
