// Change capture: the row trigger stages a statement's buffer rows and
// writes them in batches (src/pg/cdc/staged_rows.hpp). What a transaction
// keeps must reach the buffer, in order, and nothing it rolls back.
// Invariant: every refresh is checked against the oracle and must have run
// DIFFERENTIAL.
#include <string>

#include "fixture.hpp"

namespace pgt::e2e {
namespace {

class Capture : public DbTest {
protected:
    void SetUp() override {
        DbTest::SetUp();
        db->exec(
            "CREATE TABLE t (id int PRIMARY KEY, grp int, val int, note text);"
            "INSERT INTO t SELECT g, g % 7, g, 'n' || g FROM generate_series(1, 3000) g");
        for (const char* q : {"SELECT id, grp, val, note FROM t",
                              "SELECT grp, count(*) AS n, sum(val) AS s FROM t GROUP BY grp"}) {
            const std::string name = std::string(q).find("GROUP") == std::string::npos ? "p" : "a";
            db->exec(
                "SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => "
                "'DIFFERENTIAL')",
                {name, q});
        }
    }

    // Both stream tables refreshed by their delta and equal to their query.
    void expect_maintained(const std::string& step) {
        for (const char* st : {"p", "a"}) {
            refresh(st);
            EXPECT_EQ(last(st).substr(0, 12), "DIFFERENTIAL") << step << ": " << st;
            EXPECT_MATCHES_QUERY(*db, st) << step;
        }
    }
};

// Statements of more rows than one batch, inside savepoints that are
// released or rolled back, and in PL/pgSQL exception blocks.
TEST_F(Capture, staged_rows_follow_savepoints_and_exception_blocks) {
    db->exec("BEGIN");
    db->exec("INSERT INTO t SELECT g, g % 5, g, 'i' FROM generate_series(5001, 7600) g");
    db->exec("SAVEPOINT a");
    db->exec("UPDATE t SET val = val + 1000, grp = grp + 1 WHERE id <= 2500");
    db->exec("ROLLBACK TO SAVEPOINT a");
    db->exec("DELETE FROM t WHERE id % 3 = 0");
    db->exec("SAVEPOINT b");
    db->exec("UPDATE t SET val = val * 2 WHERE id > 5000");
    db->exec("RELEASE SAVEPOINT b");
    db->exec("COMMIT");
    expect_maintained("savepoints");

    db->exec(
        "DO $$ BEGIN "
        "  BEGIN "
        "    INSERT INTO t SELECT g, 1, g, 'x' FROM generate_series(8001, 9500) g; "
        "    UPDATE t SET val = 0 WHERE id < 100; "
        "    RAISE EXCEPTION 'undo'; "
        "  EXCEPTION WHEN raise_exception THEN NULL; "
        "  END; "
        "  UPDATE t SET note = 'kept' WHERE id BETWEEN 100 AND 1300; "
        "END $$");
    expect_maintained("exception block");
}

// COPY fires its row triggers outside the executor: its rows are written
// when the transaction commits, when a subtransaction starts or ends, or
// before the next statement, and never when rolled back.
TEST_F(Capture, copy_rows_reach_the_buffer_before_anything_reads_it) {
    db->exec("BEGIN");
    db->exec("COPY t FROM PROGRAM 'seq -f \"%g,3,5,c\" 10001 11500' WITH (FORMAT csv)");
    db->exec("SAVEPOINT a");
    db->exec("COPY t FROM PROGRAM 'seq -f \"%g,4,6,d\" 20001 20300' WITH (FORMAT csv)");
    db->exec("ROLLBACK TO SAVEPOINT a");
    db->exec("COPY t FROM PROGRAM 'seq -f \"%g,5,7,e\" 30001 30200' WITH (FORMAT csv)");
    // A refresh in the writing transaction applies its changes so far: the
    // staged rows are in the buffer when the refresh reads it.
    expect_maintained("copy, read in its transaction");
    db->exec("COPY t FROM PROGRAM 'seq -f \"%g,6,8,f\" 40001 40100' WITH (FORMAT csv)");
    db->exec("COMMIT");
    expect_maintained("copy");
    EXPECT_EQ(count("SELECT * FROM t WHERE id > 20000 AND id < 30000"), 0);
}

// Values stored out of line in the source (TOAST), written by COPY and
// kept staged until commit, and enough of them to fill a batch by size.
TEST_F(Capture, out_of_line_values_are_captured) {
    db->exec("ALTER TABLE t ALTER COLUMN note SET STORAGE EXTERNAL");
    db->exec("BEGIN");
    db->exec(
        "INSERT INTO t SELECT g, 2, g, repeat(md5(g::text), 3000) "
        "FROM generate_series(50001, 50060) g");
    db->exec(
        "COPY t FROM PROGRAM 'for i in $(seq 60001 60040); do printf \"%s,1,1,\" $i; "
        "head -c 40000 /dev/zero | tr \"\\\\0\" y; echo; done' WITH (FORMAT csv)");
    db->exec("COMMIT");
    expect_maintained("insert of out-of-line values");
    db->exec("UPDATE t SET val = val + 1 WHERE id > 50000");
    db->exec("DELETE FROM t WHERE id > 60020");
    expect_maintained("update and delete of out-of-line values");
    EXPECT_EQ(db->scalar("SELECT sum(length(note)) FROM p WHERE id > 50000"),
              std::to_string(60 * 96000 + 20 * 40000));
}

// A user trigger on one source writing another source: the buffer rows of
// both go in. It fires after the capture trigger for each row, and for
// every third row its exception block (a subtransaction) fails: the rows
// staged before it are written inside that subtransaction and staged again
// when it aborts.
TEST_F(Capture, statements_of_triggers_capture_their_own_rows) {
    db->exec(
        "CREATE TABLE log (id int, what text);"
        "CREATE FUNCTION note_change() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "  BEGIN "
        "    INSERT INTO log VALUES (NEW.id, 'tried'); "
        "    IF NEW.id % 3 = 0 THEN RAISE EXCEPTION 'undo'; END IF; "
        "  EXCEPTION WHEN raise_exception THEN NULL; "
        "  END; "
        "  INSERT INTO log VALUES (NEW.id, TG_OP); RETURN NULL; END $$;"
        "CREATE TRIGGER z_note AFTER INSERT OR UPDATE ON t FOR EACH ROW "
        "  EXECUTE FUNCTION note_change()");
    db->exec(
        "SELECT pgtrickle.create_stream_table('l', "
        "'SELECT what, count(*) AS n FROM log GROUP BY what', refresh_mode => 'DIFFERENTIAL')");
    db->exec("INSERT INTO t SELECT g, 1, g, 'x' FROM generate_series(70001, 71200) g");
    db->exec("UPDATE t SET val = val + 1 WHERE id BETWEEN 70001 AND 70600");
    expect_maintained("trigger cascade");
    refresh("l");
    EXPECT_EQ(last("l").substr(0, 12), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "l");
}

// A refresh inside the writing transaction, after a later transaction id
// completed (here one of its own subtransactions, or another session's
// transaction): what the transaction writes after the refresh reaches the
// next refresh. Before, the frontier read the transaction's own id as
// committed, and those rows were in no window (the next refresh: NO_DATA).
TEST_F(Capture, rows_written_after_a_refresh_in_their_transaction_are_applied) {
    db->exec("BEGIN");
    db->exec("INSERT INTO t VALUES (90001, 1, 1, 'a')");
    db->exec("SAVEPOINT s");
    db->exec("INSERT INTO t VALUES (90002, 1, 1, 'rolled back')");
    db->exec("ROLLBACK TO SAVEPOINT s");
    expect_maintained("refresh after a rolled-back savepoint");
    db->exec("INSERT INTO t VALUES (90003, 2, 2, 'after')");
    db->exec("UPDATE t SET val = 7 WHERE id = 90001");
    db->exec("COMMIT");
    expect_maintained("the transaction's later rows");

    Conn other = connect_db();
    other.exec("CREATE TABLE elsewhere (i int)");
    db->exec("BEGIN");
    db->exec("INSERT INTO t VALUES (90004, 3, 3, 'b')");
    other.exec("INSERT INTO elsewhere VALUES (1)");  // a later id completes
    expect_maintained("refresh after another session's commit");
    db->exec("DELETE FROM t WHERE id = 90003");
    db->exec("COMMIT");
    expect_maintained("after another session's commit, the later rows");
}

// The same for the first frontier: a stream table created in a
// transaction that goes on writing its source.
TEST_F(Capture, rows_written_after_creation_in_the_same_transaction_are_applied) {
    db->exec("BEGIN");
    db->exec("SAVEPOINT s");
    db->exec("INSERT INTO t VALUES (90001, 1, 1, 'rolled back')");
    db->exec("ROLLBACK TO SAVEPOINT s");
    db->exec(
        "SELECT pgtrickle.create_stream_table('q', 'SELECT id, val FROM t WHERE grp = 1', "
        "refresh_mode => 'DIFFERENTIAL')");
    db->exec("INSERT INTO t VALUES (90002, 1, 5, 'after')");
    db->exec("COMMIT");
    refresh("q");
    EXPECT_EQ(last("q").substr(0, 12), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "q");
}

}  // namespace
}  // namespace pgt::e2e
