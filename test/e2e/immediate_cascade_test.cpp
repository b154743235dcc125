// IMMEDIATE stream tables over sources that foreign key actions and user
// triggers write inside another statement: self-referencing keys moved
// with ON UPDATE CASCADE or SET NULL, deletes cascading or setting NULL,
// keys of a joined table moved under a join, a user AFTER ROW trigger
// writing a source. Random DML over such a table: ImmediateProperty.
// Invariant: after every statement every IMMEDIATE stream table equals its
// query, and the counters say whether the statement was applied or the
// stream table recomputed.
#include <string>
#include <vector>

#include "fixture.hpp"

namespace pgt::e2e {
namespace {

class ImmediateCascade : public DbTest {
protected:
    struct Counters {
        long incremental = 0;
        long recomputed = 0;
    };

    void create(const std::string& name, const std::string& query) {
        db->exec("SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => 'IMMEDIATE')",
                 {name, query});
        ASSERT_EQ(modes(name), "IMMEDIATE/IMMEDIATE") << name;
        EXPECT_MATCHES_QUERY(*db, name);
        maintained_.push_back(name);
    }

    // One statement (it must succeed, as it does without stream tables),
    // then the oracle on every IMMEDIATE stream table of the test.
    void run(const std::string& sql) {
        try {
            db->exec(sql);
        } catch (const SqlError& e) {
            ADD_FAILURE() << sql << "\nfailed: " << e.what() << "\n" << e.detail;
            return;
        }
        for (const std::string& st : maintained_) {
            EXPECT_MATCHES_QUERY(*db, st) << "after: " << sql;
        }
    }

    Counters counters(const std::string& st) {
        Result r =
            db->exec("SELECT incremental, recomputed FROM pgtrickle._immediate_counters($1)", {st});
        return {std::stol(r.at(0, 0)), std::stol(r.at(0, 1))};
    }

    // What st's maintenance did since `before`: "applied" (statements
    // applied as changes, a foreign key action's that changed nothing
    // included), "recomputed" (recomputed once, nothing applied), or the
    // two numbers.
    std::string since(const std::string& st, const Counters& before) {
        const Counters now = counters(st);
        const long applied = now.incremental - before.incremental;
        const long recomputed = now.recomputed - before.recomputed;
        if (applied >= 1 && recomputed == 0) {
            return "applied";
        }
        if (applied == 0 && recomputed == 1) {
            return "recomputed";
        }
        return std::to_string(applied) + " applied, " + std::to_string(recomputed) + " recomputed";
    }

    // The reason the latest IMMEDIATE recompute of st gave.
    std::string last_reason(const std::string& st) {
        return db->scalar(
            "SELECT coalesce(h.reason, '') FROM pgtrickle.pgt_refresh_history h "
            "JOIN pgtrickle.pgt_stream_tables s USING (pgt_id) "
            "WHERE s.pgt_relid = $1::regclass ORDER BY h.refresh_id DESC LIMIT 1",
            {st});
    }

    std::vector<std::string> maintained_;
};

// The finding: PostgreSQL runs ON UPDATE CASCADE's UPDATE in the query
// level of the UPDATE that moved the keys, so its rows join that
// statement's transition tables and the statement triggers fire once. Row
// (2,1) is moved to (12,1) by the statement, then to (12,11) by the
// cascade: OLD TABLE held (1,) (2,1) (3,2) (12,1) (13,2), NEW TABLE
// (11,) (12,1) (13,2) (12,11) (13,12). Before, the scan's program inserted
// identities 12 and 13 twice: 23505 on the stream table's probe index, and
// the UPDATE failed. Now the stream table is recomputed.
TEST_F(ImmediateCascade, self_referencing_on_update_cascade_moves_keys_and_references) {
    db->exec(
        "CREATE TABLE s (a int PRIMARY KEY, b int REFERENCES s (a) ON UPDATE CASCADE, v int);"
        "INSERT INTO s VALUES (1, NULL, 10), (2, 1, 20), (3, 2, 30), (4, NULL, 40)");
    create("s_rows", "SELECT a, b, v FROM s");
    create("s_children", "SELECT b, count(*) AS n, sum(v) AS total FROM s GROUP BY b");
    create("s_refs", "SELECT b FROM s WHERE b IS NOT NULL");  // keyless: a bag of references
    const Counters rows0 = counters("s_rows"), groups0 = counters("s_children");
    run("UPDATE s SET a = a + 10");
    EXPECT_EQ(db->scalar("SELECT string_agg(a || ':' || coalesce(b::text, '-'), ' ' ORDER BY a) "
                         "FROM s"),
              "11:- 12:11 13:12 14:-");
    EXPECT_EQ(since("s_rows", rows0), "recomputed");
    EXPECT_EQ(since("s_children", groups0), "recomputed");
    EXPECT_NE(last_reason("s_rows").find("updated again"), std::string::npos)
        << last_reason("s_rows");
    // A key with no row referencing it: the cascade's UPDATE changes no
    // row, and the statement is applied as usual.
    Counters c = counters("s_rows");
    run("UPDATE s SET a = 24 WHERE a = 14");
    EXPECT_EQ(since("s_rows", c), "applied");
    // No key moved: no action runs.
    c = counters("s_rows");
    run("UPDATE s SET b = 11, v = v + 1 WHERE a = 24");
    EXPECT_EQ(since("s_rows", c), "applied");
    // One key moved, its children follow; inside a transaction, savepoints.
    run("UPDATE s SET a = 1 WHERE a = 11");
    db->exec("BEGIN");
    run("UPDATE s SET a = a * 2 + 100");
    run("SAVEPOINT p");
    run("UPDATE s SET a = a + 1 WHERE b IS NULL");
    run("ROLLBACK TO SAVEPOINT p");
    run("UPDATE s SET a = a - 1 WHERE a = 102");
    run("COMMIT");
}

// ON UPDATE SET NULL on a self-reference: the action's UPDATE sets the
// references of the rows the statement moved. Before: 23505 as above
// ((12,1) then (12,NULL) both in NEW TABLE).
TEST_F(ImmediateCascade, self_referencing_on_update_set_null) {
    db->exec(
        "CREATE TABLE s (a int PRIMARY KEY, b int REFERENCES s (a) ON UPDATE SET NULL, v int);"
        "INSERT INTO s VALUES (1, NULL, 1), (2, 1, 2), (3, 2, 3), (4, 3, 4)");
    create("s_rows", "SELECT a, b, v FROM s WHERE v < 100");
    create("s_orphans",
           "SELECT count(*) FILTER (WHERE b IS NULL) AS roots, sum(v) AS total FROM s");
    const Counters c = counters("s_rows");
    run("UPDATE s SET a = a + 10 WHERE a <= 3");
    EXPECT_EQ(since("s_rows", c), "recomputed");
    run("UPDATE s SET v = v + 100 WHERE b IS NULL");
    run("UPDATE s SET b = 13 WHERE a = 4");
    run("UPDATE s SET a = 3, v = 3 WHERE a = 13");
}

// SET DEFAULT on a self-reference, on update and on delete: the default
// key 0 is a row of the table. The UPDATE's action joins its transition
// tables as SET NULL's does (before: 23505); the DELETE's is a nested UPDATE.
TEST_F(ImmediateCascade, self_referencing_set_default_on_update_and_delete) {
    db->exec(
        "CREATE TABLE s (a int PRIMARY KEY,"
        " b int DEFAULT 0 REFERENCES s (a) ON UPDATE SET DEFAULT ON DELETE SET DEFAULT, v int);"
        "INSERT INTO s VALUES (0, NULL, 0), (1, 0, 1), (2, 1, 2), (3, 2, 3), (4, 2, 4), (5, 4, 5)");
    create("s_rows", "SELECT a, b, v FROM s");
    create("s_children", "SELECT b, count(*) AS n, sum(v) AS total FROM s GROUP BY b");
    Counters c = counters("s_rows");
    run("UPDATE s SET a = a + 10 WHERE a IN (1, 2)");
    EXPECT_EQ(since("s_rows", c), "recomputed");
    c = counters("s_rows");
    run("DELETE FROM s WHERE a = 4");
    EXPECT_EQ(since("s_rows", c), "recomputed");
    EXPECT_EQ(db->scalar("SELECT string_agg(a || ':' || coalesce(b::text, '-'), ' ' ORDER BY a) "
                         "FROM s"),
              "0:- 3:0 5:0 11:0 12:0");
    c = counters("s_rows");
    run("DELETE FROM s WHERE a = 12");  // nothing refers to 12: the action changes no row
    EXPECT_EQ(since("s_rows", c), "applied");
}

// ON DELETE CASCADE on a self-reference: the action's DELETEs join the
// statement's OLD TABLE, each row once, so the statement stays one change
// and is applied (it was before this fix too; a guard).
TEST_F(ImmediateCascade, self_referencing_on_delete_cascade_is_applied) {
    db->exec(
        "CREATE TABLE s (a int PRIMARY KEY, b int REFERENCES s (a) ON DELETE CASCADE, v int);"
        "INSERT INTO s SELECT g, CASE WHEN g % 5 = 1 THEN NULL ELSE g - 1 END, g"
        " FROM generate_series(1, 20) g");
    create("s_rows", "SELECT a, b, v FROM s");
    create("s_children", "SELECT b, count(*) AS n, max(v) AS top FROM s GROUP BY b");
    const Counters c = counters("s_rows");
    run("DELETE FROM s WHERE a = 2");  // 2, 3, 4, 5 go
    EXPECT_EQ(db->scalar("SELECT count(*) FROM s"), "16");
    EXPECT_EQ(since("s_rows", c), "applied");
    run("DELETE FROM s WHERE a IN (6, 12, 19)");
    db->exec("BEGIN");
    run("DELETE FROM s WHERE b IS NULL");
    run("ROLLBACK");
    run("DELETE FROM s WHERE v > 14");
}

// ON DELETE SET NULL on a self-reference: the action is an UPDATE, a
// statement of its own whose AFTER trigger fires after the DELETE's; the
// stream table is recomputed when it ends (it was before this fix too).
// Before, a DELETE of a key nothing references was recomputed as well (the
// action's UPDATE, changing no row, still fired its statement triggers);
// now the DELETE is applied.
TEST_F(ImmediateCascade, self_referencing_on_delete_set_null_recomputes_at_the_end) {
    db->exec(
        "CREATE TABLE s (a int PRIMARY KEY, b int REFERENCES s (a) ON DELETE SET NULL, v int);"
        "INSERT INTO s VALUES (1, NULL, 1), (2, 1, 2), (3, 2, 3), (4, 1, 4), (5, NULL, 5)");
    create("s_rows", "SELECT a, b, v FROM s");
    create("s_roots", "SELECT b IS NULL AS root, count(*) AS n, sum(v) AS total FROM s GROUP BY 1");
    const Counters c = counters("s_rows");
    run("DELETE FROM s WHERE a = 1");
    EXPECT_EQ(since("s_rows", c), "recomputed");
    const Counters d = counters("s_rows");
    run("DELETE FROM s WHERE a = 5");  // nothing refers to 5
    EXPECT_EQ(since("s_rows", d), "applied");
    run("DELETE FROM s WHERE a IN (2, 3)");
}

// Two foreign keys of one table on the same parent key, both cascading: a
// child referencing the moved key twice is updated by each action, (10,1,1)
// to (10,11,1) to (10,11,11). Before: the child's own stream table failed
// with 23505 (identity 10 twice in NEW TABLE), and the keyless one kept the
// middle image. The join over parent and child recomputes (the children's
// UPDATE is a statement of its own, nested in the parent's).
TEST_F(ImmediateCascade, keys_moved_under_a_join_and_children_updated_twice) {
    db->exec(
        "CREATE TABLE p (id int PRIMARY KEY, name text);"
        "CREATE TABLE c (cid int PRIMARY KEY,"
        " pid int REFERENCES p (id) ON UPDATE CASCADE ON DELETE CASCADE,"
        " alt int REFERENCES p (id) ON UPDATE CASCADE ON DELETE SET NULL, w int);"
        "CREATE TABLE kc (x int REFERENCES p (id) ON UPDATE CASCADE ON DELETE CASCADE,"
        " y int REFERENCES p (id) ON UPDATE CASCADE ON DELETE SET NULL);"
        "INSERT INTO p VALUES (1, 'a'), (2, 'b'), (3, 'c');"
        "INSERT INTO c VALUES (10, 1, 1, 5), (11, 1, 2, 6), (12, 2, NULL, 7), (13, 3, 1, 8);"
        "INSERT INTO kc VALUES (1, 1), (1, 1), (2, 1), (3, NULL)");
    create("joined", "SELECT p.id, p.name, c.cid, c.w FROM p JOIN c ON c.pid = p.id");
    create("outer_joined", "SELECT p.name, c.cid, c.alt FROM p LEFT JOIN c ON c.alt = p.id");
    create("per_parent",
           "SELECT p.name, count(*) AS n, sum(c.w) AS total "
           "FROM c JOIN p ON p.id = c.pid GROUP BY p.name");
    create("children", "SELECT cid, pid, alt, w FROM c");
    create("pairs", "SELECT x, y FROM kc");
    const Counters j = counters("joined"), ch = counters("children");
    run("UPDATE p SET id = id + 10 WHERE id = 1");
    EXPECT_EQ(db->scalar("SELECT string_agg(cid || ':' || pid || ':' || coalesce(alt::text, '-'), "
                         "' ' ORDER BY cid) FROM c"),
              "10:11:11 11:11:2 12:2:- 13:3:11");
    EXPECT_EQ(since("joined", j), "recomputed");
    EXPECT_EQ(since("children", ch), "recomputed");
    run("UPDATE p SET id = id + 100");
    run("UPDATE p SET name = upper(name)");
    run("DELETE FROM p WHERE id = 111");
    run("UPDATE c SET w = w * 2");
    run("DELETE FROM p");
}

// A user AFTER ROW trigger on the parent writes the child, another source
// of the same join; and one on the child writes the child again, inside
// the foreign key action's UPDATE. Each inner statement fires triggers of
// its own and ends before the outer one: the stream table is recomputed
// when the outer statement ends (as before this fix; a guard).
TEST_F(ImmediateCascade, user_triggers_writing_sources_inside_a_statement) {
    db->exec(R"sql(
CREATE TABLE p (id int PRIMARY KEY, name text);
CREATE TABLE c (cid int PRIMARY KEY, pid int REFERENCES p (id) ON UPDATE CASCADE, w int);
INSERT INTO p VALUES (1, 'a'), (2, 'b');
INSERT INTO c VALUES (10, 1, 1), (11, 2, 2);
CREATE FUNCTION adopt() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  INSERT INTO c VALUES (NEW.id * 100, NEW.id, 0); RETURN NULL; END $$;
CREATE TRIGGER adopt AFTER INSERT ON p FOR EACH ROW EXECUTE FUNCTION adopt();
CREATE FUNCTION weigh() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  UPDATE c SET w = w + 1000 WHERE cid = NEW.cid; RETURN NULL; END $$;
CREATE TRIGGER weigh AFTER UPDATE OF pid ON c FOR EACH ROW EXECUTE FUNCTION weigh();
)sql");
    create("joined", "SELECT p.id, p.name, c.cid, c.w FROM p JOIN c ON c.pid = p.id");
    create("children", "SELECT cid, pid, w FROM c");
    Counters j = counters("joined");
    run("INSERT INTO p VALUES (3, 'c'), (4, 'd')");
    EXPECT_EQ(since("joined", j), "recomputed");
    // The cascade's UPDATE of c fires weigh, whose UPDATE writes c again.
    j = counters("joined");
    const Counters ch = counters("children");
    run("UPDATE p SET id = id + 10 WHERE id IN (1, 3)");
    EXPECT_EQ(db->scalar("SELECT string_agg(cid || ':' || pid || ':' || w, ' ' ORDER BY cid) "
                         "FROM c"),
              "10:11:1001 11:2:2 300:13:1000 400:4:0");
    EXPECT_EQ(since("joined", j), "recomputed");
    EXPECT_EQ(since("children", ch), "recomputed");
    run("UPDATE c SET pid = 2 WHERE cid = 400");
    run("UPDATE p SET name = name || '!'");
}

// A partitioned self-referencing table: the action's UPDATE names the
// partitioned table, whose statement triggers are the ones that fired.
TEST_F(ImmediateCascade, partitioned_self_reference_on_update_cascade) {
    db->exec(
        "CREATE TABLE ps (a int PRIMARY KEY, b int REFERENCES ps (a) ON UPDATE CASCADE, v int)"
        " PARTITION BY RANGE (a);"
        "CREATE TABLE ps_low PARTITION OF ps FOR VALUES FROM (0) TO (10);"
        "CREATE TABLE ps_high PARTITION OF ps FOR VALUES FROM (10) TO (1000);"
        "INSERT INTO ps VALUES (1, NULL, 1), (2, 1, 2), (3, 2, 3), (11, 3, 4)");
    create("ps_rows", "SELECT a, b, v FROM ps");
    create("ps_children", "SELECT b, count(*) AS n FROM ps GROUP BY b");
    const Counters c = counters("ps_rows");
    run("UPDATE ps SET a = a + 20");  // every row moves to ps_high
    EXPECT_EQ(since("ps_rows", c), "recomputed");
    run("UPDATE ps SET a = a - 20 WHERE a < 30");  // back to ps_low, the others follow
}

}  // namespace
}  // namespace pgt::e2e
