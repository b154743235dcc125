// pg_dump / pg_restore of a database with stream tables, in every format:
// the restored database's stream tables work with no manual step. The
// catalog names relations by regclass, so restored rows point at the
// restored tables; what a dump cannot carry (frontiers, buffered changes,
// analysed queries, pg_depend rows, captured column numbers) is reset when
// the restored catalog is adopted, and the first refresh rebuilds each
// stream table (FULL, 'restored from a dump' in history).
// Invariant: every refresh after the restore is checked with the oracle and
// the action it ran; capture and guard triggers exist exactly once.
#include <string>
#include <vector>

#include "fixture.hpp"
#include "tools.hpp"

namespace pgt::e2e {
namespace {

class Backup : public DbTest {
protected:
    // A database with a stream table of each kind and changes no refresh
    // has taken yet. The source has a dropped column, so the restored table
    // numbers its columns differently.
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
        c.exec(
            "UPDATE src SET v = v + 100 WHERE id < 10; DELETE FROM src WHERE id = 60;"
            "INSERT INTO part VALUES (100, 15, 7)");
    }
    const std::vector<std::string> kStreamTables = {"scan",  "groups",   "joined",  "over",
                                                    "parts", "full_one", "auto_one"};

    // Restores this database's dump into a new database; returns a session
    // on it.
    Conn restore(const std::string& format) {
        const std::string target = dbname_ + "_" + format;
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

    // The restored database works: writes, refreshes (the first rebuilds),
    // dependencies, guards, triggers exactly once.
    void check_restored(Conn& r) {
        EXPECT_EQ(r.scalar("SELECT string_agg(name, ',' ORDER BY name) FROM "
                           "pgtrickle.pgt_status()"),
                  "public.auto_one,public.full_one,public.groups,public.joined,public.over,"
                  "public.parts,public.scan");
        EXPECT_EQ(r.scalar("SELECT ok FROM pgtrickle.health_check() WHERE check_name = "
                           "'restored_stream_tables'"),
                  "f");
        // Writes right after the restore (the restored capture triggers
        // capture nothing; the rebuild covers them).
        r.exec(
            "INSERT INTO src VALUES (200, 1, 500, 'new'); UPDATE src SET grp = 4 WHERE id = 2;"
            "INSERT INTO part VALUES (201, 3, 1); TRUNCATE part_1");
        for (const std::string& st : kStreamTables) {
            r.exec("SELECT pgtrickle.refresh_stream_table($1)", {st});
            EXPECT_EQ(last_of(r, st), "FULL|restored from a dump: reinitialised") << st;
            EXPECT_MATCHES_QUERY(r, st);
        }
        EXPECT_EQ(r.scalar("SELECT ok FROM pgtrickle.health_check() WHERE check_name = "
                           "'restored_stream_tables'"),
                  "t");
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
        // Each capture once, each guard once; none left from the old database.
        EXPECT_EQ(r.scalar("SELECT string_agg(tgrelid::regclass || ':' || n, ',' ORDER BY "
                           "tgrelid::regclass::text) FROM (SELECT tgrelid, count(*) AS n FROM "
                           "pg_trigger WHERE tgname LIKE 'pgt\\_capture\\_%' GROUP BY tgrelid) t"),
                  "dim:2,groups:2,part:2,part_0:2,part_1:2,src:2");
        EXPECT_EQ(r.scalar("SELECT count(*) FROM pg_trigger WHERE tgname = 'pgt_guard'"), "7");
        EXPECT_EQ(r.scalar("SELECT count(*) FROM pg_class WHERE relnamespace = "
                           "'pgtrickle_changes'::regnamespace AND relkind = 'r' AND relname LIKE "
                           "'changes\\_%'"),
                  "4");  // src, dim, part, groups
        EXPECT_EQ(r.error_of("DROP TABLE src").sqlstate, "2BP01");
        EXPECT_EQ(r.error_of("INSERT INTO scan VALUES (1, 1, 1)").sqlstate, "55000");
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
    db->exec("INSERT INTO src VALUES (300, 2, 1, 'x')");
    db->exec("SELECT pgtrickle.refresh_stream_table('scan')");
    EXPECT_EQ(last(("scan")).substr(0, 12), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "scan");
}

}  // namespace
}  // namespace pgt::e2e
