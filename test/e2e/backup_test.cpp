// pg_dump / pg_restore of a database with stream tables, in every format:
// the restored database's stream tables work with no manual step. The
// catalog names relations by regclass, so restored rows point at the
// restored tables; what a dump cannot carry (frontiers, buffered changes,
// analysed queries, pg_depend rows, captured column numbers) is reset when
// the restored catalog is adopted, and the first refresh rebuilds each
// stream table (FULL, 'restored from a dump' in history); IMMEDIATE stream
// tables are rebuilt by the adoption itself, so every write after it is
// maintained.
// Invariant: every refresh after the restore, and every write to a source
// of an IMMEDIATE stream table after the adoption, is checked with the
// oracle (and the action it ran); capture, guard and IMMEDIATE triggers
// exist exactly once.
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "eventually.hpp"
#include "fixture.hpp"
#include "tools.hpp"

namespace pgt::e2e {
namespace {

class Backup : public DbTest {
protected:
    // A database with a stream table of each kind (IMMEDIATE ones over one
    // table and over a join too) and changes no refresh has taken yet. The
    // source has a dropped column, so the restored table numbers its
    // columns differently.
    void populate() { populate(*db); }
    static void populate(Conn& c) {
        c.exec(
            "CREATE TABLE src (id int PRIMARY KEY, gone int, grp int, v numeric, note text);"
            "ALTER TABLE src DROP COLUMN gone;"
            "CREATE TABLE dim (grp int PRIMARY KEY, name text);"
            "CREATE TABLE part (id int, k int, v int) PARTITION BY RANGE (k);"
            "CREATE TABLE part_0 PARTITION OF part FOR VALUES FROM (0) TO (10);"
            "CREATE TABLE part_1 PARTITION OF part FOR VALUES FROM (10) TO (20);"
            "INSERT INTO dim SELECT g, 'g' || g FROM generate_series(0, 4) g;"
            "INSERT INTO src SELECT g, g % 5, g * 1.5, 'n' || g FROM generate_series(1, 60) g;"
            "INSERT INTO part SELECT g, g % 20, g FROM generate_series(1, 40) g");
        auto st = [&](const std::string& name, const std::string& q, const std::string& mode) {
            c.exec("SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => $3)",
                   {name, q, mode});
        };
        st("scan", "SELECT id, grp, v FROM src WHERE v > 10", "DIFFERENTIAL");
        st("groups", "SELECT grp, count(*) AS n, sum(v) AS total FROM src GROUP BY grp",
           "DIFFERENTIAL");
        st("joined", "SELECT s.id, d.name FROM src s JOIN dim d ON d.grp = s.grp", "DIFFERENTIAL");
        st("over", "SELECT grp, n FROM groups WHERE n > 5", "DIFFERENTIAL");
        st("parts", "SELECT k, sum(v) AS s FROM part GROUP BY k", "DIFFERENTIAL");
        st("full_one", "SELECT count(*) AS c FROM src", "FULL");
        st("auto_one", "SELECT grp, max(v) AS top FROM src GROUP BY grp", "AUTO");
        st("imm_join", "SELECT s.id, s.v, d.name FROM src s JOIN dim d ON d.grp = s.grp",
           "IMMEDIATE");
        st("imm_one", "SELECT grp, count(*) AS n, sum(v) AS total FROM src GROUP BY grp",
           "IMMEDIATE");
        c.exec(
            "UPDATE src SET v = v + 100 WHERE id < 10; DELETE FROM src WHERE id = 60;"
            "INSERT INTO part VALUES (100, 15, 7)");
    }
    // The stream tables refreshes maintain, and the IMMEDIATE ones.
    const std::vector<std::string> kStreamTables = {"scan",  "groups",   "joined",  "over",
                                                    "parts", "full_one", "auto_one"};
    const std::vector<std::string> kImmediate = {"imm_join", "imm_one"};

    // Restores this database's dump into a new database (named after the
    // format, and `suffix` when given); returns a session on it.
    Conn restore(const std::string& format, const std::string& suffix = "") {
        const std::string target = dbname_ + "_" + format + suffix;
        const std::string dump = std::string(PGT_E2E_WORKDIR) + "/" + target + ".dump";
        connect().exec("DROP DATABASE IF EXISTS \"" + target + "\"");
        connect().exec("CREATE DATABASE \"" + target + "\"");
        run_program("rm -rf " + shell_quote(dump));
        if (format == "plain") {
            client(cluster(), "pg_dump",
                   "-Fp -f " + shell_quote(dump) + " " + shell_quote(dbname_));
            client(
                cluster(), "psql",
                "-X -q -v ON_ERROR_STOP=1 -d " + shell_quote(target) + " -f " + shell_quote(dump));
        } else {
            const std::string f = format == "custom" ? "c" : format == "directory" ? "d" : "t";
            client(cluster(), "pg_dump",
                   "-F" + f + " -f " + shell_quote(dump) + " " + shell_quote(dbname_));
            client(cluster(), "pg_restore",
                   "--exit-on-error -d " + shell_quote(target) + " " + shell_quote(dump));
        }
        restored_.push_back(target);
        return Conn(cluster().conninfo(target));
    }

    void TearDown() override {
        if (!HasFailure()) {
            for (const std::string& t : restored_) {
                connect().exec("DROP DATABASE IF EXISTS \"" + t + "\" WITH (FORCE)");
            }
        }
        DbTest::TearDown();
    }

    static std::string last_of(Conn& c, const std::string& st) {
        return c.scalar(
            "SELECT h.action || '|' || coalesce(h.reason, '') FROM pgtrickle.pgt_refresh_history "
            "h JOIN pgtrickle.pgt_stream_tables s USING (pgt_id) WHERE s.pgt_relid = "
            "$1::regclass ORDER BY h.refresh_id DESC LIMIT 1",
            {st});
    }

    static std::string restored_check(Conn& c) {
        return c.scalar(
            "SELECT ok FROM pgtrickle.health_check() WHERE check_name = "
            "'restored_stream_tables'");
    }

    // The IMMEDIATE stream tables as the adoption left them: rebuilt
    // ('restored from a dump' in history), equal to their queries.
    void check_immediate_adopted(Conn& r) {
        for (const std::string& st : kImmediate) {
            EXPECT_EQ(last_of(r, st), "FULL|restored from a dump: reinitialised") << st;
            EXPECT_MATCHES_QUERY(r, st);
        }
    }

    // Writes to the IMMEDIATE stream tables' sources, each maintained in
    // its own statement (the oracle after each).
    void check_immediate_maintained(Conn& r) {
        for (const char* w :
             {"INSERT INTO src VALUES (210, 3, 42, 'w')", "UPDATE src SET grp = 0 WHERE id = 5",
              "DELETE FROM src WHERE id = 11", "UPDATE src SET v = v + 1 WHERE grp = 2",
              "UPDATE dim SET name = 'renamed' WHERE grp = 2", "INSERT INTO dim VALUES (7, 'g7')",
              "INSERT INTO src VALUES (211, 7, 1, 'w')", "DELETE FROM dim WHERE grp = 7"}) {
            r.exec(w);
            for (const std::string& st : kImmediate) {
                EXPECT_MATCHES_QUERY(r, st) << w;
            }
        }
    }

    // The restored database works: writes, refreshes (the first rebuilds),
    // IMMEDIATE maintenance, dependencies, guards, triggers exactly once.
    void check_restored(Conn& r) {
        EXPECT_EQ(r.scalar("SELECT string_agg(name, ',' ORDER BY name) FROM "
                           "pgtrickle.pgt_status()"),
                  "public.auto_one,public.full_one,public.groups,public.imm_join,public.imm_one,"
                  "public.joined,public.over,public.parts,public.scan");
        EXPECT_EQ(restored_check(r), "f");
        // Writes right after the restore (the restored capture and IMMEDIATE
        // triggers capture and maintain nothing; the rebuilds cover them).
        r.exec(
            "INSERT INTO src VALUES (200, 1, 500, 'new'); UPDATE src SET grp = 4 WHERE id = 2;"
            "INSERT INTO part VALUES (201, 3, 1); TRUNCATE part_1;"
            "UPDATE dim SET name = 'early' WHERE grp = 3");
        // The first call adopts the restored catalog and rebuilds the
        // IMMEDIATE stream tables; each first refresh rebuilds its table.
        for (const std::string& st : kStreamTables) {
            r.exec("SELECT pgtrickle.refresh_stream_table($1)", {st});
            EXPECT_EQ(last_of(r, st), "FULL|restored from a dump: reinitialised") << st;
            EXPECT_MATCHES_QUERY(r, st);
        }
        check_immediate_adopted(r);
        EXPECT_EQ(restored_check(r), "t");
        check_immediate_maintained(r);
        r.exec(
            "UPDATE src SET v = v * 2 WHERE id % 4 = 0; DELETE FROM src WHERE id = 7;"
            "INSERT INTO dim VALUES (5, 'g5'); UPDATE dim SET name = 'x' WHERE grp = 1;"
            "INSERT INTO part VALUES (202, 12, 9)");
        for (const std::string& st : kStreamTables) {
            r.exec("SELECT pgtrickle.refresh_stream_table($1)", {st});
            const std::string action = last_of(r, st).substr(0, last_of(r, st).find('|'));
            if (st == "full_one") {
                EXPECT_EQ(action, "FULL") << st;
            } else if (st != "auto_one") {
                EXPECT_EQ(action, "DIFFERENTIAL") << st;
            }
            EXPECT_MATCHES_QUERY(r, st);
        }
        for (const std::string& st : kImmediate) {
            EXPECT_MATCHES_QUERY(r, st);
        }
        check_triggers(r);
        EXPECT_EQ(r.error_of("DROP TABLE src").sqlstate, "2BP01");
        EXPECT_EQ(r.error_of("INSERT INTO scan VALUES (1, 1, 1)").sqlstate, "55000");
    }

    // Each capture once, each guard once, each IMMEDIATE trigger once and
    // ENABLE ALWAYS; none left from the old database.
    static void check_triggers(Conn& r) {
        EXPECT_EQ(r.scalar("SELECT string_agg(tgrelid::regclass || ':' || n, ',' ORDER BY "
                           "tgrelid::regclass::text) FROM (SELECT tgrelid, count(*) AS n FROM "
                           "pg_trigger WHERE tgname LIKE 'pgt\\_capture\\_%' GROUP BY tgrelid) t"),
                  "dim:2,groups:2,part:2,part_0:2,part_1:2,src:2");
        EXPECT_EQ(r.scalar("SELECT count(*) FROM pg_trigger WHERE tgname = 'pgt_guard'"), "9");
        EXPECT_EQ(r.scalar("SELECT count(*) FROM pg_class WHERE relnamespace = "
                           "'pgtrickle_changes'::regnamespace AND relkind = 'r' AND relname LIKE "
                           "'changes\\_%'"),
                  "4");  // src, dim, part, groups
        EXPECT_EQ(r.scalar("SELECT string_agg(tgrelid::regclass || ':' || n, ',' ORDER BY "
                           "tgrelid::regclass::text) FROM (SELECT tgrelid, count(*) FILTER (WHERE "
                           "tgenabled = 'A') AS n FROM pg_trigger WHERE tgname LIKE "
                           "'pgt\\_immediate\\_%' GROUP BY tgrelid) t"),
                  "dim:5,src:10");
        EXPECT_EQ(r.scalar("SELECT bool_and(t.present = t.expected) FROM "
                           "pgtrickle.pgt_stream_tables s, pgtrickle._immediate_triggers(s.pgt_id) "
                           "t WHERE s.refresh_mode = 'IMMEDIATE'"),
                  "t");
    }

    std::vector<std::string> restored_;
};

TEST_F(Backup, custom_format_round_trip) {
    populate();
    Conn r = restore("custom");
    check_restored(r);
}

TEST_F(Backup, directory_format_round_trip) {
    populate();
    Conn r = restore("directory");
    check_restored(r);
}

TEST_F(Backup, tar_format_round_trip) {
    populate();
    Conn r = restore("tar");
    check_restored(r);
}

TEST_F(Backup, plain_format_round_trip) {
    populate();
    Conn r = restore("plain");
    check_restored(r);
}

// pg_dumpall of a whole cluster restored (psql) into a new cluster.
TEST_F(Backup, pg_dumpall_into_a_new_cluster) {
    Cluster from, to;
    from.start(std::string(PGT_E2E_WORKDIR) + "/dumpall_from");
    to.start(std::string(PGT_E2E_WORKDIR) + "/dumpall_to");
    {
        Conn admin(from.conninfo("postgres"));
        admin.exec("CREATE DATABASE app");
        Conn app(from.conninfo("app"));
        app.exec("CREATE EXTENSION pg_trickle");
        populate(app);
    }
    const std::string dump = std::string(PGT_E2E_WORKDIR) + "/dumpall.sql";
    client(from, "pg_dumpall", "-f " + shell_quote(dump));
    client(to, "psql", "-X -q -d postgres -f " + shell_quote(dump));
    {
        Conn r(to.conninfo("app"));
        check_restored(r);
    }
    from.stop();
    to.stop();
    EXPECT_EQ(to.crash_lines(), "");
}

// The source database goes on as before after the dump (dumping changes
// nothing), and a dump of the restored one restores too.
TEST_F(Backup, dump_of_a_restored_database_restores) {
    populate();
    Conn r = restore("custom");
    r.exec(
        "SELECT pgtrickle.refresh_stream_table(n) FROM unnest(ARRAY['scan','groups','joined',"
        "'over','parts','full_one','auto_one']) n");
    const std::string again = dbname_ + "_custom";
    const std::string dump = std::string(PGT_E2E_WORKDIR) + "/" + again + "_again.dump";
    client(cluster(), "pg_dump", "-Fc -f " + shell_quote(dump) + " " + shell_quote(again));
    connect().exec("DROP DATABASE IF EXISTS \"" + again + "_2\"");
    connect().exec("CREATE DATABASE \"" + again + "_2\"");
    restored_.push_back(again + "_2");
    client(cluster(), "pg_restore",
           "--exit-on-error -d " + shell_quote(again + "_2") + " " + shell_quote(dump));
    Conn r2(cluster().conninfo(again + "_2"));
    for (const std::string& st : kStreamTables) {
        r2.exec("SELECT pgtrickle.refresh_stream_table($1)", {st});
        EXPECT_MATCHES_QUERY(r2, st);
    }
    check_immediate_adopted(r2);
    check_immediate_maintained(r2);
    db->exec("INSERT INTO src VALUES (300, 2, 1, 'x')");
    db->exec("SELECT pgtrickle.refresh_stream_table('scan')");
    EXPECT_EQ(last(("scan")).substr(0, 12), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "scan");
    for (const std::string& st : kImmediate) {
        EXPECT_MATCHES_QUERY(*db, st);
    }
}

// Before: with an IMMEDIATE stream table in the restored database, the
// first refresh of a DIFFERENTIAL one failed with 42P01 (relation
// "pgtrickle_changes.changes_2" does not exist, changes_3 at the next try,
// and so on), and the IMMEDIATE ones stayed stale: the IMMEDIATE rebuild
// that the new buffer's CREATE TABLE set off dropped triggers, the
// sql_drop trigger then removed the capture being installed (no frontier
// yet), and the adoption rolled back with the error. Without a scheduler
// nothing ever cleared it.
TEST_F(Backup, first_refresh_after_restore_with_immediate) {
    populate();
    Conn r = restore("custom");
    r.exec("INSERT INTO src VALUES (220, 1, 5, 'early'); UPDATE dim SET name = 'x' WHERE grp = 1");
    r.exec("SELECT pgtrickle.refresh_stream_table('joined')");
    EXPECT_EQ(last_of(r, "joined"), "FULL|restored from a dump: reinitialised");
    EXPECT_MATCHES_QUERY(r, "joined");
    check_immediate_adopted(r);
    EXPECT_EQ(restored_check(r), "t");
    // The two buffers 'joined' reads, and no other.
    EXPECT_EQ(
        r.scalar("SELECT string_agg(source_relid::regclass || ':' || (to_regclass(buffer_name) "
                 "IS NOT NULL), ',' ORDER BY source_relid::regclass::text) FROM "
                 "pgtrickle.pgt_sources"),
        "dim:true,src:true");
    EXPECT_EQ(r.scalar("SELECT count(*) FROM pg_class WHERE relnamespace = "
                       "'pgtrickle_changes'::regnamespace AND relkind = 'r'"),
              "2");
    check_immediate_maintained(r);
    r.exec("SELECT pgtrickle.refresh_stream_table('joined')");
    EXPECT_EQ(last_of(r, "joined").substr(0, 13), "DIFFERENTIAL|");
    EXPECT_MATCHES_QUERY(r, "joined");
    for (const std::string& st : kStreamTables) {
        if (st == "joined") {
            continue;
        }
        r.exec("SELECT pgtrickle.refresh_stream_table($1)", {st});
        EXPECT_EQ(last_of(r, st), "FULL|restored from a dump: reinitialised") << st;
        EXPECT_MATCHES_QUERY(r, st);
    }
    check_triggers(r);
}

// Whichever pg_trickle call comes first adopts the restored catalog at
// once and rebuilds the IMMEDIATE stream tables. Before: repair_stream_table
// and alter_stream_table failed with 42P01 like refresh_stream_table (see
// above), and explain_st adopted nothing.
TEST_F(Backup, first_call_adopts_restored_catalog) {
    populate();
    const std::vector<std::pair<std::string, std::string>> firsts = {
        {"repair", "SELECT count(*) FROM pgtrickle.repair_stream_table('joined')"},
        {"alter", "SELECT pgtrickle.alter_stream_table('groups', schedule => '5m')"},
        {"alter_mode", "SELECT pgtrickle.alter_stream_table('scan', refresh_mode => 'FULL')"},
        {"explain", "SELECT count(*) FROM pgtrickle.explain_st('scan')"},
        {"immediate", "SELECT pgtrickle.refresh_stream_table('imm_one')"},
    };
    for (const auto& [label, call] : firsts) {
        SCOPED_TRACE(label);
        Conn r = restore("custom", "_" + label);
        r.exec(call);
        EXPECT_EQ(restored_check(r), "t");
        if (label == "immediate") {
            EXPECT_EQ(last_of(r, "imm_one"), "FULL|");  // after its rebuild by the adoption
            EXPECT_MATCHES_QUERY(r, "imm_one");
            EXPECT_EQ(last_of(r, "imm_join"), "FULL|restored from a dump: reinitialised");
            EXPECT_MATCHES_QUERY(r, "imm_join");
        } else {
            check_immediate_adopted(r);
        }
        check_immediate_maintained(r);
        for (const std::string& st : kStreamTables) {
            const bool rebuilt =
                (label == "repair" && st == "joined") || (label == "alter_mode" && st == "scan");
            r.exec("SELECT pgtrickle.refresh_stream_table($1)", {st});
            if (!rebuilt) {
                EXPECT_EQ(last_of(r, st), "FULL|restored from a dump: reinitialised") << st;
            }
            EXPECT_MATCHES_QUERY(r, st);
        }
        EXPECT_EQ(r.scalar("SELECT refresh_mode FROM pgtrickle.pgt_stream_tables WHERE pgt_name "
                           "= 'scan'"),
                  label == "alter_mode" ? "FULL" : "DIFFERENTIAL");
    }
}

// An IMMEDIATE stream table whose rebuild fails at adoption (its owner may
// no longer read a table it reads) is recorded as failed, and leaves the
// adoption and the other stream tables alone; repair_stream_table rebuilds
// it once the cause is gone: the adoption never stops half-way. Before:
// the rebuild's 42501 failed the first call (a refresh of another stream
// table) and, the adoption rolling back with it, every call after it.
TEST_F(Backup, failing_immediate_rebuild_adopts_the_rest) {
    populate();
    db->exec(
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pgt_backup_owner') "
        "THEN CREATE ROLE pgt_backup_owner; END IF; END $$;"
        "GRANT CREATE ON SCHEMA public TO pgt_backup_owner;"
        "GRANT SELECT, TRIGGER ON src, dim TO pgt_backup_owner;"
        "SET ROLE pgt_backup_owner;"
        "SELECT pgtrickle.create_stream_table('imm_owned', 'SELECT s.id, d.name FROM src s "
        "JOIN dim d ON d.grp = s.grp', refresh_mode => 'IMMEDIATE');"
        "RESET ROLE");
    Conn r = restore("custom");
    r.exec("REVOKE SELECT ON dim FROM pgt_backup_owner");
    r.exec("SELECT pgtrickle.refresh_stream_table('scan')");
    EXPECT_EQ(last_of(r, "scan"), "FULL|restored from a dump: reinitialised");
    EXPECT_MATCHES_QUERY(r, "scan");
    check_immediate_adopted(r);
    EXPECT_EQ(restored_check(r), "t");
    EXPECT_EQ(r.scalar("SELECT h.status || ' ' || left(h.error_message, 5) || ' ' || s.status || ' "
                       "' || (s.reinit_reason IS NOT NULL) FROM pgtrickle.pgt_refresh_history h "
                       "JOIN pgtrickle.pgt_stream_tables s USING (pgt_id) WHERE s.pgt_name = "
                       "'imm_owned' ORDER BY h.refresh_id DESC LIMIT 1"),
              "FAILED 42501 ERROR true");
    check_immediate_maintained(r);
    r.exec("GRANT SELECT ON dim TO pgt_backup_owner");
    r.exec("SELECT count(*) FROM pgtrickle.repair_stream_table('imm_owned')");
    EXPECT_EQ(last_of(r, "imm_owned"), "FULL|restored from a dump: reinitialised");
    EXPECT_EQ(r.scalar("SELECT status FROM pgtrickle.pgt_stream_tables WHERE pgt_name = "
                       "'imm_owned'"),
              "ACTIVE");
    EXPECT_MATCHES_QUERY(r, "imm_owned");
    r.exec("UPDATE dim SET name = 'again' WHERE grp = 4; INSERT INTO src VALUES (230, 4, 1, 'z')");
    EXPECT_MATCHES_QUERY(r, "imm_owned");
    r.exec("DROP OWNED BY pgt_backup_owner");
    db->exec("DROP OWNED BY pgt_backup_owner");
}

// A plain-format dump restored through psql while the scheduler runs: no
// statement of the restore fails, however slow its last part is (here it
// pauses after the guards, and again after the IMMEDIATE triggers, where
// every trigger the restored catalog names is back and only psql's session
// tells that the restore goes on), and the scheduler adopts the catalog
// once psql has left. Before: it adopted
// as soon as the captures and guards were back, and rebuilt what the rest
// of the dump then created again ("ERROR: trigger ... already exists").
TEST(BackupWithScheduler, plain_restore_while_the_scheduler_runs_prints_no_error) {
    Cluster c;
    c.start(std::string(PGT_E2E_WORKDIR) + "/backup_scheduler", /*scheduler=*/true);
    {
        Conn admin(c.conninfo("postgres"));
        admin.exec("CREATE DATABASE app");
        admin.exec("CREATE DATABASE app_restored");
    }
    {
        Conn app(c.conninfo("app"));
        app.exec("CREATE EXTENSION pg_trickle");
        app.exec(
            "CREATE TABLE src (id int PRIMARY KEY, grp int, v numeric);"
            "CREATE TABLE dim (grp int PRIMARY KEY, name text);"
            "INSERT INTO dim SELECT g, 'g' || g FROM generate_series(0, 4) g;"
            "INSERT INTO src SELECT g, g % 5, g * 1.5 FROM generate_series(1, 60) g");
        for (const auto& [name, query, mode] :
             std::vector<std::tuple<std::string, std::string, std::string>>{
                 {"scan", "SELECT id, grp, v FROM src WHERE v > 10", "DIFFERENTIAL"},
                 {"joined", "SELECT s.id, d.name FROM src s JOIN dim d ON d.grp = s.grp",
                  "DIFFERENTIAL"},
                 {"full_one", "SELECT count(*) AS c FROM src", "FULL"},
                 {"imm_join", "SELECT s.id, s.v, d.name FROM src s JOIN dim d ON d.grp = s.grp",
                  "IMMEDIATE"},
                 {"imm_one", "SELECT grp, count(*) AS n, sum(v) AS total FROM src GROUP BY grp",
                  "IMMEDIATE"}}) {
            app.exec(
                "SELECT pgtrickle.create_stream_table($1, $2, schedule => '1s', refresh_mode => "
                "$3)",
                {name, query, mode});
        }
        app.exec("UPDATE src SET v = v + 1 WHERE id < 10");
    }
    const std::string dump = std::string(PGT_E2E_WORKDIR) + "/backup_scheduler.sql";
    client(c, "pg_dump", "-Fp -f " + shell_quote(dump) + " app");
    // A pause after the last guard and before the first change-note trigger.
    std::ifstream in(dump);
    std::ostringstream out;
    std::string line;
    bool paused_notes = false;
    int guards_left = 5;
    while (std::getline(in, line)) {
        if (!paused_notes && line.rfind("CREATE TRIGGER pgt_note_", 0) == 0) {
            out << "SELECT pg_catalog.pg_sleep(1.5);\n";
            paused_notes = true;
        }
        out << line << "\n";
        if (line.find("ENABLE ALWAYS TRIGGER pgt_guard;") != std::string::npos &&
            --guards_left == 0) {
            out << "SELECT pg_catalog.pg_sleep(1.5);\n";
        }
    }
    in.close();
    ASSERT_EQ(guards_left, 0);
    ASSERT_TRUE(paused_notes);
    std::ofstream(dump) << out.str();
    const std::string said = client(c, "psql", "-X -q -d app_restored -f " + shell_quote(dump));
    EXPECT_EQ(said.find("ERROR"), std::string::npos) << said;
    {
        Conn r(c.conninfo("app_restored"));
        EXPECT_TRUE(eventually(
            [&] {
                return r.scalar(
                           "SELECT ok FROM pgtrickle.health_check() WHERE check_name = "
                           "'restored_stream_tables'") == "t";
            },
            "the scheduler to adopt the restored catalog"));
        for (const std::string st : {"imm_join", "imm_one"}) {
            EXPECT_MATCHES_QUERY(r, st);
        }
        for (const char* w : {"INSERT INTO src VALUES (100, 1, 7)", "UPDATE dim SET name = 'y'",
                              "DELETE FROM src WHERE id < 5"}) {
            r.exec(w);
            EXPECT_MATCHES_QUERY(r, "imm_join") << w;
            EXPECT_MATCHES_QUERY(r, "imm_one") << w;
        }
        // Every stream table rebuilt once, as restored, and maintained.
        for (const std::string st : {"scan", "joined", "full_one", "imm_join", "imm_one"}) {
            EXPECT_TRUE(eventually(
                [&] {
                    return r.scalar(
                               "SELECT count(*) FROM pgtrickle.pgt_refresh_history h JOIN "
                               "pgtrickle.pgt_stream_tables s USING (pgt_id) WHERE "
                               "s.pgt_name = $1 AND h.status = 'SUCCESS' AND h.action = "
                               "'FULL' AND h.reason = 'restored from a dump: reinitialised'",
                               {st}) == "1";
                },
                st + " rebuilt after the restore"));
            EXPECT_TRUE(eventually([&] { return static_cast<bool>(matches_query(r, st)); },
                                   st + " up to date"));
        }
        EXPECT_EQ(r.scalar("SELECT count(*) FROM pgtrickle.pgt_refresh_history WHERE status = "
                           "'FAILED'"),
                  "0");
    }
    c.stop();
    EXPECT_EQ(c.crash_lines(), "");
}

}  // namespace
}  // namespace pgt::e2e
