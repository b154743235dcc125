// IMMEDIATE stream tables end to end: kept by their source's statements,
// inside the writing transaction, for every kind of statement, in chains,
// for writers without rights on them, and against DIFFERENTIAL twins under
// seeded random DML. Concurrent writers: test/isolation/specs/immediate_*.
// Invariant: every statement that writes a source is followed by the
// oracle on every IMMEDIATE stream table, in the writing session.
#include <libpq-fe.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

#include "cluster.hpp"
#include "eventually.hpp"
#include "fixture.hpp"
#include "property_gen.hpp"

namespace pgt::e2e {
namespace {

// What pgtrickle._immediate_counters(name) says this backend did for a
// stream table: statements applied as a change, and recomputes.
struct Counters {
    long incremental = 0;
    long recomputed = 0;
};

Counters counters_in(Conn& c, const std::string& st) {
    Result r =
        c.exec("SELECT incremental, recomputed FROM pgtrickle._immediate_counters($1)", {st});
    return {std::stol(r.at(0, 0)), std::stol(r.at(0, 1))};
}

// st's columns but the hidden __pgt_* ones, quoted, in order.
std::string user_columns(Conn& c, const std::string& st) {
    return c.scalar(
        "SELECT coalesce(string_agg(quote_ident(attname), ', ' ORDER BY attnum), '') "
        "FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 "
        "AND NOT attisdropped AND attname NOT LIKE '\\_\\_pgt\\_%'",
        {st});
}

// The rows of a and b (their user columns, as text) are the same multiset;
// a failure lists what only one of them has.
::testing::AssertionResult same_rows(Conn& c, const std::string& a, const std::string& b) {
    auto rows = [&](const std::string& st) {
        return "SELECT __pgt_r::text AS r FROM (SELECT " + user_columns(c, st) + " FROM " + st +
               ") __pgt_r";
    };
    Result diff =
        c.exec("(SELECT 'only in " + a + "' AS side, r FROM (" + rows(a) + " EXCEPT ALL " +
               rows(b) + ") x) UNION ALL (SELECT 'only in " + b + "', r FROM (" + rows(b) +
               " EXCEPT ALL " + rows(a) + ") y) ORDER BY 1, 2 LIMIT 50");
    if (diff.size() == 0) {
        return ::testing::AssertionSuccess();
    }
    auto failure = ::testing::AssertionFailure();
    failure << a << " and " << b << " differ:\n";
    for (size_t i = 0; i < diff.size(); i++) {
        failure << "  " << diff.at(i, 0) << ": " << diff.at(i, 1) << "\n";
    }
    return failure;
}

// COPY ... FROM STDIN of `data`, on a connection of its own (the harness's
// Conn speaks no COPY protocol); throws std::runtime_error with the
// server's message.
void copy_from_stdin(const std::string& conninfo, const std::string& copy_sql,
                     const std::string& data) {
    PGconn* c = PQconnectdb(conninfo.c_str());
    std::string error;
    if (PQstatus(c) != CONNECTION_OK) {
        error = PQerrorMessage(c);
    } else {
        PGresult* r = PQexec(c, copy_sql.c_str());
        if (PQresultStatus(r) != PGRES_COPY_IN) {
            error = PQresultErrorMessage(r);
        }
        PQclear(r);
        if (error.empty() && (PQputCopyData(c, data.data(), static_cast<int>(data.size())) != 1 ||
                              PQputCopyEnd(c, nullptr) != 1)) {
            error = PQerrorMessage(c);
        }
        while (PGresult* res = PQgetResult(c)) {
            if (error.empty() && PQresultStatus(res) != PGRES_COMMAND_OK) {
                error = PQresultErrorMessage(res);
            }
            PQclear(res);
        }
    }
    PQfinish(c);
    if (!error.empty()) {
        throw std::runtime_error("COPY FROM STDIN failed: " + error);
    }
}

struct Shape {
    const char* name;
    const char* query;
};

// Every shape the first cut of IMMEDIATE maintains: t has a primary key,
// k none (exact duplicates, NULLs).
const std::vector<Shape> kShapes = {
    {"filtered", "SELECT id, val * 2 AS v2, note FROM t WHERE val > 20 OR note = 'a'"},
    {"bag", "SELECT a, upper(b) AS ub FROM k WHERE a IS DISTINCT FROM 2"},
    {"algebraic",
     "SELECT grp, count(*) AS n, count(val) AS nv, sum(val) AS total, avg(val) AS mean, "
     "min(val) AS lo, max(val) AS hi FROM t GROUP BY grp"},
    {"rescanned",
     "SELECT grp, string_agg(note, ',' ORDER BY note, id) AS notes, bool_and(val > 30) AS big "
     "FROM t GROUP BY grp"},
    {"big_groups",
     "SELECT grp, sum(val) AS total, max(note) AS top FROM t GROUP BY grp HAVING count(*) > 2"},
    {"one_row", "SELECT count(*) AS n, sum(val) AS total, min(note) AS first_note FROM t"},
    {"rolled_up",
     "SELECT grp, note, count(*) AS n, sum(val) AS total FROM t GROUP BY ROLLUP (grp, note)"},
    {"gsets", "SELECT grp, note, count(*) AS n FROM t GROUP BY GROUPING SETS ((grp), (note), ())"},
    {"bag_groups", "SELECT b, count(*) AS n, sum(a) AS total FROM k GROUP BY b"},
};

class Immediate : public DbTest {
protected:
    void SetUp() override {
        DbTest::SetUp();
        db->exec(
            "CREATE TABLE t (id int PRIMARY KEY, grp int, val int, note text);"
            "INSERT INTO t SELECT g, g % 4, g * 10, (ARRAY['a', 'b', 'c'])[g % 3 + 1]"
            " FROM generate_series(1, 12) g;"
            "UPDATE t SET val = NULL WHERE id = 5; UPDATE t SET grp = NULL WHERE id = 12;"
            "CREATE TABLE k (a int, b text);"
            "INSERT INTO k VALUES (1, 'x'), (1, 'x'), (1, 'x'), (2, 'y'), (2, 'y'), (3, NULL),"
            " (3, NULL), (NULL, 'z')");
    }

    void create(const std::string& name, const std::string& query,
                const std::string& mode = "IMMEDIATE") {
        db->exec("SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => $3)",
                 {name, query, mode});
        if (mode == "IMMEDIATE") {
            maintained_.push_back(name);
        }
    }
    void create_shapes() {
        for (const Shape& s : kShapes) {
            create(s.name, s.query);
            EXPECT_EQ(modes(s.name), "IMMEDIATE/IMMEDIATE") << s.name;
        }
        expect_maintained("create");
    }
    void drop(const std::string& name) {
        db->exec("SELECT pgtrickle.drop_stream_table($1)", {name});
        std::erase(maintained_, name);
    }

    // The oracle on every IMMEDIATE stream table, in `conn` (this test's
    // session by default: inside its transaction when one is open).
    void expect_maintained(const std::string& after, Conn* conn = nullptr) {
        Conn& c = conn != nullptr ? *conn : *db;
        for (const std::string& st : maintained_) {
            EXPECT_TRUE(matches_query(c, st)) << "after: " << after;
        }
    }
    // One statement, then the oracle on every IMMEDIATE stream table.
    void run(const std::string& sql) {
        db->exec(sql);
        expect_maintained(sql);
    }

    Counters counters(const std::string& st) { return counters_in(*db, st); }

    // Triggers of pg_trickle's on a table (IMMEDIATE or capture).
    // Triggers of ours on table, but FULL stream tables' change notes.
    long pgt_triggers(const std::string& table) {
        return std::stol(
            db->scalar("SELECT count(*) FROM pg_trigger WHERE tgrelid = $1::regclass "
                       "AND tgname LIKE '%pgt%' AND tgname NOT LIKE 'pgt\\_note\\_%'",
                       {table}));
    }

    // st's rows (user columns) as one sorted string: a snapshot to compare.
    std::string contents(const std::string& st) {
        return db->scalar(
            "SELECT coalesce(string_agg(__pgt_c::text, ' ' ORDER BY __pgt_c::text), '') FROM "
            "(SELECT " +
            user_columns(*db, st) + " FROM " + st + ") __pgt_c");
    }
    std::vector<std::string> all_contents() {
        std::vector<std::string> out;
        for (const std::string& st : maintained_) {
            out.push_back(contents(st));
        }
        return out;
    }

    std::vector<std::string> maintained_;  // the IMMEDIATE stream tables of this test
};

bool mentions(const std::string& message, const std::string& word) {
    return lower(message).find(lower(word)) != std::string::npos;
}

// --- modes ------------------------------------------------------------------

// The catalog says IMMEDIATE; every other mode stops the per-statement
// maintenance (a write leaves the table stale), and switching back makes it
// equal to its query at once, without a refresh.
TEST_F(Immediate, create_and_alter_switch_to_and_from_immediate) {
    create("imm", "SELECT id, val FROM t WHERE val > 30");
    EXPECT_EQ(db->scalar("SELECT refresh_mode FROM pgtrickle.pgt_stream_tables "
                         "WHERE pgt_relid = 'imm'::regclass"),
              "IMMEDIATE");
    EXPECT_EQ(modes("imm"), "IMMEDIATE/IMMEDIATE");
    EXPECT_MATCHES_QUERY(*db, "imm");
    run("INSERT INTO t VALUES (20, 1, 200, 'n')");
    struct Switch {
        const char* mode;
        const char* modes;  // requested/effective once altered
    };
    int bump = 0;
    for (const Switch& s : {Switch{"DIFFERENTIAL", "DIFFERENTIAL/DIFFERENTIAL"},
                            Switch{"FULL", "FULL/FULL"}, Switch{"AUTO", "AUTO/DIFFERENTIAL"}}) {
        SCOPED_TRACE(s.mode);
        alter_mode("imm", s.mode);
        EXPECT_EQ(modes("imm"), s.modes);
        EXPECT_MATCHES_QUERY(*db, "imm");
        db->exec("UPDATE t SET val = val + 1000 WHERE id = 20; INSERT INTO t VALUES (" +
                 std::to_string(30 + bump++) + ", 2, 99, 'w')");
        EXPECT_FALSE(matches_query(*db, "imm")) << "still maintained by statements in " << s.mode;
        refresh("imm");
        EXPECT_MATCHES_QUERY(*db, "imm");
        db->exec("DELETE FROM t WHERE id = 20; INSERT INTO t VALUES (20, 1, 200, 'n')");
        alter_mode("imm", "IMMEDIATE");
        EXPECT_EQ(modes("imm"), "IMMEDIATE/IMMEDIATE");
        EXPECT_MATCHES_QUERY(*db, "imm") << "switching to IMMEDIATE did not bring it up to date";
        run("UPDATE t SET val = val - 1 WHERE id IN (20, 6)");
    }
}

// --- what IMMEDIATE refuses -------------------------------------------------

// What DIFFERENTIAL maintains over several tables (inner and outer joins,
// self-joins, aggregates over joins, EXISTS / IN / scalar subqueries) is
// maintained IMMEDIATE: equal to its query after every statement on either
// table, statements writing both tables included.
TEST_F(Immediate, joins_and_subqueries_are_maintained_after_every_statement) {
    db->exec(
        "CREATE TABLE u (grp int PRIMARY KEY, name text);"
        "INSERT INTO u VALUES (0, 'zero'), (1, 'one'), (2, 'two')");
    const std::vector<std::string> joins = {
        "SELECT t.id, u.name FROM t JOIN u ON u.grp = t.grp",
        "SELECT t.id, u.name FROM t LEFT JOIN u ON u.grp = t.grp",
        "SELECT a.id, b.val FROM t a JOIN t b ON b.id = a.id + 1",
        "SELECT u.name, count(*) AS n, sum(t.val) AS total FROM t JOIN u ON u.grp = t.grp GROUP "
        "BY u.name",
        "SELECT id FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.grp = t.grp)",
        "SELECT id FROM t WHERE grp IN (SELECT grp FROM u)",
        "SELECT id, (SELECT name FROM u WHERE u.grp = t.grp) AS name FROM t",
        "SELECT t.id, u.name, k.b FROM t JOIN u ON u.grp = t.grp JOIN k ON k.a = t.grp",
    };
    for (std::size_t i = 0; i < joins.size(); i++) {
        SCOPED_TRACE(joins[i]);
        create("j" + std::to_string(i), joins[i]);
        EXPECT_EQ(modes("j" + std::to_string(i)), "IMMEDIATE/IMMEDIATE");
    }
    expect_maintained("create");
    for (const char* sql : {
             "UPDATE t SET grp = (grp + 1) % 4 WHERE id % 3 = 0",
             "INSERT INTO u VALUES (3, 'three')",
             "UPDATE u SET name = name || '!' WHERE grp < 2",
             "DELETE FROM t WHERE id = 4",
             "INSERT INTO t VALUES (40, 3, 400, 'a'), (41, 0, 410, 'b')",
             "DELETE FROM u WHERE grp = 0",
             "INSERT INTO k VALUES (3, 'w'), (0, 'v')",
             "WITH a AS (UPDATE u SET name = 'uno' WHERE grp = 1 RETURNING 1) "
             "UPDATE t SET val = val + 1 WHERE grp = 1",
             "INSERT INTO u VALUES (0, 'cero') ON CONFLICT (grp) DO UPDATE SET name = "
             "excluded.name",
             "BEGIN; UPDATE t SET val = 0 WHERE id < 5; SAVEPOINT s; DELETE FROM u; "
             "ROLLBACK TO s; UPDATE u SET grp = grp + 10 WHERE grp = 3; COMMIT",
             "TRUNCATE k",
         }) {
        run(sql);
    }
    // Each table read has its five triggers: health_check and repair see
    // a whole join (and a three-table one) as healthy.
    EXPECT_EQ(db->scalar("SELECT ok::text || ' ' || detail FROM pgtrickle.health_check() WHERE "
                         "check_name = 'immediate_maintenance'"),
              "true every IMMEDIATE stream table's triggers fire as installed");
    EXPECT_EQ(db->scalar("SELECT string_agg(found, ',') FROM pgtrickle.repair_stream_table('j7')"),
              "healthy");
    // Altered from DIFFERENTIAL, and back.
    create("joined", "SELECT t.id, u.name FROM t JOIN u ON u.grp = t.grp", "DIFFERENTIAL");
    alter_mode("joined", "IMMEDIATE");
    maintained_.push_back("joined");
    run("UPDATE u SET name = 'x' WHERE grp = 2");
}

// An UPDATE of columns a join does not read changes nothing it shows
// (seed EC-08): no program runs, so the other table is not read at all in
// the writing transaction; one that does change a read column reads it.
TEST_F(Immediate, join_update_of_unread_columns_reads_nothing) {
    db->exec(
        "CREATE TABLE u (grp int PRIMARY KEY, name text);"
        "INSERT INTO u VALUES (0, 'zero'), (1, 'one'), (2, 'two')");
    create("j", "SELECT t.id, u.name, t.val FROM t JOIN u ON u.grp = t.grp");
    auto u_reads = [&] {
        return std::stol(
            db->scalar("SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM "
                       "pg_stat_xact_user_tables WHERE relid = 'u'::regclass"));
    };
    db->exec("BEGIN");
    const long before = u_reads();  // counts not yet reported are included
    db->exec("UPDATE t SET note = note || '?'");
    EXPECT_EQ(u_reads(), before);
    db->exec("UPDATE t SET val = val + 1 WHERE id < 4");
    EXPECT_GT(u_reads(), before);
    expect_maintained("updates of t inside one transaction");
    db->exec("COMMIT");
    expect_maintained("commit");
}

// A join whose rows each derive from one row of t, by t's key: a statement
// writing only t recomputes the rows of the keys it touched from its
// transition tables alone, and never reads t again (the old way looked the
// keys up in t). Keys that change, rows that leave or join the join, upserts,
// deletes, outer joins and a three-table join stay exact; a write to the
// other table takes the general program.
TEST_F(Immediate, join_keyed_by_one_table_recomputes_from_the_statement_alone) {
    db->exec(
        "CREATE TABLE u (grp int PRIMARY KEY, name text);"
        "INSERT INTO u VALUES (0, 'zero'), (1, 'one'), (2, 'two');"
        "CREATE TABLE w (grp int PRIMARY KEY, tag text);"
        "INSERT INTO w VALUES (1, 'w1'), (2, 'w2'), (3, 'w3')");
    create("inner_join", "SELECT t.id, u.name, t.val FROM t JOIN u ON u.grp = t.grp");
    create("left_join",
           "SELECT t.id, t.val * 2 AS v2, u.name FROM t LEFT JOIN u ON u.grp = t.grp WHERE "
           "t.note <> 'c'");
    create("three",
           "SELECT t.id, u.name, w.tag FROM t JOIN u ON u.grp = t.grp JOIN w ON w.grp = t.grp");
    expect_maintained("create");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_immediate WHERE program ? 'key_rows'"),
              "3");
    auto t_reads = [&] {
        return std::stol(
            db->scalar("SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM "
                       "pg_stat_xact_user_tables WHERE relid = 't'::regclass"));
    };
    db->exec("BEGIN");
    const long before = t_reads();
    db->exec("UPDATE t SET val = val + 1 WHERE id = 3");
    EXPECT_EQ(t_reads(), before + 1);  // the UPDATE's own scan
    expect_maintained("an update of t, inside its transaction");
    db->exec("COMMIT");
    for (const char* sql : {
             "UPDATE t SET id = id + 100 WHERE id IN (1, 2)",
             "UPDATE t SET grp = 9 WHERE id = 6",
             "UPDATE t SET grp = 1 WHERE id = 6",
             "UPDATE t SET note = 'c' WHERE id = 7",
             "INSERT INTO t VALUES (50, 2, 5, 'a'), (51, 7, 6, 'b')",
             "INSERT INTO t VALUES (50, 3, 8, 'b') ON CONFLICT (id) DO UPDATE SET grp = "
             "excluded.grp, val = excluded.val",
             "DELETE FROM t WHERE id IN (4, 50)",
             "BEGIN; UPDATE t SET val = 0 WHERE id < 10; SAVEPOINT s; DELETE FROM t; "
             "ROLLBACK TO s; UPDATE t SET grp = 2 WHERE id = 8; COMMIT",
             "UPDATE u SET name = name || '!' WHERE grp = 2",
             "WITH a AS (UPDATE w SET tag = 'x' WHERE grp = 3 RETURNING 1) "
             "UPDATE t SET val = val + 1 WHERE grp = 3",
         }) {
        run(sql);
    }
}

// The same recompute at any size: a statement of 30,000 rows (60,000
// transition rows) reads t no more than the statement itself does, and
// rows that stay, leave the join, join it, change key or go are exact.
TEST_F(Immediate, join_keyed_by_one_table_recomputes_large_statements_alone) {
    db->exec(
        "CREATE TABLE u (grp int PRIMARY KEY, name text);"
        "INSERT INTO u SELECT g, 'n' || g FROM generate_series(0, 9) g;"
        "INSERT INTO t SELECT g, g % 12, g, 'a' FROM generate_series(100, 30099) g");
    create("inner_join", "SELECT t.id, u.name, t.val FROM t JOIN u ON u.grp = t.grp");
    create("left_join", "SELECT t.id, t.val, u.name FROM t LEFT JOIN u ON u.grp = t.grp");
    expect_maintained("create");
    auto t_reads = [&] {
        return std::stol(
            db->scalar("SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM "
                       "pg_stat_xact_user_tables WHERE relid = 't'::regclass"));
    };
    const Counters inner = counters("inner_join");
    db->exec("BEGIN");
    const long before = t_reads();
    db->exec(
        "UPDATE t SET val = val + 1, grp = CASE WHEN id % 5 = 0 THEN (grp + 3) % 12 ELSE grp "
        "END WHERE id >= 100");
    EXPECT_EQ(t_reads(), before + 1);  // the UPDATE's own scan
    expect_maintained("a 30,000-row update of t, inside its transaction");
    db->exec("COMMIT");
    EXPECT_EQ(counters("inner_join").incremental, inner.incremental + 1);
    EXPECT_EQ(counters("inner_join").recomputed, inner.recomputed);
    for (const char* sql : {
             "UPDATE t SET id = id + 100000 WHERE id BETWEEN 100 AND 20099",
             "DELETE FROM t WHERE id % 3 = 0",
             "INSERT INTO t SELECT g, g % 12, 0, 'b' FROM generate_series(200000, 224999) g",
         }) {
        run(sql);
    }
    EXPECT_EQ(counters("inner_join").recomputed, inner.recomputed);
}

// A partitioned source: triggers on it and on every partition below it, as
// a statement fires the statement triggers of the table it names only;
// a partition whose columns are in another order; partitions created,
// attached, detached and dropped later; TRUNCATE of one partition and of
// the whole table.
TEST_F(Immediate, partitioned_sources_are_maintained_through_every_partition) {
    db->exec(
        "CREATE TABLE pt (id int, grp int, val int, PRIMARY KEY (id, grp)) PARTITION BY LIST "
        "(grp);"
        "CREATE TABLE pt0 PARTITION OF pt FOR VALUES IN (0);"
        "CREATE TABLE pt1 (val int, x int, id int NOT NULL, grp int NOT NULL);"
        "ALTER TABLE pt1 DROP COLUMN x; ALTER TABLE pt ATTACH PARTITION pt1 FOR VALUES IN (1);"
        "CREATE TABLE pt2 PARTITION OF pt FOR VALUES IN (2, 3) PARTITION BY LIST (grp);"
        "CREATE TABLE pt2a PARTITION OF pt2 FOR VALUES IN (2);"
        "CREATE TABLE pt2b PARTITION OF pt2 FOR VALUES IN (3);"
        "INSERT INTO pt SELECT g, g % 4, g FROM generate_series(1, 40) g;"
        "CREATE TABLE names (grp int PRIMARY KEY, name text);"
        "INSERT INTO names SELECT g, 'n' || g FROM generate_series(0, 5) g");
    create("pt_sum", "SELECT grp, sum(val) AS s, count(*) AS c FROM pt GROUP BY grp");
    create("pt_rows", "SELECT id, grp, val FROM pt WHERE val > 3");
    create("pt_join", "SELECT pt.id, pt.grp, pt.val, names.name FROM pt JOIN names USING (grp)");
    expect_maintained("create");
    auto healthy = [&] {
        return db->scalar(
            "SELECT ok::text || ' ' || detail FROM pgtrickle.health_check() WHERE check_name = "
            "'immediate_maintenance'");
    };
    EXPECT_EQ(healthy(), "true every IMMEDIATE stream table's triggers fire as installed");
    const Counters before = counters("pt_sum");
    for (const char* sql : {
             "INSERT INTO pt VALUES (100, 1, 7), (101, 2, 8)",
             "INSERT INTO pt1 (id, grp, val) VALUES (102, 1, 9)",
             "UPDATE pt1 SET val = val + 1 WHERE id < 20",
             "UPDATE pt SET grp = 3 WHERE id = 5",
             "UPDATE pt2a SET val = 0",
             "DELETE FROM pt2b WHERE id % 2 = 0",
             "DELETE FROM pt WHERE id = 4",
             "INSERT INTO pt VALUES (5, 3, 1), (6, 2, 2) ON CONFLICT (id, grp) DO UPDATE SET val "
             "= excluded.val",
             "UPDATE names SET name = 'x' WHERE grp = 1",
             "BEGIN; UPDATE pt1 SET val = 5; SAVEPOINT a; DELETE FROM pt2a; ROLLBACK TO a; "
             "INSERT INTO pt2 VALUES (300, 2, 1); COMMIT",
         }) {
        run(sql);
    }
    const Counters after = counters("pt_sum");
    EXPECT_EQ(after.incremental - before.incremental, 11);  // every statement on pt
    EXPECT_EQ(after.recomputed, before.recomputed);
    for (const char* sql : {
             "TRUNCATE pt0",
             "CREATE TABLE pt4 PARTITION OF pt FOR VALUES IN (4)",
             "INSERT INTO pt4 VALUES (200, 4, 50)",
             "UPDATE pt4 SET val = 51",
             "ALTER TABLE pt DETACH PARTITION pt1",
             "UPDATE pt1 SET val = 1000",
             "ALTER TABLE pt ATTACH PARTITION pt1 FOR VALUES IN (1)",
             "UPDATE pt1 SET val = val - 1 WHERE id = 1",
             "DROP TABLE pt4",
             "INSERT INTO pt VALUES (400, 2, 4)",
             "TRUNCATE pt",
             "INSERT INTO pt SELECT g, g % 4, g FROM generate_series(1, 10) g",
         }) {
        run(sql);
        EXPECT_EQ(healthy(), "true every IMMEDIATE stream table's triggers fire as installed")
            << sql;
    }
    EXPECT_EQ(modes("pt_sum"), "IMMEDIATE/IMMEDIATE");
    EXPECT_EQ(modes("pt_join"), "IMMEDIATE/IMMEDIATE");
}

// A foreign partition takes no trigger with transition tables: a
// partitioned source with one is refused, and creating or attaching one
// under a source of an IMMEDIATE stream table fails, changing nothing.
TEST_F(Immediate, a_foreign_partition_is_refused_with_0a000) {
    db->exec(
        "CREATE FOREIGN DATA WRAPPER pgt_nowhere; CREATE SERVER pgt_far FOREIGN DATA WRAPPER "
        "pgt_nowhere;"
        "CREATE TABLE fp (id int, grp int) PARTITION BY LIST (grp);"
        "CREATE TABLE fp0 PARTITION OF fp FOR VALUES IN (0);"
        "INSERT INTO fp VALUES (1, 0), (2, 0)");
    create("fp_rows", "SELECT id, grp FROM fp");
    const std::string before = state();
    for (const char* ddl :
         {"CREATE FOREIGN TABLE fp1 PARTITION OF fp FOR VALUES IN (1) SERVER pgt_far",
          "CREATE FOREIGN TABLE loose (id int, grp int) SERVER pgt_far; ALTER TABLE fp ATTACH "
          "PARTITION loose FOR VALUES IN (2)"}) {
        SqlError e = db->error_of(ddl);
        EXPECT_EQ(e.sqlstate, "0A000") << ddl << ": " << e.message;
        EXPECT_TRUE(mentions(e.message, "foreign")) << e.message;
        EXPECT_EQ(state(), before) << ddl;
    }
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pg_inherits WHERE inhparent = 'fp'::regclass"), "1");
    run("INSERT INTO fp VALUES (3, 0)");
    drop("fp_rows");
    db->exec("CREATE FOREIGN TABLE fp1 PARTITION OF fp FOR VALUES IN (1) SERVER pgt_far");
    SqlError e = db->error_of(
        "SELECT pgtrickle.create_stream_table('again', 'SELECT id, grp FROM fp', refresh_mode => "
        "'IMMEDIATE')");
    EXPECT_EQ(e.sqlstate, "0A000") << e.message;
}

// Dropping one stream table's triggers leaves those of another whose id
// starts with its id alone (pgt_immediate_3_ins, pgt_immediate_32_ins).
TEST_F(Immediate, dropping_a_stream_table_leaves_the_triggers_of_another_alone) {
    db->exec(
        "CREATE TABLE u (grp int PRIMARY KEY, name text);"
        "INSERT INTO u VALUES (0, 'zero'), (1, 'one'), (2, 'two')");
    create("a", "SELECT id, val FROM t WHERE val > 10");
    const std::string id = db->scalar(
        "SELECT pgt_id FROM pgtrickle.pgt_stream_tables WHERE pgt_relid = 'a'::regclass");
    db->exec("SELECT setval(pg_get_serial_sequence('pgtrickle.pgt_stream_tables', 'pgt_id'), " +
             id + "1)");
    create("b", "SELECT t.id, u.name FROM t JOIN u ON u.grp = t.grp");
    create("c", "SELECT grp, count(*) AS n FROM t GROUP BY grp");
    EXPECT_EQ(db->scalar("SELECT string_agg(pgt_id::text, ',' ORDER BY pgt_id) FROM "
                         "pgtrickle.pgt_stream_tables"),
              id + "," + id + "2," + id + "3");
    drop("a");
    EXPECT_EQ(db->scalar("SELECT ok::text FROM pgtrickle.health_check() WHERE check_name = "
                         "'immediate_maintenance'"),
              "true");
    run("UPDATE t SET grp = 2, val = val + 1 WHERE id < 5");
    run("UPDATE u SET name = 'uno' WHERE grp = 1");
}

// Each statement's program is planned for the size of its transition
// tables: after a statement over every group, whose plan reads the whole
// stream table, a single-row statement in the same backend probes the one
// or two groups it touched instead of running that plan.
TEST_F(Immediate, a_bulk_statement_plan_does_not_serve_single_row_statements) {
    db->exec(
        "CREATE TABLE big (id int PRIMARY KEY, grp int NOT NULL, val int NOT NULL);"
        "INSERT INTO big SELECT g, g % 5000, g FROM generate_series(1, 50000) g; ANALYZE big");
    create("by_grp", "SELECT grp, sum(val) AS s, count(*) AS c FROM big GROUP BY grp");
    create("big_rows", "SELECT id, val FROM big WHERE grp < 2500");
    auto st_seq_scans = [&] {
        return std::stol(
            db->scalar("SELECT sum(coalesce(seq_scan, 0)) FROM pg_stat_xact_user_tables WHERE "
                       "relid IN ('by_grp'::regclass, 'big_rows'::regclass)"));
    };
    const Counters before = counters("by_grp");
    run("UPDATE big SET val = val + 1");  // 50,000 rows in every group
    for (const char* sql :
         {"UPDATE big SET val = val + 1 WHERE id = 7", "UPDATE big SET grp = 8 WHERE id = 9",
          "DELETE FROM big WHERE id = 11", "INSERT INTO big VALUES (60001, 3, 1)"}) {
        db->exec("BEGIN");
        const long scans = st_seq_scans();
        db->exec(sql);
        EXPECT_EQ(st_seq_scans(), scans) << sql << ": the stream tables were read whole";
        expect_maintained(sql);
        db->exec("COMMIT");
    }
    const Counters after = counters("by_grp");
    EXPECT_EQ(after.incremental - before.incremental, 5);
    EXPECT_EQ(after.recomputed, before.recomputed);
}

// Writers of a join's table share its lock ('k') only when every row of
// the stream table derives from one row of that table: its key is the
// stream table's and nothing else in the query reads it (not a subquery
// over the same table, not a self-join); otherwise one writer at a time.
TEST_F(Immediate, join_writers_share_the_lock_only_when_rows_derive_from_one_row) {
    db->exec(
        "CREATE TABLE u (grp int PRIMARY KEY, name text);"
        "INSERT INTO u VALUES (0, 'zero'), (1, 'one'), (2, 'two')");
    auto locking = [&](const std::string& st) {
        return db->scalar(
            "SELECT string_agg(DISTINCT locking::text || coalesce('/' || "
            "shared_relid::regclass::text, "
            "''), ',') FROM pgtrickle.pgt_immediate i JOIN pgtrickle.pgt_stream_tables s USING "
            "(pgt_id) WHERE s.pgt_relid = $1::regclass",
            {st});
    };
    create("keyed", "SELECT t.id, u.name FROM t JOIN u ON u.grp = t.grp");
    create("keyed_semi",
           "SELECT id, val FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.grp = t.grp)");
    create("self_semi",
           "SELECT id, val FROM t WHERE EXISTS (SELECT 1 FROM t t2 WHERE t2.grp = t.grp AND "
           "t2.id <> t.id)");
    create("counted", "SELECT u.name, t.val FROM t JOIN u ON u.grp = t.grp");
    create("grouped",
           "SELECT u.name, count(*) AS n FROM t JOIN u ON u.grp = t.grp GROUP BY u.name");
    for (const char* st : {"keyed", "keyed_semi", "self_semi", "counted", "grouped"}) {
        EXPECT_EQ(modes(st), "IMMEDIATE/IMMEDIATE") << st;
    }
    EXPECT_EQ(locking("keyed"), "k/t");
    EXPECT_EQ(locking("keyed_semi"), "k/t");
    EXPECT_EQ(locking("self_semi"), "t");
    EXPECT_EQ(locking("counted"), "t");
    EXPECT_EQ(locking("grouped"), "t");
    run("UPDATE t SET grp = (grp + 1) % 3 WHERE id < 6");
    run("INSERT INTO t VALUES (50, 1, 5, 'x')");
    run("UPDATE u SET name = 'uno' WHERE grp = 1");
}

// What no mode maintains incrementally here is refused with 0A000 naming
// IMMEDIATE, and nothing is left behind.
TEST_F(Immediate, shapes_beyond_the_engine_are_rejected_with_0a000_naming_immediate) {
    db->exec(
        "CREATE TABLE u (grp int PRIMARY KEY, name text);"
        "INSERT INTO u VALUES (0, 'zero'), (1, 'one'), (2, 'two')");
    const std::vector<std::string> rejected = {
        "SELECT id FROM t UNION ALL SELECT count(*)::int FROM u",
        "SELECT id FROM t UNION SELECT id + 100 FROM t",
        "SELECT id FROM t EXCEPT SELECT grp FROM u",
        "SELECT id, row_number() OVER (ORDER BY id) AS rn FROM t",
        "SELECT id, val FROM t ORDER BY id LIMIT 3",
        "WITH RECURSIVE r(n) AS (SELECT min(id) FROM t UNION ALL SELECT n + 1 FROM r WHERE n < "
        "5) SELECT n FROM r",
    };
    for (const std::string& q : rejected) {
        SCOPED_TRACE(q);
        const std::string before = state();
        SqlError e = db->error_of("SELECT pgtrickle.create_stream_table('x', $q$" + q +
                                  "$q$, refresh_mode => 'IMMEDIATE')");
        EXPECT_EQ(e.sqlstate, "0A000") << e.message;
        EXPECT_TRUE(mentions(e.message, "IMMEDIATE")) << e.message;
        EXPECT_EQ(state(), before) << "a rejected create left objects behind";
    }
    // Volatile functions: refused as in every other mode, by name.
    for (const Shape& v :
         {Shape{"random", "SELECT id, random() AS r FROM t"},
          Shape{"clock_timestamp", "SELECT id FROM t WHERE clock_timestamp() > '2000-01-01'"}}) {
        SCOPED_TRACE(v.query);
        const std::string before = state();
        SqlError e = db->error_of(std::string("SELECT pgtrickle.create_stream_table('x', $q$") +
                                  v.query + "$q$, refresh_mode => 'IMMEDIATE')");
        EXPECT_EQ(e.sqlstate, "0A000") << e.message;
        EXPECT_TRUE(mentions(e.message, v.name)) << e.message;
        EXPECT_EQ(state(), before);
    }
    // A partition as the source: statements on its partitioned table
    // would not reach it.
    db->exec(
        "CREATE TABLE p (id int, v int) PARTITION BY RANGE (id);"
        "CREATE TABLE p1 PARTITION OF p FOR VALUES FROM (0) TO (100)");
    SqlError e = db->error_of(
        "SELECT pgtrickle.create_stream_table('x', 'SELECT id, v FROM p1', refresh_mode => "
        "'IMMEDIATE')");
    EXPECT_EQ(e.sqlstate, "0A000") << e.message;
    EXPECT_TRUE(mentions(e.message, "partition")) << e.message;
    // Altering into an unsupported combination changes nothing.
    create("single", "SELECT id, val FROM t WHERE val > 10");
    e = db->error_of(
        "SELECT pgtrickle.alter_stream_table('single', query => 'SELECT id, val FROM t UNION "
        "SELECT grp, grp FROM u')");
    EXPECT_EQ(e.sqlstate, "0A000");
    EXPECT_TRUE(mentions(e.message, "IMMEDIATE")) << e.message;
    EXPECT_EQ(modes("single"), "IMMEDIATE/IMMEDIATE");
    run("UPDATE t SET val = val + 5 WHERE id < 4");
}

// --- statements -------------------------------------------------------------

TEST_F(Immediate, every_shape_matches_after_each_multi_row_statement) {
    create_shapes();
    for (const char* sql : {
             "INSERT INTO t VALUES (13, 1, 5, 'a'), (14, 1, NULL, 'b'), (15, 7, 70, NULL),"
             " (16, NULL, 1, 'c')",
             "UPDATE t SET val = val + 1 WHERE grp = 1",
             "UPDATE t SET grp = (grp + 1) % 4 WHERE id % 3 = 0",  // rows move between groups
             "UPDATE t SET note = 'z', val = NULL WHERE id IN (2, 7)",
             "DELETE FROM t WHERE id IN (1, 4, 15)",
             "DELETE FROM t WHERE grp = 2",                                         // a group goes
             "INSERT INTO t SELECT g, 2, g, 'n' FROM generate_series(100, 140) g",  // and is back
             "UPDATE t SET grp = NULL WHERE id BETWEEN 100 AND 110",  // into the NULL group
             "DELETE FROM t",  // the aggregate without GROUP BY keeps its one row
             "INSERT INTO t VALUES (1, 1, 1, 'a')",
             "INSERT INTO k VALUES (1, 'x'), (1, 'x'), (4, 'w'), (NULL, NULL)",
             "DELETE FROM k WHERE ctid = (SELECT ctid FROM k WHERE a = 1 LIMIT 1)",
             "UPDATE k SET b = 'q' WHERE ctid = (SELECT ctid FROM k WHERE a = 2 LIMIT 1)",
             "UPDATE k SET a = 1, b = 'x' WHERE a = 3",  // two rows turn into duplicates
             "DELETE FROM k WHERE a = 1",                // every duplicate at once
             "UPDATE k SET b = NULL",
         }) {
        run(sql);
    }
}

// Key changes, including keys that trade places within one statement (the
// key is checked at the statement's end), and updates of columns no query
// reads.
TEST_F(Immediate, primary_key_updates_and_updates_of_unread_columns) {
    db->exec(
        "CREATE TABLE sh (id int PRIMARY KEY DEFERRABLE INITIALLY IMMEDIATE, grp int, val int);"
        "INSERT INTO sh SELECT g, g % 3, g FROM generate_series(1, 10) g");
    create("shifted", "SELECT id, val FROM sh WHERE val > 2");
    create("key_sums", "SELECT grp, count(*) AS n, sum(id) AS ids FROM sh GROUP BY grp");
    run("UPDATE sh SET id = id + 1");
    run("UPDATE sh SET id = CASE WHEN id % 2 = 0 THEN id + 1 ELSE id - 1 END");  // pairs swap
    run("UPDATE sh SET id = id * 10, val = val + 1 WHERE grp = 1");
    run("UPDATE t SET id = id + 100");
    run("UPDATE t SET id = id - 99 WHERE id % 2 = 0");
    create("unread_rows", "SELECT id, val FROM t WHERE grp = 1");
    create("unread_sums", "SELECT grp, sum(val) AS total FROM t GROUP BY grp");
    run("UPDATE t SET note = note || '!'");  // neither query reads note
    run("UPDATE t SET note = NULL WHERE grp = 1");
    run("UPDATE t SET val = val, grp = grp");  // read columns, left as they were
}

// ON CONFLICT DO UPDATE's inserted and updated rows are one statement's
// change, applied (not recomputed); DO NOTHING keeps the existing rows.
TEST_F(Immediate, insert_on_conflict_do_update_and_do_nothing) {
    create_shapes();
    const Counters before = counters("algebraic");
    run("INSERT INTO t VALUES (1, 3, 111, 'u'), (50, 1, 5, 'new'), (2, 0, NULL, 'v') "
        "ON CONFLICT (id) DO UPDATE SET grp = EXCLUDED.grp, val = EXCLUDED.val, "
        "note = EXCLUDED.note");
    const Counters after = counters("algebraic");
    EXPECT_GE(after.incremental, before.incremental + 1);
    EXPECT_EQ(after.recomputed, before.recomputed) << "ON CONFLICT DO UPDATE was recomputed";
    run("INSERT INTO t VALUES (3, 9, 9, 'no'), (51, 2, 7, 'ins') ON CONFLICT (id) DO NOTHING");
    run("INSERT INTO t VALUES (4, 1, 1, 'x') ON CONFLICT (id) DO UPDATE SET val = t.val + 1 "
        "WHERE t.val > 1000");  // a conflict the WHERE leaves alone
    run("INSERT INTO t SELECT g, g % 3, g, 'up' FROM generate_series(8, 20) g "
        "ON CONFLICT (id) DO UPDATE SET val = t.val + EXCLUDED.val");
    EXPECT_EQ(counters("algebraic").recomputed, before.recomputed);
}

TEST_F(Immediate, merge_applies_its_matched_and_not_matched_actions) {
    create_shapes();
    run("MERGE INTO t USING (VALUES (1, 2, 15, 'm'), (3, NULL, NULL, 'd'), (60, 1, 6, 'i'),"
        " (61, NULL, 7, 'i')) AS v(id, grp, val, note) ON t.id = v.id"
        " WHEN MATCHED AND v.val IS NULL THEN DELETE"
        " WHEN MATCHED THEN UPDATE SET grp = v.grp, val = v.val, note = v.note"
        " WHEN NOT MATCHED THEN INSERT VALUES (v.id, v.grp, v.val, v.note)");
    run("MERGE INTO t USING (SELECT g AS id FROM generate_series(5, 70, 5) g) v ON t.id = v.id"
        " WHEN MATCHED THEN UPDATE SET val = coalesce(t.val, 0) + 1"
        " WHEN NOT MATCHED THEN DO NOTHING");
    run("MERGE INTO k USING (VALUES (1, 'x'), (7, 'n')) AS v(a, b) ON k.a = v.a"
        " WHEN MATCHED THEN UPDATE SET b = 'merged'"
        " WHEN NOT MATCHED THEN INSERT VALUES (v.a, v.b)");
}

// COPY FROM STDIN (on a connection of its own), COPY FROM PROGRAM (the
// same CopyFrom path, here inside a transaction) and INSERT ... SELECT.
TEST_F(Immediate, bulk_loads_by_copy_and_insert_select) {
    create_shapes();
    copy_from_stdin(conninfo(), "COPY t (id, grp, val, note) FROM STDIN (FORMAT csv)",
                    "300,1,3,a\n301,1,,b\n302,,4,\n303,9,5,c\n");
    copy_from_stdin(conninfo(), "COPY k FROM STDIN (FORMAT csv)", "1,x\n1,x\n,\n8,w\n");
    expect_maintained("COPY FROM STDIN");
    db->exec("BEGIN");
    run("COPY t (id, grp, val, note) FROM PROGRAM 'seq -f \"%g,2,7,c\" 200 299' "
        "WITH (FORMAT csv)");
    run("COPY k FROM PROGRAM 'yes 5,v | head -n 40' WITH (FORMAT csv)");
    run("COMMIT");
    run("INSERT INTO t SELECT g, g % 5, g, 'bulk' FROM generate_series(1000, 1999) g");
    run("INSERT INTO k SELECT g % 3, 'x' FROM generate_series(1, 300) g");
    run("DELETE FROM t WHERE id >= 1000 AND id % 2 = 0");
}

// TRUNCATE recomputes (inside the transaction: the rows written after it
// are there too) and a rollback brings back the rows it removed.
TEST_F(Immediate, truncate_recomputes_inside_the_transaction) {
    create_shapes();
    const std::vector<std::string> committed = all_contents();
    const Counters c0 = counters("algebraic");
    db->exec("BEGIN");
    run("INSERT INTO t VALUES (30, 1, 300, 'x')");
    const Counters c1 = counters("algebraic");
    EXPECT_EQ(c1.incremental, c0.incremental + 1);
    EXPECT_EQ(c1.recomputed, c0.recomputed);
    run("TRUNCATE t");
    const Counters c2 = counters("algebraic");
    EXPECT_EQ(c2.recomputed, c1.recomputed + 1);
    EXPECT_EQ(c2.incremental, c1.incremental);
    EXPECT_EQ(count("SELECT * FROM one_row WHERE n = 0"), 1);
    run("INSERT INTO t VALUES (1, 1, 10, 'a'), (2, NULL, NULL, NULL)");
    run("ROLLBACK");
    EXPECT_EQ(all_contents(), committed);
    run("TRUNCATE t, k");
    run("INSERT INTO t VALUES (5, 2, 50, 'e')");
    run("INSERT INTO k VALUES (1, 'x'), (1, 'x')");
}

// --- transactions -----------------------------------------------------------

// Inside the writing transaction its writes are visible to it (another
// session sees the committed state, and that agrees with its query too);
// ROLLBACK TO SAVEPOINT undoes exactly the statements after the savepoint.
TEST_F(Immediate, writes_are_visible_to_their_transaction_and_undone_by_rollback) {
    create_shapes();
    Conn other = connect_db();
    const std::vector<std::string> committed = all_contents();
    db->exec("BEGIN");
    run("INSERT INTO t VALUES (20, 1, 5, 'in'), (21, 2, 6, 'in')");
    run("UPDATE t SET grp = 3 WHERE id IN (1, 2)");
    expect_maintained("the other session, while the writer is open", &other);
    db->exec("SAVEPOINT a");
    const std::vector<std::string> at_a = all_contents();
    run("DELETE FROM t WHERE grp = 3");
    run("UPDATE t SET val = NULL WHERE id > 5");
    run("INSERT INTO k VALUES (2, 'y'), (9, 'q')");
    run("ROLLBACK TO SAVEPOINT a");
    EXPECT_EQ(all_contents(), at_a);
    run("SAVEPOINT b");
    run("INSERT INTO t VALUES (22, 0, 7, 'b')");
    run("SAVEPOINT c");
    run("DELETE FROM t WHERE id = 22");
    run("RELEASE SAVEPOINT c");
    run("UPDATE t SET note = 'b2' WHERE grp = 0");
    run("ROLLBACK TO SAVEPOINT b");
    EXPECT_EQ(all_contents(), at_a);
    run("DELETE FROM k WHERE a = 1");
    EXPECT_EQ(other.scalar("SELECT count(*) FROM t WHERE id = 20"), "0");
    run("COMMIT");
    const std::vector<std::string> after_commit = all_contents();
    expect_maintained("the other session, after the commit", &other);
    EXPECT_EQ(other.scalar("SELECT count(*) FROM t WHERE id = 20"), "1");
    EXPECT_NE(after_commit, committed);
    db->exec("BEGIN");
    run("DELETE FROM t");
    run("INSERT INTO t VALUES (1, 1, 1, 'only')");
    run("TRUNCATE k");
    run("ROLLBACK");
    EXPECT_EQ(all_contents(), after_commit);
}

// A user AFTER ROW trigger writes the row its statement just wrote: the
// inner statement runs while the outer one is still open, so the stream
// table is recomputed when the outer one ends, and equals its query then.
TEST_F(Immediate, user_trigger_writing_the_row_again_recomputes_at_the_end) {
    create_shapes();
    db->exec(
        "CREATE FUNCTION bump() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        "  UPDATE t SET val = coalesce(NEW.val, 0) + 1000 WHERE id = NEW.id; RETURN NULL;"
        " END $$;"
        "CREATE TRIGGER bump AFTER INSERT OR UPDATE OF grp ON t FOR EACH ROW"
        " WHEN (NEW.val IS NULL OR NEW.val < 1000) EXECUTE FUNCTION bump()");
    const Counters c0 = counters("algebraic");
    run("INSERT INTO t VALUES (40, 1, 4, 'a'), (41, 2, NULL, 'b')");
    EXPECT_EQ(db->scalar("SELECT string_agg(val::text, ',' ORDER BY id) FROM t WHERE id >= 40"),
              "1004,1000")
        << "the user trigger did not run";
    const Counters c1 = counters("algebraic");
    EXPECT_GE(c1.recomputed, c0.recomputed + 1) << "the row touched twice was not recomputed";
    run("UPDATE t SET grp = 3 WHERE id IN (1, 2)");
    EXPECT_GE(counters("algebraic").recomputed, c1.recomputed + 1);
    const Counters c2 = counters("algebraic");
    run("UPDATE t SET note = 'n' WHERE id = 3");  // not a grp update: the trigger stays quiet
    EXPECT_EQ(counters("algebraic").recomputed, c2.recomputed);
    EXPECT_EQ(counters("algebraic").incremental, c2.incremental + 1);
    db->exec("BEGIN");
    run("SAVEPOINT s");
    run("INSERT INTO t VALUES (42, 0, 1, 'c')");
    run("ROLLBACK TO SAVEPOINT s");
    run("UPDATE t SET grp = 0 WHERE id = 4");
    run("COMMIT");
}

// A statement that fails inside a plpgsql EXCEPTION block is undone with
// its subtransaction, maintenance included; so is a statement that
// succeeded (and was maintained) before the block raised.
TEST_F(Immediate, statement_failing_in_a_caught_plpgsql_block_leaves_no_trace) {
    create_shapes();
    db->exec(R"sql(
CREATE FUNCTION try_write() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO t VALUES (500, 1, 5, 'kept');
  BEGIN
    INSERT INTO t VALUES (501, 1, 6, 'undone');
    UPDATE t SET val = val + 1 WHERE grp = 1;
    INSERT INTO k VALUES (1, 'undone');
    INSERT INTO t VALUES (502, 2, 7, 'undone'), (1, 0, 0, 'duplicate key');
  EXCEPTION WHEN unique_violation THEN
    RETURN 'caught';
  END;
  RETURN 'not caught';
END $$)sql");
    EXPECT_EQ(db->scalar("SELECT try_write()"), "caught");
    expect_maintained("SELECT try_write()");
    EXPECT_EQ(count("SELECT * FROM t WHERE id >= 500"), 1);
    run("DO $$ BEGIN FOR i IN 1..6 LOOP BEGIN"
        "  INSERT INTO t VALUES (600 + i, i % 3, i, 'loop');"
        "  IF i % 2 = 0 THEN RAISE EXCEPTION 'undo %', i; END IF;"
        " EXCEPTION WHEN raise_exception THEN NULL; END; END LOOP; END $$");
    EXPECT_EQ(db->scalar("SELECT string_agg(id::text, ',' ORDER BY id) FROM t WHERE id > 600"),
              "601,603,605");
    db->exec("BEGIN");
    run("DELETE FROM t WHERE id = 500");
    EXPECT_EQ(db->scalar("SELECT try_write()"), "caught");
    expect_maintained("SELECT try_write() in a transaction");
    run("ROLLBACK");
}

// One statement writes the source twice: a writable CTE's DELETE and the
// INSERT that puts the same keys back, or rows of two sources.
TEST_F(Immediate, writable_cte_writing_the_source_twice_in_one_statement) {
    create_shapes();
    run("WITH d AS (DELETE FROM t WHERE grp = 1 RETURNING *) "
        "INSERT INTO t SELECT id, 3, val + 1, note FROM d");  // the same keys, moved
    run("WITH d AS (DELETE FROM t WHERE grp = 2 RETURNING *) "
        "INSERT INTO t SELECT id + 500, grp, val, note FROM d");
    run("WITH u AS (UPDATE t SET val = val * 2 WHERE grp = 0 RETURNING id) "
        "INSERT INTO t SELECT id + 700, 0, 1, 'u' FROM u");
    run("WITH i AS (INSERT INTO k VALUES (9, 'n'), (9, 'n') RETURNING a) "
        "UPDATE t SET note = 'k' WHERE id IN (SELECT a FROM i)");
    run("WITH d AS (DELETE FROM k WHERE a = 1 RETURNING a, b) INSERT INTO k SELECT a, b FROM d");
}

// --- chains -------------------------------------------------------------------

// An IMMEDIATE stream table over an IMMEDIATE one follows it statement by
// statement (TRUNCATE of the source included); a DIFFERENTIAL one over it
// catches up at its refresh.
TEST_F(Immediate, chains_over_an_immediate_stream_table) {
    create("base", "SELECT id, grp, val FROM t WHERE val IS NOT NULL");
    create("summed", "SELECT grp, count(*) AS n, sum(val) AS total FROM base GROUP BY grp");
    create("down", "SELECT id, val FROM base WHERE grp = 1", "DIFFERENTIAL");
    expect_maintained("create");
    run("INSERT INTO t VALUES (20, 1, 5, 'a'), (21, 2, NULL, 'b'), (22, 1, 7, 'c')");
    run("UPDATE t SET grp = 2 WHERE id IN (1, 20)");
    run("UPDATE t SET val = NULL WHERE id = 22");  // leaves base
    run("DELETE FROM t WHERE grp = 3");
    db->exec("BEGIN");
    run("UPDATE t SET val = 1 WHERE val IS NULL");
    run("SAVEPOINT s");
    run("TRUNCATE t");
    run("INSERT INTO t VALUES (1, 1, 1, 'x')");
    run("ROLLBACK TO SAVEPOINT s");
    run("UPDATE t SET id = id + 100 WHERE grp = 1");
    run("COMMIT");
    refresh("down");
    EXPECT_MATCHES_QUERY(*db, "down");
    run("TRUNCATE t");
    run("INSERT INTO t SELECT g, g % 2, g, 'n' FROM generate_series(1, 20) g");
    refresh("down");
    EXPECT_MATCHES_QUERY(*db, "down");
}

// --- which path ran -----------------------------------------------------------

// Per backend: an ordinary statement is applied, a TRUNCATE recomputed; a
// new session starts from nothing and its statements count there only.
TEST_F(Immediate, counters_tell_applied_statements_from_recomputes_per_backend) {
    create("cnt", "SELECT grp, count(*) AS n, sum(val) AS total FROM t GROUP BY grp");
    const Counters c0 = counters("cnt");
    run("INSERT INTO t VALUES (70, 1, 7, 'a')");
    const Counters c1 = counters("cnt");
    EXPECT_EQ(c1.incremental, c0.incremental + 1);
    EXPECT_EQ(c1.recomputed, c0.recomputed);
    run("DELETE FROM t WHERE id = 70");
    run("TRUNCATE t");
    const Counters c2 = counters("cnt");
    EXPECT_EQ(c2.incremental, c1.incremental + 1);
    EXPECT_EQ(c2.recomputed, c1.recomputed + 1);
    Conn other = connect_db();
    const Counters fresh = counters_in(other, "cnt");
    EXPECT_EQ(fresh.incremental, 0);
    EXPECT_EQ(fresh.recomputed, 0);
    other.exec("INSERT INTO t VALUES (71, 2, 8, 'b')");
    EXPECT_EQ(counters_in(other, "cnt").incremental, 1);
    EXPECT_EQ(counters("cnt").incremental, c2.incremental);
    expect_maintained("the other session's INSERT");
}

// refresh_stream_table recomputes an IMMEDIATE table (FULL in its history),
// also inside a writing transaction, and statements keep it after that.
TEST_F(Immediate, refresh_recomputes_an_immediate_stream_table) {
    create("imm",
           "SELECT grp, sum(val) AS total, string_agg(note, '' ORDER BY id) AS notes "
           "FROM t GROUP BY grp");
    run("INSERT INTO t VALUES (80, 1, 8, 'r')");
    refresh("imm");
    EXPECT_EQ(db->scalar("SELECT action || '/' || status || '/' || initiated_by "
                         "FROM pgtrickle.get_refresh_history('imm', 1)"),
              "FULL/SUCCESS/MANUAL");
    EXPECT_MATCHES_QUERY(*db, "imm");
    run("UPDATE t SET grp = 2 WHERE id = 80");
    db->exec("BEGIN");
    run("DELETE FROM t WHERE grp = 2");
    refresh("imm");
    EXPECT_MATCHES_QUERY(*db, "imm");
    run("INSERT INTO t VALUES (81, 2, 9, 's')");
    run("COMMIT");
    EXPECT_EQ(db->scalar("SELECT action FROM pgtrickle.get_refresh_history('imm', 1)"), "FULL");
}

// --- clean-up -----------------------------------------------------------------

// Dropping IMMEDIATE stream tables takes their triggers off the source,
// back to what it had before (a DIFFERENTIAL reader's capture triggers
// stay, and it goes on working); the one left goes on being maintained.
TEST_F(Immediate, drop_removes_every_trigger_it_put_on_the_source) {
    const long bare = pgt_triggers("t");
    create("one", "SELECT id, val FROM t WHERE val > 10");
    create("two", "SELECT grp, count(*) AS n FROM t GROUP BY grp");
    EXPECT_GT(pgt_triggers("t"), bare);
    drop("one");
    run("INSERT INTO t VALUES (90, 1, 90, 'a')");
    drop("two");
    EXPECT_EQ(pgt_triggers("t"), bare);
    db->exec("INSERT INTO t VALUES (91, 1, 91, 'b')");  // no leftover trigger fires

    create("diff", "SELECT id, val FROM t", "DIFFERENTIAL");
    const long with_diff = pgt_triggers("t");
    create("three", "SELECT id, note FROM t WHERE note <> 'a'");
    run("UPDATE t SET note = 'c' WHERE id = 90");
    drop("three");
    EXPECT_EQ(pgt_triggers("t"), with_diff);
    db->exec("DELETE FROM t WHERE id = 91");
    refresh("diff");
    EXPECT_MATCHES_QUERY(*db, "diff");
    create("four", "SELECT grp, max(val) AS hi FROM t GROUP BY grp");
    db->exec("SELECT pgtrickle.drop_stream_table('diff')");
    run("DELETE FROM t WHERE id = 90");
    drop("four");
    EXPECT_EQ(pgt_triggers("t"), bare);

    // Altered to FULL, or dropped with DROP TABLE: nothing stays either.
    create("five", "SELECT id, val FROM t");
    alter_mode("five", "FULL");
    EXPECT_EQ(pgt_triggers("t"), bare);
    std::erase(maintained_, std::string("five"));
    create("six", "SELECT id, val FROM t");
    db->exec("DROP TABLE six");
    std::erase(maintained_, std::string("six"));
    EXPECT_EQ(pgt_triggers("t"), bare);
    db->exec("INSERT INTO t VALUES (92, 1, 92, 'c'); TRUNCATE t");
}

// --- security -----------------------------------------------------------------

constexpr const char* kCreateRoles = R"sql(
DO $$
DECLARE r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['imm_owner', 'imm_writer'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
      EXECUTE pg_catalog.format('CREATE ROLE %I', r);
    END IF;
    EXECUTE pg_catalog.format('ALTER ROLE %I NOSUPERUSER NOCREATEROLE NOCREATEDB NOBYPASSRLS', r);
  END LOOP;
END $$)sql";

// imm_owner owns the source and its stream tables; imm_writer may only
// INSERT, UPDATE and DELETE the source (and plants a function first on its
// own search_path).
// Its triggers are its own: dropping one is refused; disabling one
// rebuilds the stream table at once; one disabled without DDL (writes then
// pass unmaintained) is found and put right by repair_stream_table.
TEST_F(Immediate, a_trigger_dropped_is_refused_and_one_disabled_is_repaired) {
    create("kept", "SELECT grp, count(*) AS n, sum(val) AS total FROM t GROUP BY grp");
    const std::string id =
        db->scalar("SELECT pgt_id FROM pgtrickle.pgt_stream_tables WHERE pgt_name = 'kept'");
    const std::string upd = "pgt_immediate_" + id + "_upd";
    SqlError e = db->error_of("DROP TRIGGER " + upd + " ON t");
    EXPECT_EQ(e.sqlstate, "2BP01") << e.message;
    EXPECT_TRUE(mentions(e.message, "IMMEDIATE")) << e.message;
    run("UPDATE t SET val = val + 1 WHERE id < 4");
    // The same for a join's second table and for a partition of a source.
    db->exec(
        "CREATE TABLE u (grp int PRIMARY KEY, name text); INSERT INTO u VALUES (1, 'one');"
        "CREATE TABLE pt (id int, v int) PARTITION BY RANGE (id);"
        "CREATE TABLE pt1 PARTITION OF pt FOR VALUES FROM (0) TO (100)");
    create("joined", "SELECT t.id, u.name FROM t JOIN u ON u.grp = t.grp");
    create("parted", "SELECT id, v FROM pt");
    for (const auto& [st, table] :
         std::vector<std::pair<std::string, std::string>>{{"joined", "u"}, {"parted", "pt1"}}) {
        const std::string trigger =
            "pgt_immediate_" +
            db->scalar("SELECT pgt_id FROM pgtrickle.pgt_stream_tables WHERE pgt_name = $1", {st}) +
            "_ins";
        e = db->error_of("DROP TRIGGER " + trigger + " ON " + table);
        EXPECT_EQ(e.sqlstate, "2BP01") << table << ": " << e.message;
    }
    run("INSERT INTO u VALUES (2, 'two'); INSERT INTO pt1 VALUES (1, 1)");
    drop("joined");
    drop("parted");

    EXPECT_EQ(db->scalar("SELECT ok FROM pgtrickle.health_check() WHERE check_name = "
                         "'immediate_maintenance'"),
              "t");
    // ALTER TABLE ... DISABLE TRIGGER marks the stream table, and the DDL
    // rebuilds an IMMEDIATE one at once: its triggers fire again.
    db->exec("ALTER TABLE t DISABLE TRIGGER " + upd);
    EXPECT_EQ(db->scalar("SELECT tgenabled FROM pg_trigger WHERE tgname = $1", {upd}), "A");
    run("UPDATE t SET val = val + 10 WHERE id < 4");
    // A trigger disabled behind DDL's back (a catalog write, no event) is
    // found by health_check and put right by repair_stream_table.
    db->exec("UPDATE pg_trigger SET tgenabled = 'D' WHERE tgname = $1", {upd});
    db = std::make_unique<Conn>(conninfo());  // (no invalidation: a new session reads it)
    db->exec("UPDATE t SET val = val + 100 WHERE id < 4");
    EXPECT_FALSE(matches_query(*db, "kept")) << "a disabled trigger maintains nothing";
    EXPECT_EQ(
        db->scalar("SELECT ok::text || ' ' || detail FROM pgtrickle.health_check() WHERE "
                   "check_name = 'immediate_maintenance'"),
        "false public.kept (5 of its 6 triggers fire as installed): statements on their sources "
        "do not maintain them; run pgtrickle.repair_stream_table on them");
    Result r = db->exec("SELECT item FROM pgtrickle.repair_stream_table('kept')");
    bool named = false;
    for (std::size_t i = 0; i < r.size(); i++) {
        named = named || r.at(i, 0) == "immediate_maintenance";
    }
    EXPECT_TRUE(named) << "repair names what it found";
    expect_maintained("repair_stream_table");
    run("UPDATE t SET val = val + 1 WHERE id < 4");
    EXPECT_EQ(db->scalar("SELECT tgenabled FROM pg_trigger WHERE tgname = $1", {upd}), "A");
    EXPECT_EQ(db->scalar("SELECT ok FROM pgtrickle.health_check() WHERE check_name = "
                         "'immediate_maintenance'"),
              "t");
}

// DDL on the source that changes what the stream table reads rebuilds it
// in the DDL's transaction (history: a FULL refresh initiated by
// IMMEDIATE, "reinitialised"); the next statements apply their change
// through programs made for the new definition.
TEST_F(Immediate, ddl_on_the_source_reinitialises_it_at_once) {
    create("ddl", "SELECT id, val FROM t WHERE val > 10");
    db->exec("ALTER TABLE t ADD COLUMN extra int");  // changes nothing it reads
    run("UPDATE t SET val = val + 1, extra = 1 WHERE id < 6");
    db->exec("BEGIN");
    db->exec("ALTER TABLE t RENAME COLUMN val TO amount");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_stream_tables WHERE pgt_name = "
                         "'ddl' AND reinit_reason IS NOT NULL"),
              "0");
    Counters before = counters("ddl");
    run("UPDATE t SET amount = amount + 1 WHERE id < 6");
    Counters after = counters("ddl");
    EXPECT_EQ(after.incremental, before.incremental + 1);
    EXPECT_EQ(after.recomputed, before.recomputed);
    db->exec("COMMIT");
    EXPECT_EQ(db->scalar("SELECT initiated_by || ' ' || action FROM "
                         "pgtrickle.get_refresh_history('ddl', 1)"),
              "IMMEDIATE FULL");
    run("DELETE FROM t WHERE amount > 100");
}

// A linear aggregate's kept state that says a group must be recomputed
// (never, unless someone wrote the storage past its guard) is not trusted:
// the statement recomputes the stream table.
TEST_F(Immediate, an_inconsistent_group_state_is_recomputed_not_trusted) {
    create("sums", "SELECT grp, count(*) AS n, sum(val) AS total FROM t GROUP BY grp");
    db->exec("ALTER TABLE sums DISABLE TRIGGER pgt_guard");
    db->exec("UPDATE sums SET __pgt_count = -10, n = 99 WHERE grp = 1");
    db->exec("ALTER TABLE sums ENABLE ALWAYS TRIGGER pgt_guard");
    const Counters before = counters("sums");
    run("UPDATE t SET val = val + 1 WHERE id = 1");
    EXPECT_EQ(counters("sums").recomputed, before.recomputed + 1);
    run("UPDATE t SET val = val + 1 WHERE id = 1");
    EXPECT_EQ(counters("sums").recomputed, before.recomputed + 1);
}

// pg_trickle.immediate_max_rows: a statement changing more rows of the
// source fails with 54000 and a HINT naming DIFFERENTIAL; nothing of it
// stays; smaller statements pass.
TEST_F(Immediate, immediate_max_rows_refuses_a_larger_statement) {
    create("capped", "SELECT grp, sum(val) AS total FROM t GROUP BY grp");
    db->exec("SET pg_trickle.immediate_max_rows = 3");
    SqlError e = db->error_of("UPDATE t SET val = val + 1 WHERE id < 6");
    EXPECT_EQ(e.sqlstate, "54000") << e.message;
    EXPECT_TRUE(mentions(e.hint, "DIFFERENTIAL")) << e.hint;
    run("UPDATE t SET val = val + 1 WHERE id < 3");
    db->exec("RESET pg_trickle.immediate_max_rows");
    run("UPDATE t SET val = val + 1 WHERE id < 6");
}

class ImmediateSecurity : public Immediate {
protected:
    void SetUp() override {
        Immediate::SetUp();
        db->exec(kCreateRoles);
        db->exec(
            "GRANT CREATE, USAGE ON SCHEMA public TO imm_owner;"
            "CREATE SCHEMA imm_w AUTHORIZATION imm_writer");
    }
    // The roles are cluster-wide: what this test gave them goes.
    void TearDown() override {
        if (db) {
            try {
                db->exec("ROLLBACK");
                db->exec("RESET ROLE; RESET ALL; DROP OWNED BY imm_owner, imm_writer");
            } catch (const std::exception& e) {
                ADD_FAILURE() << "cleaning up the roles failed: " << e.what();
            }
        }
        Immediate::TearDown();
    }
};

TEST_F(ImmediateSecurity, writer_without_rights_on_the_stream_table_keeps_it_maintained) {
    db->exec("SET ROLE imm_owner");
    db->exec(
        "CREATE TABLE src (id int PRIMARY KEY, grp int, val int);"
        "INSERT INTO src SELECT g, g % 3, g FROM generate_series(1, 9) g;"
        "GRANT INSERT, UPDATE, DELETE ON src TO imm_writer");
    create("owned_rows", "SELECT id, abs(val) AS v FROM src WHERE val > 2");
    create("owned_sums", "SELECT grp, count(*) AS n, sum(val) AS total FROM src GROUP BY grp");
    db->exec("RESET ROLE");

    Conn w = connect_db();
    w.exec("SET ROLE imm_writer");
    w.exec(
        "CREATE FUNCTION imm_w.abs(integer) RETURNS integer LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'planted abs ran as %', current_user; END $$;"
        "SET search_path = imm_w, pg_catalog, public");
    for (const char* sql :
         {"INSERT INTO src VALUES (10, 1, 10), (11, 2, -11)", "UPDATE src SET grp = 2",
          "DELETE FROM src", "INSERT INTO src VALUES (1, 0, 5), (2, 1, -6)"}) {
        w.exec(sql);
        expect_maintained(std::string("as imm_writer: ") + sql);
    }
    EXPECT_EQ(w.error_of("SELECT * FROM owned_rows").sqlstate, "42501");
    for (const char* sql : {"INSERT INTO owned_rows (id, v) VALUES (99, 1)",
                            "UPDATE owned_rows SET v = 0", "DELETE FROM owned_sums"}) {
        EXPECT_EQ(w.error_of(sql).sqlstate, "42501") << sql;
    }
    // With every right on the storage, the guard still refuses a direct
    // write, also right after a source write of the same transaction.
    db->exec("GRANT ALL ON owned_rows, owned_sums TO imm_writer");
    for (const char* sql :
         {"INSERT INTO owned_rows (id, v) VALUES (99, 1)", "UPDATE owned_rows SET v = 0",
          "DELETE FROM owned_sums", "TRUNCATE owned_rows"}) {
        SqlError e = w.error_of(sql);
        EXPECT_EQ(e.sqlstate, "55000") << sql << ": " << e.message;
    }
    w.exec("BEGIN; INSERT INTO src VALUES (3, 2, 30)");
    EXPECT_EQ(w.error_of("UPDATE owned_rows SET v = 0").sqlstate, "55000");
    w.exec("ROLLBACK");
    expect_maintained("the refused direct writes");
}

// --- the property: random DML, the oracle after every statement ---------------

using property::Column;
using property::Kind;
using property::Rng;

// A source of the property tests: its table, the queries of its IMMEDIATE
// stream tables (each gets a DIFFERENTIAL twin) and its random statements.
struct PropertySource {
    std::string table;
    std::string setup;
    std::vector<std::string> queries;
    std::function<std::string(Rng&)> statement;
};

// Keyed by id in [0, 149]; a key change maps ids through a bijection and
// skips rows whose target exists, so no statement violates the key.
PropertySource keyed_property_source(Rng& r) {
    using namespace property;  // NOLINT(google-build-using-namespace)
    const std::vector<Column> cols = {
        {"id", Kind::Int}, {"grp", Kind::Int}, {"val", Kind::Int}, {"note", Kind::Text}};
    PropertySource s;
    s.table = "pk";
    s.setup =
        "CREATE TABLE pk (id int PRIMARY KEY, grp int, val int, note text);"
        "INSERT INTO pk SELECT g, g % 5, CASE WHEN g % 7 = 0 THEN NULL ELSE g % 23 END,"
        " (ARRAY['a', 'ab', 'Abc', NULL, 'b'])[g % 5 + 1] FROM generate_series(0, 59) g";
    s.queries = {
        "SELECT id, " + projection(r, r.pick(cols), cols) + " AS p1, " +
            projection(r, r.pick(cols), cols) + " AS p2 FROM pk WHERE " + predicate(r, cols, 2),
        "SELECT grp, count(*) AS n, count(val) AS nv, sum(val) AS total, min(val) AS lo, "
        "max(val) AS hi, avg(val) AS mean FROM pk GROUP BY grp",
        "SELECT grp, string_agg(note, ',' ORDER BY note, id) AS notes, bool_and(val > 10) AS big "
        "FROM pk WHERE " +
            predicate(r, cols, 1) + " GROUP BY grp HAVING count(*) > 1",
        "SELECT count(*) AS n, sum(val) AS total, max(note) AS top FROM pk",
        "SELECT grp, note, count(*) AS n, sum(val) AS total FROM pk GROUP BY ROLLUP (grp, note)",
    };
    s.statement = [](Rng& g) -> std::string {
        const std::string lo = g.num(0, 149);
        switch (g.range(0, 11)) {
            case 0:
            case 1: {
                std::string rows;
                for (int id : distinct_keys(g, g.range(1, 5), 149)) {
                    rows += (rows.empty() ? "(" : ", (") + std::to_string(id) + ", " +
                            int_lit(g, 0, 6) + ", " + int_lit(g, -5, 40) + ", " + text_lit(g) + ")";
                }
                return "INSERT INTO pk VALUES " + rows +
                       (g.chance(50) ? " ON CONFLICT (id) DO NOTHING"
                                     : " ON CONFLICT (id) DO UPDATE SET val = EXCLUDED.val, "
                                       "grp = EXCLUDED.grp");
            }
            case 2:
                return "UPDATE pk SET val = " + int_lit(g, -5, 40) +
                       " WHERE id % 7 = " + g.num(0, 6);
            case 3:
                return "UPDATE pk SET grp = " + int_lit(g, 0, 6) + ", note = " + text_lit(g) +
                       " WHERE id BETWEEN " + lo + " AND " + lo + " + " + g.num(0, 15);
            case 4: {
                const std::string k = g.num(1, 149);
                return "UPDATE pk SET id = (id + " + k + ") % 150 WHERE id BETWEEN " + lo +
                       " AND " + lo + " + " + g.num(0, 20) + " AND (id + " + k +
                       ") % 150 NOT IN (SELECT id FROM pk)";
            }
            case 5:
                return "UPDATE pk SET val = val, note = note WHERE id < " + lo;  // no-op
            case 6:
                return "DELETE FROM pk WHERE id % " + g.num(5, 15) + " = " + g.num(0, 4) +
                       " AND coalesce(val, 0) > " + g.num(0, 30);
            case 7:
                return "DELETE FROM pk WHERE id = " + lo;
            case 8:
                return "INSERT INTO pk SELECT i, i % 6, i % 17, 'gen' FROM generate_series(" + lo +
                       ", " + lo + " + " + g.num(0, 20) + ") i ON CONFLICT (id) DO NOTHING";
            case 9:
                return "MERGE INTO pk USING (SELECT i AS id, i % 4 AS grp FROM generate_series(" +
                       lo + ", " + lo + " + " + g.num(0, 10) +
                       ") i) v ON pk.id = v.id WHEN MATCHED AND pk.val > 20 THEN DELETE "
                       "WHEN MATCHED THEN UPDATE SET val = coalesce(pk.val, 0) + 1, grp = v.grp "
                       "WHEN NOT MATCHED THEN INSERT VALUES (v.id, v.grp, 1, 'm')";
            case 10:
                return "WITH d AS (DELETE FROM pk WHERE grp = " + g.num(0, 6) +
                       " AND id % 3 = 0 RETURNING *) INSERT INTO pk SELECT id, (grp + 1) % 6, "
                       "val, note FROM d";
            default:
                return g.chance(15) ? "TRUNCATE pk"
                                    : "UPDATE pk SET note = NULL WHERE note = " + text_lit(g, 0);
        }
    };
    return s;
}

// No key: exact duplicates and NULLs; single rows are addressed by ctid.
PropertySource keyless_property_source(Rng& r) {
    using namespace property;  // NOLINT(google-build-using-namespace)
    const std::vector<Column> cols = {{"a", Kind::Int}, {"b", Kind::Text}};
    PropertySource s;
    s.table = "bag";
    s.setup =
        "CREATE TABLE bag (a int, b text);"
        "INSERT INTO bag SELECT g % 6, (ARRAY['x', 'y', NULL, 'z'])[g % 4 + 1]"
        " FROM generate_series(0, 39) g;"
        "INSERT INTO bag SELECT * FROM bag WHERE a < 3";
    s.queries = {
        "SELECT a, " + projection(r, r.pick(cols), cols) + " AS p1, b FROM bag WHERE " +
            predicate(r, cols, 2),
        "SELECT b, count(*) AS n, sum(a) AS total, min(a) AS lo FROM bag GROUP BY b",
        "SELECT a, string_agg(b, ',' ORDER BY b) AS bs, count(b) AS nb FROM bag GROUP BY a "
        "HAVING count(*) > 1",
        "SELECT a, b, count(*) AS n FROM bag GROUP BY GROUPING SETS ((a), (b), ())",
        "SELECT count(*) AS n, max(b) AS top FROM bag",
    };
    s.statement = [](Rng& g) -> std::string {
        const std::string a = int_lit(g, 0, 7, 15);
        const std::string b = g.pick(std::vector<std::string>{"'x'", "'y'", "'z'", "NULL"});
        const std::string one =
            "(SELECT ctid FROM bag WHERE a IS NOT DISTINCT FROM " + a + " LIMIT 1)";
        switch (g.range(0, 9)) {
            case 0:
            case 1: {
                std::string rows;
                for (int n = g.range(1, 4); n > 0; n--) {
                    rows += std::string(rows.empty() ? "(" : ", (") + a + ", " + b + ")";
                }
                return "INSERT INTO bag VALUES " + rows + ", (" + int_lit(g, 0, 7) + ", " + b + ")";
            }
            case 2:
                return "DELETE FROM bag WHERE ctid = " + one;
            case 3:
                return "UPDATE bag SET b = " + b + " WHERE ctid = " + one;
            case 4:
                return "UPDATE bag SET a = " + int_lit(g, 0, 7) + " WHERE b IS NOT DISTINCT FROM " +
                       b + " AND a < " + g.num(0, 7);
            case 5:
                return "DELETE FROM bag WHERE a IS NOT DISTINCT FROM " + a +
                       " AND b IS NOT DISTINCT FROM " + b;
            case 6:
                return "INSERT INTO bag SELECT a, b FROM bag WHERE a IS NOT DISTINCT FROM " + a +
                       " LIMIT 5";
            case 7:
                return "UPDATE bag SET a = a WHERE b = 'x'";  // no-op
            case 8:
                return "WITH d AS (DELETE FROM bag WHERE a IS NOT DISTINCT FROM " + a +
                       " RETURNING a, b) INSERT INTO bag SELECT a, coalesce(b, 'y') FROM d";
            default:
                return g.chance(15) ? "TRUNCATE bag"
                                    : "UPDATE bag SET b = NULL WHERE a = " + g.num(0, 7);
        }
    };
    return s;
}

// Two tables read together: jt keyed by id, jd keyed by did with a
// non-unique grp, so a join row has several partners or none. Statements
// write either table, or both in one statement (a writable CTE).
PropertySource join_property_source(Rng& r) {
    using namespace property;  // NOLINT(google-build-using-namespace)
    const std::vector<Column> cols = {{"jt.id", Kind::Int},   {"jt.grp", Kind::Int},
                                      {"jt.val", Kind::Int},  {"jt.note", Kind::Text},
                                      {"jd.did", Kind::Int},  {"jd.w", Kind::Int},
                                      {"jd.name", Kind::Text}};
    PropertySource s;
    s.table = "jt";
    s.setup =
        "CREATE TABLE jt (id int PRIMARY KEY, grp int, val int, note text);"
        "INSERT INTO jt SELECT g, CASE WHEN g % 11 = 0 THEN NULL ELSE g % 6 END,"
        " CASE WHEN g % 7 = 0 THEN NULL ELSE g % 23 END,"
        " (ARRAY['a', 'ab', 'Abc', NULL, 'b'])[g % 5 + 1] FROM generate_series(0, 49) g;"
        "CREATE TABLE jd (did int PRIMARY KEY, grp int, name text, w int);"
        "INSERT INTO jd SELECT g, CASE WHEN g % 9 = 0 THEN NULL ELSE g % 5 END,"
        " (ARRAY['x y', NULL, 'a', 'O''Brien', 'B'])[g % 5 + 1], g % 13"
        " FROM generate_series(0, 11) g";
    s.queries = {
        "SELECT jt.id, jd.did, jd.name, jt.val FROM jt JOIN jd ON jd.grp = jt.grp WHERE " +
            predicate(r, cols, 1),
        "SELECT jt.id, jd.name, jd.w FROM jt LEFT JOIN jd ON jd.grp = jt.grp",
        "SELECT jd.name, count(*) AS n, sum(jt.val) AS total, min(jt.val) AS lo, "
        "max(jt.note) AS top FROM jt JOIN jd ON jd.grp = jt.grp GROUP BY jd.name",
        "SELECT id, val FROM jt WHERE EXISTS (SELECT 1 FROM jd WHERE jd.grp = jt.grp AND jd.w > " +
            r.num(0, 8) + ")",
        "SELECT id, note FROM jt WHERE grp NOT IN (SELECT grp FROM jd WHERE grp IS NOT NULL)",
        "SELECT a.id, b.id AS bid FROM jt a JOIN jt b ON b.grp = a.grp AND b.id > a.id + 30",
    };
    s.statement = [](Rng& g) -> std::string {
        const std::string lo = g.num(0, 79);
        switch (g.range(0, 11)) {
            case 0:
            case 1: {
                std::string rows;
                for (int id : distinct_keys(g, g.range(1, 4), 79)) {
                    rows += (rows.empty() ? "(" : ", (") + std::to_string(id) + ", " +
                            int_lit(g, 0, 6) + ", " + int_lit(g, -5, 40) + ", " + text_lit(g) + ")";
                }
                return "INSERT INTO jt VALUES " + rows +
                       " ON CONFLICT (id) DO UPDATE SET grp = EXCLUDED.grp, val = EXCLUDED.val";
            }
            case 2:
                return "UPDATE jt SET grp = " + int_lit(g, 0, 6) + " WHERE id BETWEEN " + lo +
                       " AND " + lo + " + " + g.num(0, 10);
            case 3:
                return "UPDATE jt SET val = " + int_lit(g, -5, 40) + ", note = " + text_lit(g) +
                       " WHERE id % 5 = " + g.num(0, 4);
            case 4:
                return "DELETE FROM jt WHERE id % " + g.num(4, 12) + " = " + g.num(0, 3);
            case 5: {
                std::string rows;
                for (int id : distinct_keys(g, g.range(1, 3), 19)) {
                    rows += (rows.empty() ? "(" : ", (") + std::to_string(id) + ", " +
                            int_lit(g, 0, 6) + ", " + text_lit(g) + ", " + int_lit(g, 0, 12) + ")";
                }
                return "INSERT INTO jd VALUES " + rows + " ON CONFLICT (did) DO NOTHING";
            }
            case 6:
                return "UPDATE jd SET grp = " + int_lit(g, 0, 6) + " WHERE did = " + g.num(0, 19);
            case 7:
                return "UPDATE jd SET name = " + text_lit(g) + ", w = " + int_lit(g, 0, 12) +
                       " WHERE did % 3 = " + g.num(0, 2);
            case 8:
                return "DELETE FROM jd WHERE did = " + g.num(0, 19);
            case 9:
                return "WITH m AS (UPDATE jd SET grp = " + int_lit(g, 0, 6) +
                       " WHERE did = " + g.num(0, 19) +
                       " RETURNING grp) UPDATE jt SET grp = " + int_lit(g, 0, 6) +
                       " WHERE id BETWEEN " + lo + " AND " + lo + " + 5";
            case 10:
                return "MERGE INTO jt USING (SELECT i AS id, i % 6 AS grp FROM generate_series(" +
                       lo + ", " + lo + " + " + g.num(0, 8) +
                       ") i) v ON jt.id = v.id WHEN MATCHED AND jt.val > 20 THEN DELETE "
                       "WHEN MATCHED THEN UPDATE SET val = coalesce(jt.val, 0) + 1, grp = v.grp "
                       "WHEN NOT MATCHED THEN INSERT VALUES (v.id, v.grp, 1, 'm')";
            default:
                return g.chance(20) ? std::string(g.chance(50) ? "TRUNCATE jd" : "TRUNCATE jt")
                                    : "UPDATE jt SET val = val WHERE id < " + lo;  // no-op
        }
    };
    return s;
}

// A self-referencing tree whose keys move and whose rows go: both
// references cascade on update and delete (a row referring twice to a
// moved key is updated twice); a user trigger writes the row again when
// grp becomes 3. Every key move and delete runs foreign key actions inside
// the statement. ImmediateCascade names the cases one by one, SET NULL
// among them: mixed here with CASCADE on the same rows, PostgreSQL itself
// refuses some statements with 23503 (a SET NULL's new row version checked
// against a parent the cascade deleted or moved).
PropertySource cascading_property_source(Rng& r) {
    PropertySource s;
    s.table = "tree";
    s.setup = R"sql(
CREATE TABLE tree (id int PRIMARY KEY,
  parent int REFERENCES tree (id) ON UPDATE CASCADE ON DELETE CASCADE,
  buddy int REFERENCES tree (id) ON UPDATE CASCADE ON DELETE CASCADE,
  grp int, val int);
INSERT INTO tree SELECT g, CASE WHEN g % 6 = 0 THEN NULL ELSE g / 3 END,
  CASE WHEN g % 4 = 1 THEN (g * 7) % 60 END, g % 5, g % 17 FROM generate_series(0, 59) g;
CREATE FUNCTION tree_bump() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  UPDATE tree SET val = coalesce(val, 0) + 100 WHERE id = NEW.id; RETURN NULL; END $$;
CREATE TRIGGER tree_bump AFTER UPDATE OF grp ON tree FOR EACH ROW
  WHEN (NEW.grp = 3 AND OLD.grp IS DISTINCT FROM 3) EXECUTE FUNCTION tree_bump();
)sql";
    s.queries = {
        "SELECT id, parent, buddy, val FROM tree WHERE grp <> " + r.num(0, 4) + " OR val > 10",
        "SELECT parent, count(*) AS n, sum(val) AS total, max(id) AS top FROM tree GROUP BY parent",
        "SELECT c.id, c.val, p.id AS pid, p.grp AS pgrp FROM tree c JOIN tree p ON p.id = c.parent",
        "SELECT p.grp, count(*) AS n, sum(c.val) AS total, min(c.id) AS first "
        "FROM tree c JOIN tree p ON p.id = c.parent GROUP BY p.grp",
        "SELECT c.id, b.val AS bval FROM tree c LEFT JOIN tree b ON b.id = c.buddy",
    };
    s.statement = [](Rng& g) -> std::string {
        const std::string lo = g.num(0, 199);
        const std::string below = "(SELECT max(id) FROM tree WHERE id < " + lo + ")";
        switch (g.range(0, 9)) {
            case 0:
            case 1:  // new rows under an existing one
                return "INSERT INTO tree SELECT i, " + below + ", " + below + ", i % 5, i % 13 " +
                       "FROM generate_series(" + lo + ", " + lo + " + " + g.num(0, 9) +
                       ") i ON CONFLICT (id) DO NOTHING";
            case 2:
            case 3: {  // keys moved (a bijection onto free keys): children follow
                // No moved row refers to another one: PostgreSQL's own
                // checks can refuse that one with 23503.
                const std::string k = g.num(1, 199);
                const std::string range = lo + " AND least(" + lo + " + " + g.num(0, 40) + ", 199)";
                return "UPDATE tree SET id = (id + " + k + ") % 200 WHERE id BETWEEN " + range +
                       " AND (id + " + k + ") % 200 NOT IN (SELECT id FROM tree)" +
                       " AND coalesce(parent NOT BETWEEN " + range + ", true)" +
                       " AND coalesce(buddy NOT BETWEEN " + range + ", true)";
            }
            case 4:  // subtrees go
                return g.chance(30)
                           ? "DELETE FROM tree WHERE id % " + g.num(15, 40) + " = " + g.num(0, 14)
                           : "DELETE FROM tree WHERE id = " + lo;
            case 5:
                return "UPDATE tree SET parent = (SELECT max(t.id) FROM tree t WHERE t.id < "
                       "tree.id - " +
                       g.num(1, 9) + ") WHERE id % " + g.num(3, 9) + " = " + g.num(0, 2);
            case 6:
                return "UPDATE tree SET buddy = " + below + " WHERE id BETWEEN " + lo + " AND " +
                       lo + " + 30";
            case 7:
                return "UPDATE tree SET grp = " + g.num(0, 4) +
                       ", val = val + 1 WHERE id % 4 = " + g.num(0, 3);
            case 8:  // a key moved and the row changed in one statement
                return "UPDATE tree SET id = id + 200, val = coalesce(val, 0) - 1 WHERE id = " +
                       lo + " AND id + 200 NOT IN (SELECT id FROM tree)";
            default:
                return g.chance(10) ? "DELETE FROM tree WHERE id = (SELECT min(id) FROM tree "
                                      "WHERE parent IS NULL AND id > " +
                                          lo + ")"
                                    // (as in case 2: no moved row refers to another)
                                    : "UPDATE tree SET id = id - 200 WHERE id >= 200 AND "
                                      "id - 200 NOT IN (SELECT id FROM tree) AND "
                                      "coalesce(parent < 200, true) AND coalesce(buddy < 200, "
                                      "true)";
        }
    };
    return s;
}

// PGT_PROPERTY_CYCLES: statements over both sources (each statement is
// followed by the oracle on every IMMEDIATE stream table of its source).
constexpr long kDefaultCycles = 200;

class ImmediateProperty : public DbTest {
protected:
    void run_property(const std::function<PropertySource(Rng&)>& make, uint64_t salt,
                      std::optional<uint64_t> fixed_seed = std::nullopt) {
        const uint64_t seed = fixed_seed.value_or(property::property_seed());
        Rng r(seed * 0x9E3779B97F4A7C15ULL + salt);
        const PropertySource src = make(r);
        std::cout << "PGT_PROPERTY_SEED=" << seed << " (" << src.table << ")" << std::endl;
        const long statements = std::max(
            1L, static_cast<long>(property::env_u64("PGT_PROPERTY_CYCLES", kDefaultCycles)) / 2);
        db->exec(src.setup);
        std::vector<std::string> sts;
        for (size_t i = 0; i < src.queries.size(); i++) {
            const std::string name = src.table + "_" + std::to_string(i);
            for (const char* mode : {"IMMEDIATE", "DIFFERENTIAL"}) {
                const std::string st = name + (mode[0] == 'I' ? "" : "_twin");
                try {
                    db->exec("SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => $3)",
                             {st, src.queries[i], mode});
                } catch (const SqlError& e) {
                    FAIL() << "supported query rejected (" << mode << "): " << src.queries[i]
                           << "\n"
                           << e.what();
                }
            }
            ASSERT_TRUE(matches_query(*db, name)) << "after create: " << src.queries[i];
            sts.push_back(name);
        }
        long done = 0, transactions = 0;
        while (done < statements && !HasFailure()) {
            done += transaction(r, src, sts, seed, transactions++);
        }
        std::cout << src.table << ": " << done << " statements in " << transactions
                  << " transactions" << std::endl;
    }

private:
    // One transaction of random statements with random savepoints and
    // rollbacks (or one statement on its own), the oracle after each step;
    // then every DIFFERENTIAL twin refreshed and compared. Returns the
    // statements it ran.
    long transaction(Rng& r, const PropertySource& src, const std::vector<std::string>& sts,
                     uint64_t seed, long txn) {
        std::string log;  // what ran so far, for a failure's message
        auto step = [&](const std::string& sql) {
            log += sql + "; ";
            SCOPED_TRACE("PGT_PROPERTY_SEED=" + std::to_string(seed) + " transaction " +
                         std::to_string(txn) + ": " + log);
            try {
                db->exec(sql);
            } catch (const SqlError& e) {
                ADD_FAILURE() << "statement failed: " << e.what() << "\n" << e.detail;
                return false;
            }
            for (const std::string& st : sts) {
                EXPECT_TRUE(matches_query(*db, st)) << st;
            }
            return !HasFailure();
        };
        long made = 0;
        bool ok = true;
        if (r.chance(20)) {
            made = 1;
            ok = step(src.statement(r));
        } else {
            ok = step("BEGIN");
            std::vector<std::string> savepoints;
            for (int n = r.range(1, 6); ok && n > 0; n--) {
                if (r.chance(30)) {
                    savepoints.push_back("sp" + std::to_string(savepoints.size()));
                    ok = step("SAVEPOINT " + savepoints.back());
                }
                ok = ok && step(src.statement(r));
                made++;
                if (ok && !savepoints.empty() && r.chance(30)) {
                    const size_t back =
                        static_cast<size_t>(r.range(0, static_cast<int>(savepoints.size()) - 1));
                    ok = step("ROLLBACK TO SAVEPOINT " + savepoints[back]);
                    savepoints.resize(back + 1);
                } else if (ok && !savepoints.empty() && r.chance(15)) {
                    ok = step("RELEASE SAVEPOINT " + savepoints.back());
                    savepoints.pop_back();
                }
            }
            ok = ok && step(r.chance(80) ? "COMMIT" : "ROLLBACK");
        }
        if (!ok) {
            db->exec("ROLLBACK");
            return made;
        }
        SCOPED_TRACE("PGT_PROPERTY_SEED=" + std::to_string(seed) + " transaction " +
                     std::to_string(txn) + ": " + log);
        for (const std::string& st : sts) {
            refresh(st + "_twin");
            EXPECT_TRUE(matches_query(*db, st + "_twin"));
            EXPECT_TRUE(same_rows(*db, st, st + "_twin"));
        }
        return made;
    }
};

TEST_F(ImmediateProperty, keyed_source_random_dml_matches_after_every_statement) {
    run_property(keyed_property_source, 1);
}

TEST_F(ImmediateProperty, keyless_source_random_dml_matches_after_every_statement) {
    run_property(keyless_property_source, 2);
}

TEST_F(ImmediateProperty, joins_and_subqueries_random_dml_on_both_tables_matches_every_statement) {
    run_property(join_property_source, 3);
}

// A seed that found loading a program in a BEFORE trigger taking a new
// command id: a later statement writing both tables (a data-modifying WITH
// query) had its changes joined with each other's old state.
TEST_F(ImmediateProperty, joins_and_subqueries_seed_2527663157) {
    run_property(join_property_source, 3, 2527663157ULL);
}

TEST_F(ImmediateProperty, self_referencing_cascades_random_dml_matches_every_statement) {
    run_property(cascading_property_source, 4);
}

// --- the scheduler ------------------------------------------------------------

// A cluster of its own with the scheduler on (the shared one runs none).
Cluster& scheduler_cluster() {
    static Cluster c;
    return c;
}

class ImmediateScheduler : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        const char* dir = std::getenv("PGT_E2E_WORKDIR");
        scheduler_cluster().start(
            std::string(dir != nullptr ? dir : PGT_E2E_WORKDIR) + "/immediate_scheduler", true);
    }
    static void TearDownTestSuite() {
        scheduler_cluster().stop();
        const std::string crashes = scheduler_cluster().crash_lines();
        if (!crashes.empty()) {
            ADD_FAILURE() << "the scheduler cluster's server log shows a crash:\n" << crashes;
        }
    }
    void SetUp() override {
        Conn admin(scheduler_cluster().conninfo());
        admin.exec("DROP DATABASE IF EXISTS " + kDb + " WITH (FORCE)");
        admin.exec("CREATE DATABASE " + kDb);
        db = std::make_unique<Conn>(scheduler_cluster().conninfo(kDb));
        db->exec("CREATE EXTENSION pg_trickle");
    }
    void TearDown() override {
        db.reset();
        if (!HasFailure()) {  // without FORCE: the scheduler's worker is asked to leave
            Conn admin(scheduler_cluster().conninfo());
            admin.exec("DROP DATABASE IF EXISTS " + kDb);
        }
    }
    long history(const std::string& st, const std::string& where, long after = 0) {
        return std::stol(
            db->scalar("SELECT count(*) FROM pgtrickle.pgt_refresh_history h "
                       "JOIN pgtrickle.pgt_stream_tables s USING (pgt_id) "
                       "WHERE s.pgt_relid = $1::regclass AND h.refresh_id > $2 AND (" +
                           where + ")",
                       {st, std::to_string(after)}));
    }

    const std::string kDb = "s_immediate";
    std::unique_ptr<Conn> db;
};

// While the scheduler refreshes a DIFFERENTIAL table on the same source
// (1 s schedule, twice), it never refreshes the IMMEDIATE one ('calculated'
// with no consumer: due every second if it were ever pending).
TEST_F(ImmediateScheduler, scheduler_never_refreshes_an_immediate_stream_table) {
    db->exec(
        "CREATE TABLE src (id int PRIMARY KEY, v int);"
        "INSERT INTO src SELECT g, g FROM generate_series(1, 5) g");
    db->exec(
        "SELECT pgtrickle.create_stream_table('imm', 'SELECT id, v FROM src WHERE v > 1', "
        "refresh_mode => 'IMMEDIATE')");
    db->exec(
        "SELECT pgtrickle.create_stream_table('canary', 'SELECT id, v FROM src', '1s', "
        "'DIFFERENTIAL')");
    for (int round = 0; round < 2; round++) {
        const long marker = std::stol(
            db->scalar("SELECT coalesce(max(refresh_id), 0) FROM pgtrickle.pgt_refresh_history"));
        db->exec("INSERT INTO src VALUES (" + std::to_string(10 + round) +
                 ", 7); UPDATE src SET v = v + 1 WHERE id = 1");
        EXPECT_MATCHES_QUERY(*db, "imm");
        ASSERT_TRUE(eventually(
            [&] {
                return history("canary", "h.initiated_by = 'SCHEDULER' AND h.status = 'SUCCESS'",
                               marker) > 0;
            },
            "a scheduled refresh of canary"));
    }
    EXPECT_EQ(history("imm", "h.initiated_by = 'SCHEDULER'"), 0);
    EXPECT_MATCHES_QUERY(*db, "imm");
    EXPECT_MATCHES_QUERY(*db, "canary");
}

}  // namespace
}  // namespace pgt::e2e
