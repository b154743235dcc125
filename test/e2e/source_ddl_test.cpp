// DDL PostgreSQL permits on what stream tables read, that changes what
// their queries compute or the names their stored text uses: the stream
// tables reading it (transitively) are marked for reinitialisation, shown
// by pgt_status() and health_check(), and their next refresh analyses the
// query again and recomputes it (FULL, the reason in history); later
// refreshes are DIFFERENTIAL again where the query allows.
// Invariant: every refresh is checked against the oracle, and each test
// fails on a build without reinitialisation (the stream table stays wrong,
// or its refresh fails).
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "fixture.hpp"
#include "property_gen.hpp"

namespace pgt::e2e {
namespace {

class SourceDdl : public DbTest {
protected:
    void create(const std::string& name, const std::string& query,
                const std::string& mode = "DIFFERENTIAL") {
        db->exec("SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => $3)",
                 {name, query, mode});
    }
    std::string reinit_reason(const std::string& st) {
        return db->scalar(
            "SELECT coalesce(reinit_reason, '') FROM pgtrickle.pgt_status() WHERE "
            "name = 'public.' || $1",
            {st});
    }
    std::string last_reason(const std::string& st) {
        return db->scalar(
            "SELECT coalesce(h.reason, '') FROM pgtrickle.pgt_refresh_history h JOIN "
            "pgtrickle.pgt_stream_tables s USING (pgt_id) WHERE s.pgt_name = $1 ORDER BY "
            "h.refresh_id DESC LIMIT 1",
            {st});
    }
    // The refresh reinitialised st (FULL, reason containing `why`) and st
    // equals its query; the next one, after a change, is `then`.
    void expect_reinitialised(const std::string& st, const std::string& why,
                              const std::string& change, const std::string& then) {
        refresh(st);
        EXPECT_EQ(last_action(st), "FULL") << st;
        EXPECT_NE(last_reason(st).find(why), std::string::npos) << st << ": " << last_reason(st);
        EXPECT_EQ(reinit_reason(st), "") << st;
        EXPECT_MATCHES_QUERY(*db, st);
        db->exec(change);
        refresh(st);
        EXPECT_EQ(last_action(st), then) << st;
        EXPECT_MATCHES_QUERY(*db, st);
    }
};

// Finding 3: row identities encode an enum by its label, so after RENAME
// VALUE the stored groups no longer matched new rows (two groups for one
// value). Now: reinitialised. ADD VALUE changes nothing stored: no mark.
TEST_F(SourceDdl, enum_value_renamed_reinitialises_readers) {
    db->exec(
        "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');"
        "CREATE TABLE t (id int PRIMARY KEY, m mood, v int);"
        "INSERT INTO t SELECT g, (ARRAY['sad','ok','happy'])[1 + g % 3]::mood, g "
        "FROM generate_series(1, 30) g");
    create("by_mood", "SELECT m, count(*) AS n, sum(v) AS s FROM t GROUP BY m");
    create("oks", "SELECT id FROM t WHERE m = 'ok'");
    db->exec("ALTER TYPE mood ADD VALUE 'meh'");
    EXPECT_EQ(reinit_reason("by_mood"), "");
    db->exec("ALTER TYPE mood RENAME VALUE 'ok' TO 'fine'");
    EXPECT_NE(reinit_reason("by_mood").find("value ok of type public.mood renamed to fine"),
              std::string::npos)
        << reinit_reason("by_mood");
    EXPECT_NE(reinit_reason("oks"), "");  // the constant 'ok' is of the type too
    db->exec("INSERT INTO t VALUES (100, 'fine', 1)");
    expect_reinitialised("by_mood", "renamed to fine", "UPDATE t SET m = 'fine' WHERE id < 5",
                         "DIFFERENTIAL");
    expect_reinitialised("oks", "renamed to fine", "DELETE FROM t WHERE id = 100", "DIFFERENTIAL");
    // Recording the query's types again kept the storage column's own
    // dependency on its type.
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pg_depend WHERE classid = 'pg_class'::regclass "
                         "AND objid = 'by_mood'::regclass AND objsubid > 0 AND refobjid = "
                         "'mood'::regtype"),
              "1");
}

// Finding 4 (seed EC-16): CREATE OR REPLACE FUNCTION of a function the query
// calls left the rows computed before with the old result. Now the readers
// are marked (health_check says so), recomputed; a stream table over one of
// them is marked too. A function that becomes VOLATILE turns AUTO to FULL.
TEST_F(SourceDdl, replaced_function_reinitialises_readers_transitively) {
    db->exec(
        "CREATE FUNCTION f(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 * 2';"
        "CREATE TABLE t (id int PRIMARY KEY, v int);"
        "INSERT INTO t SELECT g, g FROM generate_series(1, 5) g");
    create("s", "SELECT id, f(v) AS fv FROM t");
    create("over_s", "SELECT id, fv FROM s WHERE fv > 4");
    create("a", "SELECT id, f(v) AS fv FROM t", "AUTO");
    db->exec(
        "CREATE OR REPLACE FUNCTION f(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 * 3'");
    EXPECT_NE(reinit_reason("s").find("function public.f(integer) replaced"), std::string::npos);
    EXPECT_NE(reinit_reason("over_s"), "");
    std::string h = db->scalar(
        "SELECT ok || '|' || detail FROM pgtrickle.health_check() WHERE check_name = "
        "'reinit_pending'");
    EXPECT_EQ(h.substr(0, 6), "false|") << h;
    EXPECT_NE(h.find("public.s (function public.f(integer) replaced)"), std::string::npos) << h;
    expect_reinitialised("s", "f(integer) replaced", "UPDATE t SET v = 10 WHERE id = 1",
                         "DIFFERENTIAL");
    expect_reinitialised("over_s", "f(integer) replaced", "UPDATE t SET v = 20 WHERE id = 2",
                         "NO_DATA");  // s has not been refreshed since
    refresh("s");
    refresh("over_s");
    EXPECT_EQ(last_action("over_s"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "over_s");
    refresh("a");
    db->exec("ALTER FUNCTION f(int) VOLATILE");
    EXPECT_NE(reinit_reason("a").find("altered"), std::string::npos) << reinit_reason("a");
    refresh("a");
    EXPECT_EQ(db->scalar("SELECT refresh_mode FROM pgtrickle.pgt_status() WHERE name = 'public.a'"),
              "FULL");
    EXPECT_MATCHES_QUERY(*db, "a");
    // s asked for DIFFERENTIAL, which a VOLATILE call cannot have: its
    // reinitialisation fails loudly until its mode is changed.
    SqlError e = db->error_of("SELECT pgtrickle.refresh_stream_table('s')");
    EXPECT_EQ(e.sqlstate, "0A000") << e.message;
    EXPECT_NE(reinit_reason("s"), "");
    db->exec("SELECT pgtrickle.alter_stream_table('s', refresh_mode => 'AUTO')");
    EXPECT_EQ(db->scalar("SELECT refresh_mode FROM pgtrickle.pgt_status() WHERE name = 'public.s'"),
              "FULL");
    EXPECT_MATCHES_QUERY(*db, "s");
    refresh("over_s");
    EXPECT_MATCHES_QUERY(*db, "over_s");
    EXPECT_EQ(db->scalar("SELECT ok FROM pgtrickle.health_check() WHERE check_name = "
                         "'reinit_pending'"),
              "t");
}

// CREATE OR REPLACE VIEW of a view the query reads: reinitialised.
TEST_F(SourceDdl, replaced_view_reinitialises_readers) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, v int);"
        "INSERT INTO t SELECT g, g FROM generate_series(1, 10) g;"
        "CREATE VIEW big AS SELECT id, v FROM t WHERE v > 3");
    create("s", "SELECT id, v FROM big", "FULL");
    db->exec("CREATE OR REPLACE VIEW big AS SELECT id, v FROM t WHERE v > 6");
    EXPECT_NE(reinit_reason("s").find("view public.big replaced"), std::string::npos);
    expect_reinitialised("s", "view public.big replaced", "UPDATE t SET v = 0", "FULL");
}

// Finding 5: ATTACH PARTITION of a table with rows and DETACH PARTITION
// move rows without a row-level change; TRUNCATE of one partition fires no
// trigger of its parent; DROP TABLE of a partition neither. All four kept
// the DIFFERENTIAL stream table wrong. Now ATTACH, DETACH and DROP mark it,
// and every partition carries the capture's TRUNCATE trigger.
TEST_F(SourceDdl, partitions_attached_detached_truncated_or_dropped) {
    db->exec(
        "CREATE TABLE p (id int, k int, v int) PARTITION BY RANGE (k);"
        "CREATE TABLE p0 PARTITION OF p FOR VALUES FROM (0) TO (10);"
        "INSERT INTO p SELECT g, g % 10, g FROM generate_series(1, 40) g");
    create("s", "SELECT k, count(*) AS n, sum(v) AS total FROM p GROUP BY k");
    db->exec(
        "CREATE TABLE p1 (id int, k int, v int);"
        "INSERT INTO p1 VALUES (100, 15, 5), (101, 16, 6);"
        "ALTER TABLE p ATTACH PARTITION p1 FOR VALUES FROM (10) TO (20)");
    EXPECT_NE(reinit_reason("s").find("partition p1 attached to table public.p"), std::string::npos)
        << reinit_reason("s");
    expect_reinitialised("s", "attached", "INSERT INTO p1 VALUES (102, 17, 7)", "DIFFERENTIAL");
    db->exec("CREATE TABLE p2 PARTITION OF p FOR VALUES FROM (20) TO (30)");
    db->exec("INSERT INTO p2 VALUES (200, 25, 1); TRUNCATE p0");
    refresh("s");
    EXPECT_EQ(last_action("s"), "FULL");  // the partition's TRUNCATE marker
    EXPECT_MATCHES_QUERY(*db, "s");
    db->exec("ALTER TABLE p DETACH PARTITION p1");
    expect_reinitialised("s", "detached", "INSERT INTO p2 VALUES (201, 26, 2)", "DIFFERENTIAL");
    db->exec("TRUNCATE p1");  // no longer a partition: nothing to capture
    db->exec("DROP TABLE p2");
    EXPECT_NE(reinit_reason("s").find("partition public.p2 of public.p dropped"), std::string::npos)
        << reinit_reason("s");
    expect_reinitialised("s", "dropped", "INSERT INTO p VALUES (300, 1, 1)", "DIFFERENTIAL");
}

// Finding 5: writes to an inheritance child reach a scan of the parent but
// not its capture. A table with children is refused for DIFFERENTIAL
// (0A000), AUTO picks FULL; a child added later reinitialises the readers
// (AUTO then recomputes FULL; DIFFERENTIAL fails loudly); ONLY is fine.
TEST_F(SourceDdl, inheritance_children_are_never_maintained_differentially) {
    db->exec(
        "CREATE TABLE par (id int PRIMARY KEY, v int);"
        "INSERT INTO par VALUES (1, 1), (2, 2)");
    create("a", "SELECT id, v FROM par", "AUTO");
    create("d", "SELECT id, v FROM par");
    create("only_par", "SELECT id, v FROM ONLY par");
    db->exec("CREATE TABLE kid () INHERITS (par); INSERT INTO kid VALUES (3, 3)");
    EXPECT_NE(reinit_reason("a").find("kid created as an inheritance child"), std::string::npos);
    refresh("a");
    EXPECT_EQ(last_action("a"), "FULL");
    EXPECT_MATCHES_QUERY(*db, "a");
    db->exec("UPDATE kid SET v = 30");
    refresh("a");
    EXPECT_EQ(last_action("a"), "FULL");
    EXPECT_MATCHES_QUERY(*db, "a");
    SqlError e = db->error_of("SELECT pgtrickle.refresh_stream_table('d')");
    EXPECT_EQ(e.sqlstate, "0A000") << e.message;
    EXPECT_NE(e.message.find("inheritance children"), std::string::npos) << e.message;
    e = db->error_of(
        "SELECT pgtrickle.create_stream_table('d2', 'SELECT id, v FROM par', refresh_mode => "
        "'DIFFERENTIAL')");
    EXPECT_EQ(e.sqlstate, "0A000") << e.message;
    refresh("only_par");
    db->exec("INSERT INTO par VALUES (4, 4)");
    refresh("only_par");
    EXPECT_EQ(last_action("only_par"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "only_par");
}

// Finding 9: a renamed source, column or schema left the stored text naming
// the old one (FULL recomputes failed with 42703/42P01). The query is kept
// analysed (its tree names objects by OID) and deparsed again at the
// reinitialisation, as a view's definition follows renames.
TEST_F(SourceDdl, renamed_sources_columns_and_schemas_are_followed) {
    db->exec(
        "CREATE SCHEMA app;"
        "CREATE TABLE app.orders (id int PRIMARY KEY, cust int, amount int);"
        "CREATE TABLE app.cust (id int PRIMARY KEY, name text);"
        "INSERT INTO app.cust SELECT g, 'c' || g FROM generate_series(1, 5) g;"
        "INSERT INTO app.orders SELECT g, 1 + g % 5, g FROM generate_series(1, 50) g");
    create("totals",
           "SELECT c.name, sum(o.amount) AS total FROM app.orders o JOIN app.cust c ON c.id = "
           "o.cust GROUP BY c.name");
    create("big", "SELECT id, amount FROM app.orders WHERE amount > 10");
    db->exec("ALTER TABLE app.orders RENAME COLUMN amount TO value");
    db->exec("ALTER TABLE app.orders RENAME TO sales");
    db->exec("ALTER SCHEMA app RENAME TO shop");
    db->exec("ALTER TABLE shop.cust SET SCHEMA public");
    EXPECT_NE(reinit_reason("big").find("column amount of table app.orders renamed to value"),
              std::string::npos)
        << reinit_reason("big");
    expect_reinitialised("big", "renamed", "UPDATE shop.sales SET value = value + 100 WHERE id < 5",
                         "DIFFERENTIAL");
    expect_reinitialised("totals", "renamed", "UPDATE cust SET name = 'x' WHERE id = 1",
                         "DIFFERENTIAL");
    const std::string q =
        db->scalar("SELECT defining_query FROM pgtrickle.pgt_stream_tables WHERE pgt_name = 'big'");
    EXPECT_NE(q.find("shop.sales"), std::string::npos) << q;
    EXPECT_NE(q.find("value"), std::string::npos) << q;
}

// A stream table renamed or moved is followed (its catalog names, its own
// delta statement, the stream tables reading it); renaming one of its
// columns stays refused.
TEST_F(SourceDdl, renamed_stream_table_is_followed) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, v int);"
        "INSERT INTO t SELECT g, g FROM generate_series(1, 5) g");
    create("s", "SELECT id, v FROM t");
    create("over", "SELECT id, v FROM s WHERE v > 2");
    db->exec("ALTER TABLE s RENAME TO s_new");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_status() WHERE name = "
                         "'public.s_new'"),
              "1");
    EXPECT_EQ(db->error_of("ALTER TABLE s_new RENAME COLUMN v TO w").sqlstate, "0A000");
    expect_reinitialised("s_new", "renamed", "UPDATE t SET v = v + 1", "DIFFERENTIAL");
    expect_reinitialised("over", "renamed", "UPDATE t SET v = v + 1", "NO_DATA");
    refresh("s_new");
    refresh("over");
    EXPECT_EQ(last_action("over"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "over");
}

// Finding 8: a new query with other output columns for a stream table that
// others read was accepted and the readers failed with XX000 forever. Now
// 2BP01 naming them, or with cascade => true the readers are redefined over
// the new columns (from their stored text) and recomputed.
TEST_F(SourceDdl, upstream_columns_change_needs_cascade) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, a int, b int);"
        "INSERT INTO t SELECT g, g, g * 10 FROM generate_series(1, 5) g");
    create("up", "SELECT id, a FROM t");
    create("down", "SELECT id, a FROM up WHERE a > 1");
    create("cnt", "SELECT count(*) AS n FROM up", "FULL");
    SqlError e = db->error_of(
        "SELECT pgtrickle.alter_stream_table('up', query => 'SELECT id, a, "
        "b FROM t')");
    EXPECT_EQ(e.sqlstate, "2BP01") << e.message;
    EXPECT_NE(e.detail.find("public.down"), std::string::npos) << e.detail;
    EXPECT_NE(e.hint.find("cascade => true"), std::string::npos) << e.hint;
    db->exec(
        "SELECT pgtrickle.alter_stream_table('up', query => 'SELECT id, a, b FROM t', "
        "\"cascade\" => true)");
    for (const char* st : {"up", "down", "cnt"}) {
        EXPECT_MATCHES_QUERY(*db, st);
    }
    EXPECT_NE(last_reason("down").find("public.up\" it reads redefined"), std::string::npos)
        << last_reason("down");
    db->exec("UPDATE t SET a = a + 1, b = 0");
    for (const char* st : {"up", "down", "cnt"}) {
        refresh(st);
        EXPECT_MATCHES_QUERY(*db, st);
    }
    EXPECT_EQ(last_action("down"), "DIFFERENTIAL");
    // A reader the new columns cannot serve: nothing changes.
    e = db->error_of(
        "SELECT pgtrickle.alter_stream_table('up', query => 'SELECT id, b FROM t', "
        "\"cascade\" => true)");
    EXPECT_EQ(e.sqlstate, "42703") << e.message;
    EXPECT_MATCHES_QUERY(*db, "down");
}

// repair_stream_table: a no-op on a healthy table; otherwise what it found
// and did, one reinitialisation, and the other readers of a repaired
// capture marked.
TEST_F(SourceDdl, repair_stream_table_reports_and_rebuilds) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, v int);"
        "INSERT INTO t SELECT g, g FROM generate_series(1, 5) g");
    create("s1", "SELECT id, v FROM t");
    create("s2", "SELECT v, count(*) AS n FROM t GROUP BY v");
    EXPECT_EQ(db->scalar("SELECT string_agg(item || '/' || found || '/' || action, ';') FROM "
                         "pgtrickle.repair_stream_table('s1')"),
              "stream_table/healthy/none");
    const std::string id = db->scalar("SELECT source_id FROM pgtrickle.pgt_sources");
    db->exec("ALTER TABLE t DISABLE TRIGGER pgt_capture_" + id);
    db->exec("INSERT INTO t VALUES (6, 6)");
    db->exec("ALTER TABLE t ENABLE TRIGGER pgt_capture_" + id);
    const std::string r = db->scalar(
        "SELECT string_agg(item || '/' || found, ';') FROM pgtrickle.repair_stream_table('s1')");
    EXPECT_NE(
        r.find("change_capture/\"public.t\": trigger pgt_capture_" + id + " not ENABLE ALWAYS"),
        std::string::npos)
        << r;
    EXPECT_EQ(last_action("s1"), "FULL");
    EXPECT_MATCHES_QUERY(*db, "s1");
    // (The DISABLE marked both already.)
    EXPECT_NE(reinit_reason("s2").find("was disabled"), std::string::npos);
    expect_reinitialised("s2", "was disabled", "INSERT INTO t VALUES (7, 7)", "DIFFERENTIAL");
    db->exec("INSERT INTO t VALUES (8, 8)");
    refresh("s1");
    EXPECT_EQ(last_action("s1"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "s1");
    EXPECT_EQ(db->scalar("SELECT found FROM pgtrickle.repair_stream_table('s1')"), "healthy");
}

// A delta statement written in another program format (a library update
// that changed it) is never run: the stream table is reinitialised.
TEST_F(SourceDdl, delta_statement_of_another_format_is_never_run) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, v int);"
        "INSERT INTO t SELECT g, g FROM generate_series(1, 10) g");
    create("s", "SELECT id, v FROM t WHERE v > 2");
    EXPECT_NE(db->scalar("SELECT delta_version FROM pgtrickle.pgt_stream_tables"), "");
    db->exec("UPDATE pgtrickle.pgt_stream_tables SET delta_version = delta_version - 1");
    expect_reinitialised("s", "delta statement made by another pg_trickle version",
                         "UPDATE t SET v = 0 WHERE id = 5", "DIFFERENTIAL");
}

// The property: random DDL on the sources (columns added, renamed, widened
// and dropped when no stream table reads them; a read column, a source and
// an enum value renamed; the function the queries call replaced; partitions
// attached with rows and detached) interleaved with random writes and
// refreshes. After every refresh the stream table equals its query, and
// the refresh after a DDL that changes results is FULL. PGT_PROPERTY_SEED
// replays a run; PGT_DDL_STEPS sets its length.
TEST_F(SourceDdl, property_random_ddl_interleaved_with_writes) {
    const uint64_t seed = property::property_seed();
    std::cout << "PGT_PROPERTY_SEED=" << seed << " (source DDL)" << std::endl;
    SCOPED_TRACE("PGT_PROPERTY_SEED=" + std::to_string(seed));
    property::Rng r(seed ^ 0xD1D1D1D1ULL);
    db->exec(
        "CREATE TYPE mood AS ENUM ('m0', 'm1', 'm2');"
        "CREATE FUNCTION f(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 * 2';"
        "CREATE TABLE t (id int PRIMARY KEY, k int, v int, e mood);"
        "CREATE TABLE u (k int PRIMARY KEY, w text);"
        "CREATE TABLE p (id int, k int, v int) PARTITION BY RANGE (k);"
        "CREATE TABLE p_0 PARTITION OF p FOR VALUES FROM (0) TO (10);"
        "INSERT INTO u SELECT g, 'w' || g FROM generate_series(0, 5) g;"
        "INSERT INTO t SELECT g, g % 6, g, ('m' || g % 3)::mood FROM generate_series(1, 40) g;"
        "INSERT INTO p SELECT g, g % 10, g FROM generate_series(1, 30) g");
    const std::vector<std::string> sts = {"s_scan", "s_group", "s_enum", "s_part", "s_join"};
    create("s_scan", "SELECT id, k, f(v) AS fv FROM t WHERE k > 1");
    create("s_group", "SELECT k, count(*) AS n, sum(v) AS sv FROM t GROUP BY k");
    create("s_enum", "SELECT e, count(*) AS n FROM t GROUP BY e");
    create("s_part", "SELECT k, count(*) AS n, sum(v) AS sv FROM p GROUP BY k");
    create("s_join", "SELECT t.id, u.w, t.v FROM t JOIN u ON u.k = t.k");
    // What the generator knows of the sources' current names.
    std::string table = "t", vcol = "v";
    std::vector<std::string> labels = {"m0", "m1", "m2"}, free_cols, parts = {"p_0"};
    int next_id = 1000, renames = 0, next_part = 1;
    // Stream tables whose next refresh must reinitialise (FULL).
    std::set<std::string> marked;
    const std::vector<std::string> t_readers = {"s_scan", "s_group", "s_enum", "s_join"};
    auto mark = [&](const std::vector<std::string>& which) {
        marked.insert(which.begin(), which.end());
    };
    const long steps = static_cast<long>(property::env_u64("PGT_DDL_STEPS", 150));
    for (long step = 0; step < steps; step++) {
        SCOPED_TRACE("step " + std::to_string(step));
        const int op = r.range(0, 99);
        std::string sql;
        if (op < 35) {  // writes to t
            const int id = r.range(1, 60);
            switch (r.range(0, 2)) {
                case 0:
                    sql = "INSERT INTO " + table + " (id, k, " + vcol + ", e) VALUES (" +
                          std::to_string(next_id++) + ", " + r.num(0, 6) + ", " + r.num(-5, 50) +
                          ", '" + r.pick(labels) + "') ";
                    break;
                case 1:
                    sql = "UPDATE " + table + " SET " + vcol + " = " + vcol + " + " + r.num(1, 5) +
                          ", e = '" + r.pick(labels) + "' WHERE id % 7 = " + std::to_string(id % 7);
                    break;
                default:
                    sql = "DELETE FROM " + table + " WHERE id = " + std::to_string(id);
            }
        } else if (op < 45) {  // writes to p
            sql = r.chance(70) ? "INSERT INTO p SELECT " + std::to_string(next_id++) +
                                     ", k, 1 FROM (SELECT k FROM p ORDER BY random() LIMIT 1) x"
                               : "DELETE FROM p WHERE id % 11 = " + r.num(0, 10);
        } else if (op < 52) {  // an unread column added, renamed, widened or dropped
            if (free_cols.empty() || r.chance(40)) {
                free_cols.push_back("x" + std::to_string(step));
                sql = "ALTER TABLE " + table + " ADD COLUMN " + free_cols.back() + " int";
            } else if (r.chance(30) || r.chance(50)) {
                // Widened or dropped: refused (0A000 / 2BP01) while a capture
                // holds the column (a two-table join captures whole rows).
                const bool widen = r.chance(50);
                try {
                    db->exec("ALTER TABLE " + table +
                             (widen ? " ALTER COLUMN " + free_cols.back() + " TYPE bigint"
                                    : " DROP COLUMN " + free_cols.back()));
                    if (!widen) {
                        free_cols.pop_back();
                    }
                } catch (const SqlError& e) {
                    ASSERT_TRUE(e.sqlstate == "0A000" || e.sqlstate == "2BP01") << e.message;
                }
                continue;
            } else {
                std::string to = free_cols.back() + "r";
                sql = "ALTER TABLE " + table + " RENAME COLUMN " + free_cols.back() + " TO " + to;
                free_cols.back() = to;
                mark(t_readers);  // a rename marks every reader of the table
            }
        } else if (op < 56) {  // a read column or the source renamed
            if (r.chance(50)) {
                std::string to = "v" + std::to_string(++renames);
                sql = "ALTER TABLE " + table + " RENAME COLUMN " + vcol + " TO " + to;
                vcol = to;
                mark(t_readers);
            } else {
                std::string to = "t" + std::to_string(++renames);
                sql = "ALTER TABLE " + table + " RENAME TO " + to;
                table = to;
                mark(t_readers);
            }
        } else if (op < 60) {  // the function replaced
            sql =
                "CREATE OR REPLACE FUNCTION f(int) RETURNS int LANGUAGE sql IMMUTABLE AS "
                "'SELECT $1 * " +
                r.num(1, 9) + "'";
            mark({"s_scan"});
        } else if (op < 63) {  // an enum value renamed
            std::string& l = labels[static_cast<size_t>(r.range(0, 2))];
            std::string to = "m" + std::to_string(100 + step);
            sql = "ALTER TYPE mood RENAME VALUE '" + l + "' TO '" + to + "'";
            l = to;
            mark({"s_enum"});
        } else if (op < 67) {  // a partition with rows attached, or one detached
            if (parts.size() > 1 && r.chance(40)) {
                const std::string part = parts.back();
                parts.pop_back();
                sql = "ALTER TABLE p DETACH PARTITION " + part;
                mark({"s_part"});
            } else {
                const std::string part = "p_" + std::to_string(next_part);
                const int lo = 10 * next_part++;
                sql = "CREATE TABLE " + part + " (id int, k int, v int); INSERT INTO " + part +
                      " SELECT " + std::to_string(next_id) + " + g, " + std::to_string(lo) +
                      " + g % 10, g FROM generate_series(1, 5) g; ALTER TABLE p ATTACH PARTITION " +
                      part + " FOR VALUES FROM (" + std::to_string(lo) + ") TO (" +
                      std::to_string(lo + 10) + ")";
                next_id += 10;
                parts.push_back(part);
                mark({"s_part"});
            }
        } else {  // a refresh, checked
            const std::string st = r.pick(sts);
            refresh(st);
            if (marked.erase(st) > 0) {
                ASSERT_EQ(last_action(st), "FULL") << st;
                ASSERT_NE(last_reason(st).find("reinitialised"), std::string::npos) << st;
            }
            ASSERT_MATCHES_QUERY(*db, st);
            continue;
        }
        db->exec(sql);
    }
    for (const std::string& st : sts) {
        refresh(st);
        if (marked.erase(st) > 0) {
            EXPECT_EQ(last_action(st), "FULL") << st;
        }
        EXPECT_MATCHES_QUERY(*db, st);
        db->exec("UPDATE " + table + " SET " + vcol + " = " + vcol + " + 1 WHERE id % 3 = 0");
        refresh(st);
        EXPECT_NE(last_action(st), "FULL") << st;  // DIFFERENTIAL again after DDL
        EXPECT_MATCHES_QUERY(*db, st);
    }
}

// The same in every refresh mode (FULL, AUTO, DIFFERENTIAL, IMMEDIATE over
// one table): random writes, ALTER TYPE / DROP / ADD / RENAME of read and
// unread columns, our triggers disabled and enabled again, refreshes. A
// read column's type or existence never changes (0A000 / 2BP01); every
// write succeeds (the source stays writable); the IMMEDIATE stream tables
// equal their queries after every statement, the others after every
// refresh, which is FULL when DDL or a disabled trigger marked them.
TEST_F(SourceDdl, property_random_ddl_with_readers_in_every_mode) {
    const uint64_t seed = property::property_seed();
    std::cout << "PGT_PROPERTY_SEED=" << seed << " (source DDL, every mode)" << std::endl;
    SCOPED_TRACE("PGT_PROPERTY_SEED=" + std::to_string(seed));
    property::Rng r(seed ^ 0x0DDC0DE5ULL);
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, k int, v int, w varchar(20));"
        "INSERT INTO t SELECT g, g % 5, g, 'w' || g FROM generate_series(1, 40) g");
    std::string v = "v", w = "w";  // read columns, as renamed so far
    const std::vector<std::pair<std::string, std::string>> readers = {{"m_full", "FULL"},
                                                                      {"m_auto", "AUTO"},
                                                                      {"m_diff", "DIFFERENTIAL"},
                                                                      {"m_imm", "IMMEDIATE"},
                                                                      {"m_imm_agg", "IMMEDIATE"}};
    create("m_full", "SELECT id, k, v FROM t WHERE k > 1", "FULL");
    create("m_auto", "SELECT k, count(*) AS n, sum(v) AS sv FROM t GROUP BY k", "AUTO");
    create("m_diff", "SELECT id, w FROM t WHERE v > 3", "DIFFERENTIAL");
    create("m_imm", "SELECT id, v, w FROM t", "IMMEDIATE");
    create("m_imm_agg", "SELECT k, sum(v) AS sv, count(*) AS n FROM t GROUP BY k", "IMMEDIATE");
    std::set<std::string> marked;
    auto mark_all = [&] {
        for (const auto& [st, mode] : readers) {
            if (mode != "IMMEDIATE") {
                marked.insert(st);
            }
        }
    };
    auto expect_immediate = [&](const std::string& after) {
        for (const char* st : {"m_imm", "m_imm_agg"}) {
            ASSERT_MATCHES_QUERY(*db, st) << "after " << after;
        }
    };
    std::vector<std::string> unread;
    int next_id = 1000;
    const long steps = static_cast<long>(property::env_u64("PGT_DDL_STEPS", 120));
    for (long step = 0; step < steps; step++) {
        SCOPED_TRACE("step " + std::to_string(step));
        const int op = r.range(0, 99);
        if (op < 40) {  // a write: it must succeed
            std::string sql;
            switch (r.range(0, 2)) {
                case 0:
                    sql = "INSERT INTO t (id, k, " + v + ", " + w + ") VALUES (" +
                          std::to_string(next_id++) + ", " + r.num(0, 5) + ", " + r.num(-5, 50) +
                          ", 'x" + r.num(0, 9) + "')";
                    break;
                case 1:
                    sql = "UPDATE t SET " + v + " = " + v + " + " + r.num(1, 5) + ", k = k + 1 " +
                          "WHERE id % 7 = " + r.num(0, 6);
                    break;
                default:
                    sql = "DELETE FROM t WHERE id % 13 = " + r.num(0, 12);
            }
            db->exec(sql);
            expect_immediate(sql);
        } else if (op < 52) {  // a read column's type or existence: refused
            const std::string col = r.chance(50) ? v : w;
            const int how = r.range(0, 2);
            const std::string sql = how == 0 ? "ALTER TABLE t ALTER COLUMN " + col + " TYPE " +
                                                   (col == v ? "numeric" : "varchar(50)")
                                    : how == 1 ? "ALTER TABLE t DROP COLUMN " + col
                                               : "ALTER TABLE t DROP COLUMN " + col + " CASCADE";
            SqlError e = db->error_of(sql);
            ASSERT_EQ(e.sqlstate, how == 0 ? "0A000" : "2BP01") << sql << ": " << e.message;
        } else if (op < 64) {  // an unread column added, widened, renamed or dropped
            std::string sql;
            if (unread.empty() || r.chance(35)) {
                unread.push_back("x" + std::to_string(step));
                sql = "ALTER TABLE t ADD COLUMN " + unread.back() + " int";
            } else if (r.chance(40)) {
                sql = "ALTER TABLE t ALTER COLUMN " + unread.back() + " TYPE bigint";
            } else if (r.chance(50)) {
                sql = "ALTER TABLE t DROP COLUMN " + unread.back();
                unread.pop_back();
            } else {
                const std::string to = unread.back() + "r";
                sql = "ALTER TABLE t RENAME COLUMN " + unread.back() + " TO " + to;
                unread.back() = to;
                mark_all();
            }
            db->exec(sql);
            expect_immediate(sql);
        } else if (op < 70) {  // a read column renamed
            std::string& col = r.chance(50) ? v : w;
            const std::string to = col + "_" + std::to_string(step);
            db->exec("ALTER TABLE t RENAME COLUMN " + col + " TO " + to);
            col = to;
            mark_all();
            expect_immediate("a rename");
        } else if (op < 78) {  // one of our triggers disabled, a write, enabled again
            const std::string trig = db->scalar(
                "SELECT tgname FROM pg_trigger WHERE tgrelid = 't'::regclass AND tgfoid IN "
                "(SELECT oid FROM pg_proc WHERE pronamespace = 'pgtrickle'::regnamespace) "
                "ORDER BY tgname OFFSET " +
                r.num(0, 3) + " LIMIT 1");
            db->exec("ALTER TABLE t DISABLE TRIGGER " + trig);
            db->exec("INSERT INTO t (id, k, " + v + ", " + w + ") VALUES (" +
                     std::to_string(next_id++) + ", 1, 7, 'y')");
            db->exec("ALTER TABLE t ENABLE ALWAYS TRIGGER " + trig);
            mark_all();
            expect_immediate("disabled " + trig);
        } else {  // a refresh, checked
            const auto& [st, mode] = readers[static_cast<size_t>(r.range(0, 2))];
            refresh(st);
            if (marked.erase(st) > 0) {
                ASSERT_EQ(last_action(st), "FULL") << st;
            }
            ASSERT_MATCHES_QUERY(*db, st);
        }
    }
    for (const auto& [st, mode] : readers) {
        if (mode != "IMMEDIATE") {
            refresh(st);
            EXPECT_MATCHES_QUERY(*db, st);
        }
    }
    db->exec("UPDATE t SET " + v + " = " + v + " + 1 WHERE id % 3 = 0");
    expect_immediate("the last write");
    refresh("m_diff");
    EXPECT_EQ(last_action("m_diff"), "DIFFERENTIAL");  // DIFFERENTIAL again after the DDL
    EXPECT_MATCHES_QUERY(*db, "m_diff");
}

}  // namespace
}  // namespace pgt::e2e
