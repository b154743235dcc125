// Trust findings: ways a stream table silently went stale or a statement
// failed with the wrong error, each replayed as its finding described it
// (interleavings also in test/isolation/specs/*_snapshot, *_repeatable_read).
// Invariant: every test that changes data checks the oracle after the
// change, and the refresh mode that ran where a refresh happens.
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cluster.hpp"
#include "fixture.hpp"

namespace pgt::e2e {
namespace {

// SQLSTATE and message of the statement's error, "" when it succeeded.
std::string failure_of(Conn& c, const std::string& sql,
                       const std::vector<std::string>& params = {}) {
    std::optional<SqlError> e = error_in(c, sql, params);
    return e ? e->sqlstate + ": " + e->message : "";
}

bool mentions(const std::string& text, const std::string& what) {
    return text.find(what) != std::string::npos;
}

constexpr const char* kCreateRoles = R"sql(
DO $$
DECLARE r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['alice', 'bob'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
      EXECUTE pg_catalog.format('CREATE ROLE %I', r);
    END IF;
    EXECUTE pg_catalog.format(
      'ALTER ROLE %I LOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB NOBYPASSRLS', r);
    EXECUTE pg_catalog.format('ALTER ROLE %I RESET ALL', r);
  END LOOP;
END $$)sql";

class Trust : public DbTest {
protected:
    // The roles are cluster-wide: what a test gave them goes at its end.
    void TearDown() override {
        if (db && made_roles_) {
            try {
                db->exec("ROLLBACK");
                db->exec("DROP OWNED BY alice, bob");
            } catch (const std::exception& e) {
                ADD_FAILURE() << "cleaning up the roles failed: " << e.what();
            }
        }
        DbTest::TearDown();
    }

    void create(const std::string& name, const std::string& query, const std::string& mode) {
        db->exec("SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => $3)",
                 {name, query, mode});
    }
    std::string create_error(Conn& c, const std::string& name, const std::string& query,
                             const std::string& mode) {
        return sqlstate_of(c, "SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => $3)",
                           {name, query, mode});
    }
    void drop(const std::string& name) {
        db->exec("SELECT pgtrickle.drop_stream_table($1)", {name});
    }
    // pgt_stream_tables.reinit_reason of st ("<NULL>" when unmarked).
    std::string reinit_reason(const std::string& st) {
        return db->scalar(
            "SELECT reinit_reason FROM pgtrickle.pgt_stream_tables WHERE pgt_relid = "
            "$1::regclass",
            {st});
    }
    // Refreshes st; the refresh that ran was `action` and st equals its query.
    void expect_refresh(const std::string& st, const std::string& action,
                        const std::string& after) {
        refresh(st);
        EXPECT_EQ(last_action(st), action) << st << " after " << after;
        EXPECT_MATCHES_QUERY(*db, st) << "after " << after;
    }

    // alice (owns schema alice) and bob, both plain login roles.
    void make_roles() {
        db->exec(kCreateRoles);
        made_roles_ = true;
        db->exec(
            "GRANT CREATE, USAGE ON SCHEMA public TO alice, bob;"
            "CREATE SCHEMA alice AUTHORIZATION alice; GRANT USAGE ON SCHEMA alice TO bob");
    }
    // A session logged in as `role` on this test's database.
    std::unique_ptr<Conn> login(const std::string& role) {
        return std::make_unique<Conn>(conninfo() + " user=" + role);
    }

    bool made_roles_ = false;
};

// Finding 1: ALTER COLUMN ... TYPE of a column a stream table read was
// allowed, leaving a stream table whose query no longer matched what it
// stored.
TEST_F(Trust, finding1_alter_type_of_a_read_column_is_refused_in_every_mode) {
    db->exec(
        "CREATE TABLE n1 (id int PRIMARY KEY, b int, c int);"
        "INSERT INTO n1 SELECT g, g % 5, g FROM generate_series(1, 2000) g");
    struct Reader {
        std::string name, query, mode, modes, action;
    };
    const std::vector<Reader> readers = {
        {"n1_full", "SELECT id, b FROM n1", "FULL", "FULL/FULL", "FULL"},
        {"n1_imm", "SELECT sum(b) AS s FROM n1", "IMMEDIATE", "IMMEDIATE/IMMEDIATE", ""},
        {"n1_auto", "SELECT b, count(*) AS n FROM n1 GROUP BY b", "AUTO", "AUTO/DIFFERENTIAL",
         "DIFFERENTIAL"},
        {"n1_diff", "SELECT id, b FROM n1 WHERE b > 1", "DIFFERENTIAL", "DIFFERENTIAL/DIFFERENTIAL",
         "DIFFERENTIAL"},
    };
    const std::string alter_b = "ALTER TABLE n1 ALTER COLUMN b TYPE numeric";
    // Each alone: the ALTER is refused because of that one reader.
    for (const Reader& r : readers) {
        create(r.name, r.query, r.mode);
        EXPECT_EQ(modes(r.name), r.modes);
        std::optional<SqlError> e = error_in(*db, alter_b);
        ASSERT_TRUE(e) << r.mode << ": " << alter_b << " succeeded";
        EXPECT_EQ(e->sqlstate, "0A000") << r.mode << ": " << e->message;
        EXPECT_TRUE(mentions(e->detail, r.name)) << r.mode << ": " << e->detail;
        drop(r.name);
    }
    // All together: b stays int, the unread c may change type.
    for (const Reader& r : readers) {
        create(r.name, r.query, r.mode);
    }
    EXPECT_EQ(sqlstate_of(*db, alter_b), "0A000");
    EXPECT_EQ(failure_of(*db, "ALTER TABLE n1 ALTER COLUMN c TYPE bigint"), "");
    EXPECT_EQ(db->scalar("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE "
                         "attrelid = 'n1'::regclass AND attname = 'b'"),
              "integer");
    // AUTO weighs measured times; slow FULL refreshes on record make its
    // choice DIFFERENTIAL whatever this machine measures.
    for (int i = 0; i < 3; i++) {
        write_history("n1_auto", "FULL", 100000, 0);
    }
    for (const char* write :
         {"INSERT INTO n1 VALUES (2001, 3, 21), (2002, 4, 22)",
          "UPDATE n1 SET b = b + 1 WHERE id % 300 = 0", "DELETE FROM n1 WHERE id % 400 = 0"}) {
        db->exec(write);
        for (const Reader& r : readers) {
            if (r.action.empty()) {
                EXPECT_MATCHES_QUERY(*db, r.name) << "after " << write;
            } else {
                expect_refresh(r.name, r.action, write);
            }
        }
    }
}

// Finding 2: DROP COLUMN of a column an IMMEDIATE stream table read went
// through (CASCADE dropping the stream table's guard), after which writes
// to the source failed in its maintenance.
TEST_F(Trust, finding2_drop_of_a_read_column_is_refused_and_the_source_stays_writable) {
    db->exec(
        "CREATE TABLE n2 (id int PRIMARY KEY, d varchar(50), e int, f text);"
        "INSERT INTO n2 SELECT g, 'd' || g, g, 'f' FROM generate_series(1, 10) g");
    create("n2_imm", "SELECT id, d FROM n2", "IMMEDIATE");
    EXPECT_EQ(modes("n2_imm"), "IMMEDIATE/IMMEDIATE");
    for (const char* ddl : {"ALTER TABLE n2 DROP COLUMN d", "ALTER TABLE n2 DROP COLUMN d CASCADE",
                            "DROP TRIGGER pgt_guard ON n2_imm"}) {
        std::optional<SqlError> e = error_in(*db, ddl);
        ASSERT_TRUE(e) << ddl << " succeeded";
        EXPECT_EQ(e->sqlstate, "2BP01") << ddl << ": " << e->message;
    }
    EXPECT_EQ(sqlstate_of(*db, "ALTER TABLE n2 ALTER COLUMN d TYPE varchar(100)"), "0A000");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'n2_imm'::regclass "
                         "AND tgname = 'pgt_guard'"),
              "1");
    EXPECT_EQ(failure_of(*db, "ALTER TABLE n2 DROP COLUMN e"), "");
    EXPECT_MATCHES_QUERY(*db, "n2_imm");
    for (const char* write :
         {"INSERT INTO n2 VALUES (11, 'd11', 'f'), (12, NULL, 'g')",
          "UPDATE n2 SET d = d || 'x' WHERE id % 2 = 0", "UPDATE n2 SET f = 'h' WHERE id < 4",
          "DELETE FROM n2 WHERE id > 8"}) {
        EXPECT_EQ(failure_of(*db, write), "") << write;
        EXPECT_MATCHES_QUERY(*db, "n2_imm") << "after " << write;
    }
    // A FULL reader protects the column the same way.
    drop("n2_imm");
    create("n2_full", "SELECT id, d FROM n2", "FULL");
    EXPECT_EQ(sqlstate_of(*db, "ALTER TABLE n2 DROP COLUMN d"), "2BP01");
    EXPECT_EQ(sqlstate_of(*db, "ALTER TABLE n2 DROP COLUMN d CASCADE"), "2BP01");
    db->exec("INSERT INTO n2 VALUES (20, 'd20', 'f'); DELETE FROM n2 WHERE id = 1");
    expect_refresh("n2_full", "FULL", "writes under the FULL reader");
}

// Finding 5: a window function over an aggregate failed with an internal
// error (XX000) instead of being a stream table recomputed by FULL.
TEST_F(Trust, finding5_window_over_an_aggregate_is_a_full_stream_table) {
    db->exec(
        "CREATE TABLE t (g int, v int);"
        "INSERT INTO t SELECT g % 4, g FROM generate_series(1, 20) g");
    const std::string query = "SELECT g, rank() OVER (ORDER BY sum(v)) AS r FROM t GROUP BY g";
    Result v = db->exec(
        "SELECT value FROM pgtrickle.validate_query($1, 'AUTO') WHERE property = "
        "'refresh_mode'",
        {query});
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v.at(0, 0), "FULL");
    EXPECT_EQ(failure_of(*db, "SELECT * FROM pgtrickle.validate_query($1, 'FULL')", {query}), "");
    const std::string before = state();
    for (const char* mode : {"DIFFERENTIAL", "IMMEDIATE"}) {
        std::optional<SqlError> e =
            error_in(*db, "SELECT pgtrickle.create_stream_table('w_no', $1, refresh_mode => $2)",
                     {query, mode});
        ASSERT_TRUE(e) << mode << " was accepted";
        EXPECT_EQ(e->sqlstate, "0A000") << mode << ": " << e->message;
        EXPECT_EQ(state(), before) << mode << " left objects behind";
    }
    create("w_full", query, "FULL");
    create("w_auto", query, "AUTO");
    EXPECT_EQ(modes("w_full"), "FULL/FULL");
    EXPECT_EQ(modes("w_auto"), "AUTO/FULL");
    EXPECT_MATCHES_QUERY(*db, "w_full");
    EXPECT_MATCHES_QUERY(*db, "w_auto");
    for (const char* write : {"INSERT INTO t VALUES (1, 100), (7, 3)",
                              "UPDATE t SET v = v * 3 WHERE g = 2", "DELETE FROM t WHERE g = 0"}) {
        db->exec(write);
        expect_refresh("w_full", "FULL", write);
        expect_refresh("w_auto", "FULL", write);
    }
}

// Finding 6: DISABLE TRIGGER on our capture or maintenance triggers, a
// write, then ENABLE: the write reached no stream table, and the next
// DIFFERENTIAL refresh found no change (NO_DATA) and stayed wrong.
TEST_F(Trust, finding6_capture_disabled_and_enabled_again_marks_readers) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, v int);"
        "INSERT INTO t SELECT g, g FROM generate_series(1, 10) g");
    create("t_diff", "SELECT id, v FROM t", "DIFFERENTIAL");
    create("t_imm", "SELECT count(*) AS n, sum(v) AS s FROM t", "IMMEDIATE");
    // `alter` (DISABLE TRIGGER, ...) of every trigger on t, by name.
    auto each_trigger = [&](const std::string& alter) {
        Result r = db->exec(
            "SELECT quote_ident(tgname) FROM pg_trigger WHERE tgrelid = 't'::regclass AND NOT "
            "tgisinternal ORDER BY tgname");
        ASSERT_GT(r.size(), 0u);
        for (size_t i = 0; i < r.size(); i++) {
            db->exec("ALTER TABLE t " + alter + " " + r.at(i, 0));
        }
    };
    // After a write made while capture was off: the DIFFERENTIAL reader is
    // marked and recomputed, the IMMEDIATE one equals its query; later
    // writes are maintained as usual.
    auto expect_put_right = [&](const std::string& how) {
        EXPECT_NE(reinit_reason("t_diff"), "<NULL>") << how;
        EXPECT_MATCHES_QUERY(*db, "t_imm") << how;
        expect_refresh("t_diff", "FULL", how);
        EXPECT_EQ(reinit_reason("t_diff"), "<NULL>") << how;
        db->exec("INSERT INTO t SELECT max(id) + 1, 7 FROM t; UPDATE t SET v = v + 1 WHERE id = 2");
        EXPECT_MATCHES_QUERY(*db, "t_imm") << "a write after " << how;
        expect_refresh("t_diff", "DIFFERENTIAL", "a write after " + how);
    };

    each_trigger("DISABLE TRIGGER");
    db->exec("INSERT INTO t VALUES (100, 100)");
    each_trigger("ENABLE ALWAYS TRIGGER");
    expect_put_right("DISABLE and ENABLE ALWAYS of each trigger");

    db->exec("ALTER TABLE t DISABLE TRIGGER ALL");
    db->exec("INSERT INTO t VALUES (1000, 1000); DELETE FROM t WHERE id = 1");
    db->exec("ALTER TABLE t ENABLE TRIGGER ALL");
    expect_put_right("DISABLE TRIGGER ALL and ENABLE TRIGGER ALL");

    // A trigger of the user's own: no stream table misses a write.
    db->exec(
        "CREATE FUNCTION keep_row() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RETURN NEW; END $$;"
        "CREATE TRIGGER mine BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION keep_row();"
        "ALTER TABLE t DISABLE TRIGGER mine");
    EXPECT_EQ(reinit_reason("t_diff"), "<NULL>");
    EXPECT_EQ(reinit_reason("t_imm"), "<NULL>");
    db->exec("INSERT INTO t VALUES (200, 200)");
    db->exec("ALTER TABLE t ENABLE TRIGGER mine");
    EXPECT_EQ(reinit_reason("t_diff"), "<NULL>");
    EXPECT_EQ(reinit_reason("t_imm"), "<NULL>");
    EXPECT_MATCHES_QUERY(*db, "t_imm");
    expect_refresh("t_diff", "DIFFERENTIAL", "toggling the user's own trigger");
}

// Finding 8: a REPEATABLE READ transaction whose snapshot predates an
// IMMEDIATE stream table's creation wrote to its source unmaintained (the
// stream table was invisible to it); now the write fails with 40001.
TEST_F(Trust, finding8_immediate_write_from_a_snapshot_older_than_the_stream_table_fails_40001) {
    db->exec("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)");
    Conn a = connect_db();
    a.exec("BEGIN ISOLATION LEVEL REPEATABLE READ");
    EXPECT_EQ(a.scalar("SELECT count(*) FROM t"), "1");
    create("t_imm", "SELECT count(*) AS n FROM t", "IMMEDIATE");
    std::optional<SqlError> e = error_in(a, "INSERT INTO t VALUES (2)");
    ASSERT_TRUE(e) << "the write from the old snapshot succeeded";
    EXPECT_EQ(e->sqlstate, "40001") << e->message;
    a.exec("ROLLBACK");
    EXPECT_MATCHES_QUERY(*db, "t_imm");
    a.exec("BEGIN ISOLATION LEVEL REPEATABLE READ");
    EXPECT_EQ(failure_of(a, "INSERT INTO t VALUES (2)"), "");
    a.exec("COMMIT");
    EXPECT_EQ(db->scalar("SELECT n FROM t_imm"), "2");
    EXPECT_MATCHES_QUERY(*db, "t_imm");
}

// Finding 9: a stream table created in a REPEATABLE READ transaction was
// populated from its snapshot, so a row committed between the snapshot and
// the capture trigger was in neither the population nor the change buffer.
TEST_F(Trust, finding9_create_in_repeatable_read_misses_nothing) {
    db->exec("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)");
    Conn b = connect_db();
    int next = 2;
    for (const char* mode : {"DIFFERENTIAL", "AUTO"}) {
        const std::string st = "t_" + lower(mode);
        db->exec("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1");
        b.exec("INSERT INTO t VALUES ($1)", {std::to_string(next++)});
        create(st, "SELECT id FROM t", mode);
        db->exec("COMMIT");
        EXPECT_EQ(modes(st), std::string(mode) + "/DIFFERENTIAL");
        EXPECT_NE(reinit_reason(st), "<NULL>") << mode;
        expect_refresh(st, "FULL", std::string("a create in REPEATABLE READ (") + mode + ")");
        b.exec("INSERT INTO t VALUES ($1)", {std::to_string(next++)});
        expect_refresh(st, "DIFFERENTIAL", std::string("a later write (") + mode + ")");
    }
    const std::string before = state();
    for (const char* level : {"REPEATABLE READ", "SERIALIZABLE"}) {
        db->exec(std::string("BEGIN ISOLATION LEVEL ") + level);
        EXPECT_EQ(create_error(*db, "t_imm", "SELECT id FROM t", "IMMEDIATE"), "25001") << level;
        db->exec("ROLLBACK");
        EXPECT_EQ(state(), before) << level << " left objects behind";
    }
}

// Finding 11: an IMMEDIATE join or EXISTS failed for a plain role owning
// both tables (the right to put triggers was checked on the first table
// only); a role lacking it on the second got 42P01, not 42501.
TEST_F(Trust, finding11_immediate_join_and_exists_as_a_plain_owner) {
    make_roles();
    auto alice = login("alice");
    alice->exec(
        "CREATE TABLE alice.cust (id int PRIMARY KEY, name text);"
        "CREATE TABLE alice.orders (id int PRIMARY KEY, cust int);"
        "INSERT INTO alice.cust SELECT g, 'c' || g FROM generate_series(1, 5) g;"
        "INSERT INTO alice.orders SELECT g, g % 3 + 1 FROM generate_series(1, 6) g");
    const std::vector<std::pair<std::string, std::string>> sts = {
        {"alice.cust_orders",
         "SELECT c.id, c.name, o.id AS oid FROM alice.cust c JOIN alice.orders o ON o.cust = c.id"},
        {"alice.cust_ordering",
         "SELECT c.id, c.name FROM alice.cust c WHERE EXISTS (SELECT 1 FROM alice.orders o WHERE "
         "o.cust = c.id)"},
    };
    for (const auto& [name, query] : sts) {
        ASSERT_EQ(failure_of(*alice,
                             "SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => "
                             "'IMMEDIATE')",
                             {name, query}),
                  "")
            << name;
        EXPECT_EQ(modes(name), "IMMEDIATE/IMMEDIATE");
        EXPECT_TRUE(matches_query(*alice, name));
    }
    for (const char* write :
         {"INSERT INTO alice.orders VALUES (7, 5), (8, 5)", "UPDATE alice.cust SET name = 'x'",
          "INSERT INTO alice.cust VALUES (6, 'c6')",
          "UPDATE alice.orders SET cust = 6 WHERE id = 1",
          "DELETE FROM alice.orders WHERE cust = 2", "DELETE FROM alice.cust WHERE id = 3"}) {
        EXPECT_EQ(failure_of(*alice, write), "") << write;
        for (const auto& [name, query] : sts) {
            EXPECT_TRUE(matches_query(*alice, name)) << "after " << write;
        }
    }
    // bob may read both tables and owns neither.
    alice->exec("GRANT SELECT ON alice.cust, alice.orders TO bob");
    auto bob = login("bob");
    const std::string before = state();
    EXPECT_EQ(create_error(*bob, "public.bob_join", sts[0].second, "IMMEDIATE"), "42501");
    EXPECT_EQ(state(), before);
    // With the right on the first table only, the second still refuses.
    alice->exec("GRANT TRIGGER ON alice.cust TO bob");
    std::optional<SqlError> e =
        error_in(*bob,
                 "SELECT pgtrickle.create_stream_table('public.bob_join', $1, refresh_mode => "
                 "'IMMEDIATE')",
                 {sts[0].second});
    ASSERT_TRUE(e) << "bob created an IMMEDIATE join over alice.orders";
    EXPECT_EQ(e->sqlstate, "42501") << e->message;
    EXPECT_TRUE(mentions(e->message, "alice.orders")) << e->message;
    EXPECT_EQ(state(), before);
    // The same once capture triggers exist on both tables (alice's
    // DIFFERENTIAL join): IMMEDIATE puts triggers of its own there.
    ASSERT_EQ(failure_of(*alice,
                         "SELECT pgtrickle.create_stream_table('alice.cust_orders_d', $1, "
                         "refresh_mode => 'DIFFERENTIAL')",
                         {sts[0].second}),
              "");
    const std::string with_capture = state();
    e = error_in(*bob,
                 "SELECT pgtrickle.create_stream_table('public.bob_join', $1, refresh_mode => "
                 "'IMMEDIATE')",
                 {sts[0].second});
    ASSERT_TRUE(e) << "bob created an IMMEDIATE join over alice.orders";
    EXPECT_EQ(e->sqlstate, "42501") << e->message;
    EXPECT_TRUE(mentions(e->message, "alice.orders")) << e->message;
    EXPECT_EQ(state(), with_capture);
}

// Finding 10: a failed IMMEDIATE statement or refresh printed the whole
// generated statement (1-2 kB, values of other columns included) as its
// CONTEXT; health_check did not look at the storage's guard trigger.
TEST_F(Trust, finding10_errors_quote_no_generated_sql_and_the_guard_is_checked) {
    db->exec("CREATE TABLE e (id int PRIMARY KEY, v int); INSERT INTO e VALUES (1, 1)");
    create("e_imm", "SELECT id, 10 / v AS r FROM e", "IMMEDIATE");
    create("e_diff", "SELECT id, 100 / v AS r FROM e", "DIFFERENTIAL");
    std::optional<SqlError> e = error_in(*db, "INSERT INTO e VALUES (2, 0)");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->sqlstate, "22012") << e->message;
    EXPECT_FALSE(mentions(e->context, "__pgt")) << e->context;
    EXPECT_FALSE(mentions(e->context, "SQL statement")) << e->context;
    EXPECT_MATCHES_QUERY(*db, "e_imm");
    drop("e_imm");
    db->exec("INSERT INTO e VALUES (2, 0)");
    e = error_in(*db, "SELECT pgtrickle.refresh_stream_table('e_diff')");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->sqlstate, "22012") << e->message;
    EXPECT_FALSE(mentions(e->context, "__pgt")) << e->context;
    EXPECT_FALSE(mentions(e->internal_query, "__pgt")) << e->internal_query;
    db->exec("DELETE FROM e WHERE v = 0");
    expect_refresh("e_diff", "DIFFERENTIAL", "the failing row went");

    auto guard_check = [&] {
        return db->scalar(
            "SELECT ok || '|' || detail FROM pgtrickle.health_check() WHERE check_name = "
            "'storage_guard'");
    };
    EXPECT_EQ(guard_check(), "true|every stream table refuses direct writes");
    db->exec("ALTER TABLE e_diff DISABLE TRIGGER pgt_guard");
    EXPECT_TRUE(mentions(guard_check(), "false|public.e_diff")) << guard_check();
    const std::string found = db->scalar(
        "SELECT string_agg(item || '/' || found, ';') FROM "
        "pgtrickle.repair_stream_table('e_diff')");
    EXPECT_TRUE(mentions(found, "storage_guard/guard trigger disabled")) << found;
    EXPECT_EQ(guard_check(), "true|every stream table refuses direct writes");
    EXPECT_EQ(sqlstate_of(*db, "INSERT INTO e_diff (id, r) VALUES (9, 9)"), "55000");
    EXPECT_MATCHES_QUERY(*db, "e_diff");
}

// Finding 12: an IMMEDIATE stream table stored timestamptz::text formatted
// in the writer's TimeZone, a DIFFERENTIAL or FULL one in the refresher's:
// what was stored depended on who wrote or refreshed. Now every path
// computes under the settings recorded when the query was defined.
TEST_F(Trust, finding12_values_are_computed_under_the_settings_of_the_definition) {
    db->exec(
        "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, MDY';"
        "CREATE TABLE ev (id int PRIMARY KEY, at timestamptz, amount numeric);"
        "INSERT INTO ev VALUES (1, '2024-01-01 10:00+00', 1.5)");
    const std::string q =
        "SELECT id, at::text AS at_text, date_trunc('day', at) AS day, to_char(amount, "
        "'FM999D99') AS shown FROM ev";
    create("ev_imm", q, "IMMEDIATE");
    create("ev_diff", q, "DIFFERENTIAL");
    create("ev_full", q, "FULL");
    EXPECT_TRUE(mentions(db->scalar("SELECT value FROM pgtrickle.explain_st('ev_diff') WHERE "
                                    "property = 'query_settings'"),
                         "TimeZone=UTC"));
    // Another session with other settings writes and refreshes.
    Conn other = connect_db();
    other.exec("SET TimeZone = 'Pacific/Kiritimati'; SET DateStyle = 'German'");
    other.exec("INSERT INTO ev VALUES (2, '2024-01-02 23:30+00', 2.25)");
    other.exec("UPDATE ev SET amount = amount + 1 WHERE id = 1");
    for (const char* st : {"ev_diff", "ev_full"}) {
        other.exec("SELECT pgtrickle.refresh_stream_table($1)", {st});
    }
    EXPECT_EQ(last_action("ev_diff"), "DIFFERENTIAL");
    EXPECT_EQ(last_action("ev_full"), "FULL");
    for (const char* st : {"ev_imm", "ev_diff", "ev_full"}) {
        EXPECT_MATCHES_QUERY(*db, st);  // (this session has the definition's settings)
        EXPECT_EQ(db->scalar(std::string("SELECT at_text FROM ") + st + " WHERE id = 2"),
                  "2024-01-02 23:30:00+00")
            << st;
    }
    // The other session's settings are its own again.
    EXPECT_EQ(other.scalar("SHOW TimeZone"), "Pacific/Kiritimati");
}

// Finding 13: a STABLE function (statistics, the clock, settings, the
// catalog) was accepted for DIFFERENTIAL with a WARNING, AUTO picked
// DIFFERENTIAL, and the stream table then silently differed from its query.
TEST_F(Trust, finding13_what_can_change_without_a_write_is_recomputed_only) {
    db->exec(
        "CREATE TABLE r (id int PRIMARY KEY, a_id int, at timestamptz, label text);"
        "INSERT INTO r SELECT g, g % 7, '2024-01-01'::timestamptz + g * interval '1 hour', 'x' "
        "FROM generate_series(1, 20) g");
    const std::vector<std::string> unstable = {
        "SELECT id FROM r WHERE a_id > pg_catalog.pg_stat_get_bgwriter_requested_checkpoints()",
        "SELECT id FROM r WHERE at > now() - interval '1 day'",
        "SELECT id, current_setting('DateStyle') AS ds FROM r",
        "SELECT id FROM r WHERE at::date < CURRENT_DATE",
        "SELECT id, label::timestamptz AS t FROM r WHERE false",  // ('now' as input)
        "SELECT id, to_regclass(label) AS c FROM r",
        "SELECT r.id, s.id AS sid FROM r JOIN r s ON s.a_id = r.a_id WHERE r.at < "
        "statement_timestamp()",
        "SELECT id FROM r WHERE EXISTS (SELECT 1 FROM r s WHERE s.id = r.a_id AND s.at > "
        "transaction_timestamp())",
    };
    for (std::size_t i = 0; i < unstable.size(); i++) {
        const std::string name = "u" + std::to_string(i);
        for (const char* mode : {"DIFFERENTIAL", "IMMEDIATE"}) {
            std::optional<SqlError> e =
                error_in(*db, "SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => $3)",
                         {name, unstable[i], mode});
            ASSERT_TRUE(e) << mode << " accepted " << unstable[i];
            EXPECT_EQ(e->sqlstate, "0A000") << unstable[i] << ": " << e->message;
            EXPECT_TRUE(mentions(e->message, "can change while no source table changes"))
                << e->message;
        }
        create(name, unstable[i], "AUTO");
        EXPECT_EQ(modes(name), "AUTO/FULL") << unstable[i];
    }
    db->exec("CHECKPOINT; CHECKPOINT; UPDATE r SET label = 'y' WHERE id = 1");
    for (std::size_t i = 0; i < unstable.size(); i++) {
        expect_refresh("u" + std::to_string(i), "FULL", "a write");
    }
    // Built-in STABLE functions whose only instability is a pinned setting
    // are maintained incrementally.
    const std::vector<std::string> settled = {
        "SELECT id, at::text AS t, to_char(at, 'YYYY-MM') AS m FROM r",
        "SELECT date_trunc('day', at) AS d, count(*) AS n FROM r GROUP BY 1",
        "SELECT id, concat(id, '/', at) AS c, format('%s', at) AS f FROM r WHERE at::date > "
        "'2024-01-01'",
    };
    for (std::size_t i = 0; i < settled.size(); i++) {
        create("s" + std::to_string(i), settled[i], "AUTO");
        EXPECT_EQ(modes("s" + std::to_string(i)), "AUTO/DIFFERENTIAL") << settled[i];
    }
    db->exec("UPDATE r SET at = at + interval '1 day' WHERE id % 3 = 0");
    for (std::size_t i = 0; i < settled.size(); i++) {
        expect_refresh("s" + std::to_string(i), "DIFFERENTIAL", "moved times");
    }
}

}  // namespace
}  // namespace pgt::e2e
