// Attacks on the security model (/work/shared/notes/security.md): a stream
// table gives its owner what a materialized view with the same query would,
// and no role can make another role's code run with rights it lacks.
// Roles: alice owns data, bob is a plain user, mallory attacks (CREATE on
// public, as in databases made before PG 15). Each test plays one attack.
// Invariant: every data-changing test checks the oracle as the stream
// table's owner (the defining query evaluated with the owner's rights).
#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cluster.hpp"
#include "eventually.hpp"
#include "fixture.hpp"
#include "planted.hpp"

namespace pgt::e2e {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Runs sql, turning an SQL error into a test failure (the test goes on).
bool expect_ok(Conn& c, const std::string& sql, const std::vector<std::string>& params = {}) {
    std::optional<SqlError> e = error_in(c, sql, params);
    if (e) {
        ADD_FAILURE() << "unexpected error " << e->sqlstate << ": " << e->message
                      << (e->detail.empty() ? "" : "\n  detail: " + e->detail) << "\n  in: " << sql;
    }
    return !e;
}

class Security : public DbTest {
protected:
    void SetUp() override {
        DbTest::SetUp();
        planted::reset_roles(*db);
        db->exec(
            "GRANT CREATE, USAGE ON SCHEMA public TO alice, bob, mallory;"
            "CREATE SCHEMA alice AUTHORIZATION alice; GRANT USAGE ON SCHEMA alice TO bob");
    }

    // The roles are cluster-wide: whatever a test (or a successful attack)
    // gave them goes, so the next test starts from the same roles.
    void TearDown() override {
        if (db) {
            planted::forget_roles(*db);
        }
        DbTest::TearDown();
    }

    // A new session on this test's database as `role` ("postgres": the
    // superuser), with search_path set when given.
    std::unique_ptr<Conn> session(const std::string& role, const std::string& search_path = "") {
        auto c = std::make_unique<Conn>(conninfo());
        if (role != "postgres") {
            c->exec("SET ROLE " + role);
        }
        if (!search_path.empty()) {
            c->exec("SET search_path = " + search_path);
        }
        return c;
    }

    // The oracle evaluated as `owner` (the rights a refresh has).
    ::testing::AssertionResult matches_as(const std::string& owner, const std::string& st) {
        try {
            db->exec("SET ROLE " + owner);
            ::testing::AssertionResult r = matches_query(*db, st);
            db->exec("RESET ROLE");
            return r;
        } catch (const std::exception& e) {
            db->exec("RESET ROLE");
            return ::testing::AssertionFailure()
                   << "oracle of " << st << " as " << owner << " failed: " << e.what();
        }
    }

    // Rows of a relation, counted as the superuser.
    long rows_of(const std::string& rel) { return count("SELECT * FROM " + rel); }

    bool is_superuser(const std::string& role) { return planted::is_superuser(*db, role); }

    // Non-internal triggers on a table.
    long triggers_on(const std::string& table) {
        return std::stol(db->scalar(
            "SELECT count(*) FROM pg_catalog.pg_trigger WHERE tgrelid = $1::pg_catalog.regclass "
            "AND NOT tgisinternal",
            {table}));
    }

    // Every table in pgtrickle_changes (buffers and kept copies).
    std::vector<std::string> change_tables() {
        Result r = db->exec(
            "SELECT c.oid::pg_catalog.regclass::text FROM pg_catalog.pg_class c WHERE "
            "c.relnamespace = 'pgtrickle_changes'::pg_catalog.regnamespace AND c.relkind IN "
            "('r', 'p') ORDER BY 1");
        std::vector<std::string> out;
        for (size_t i = 0; i < r.size(); i++) {
            out.push_back(r.at(i, 0));
        }
        return out;
    }

    // What mallory's planted code recorded: "" when nothing ran.
    std::string planted_calls() { return planted::calls(*db); }

    // Nothing mallory planted ran during `stage` (the table, the caller's
    // warnings, the roles' rights); then forgets what did, so the next
    // stage is judged on its own.
    void expect_untouched(Conn& caller, const std::string& stage) {
        EXPECT_EQ(planted_calls(), "") << "mallory's planted code ran while " << stage;
        std::string warned;
        for (const std::string& n : caller.notices) {
            warned += n.find("planted") == std::string::npos ? "" : "\n  " + n;
        }
        EXPECT_EQ(warned, "") << "the caller was warned while " << stage;
        EXPECT_FALSE(is_superuser("mallory")) << "mallory became a superuser while " << stage;
        EXPECT_FALSE(is_superuser("bob")) << "bob became a superuser while " << stage;
        caller.notices.clear();
        db->exec("DELETE FROM public.planted_calls; ALTER ROLE mallory NOSUPERUSER");
    }

    // The trap works: each probe, run in the caller's session, reaches the
    // planted operator or function named by its label (so the extension's
    // SQL would, were it to resolve names with the caller's path). Then
    // forgets the calls, as expect_untouched does.
    void expect_armed(Conn& caller,
                      const std::vector<std::pair<std::string, std::string>>& probes) {
        for (const auto& [probe, label] : probes) {
            expect_ok(caller, probe);
            EXPECT_NE(planted_calls().find(label), std::string::npos)
                << "the trap is not armed: " << probe << " did not reach " << label;
        }
        caller.notices.clear();
        db->exec("DELETE FROM public.planted_calls; ALTER ROLE mallory NOSUPERUSER");
    }

    void run_planted_scenario(const std::string& caller);
};

// Attack 1, the reported one: mallory plants operators and functions in
// public and in a schema named like the caller, first in the caller's
// search_path. The caller (a superuser, or bob) builds stream tables
// whose creation and refreshes run the extension's own SQL: the kept
// copy's statistics query (n_distinct >= 0 is >=(real, integer)), AUTO's
// reading of refresh history (1000 * date_part(...)), notification,
// explain_st. None of mallory's code may run, as anyone.
void Security::run_planted_scenario(const std::string& caller) {
    // A join that gets a kept copy by default: ka has over 10,000 rows
    // (analyzed) and its filter keeps about 1 in 13 (under 0.2).
    db->exec(
        "CREATE TABLE public.ka (id int PRIMARY KEY, k int, v int, r real);"
        "CREATE TABLE public.kb (id int PRIMARY KEY, k int, w int);"
        "CREATE INDEX ON public.ka (k); CREATE INDEX ON public.kb (k);"
        "INSERT INTO public.ka SELECT g, g % 50, g % 13, (g % 7)::real "
        "  FROM generate_series(1, 20000) g;"
        "INSERT INTO public.kb SELECT g, g % 50, g % 5 FROM generate_series(1, 200) g;"
        "ANALYZE public.ka, public.kb;"
        "GRANT SELECT, TRIGGER ON public.ka, public.kb TO bob;"
        "CREATE SEQUENCE public.probe_seq; GRANT USAGE ON public.probe_seq TO bob;"
        "GRANT CREATE ON DATABASE \"" +
        dbname_ + "\" TO mallory");
    // The checking session never searches public (its helpers compare oid
    // with regclass: a planted =(oid, regclass) would fire there).
    db->exec("SET search_path = pg_catalog, pg_temp");

    auto mallory = session("mallory");
    planted::plant_logger(*mallory);
    mallory->exec("CREATE SCHEMA " + caller + "; GRANT USAGE ON SCHEMA " + caller + " TO PUBLIC");
    planted::plant(*mallory, "public");
    planted::plant(*mallory, caller);
    mallory.reset();

    auto c = session(caller, caller + ", public");
    expect_armed(
        *c, {
                {"SELECT 1000 * pg_catalog.date_part('epoch', interval '1 s')",
                 caller + ".*(integer, double precision)"},
                {"SELECT 0.5::real >= 0", caller + ".>=(real, integer)"},
                {"SELECT 1::oid = 'pg_class'::pg_catalog.regclass", caller + ".=(oid, regclass)"},
                {"SELECT count(1)", caller + ".count(integer)"},
                {"SELECT nextval('public.probe_seq')", caller + ".nextval(text)"},
                {"SELECT * FROM unnest(ARRAY['a']::text[])", caller + ".unnest(text[])"},
            });
    const char* kJoin =
        "SELECT a.k, count(*) AS n, sum(b.w) AS w FROM public.ka a JOIN public.kb b ON a.k = b.k "
        "WHERE a.v < 1 GROUP BY a.k";
    ASSERT_TRUE(expect_ok(*c,
                          "SELECT pgtrickle.create_stream_table('public.sj', $1, "
                          "refresh_mode => 'DIFFERENTIAL')",
                          {kJoin}));
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_kept"), "1")
        << "the attack needs the join to get a kept copy";
    ASSERT_TRUE(expect_ok(*c,
                          "SELECT pgtrickle.create_stream_table('public.sa', 'SELECT id, k, v "
                          "FROM public.ka WHERE v < 3', refresh_mode => 'AUTO')"));
    ASSERT_TRUE(expect_ok(*c,
                          "SELECT pgtrickle.create_stream_table('public.sf', 'SELECT k, count(*) "
                          "AS n FROM public.kb GROUP BY k', refresh_mode => 'FULL')"));
    ASSERT_TRUE(expect_ok(*c,
                          "SELECT pgtrickle.create_stream_table('public.sn', 'SELECT id, k, w "
                          "FROM public.kb', refresh_mode => 'DIFFERENTIAL', notify => 'chan')"));
    EXPECT_EQ(modes("public.sj"), "DIFFERENTIAL/DIFFERENTIAL");
    EXPECT_EQ(modes("public.sa"), "AUTO/DIFFERENTIAL");
    EXPECT_EQ(modes("public.sf"), "FULL/FULL");
    EXPECT_EQ(modes("public.sn"), "DIFFERENTIAL/DIFFERENTIAL");

    // Every round changes both tables, so no refresh finds nothing to do.
    const std::vector<std::string> changes = {
        // kb changes: the copy of ka is built (the refresh reads it)
        "UPDATE public.kb SET w = w + 1 WHERE id <= 20; INSERT INTO public.kb VALUES (201, 3, 1);"
        "UPDATE public.ka SET v = 1 WHERE id % 1000 = 3",
        // ka changes: the valid copy takes them
        "UPDATE public.ka SET v = 0 WHERE id % 100 = 1; DELETE FROM public.ka WHERE id % 97 = 0;"
        "UPDATE public.kb SET w = 0 WHERE id = 7",
        "UPDATE public.ka SET v = 2 WHERE id % 111 = 5; UPDATE public.kb SET k = 7 WHERE id = 4",
        "INSERT INTO public.ka SELECT g, g % 50, g % 13, 1 FROM generate_series(20001, 20100) g;"
        "DELETE FROM public.kb WHERE id = 9",
    };
    for (const std::string& change : changes) {
        db->exec(change);
        for (const char* st : {"public.sj", "public.sa", "public.sf", "public.sn"}) {
            expect_ok(*c, "SELECT pgtrickle.refresh_stream_table($1)", {st});
        }
        EXPECT_EQ(last_action("public.sj"), "DIFFERENTIAL") << change;
        EXPECT_EQ(last_action("public.sn"), "DIFFERENTIAL") << change;
        EXPECT_EQ(last_action("public.sf"), "FULL") << change;
        std::string auto_ran = last_action("public.sa");
        EXPECT_TRUE(auto_ran == "DIFFERENTIAL" || auto_ran == "FULL") << auto_ran << ": " << change;
    }
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_kept WHERE valid"), "1")
        << "the kept copy was never built";
    expect_untouched(*c, "creating and refreshing");
    for (const char* st : {"public.sj", "public.sa", "public.sf", "public.sn"}) {
        EXPECT_TRUE(matches_as(caller, st));
    }

    // The extension's SQL-language functions, called by the same caller.
    expect_ok(*c, "SELECT count(*) FROM pgtrickle.explain_st('public.sj')");
    expect_ok(*c, "SELECT count(*) FROM pgtrickle.pgt_status()");
    expect_ok(*c, "SELECT count(*) FROM pgtrickle.health_check()");
    expect_untouched(*c, "explain_st, pgt_status and health_check");
}

TEST_F(Security, planted_operators_run_nothing_as_superuser) {
    run_planted_scenario("postgres");
}

TEST_F(Security, planted_operators_run_nothing_as_bob) {
    run_planted_scenario("bob");
}

// Attack 2: bob asks for a stream table (not initialized, so no query
// runs) over alice's table he cannot read, hoping for a capture whose
// buffer he can read. Refused before anything exists, in every mode.
TEST_F(Security, create_without_select_is_refused_and_leaves_nothing) {
    auto alice = session("alice");
    alice->exec(
        "CREATE TABLE alice.secret (id int PRIMARY KEY, s text);"
        "INSERT INTO alice.secret VALUES (1, 'pin 1234'), (2, 'pin 9876')");
    const std::string before = state();
    auto bob = session("bob");
    int n = 0;
    for (const char* mode : {"DIFFERENTIAL", "AUTO", "FULL"}) {
        for (const char* init : {"false", "true"}) {
            std::string name = "public.peek_" + std::to_string(n++);
            std::optional<SqlError> e = error_in(
                *bob,
                "SELECT pgtrickle.create_stream_table($1, 'SELECT id, s FROM alice.secret', "
                "refresh_mode => $2, initialize => " +
                    std::string(init) + ")",
                {name, mode});
            EXPECT_TRUE(e && e->sqlstate == "42501")
                << mode << ", initialize => " << init << ": "
                << (e ? e->sqlstate + " " + e->message : "created");
            EXPECT_EQ(state(), before) << mode << ", initialize => " << init << " left objects";
        }
    }
    EXPECT_EQ(triggers_on("alice.secret"), 0) << "a capture trigger was put on alice's table";
    // Had anything been captured, bob must still read none of it.
    alice->exec("INSERT INTO alice.secret VALUES (3, 'pin 5555')");
    for (const std::string& t : change_tables()) {
        EXPECT_EQ(sqlstate_of(*bob, "SELECT * FROM " + t), "42501") << "bob reads " << t;
    }
}

// Attack 3: bob may read emp's id and name only. He must not get salary
// through a stream table, nor from the change buffer alice's own stream
// table fills with every column; his (id, name) stream table works.
TEST_F(Security, column_privileges_hold) {
    auto alice = session("alice");
    alice->exec(
        "CREATE TABLE alice.emp (id int PRIMARY KEY, name text, salary int);"
        "INSERT INTO alice.emp SELECT g, 'e' || g, 1000 * g FROM generate_series(1, 20) g;"
        "GRANT SELECT (id, name) ON alice.emp TO bob");
    auto bob = session("bob");
    const std::string before = state();
    for (const char* mode : {"DIFFERENTIAL", "AUTO", "FULL"}) {
        std::optional<SqlError> e =
            error_in(*bob,
                     "SELECT pgtrickle.create_stream_table('public.pay', 'SELECT id, salary FROM "
                     "alice.emp', refresh_mode => $1, initialize => false)",
                     {mode});
        ASSERT_TRUE(e.has_value()) << mode << ": bob created a stream table reading salary";
        EXPECT_EQ(e->sqlstate, "42501") << mode << ": " << e->message;
        EXPECT_NE(e->message.find("salary"), std::string::npos)
            << mode << ": the message does not name the column: " << e->message;
        EXPECT_EQ(state(), before);
    }

    expect_ok(*alice,
              "SELECT pgtrickle.create_stream_table('alice.all_emp', 'SELECT id, name, salary FROM "
              "alice.emp', refresh_mode => 'DIFFERENTIAL')");
    ASSERT_TRUE(expect_ok(*bob,
                          "SELECT pgtrickle.create_stream_table('public.names', 'SELECT id, name "
                          "FROM alice.emp', refresh_mode => 'DIFFERENTIAL')"));
    EXPECT_EQ(modes("public.names"), "DIFFERENTIAL/DIFFERENTIAL");

    Result buffers = db->exec("SELECT buffer_name FROM pgtrickle.pgt_sources");
    EXPECT_GE(buffers.size(), 1u);
    std::vector<std::string> tables = change_tables();
    for (size_t i = 0; i < buffers.size(); i++) {
        tables.push_back(buffers.at(i, 0));
    }
    alice->exec("UPDATE alice.emp SET salary = salary + 1, name = name || 'x' WHERE id <= 3");
    for (const std::string& t : tables) {
        EXPECT_EQ(sqlstate_of(*bob, "SELECT * FROM " + t), "42501") << "bob reads " << t;
    }

    expect_ok(*bob, "SELECT pgtrickle.refresh_stream_table('public.names')");
    EXPECT_EQ(last_action("public.names"), "DIFFERENTIAL");
    EXPECT_TRUE(matches_as("bob", "public.names"));
    expect_ok(*alice, "SELECT pgtrickle.refresh_stream_table('alice.all_emp')");
    EXPECT_EQ(last_action("alice.all_emp"), "DIFFERENTIAL");
    EXPECT_TRUE(matches_as("alice", "alice.all_emp"));
}

constexpr const char* kDocsPolicy =
    "ALTER TABLE alice.docs ENABLE ROW LEVEL SECURITY;"
    "CREATE POLICY own ON alice.docs USING (owner_name = current_user)";

// Attack 4: a policy shows bob only his own documents. A buffer row
// carries no policy, so DIFFERENTIAL is refused over the table and AUTO
// maintains it with FULL refreshes, which see what bob sees.
TEST_F(Security, row_level_security_is_not_bypassed) {
    auto alice = session("alice");
    alice->exec(std::string("CREATE TABLE alice.docs (id int PRIMARY KEY, owner_name text, body "
                            "text);") +
                kDocsPolicy +
                ";INSERT INTO alice.docs VALUES (1, 'alice', 'a1'), (2, 'bob', 'b1');"
                "GRANT SELECT, TRIGGER ON alice.docs TO bob");
    auto bob = session("bob");
    const std::string before = state();
    std::optional<SqlError> e = error_in(
        *bob,
        "SELECT pgtrickle.create_stream_table('public.mydocs', 'SELECT id, owner_name, body "
        "FROM alice.docs', refresh_mode => 'DIFFERENTIAL')");
    EXPECT_TRUE(e && e->sqlstate == "0A000") << (e ? e->sqlstate + " " + e->message : "created");
    if (!e) {
        bob->exec("SELECT pgtrickle.drop_stream_table('public.mydocs')");
    }
    EXPECT_EQ(state(), before);

    ASSERT_TRUE(expect_ok(*bob,
                          "SELECT pgtrickle.create_stream_table('public.mydocs', 'SELECT id, "
                          "owner_name, body FROM alice.docs', refresh_mode => 'AUTO')"));
    EXPECT_EQ(modes("public.mydocs"), "AUTO/FULL");
    alice->exec(
        "INSERT INTO alice.docs VALUES (3, 'alice', 'a2'), (4, 'bob', 'b2'), (5, 'alice', 'a3')");
    expect_ok(*bob, "SELECT pgtrickle.refresh_stream_table('public.mydocs')");
    EXPECT_EQ(last_action("public.mydocs"), "FULL");
    EXPECT_EQ(count("SELECT 1 FROM public.mydocs WHERE owner_name <> 'bob'"), 0);
    EXPECT_EQ(rows_of("public.mydocs"), 2);
    EXPECT_TRUE(matches_as("bob", "public.mydocs"));
}

// Attack 4, later: the policy arrives after bob's stream tables exist.
// A DIFFERENTIAL refresh must not carry alice's rows out of the buffer; an
// AUTO one recomputes (FULL) and sees only bob's rows.
TEST_F(Security, row_level_security_enabled_later_is_not_bypassed) {
    auto alice = session("alice");
    alice->exec(
        "CREATE TABLE alice.docs (id int PRIMARY KEY, owner_name text, body text);"
        "INSERT INTO alice.docs VALUES (1, 'bob', 'b1'), (2, 'bob', 'b2');"
        "GRANT SELECT, TRIGGER ON alice.docs TO bob");
    auto bob = session("bob");
    ASSERT_TRUE(expect_ok(*bob,
                          "SELECT pgtrickle.create_stream_table('public.d_docs', 'SELECT id, "
                          "owner_name, body FROM alice.docs', refresh_mode => 'DIFFERENTIAL')"));
    ASSERT_TRUE(expect_ok(*bob,
                          "SELECT pgtrickle.create_stream_table('public.a_docs', 'SELECT id, "
                          "owner_name, body FROM alice.docs', refresh_mode => 'AUTO')"));
    EXPECT_EQ(modes("public.a_docs"), "AUTO/DIFFERENTIAL");
    // Before the policy: both follow alice's writes (d_docs differentially).
    alice->exec("INSERT INTO alice.docs VALUES (6, 'bob', 'b0')");
    for (const char* st : {"public.d_docs", "public.a_docs"}) {
        expect_ok(*bob, "SELECT pgtrickle.refresh_stream_table($1)", {st});
        EXPECT_TRUE(matches_as("bob", st));
    }
    EXPECT_EQ(last_action("public.d_docs"), "DIFFERENTIAL");
    std::string auto_ran = last_action("public.a_docs");
    EXPECT_TRUE(auto_ran == "DIFFERENTIAL" || auto_ran == "FULL") << auto_ran;

    alice->exec(std::string(kDocsPolicy) +
                ";INSERT INTO alice.docs VALUES (3, 'alice', 'a1'), (4, 'bob', 'b3'), "
                "(5, 'alice', 'a2')");
    const long d_before = rows_of("public.d_docs");
    std::string st = sqlstate_of(*bob, "SELECT pgtrickle.refresh_stream_table('public.d_docs')");
    EXPECT_TRUE(st == "0A000" || st == "42501") << "DIFFERENTIAL refresh gave '" << st << "'";
    EXPECT_EQ(rows_of("public.d_docs"), d_before);
    EXPECT_EQ(count("SELECT 1 FROM public.d_docs WHERE owner_name = 'alice'"), 0)
        << "alice's rows reached bob's stream table";

    expect_ok(*bob, "SELECT pgtrickle.refresh_stream_table('public.a_docs')");
    EXPECT_EQ(last_action("public.a_docs"), "FULL");
    EXPECT_EQ(count("SELECT 1 FROM public.a_docs WHERE owner_name <> 'bob'"), 0);
    EXPECT_EQ(rows_of("public.a_docs"), 4);
    EXPECT_TRUE(matches_as("bob", "public.a_docs"));
}

// Attack 5: alice revokes bob's SELECT; his stream table must not go on
// receiving her new rows from the buffer.
TEST_F(Security, revoke_stops_the_flow) {
    auto alice = session("alice");
    alice->exec(
        "CREATE TABLE alice.t (id int PRIMARY KEY, v int);"
        "INSERT INTO alice.t SELECT g, g FROM generate_series(1, 10) g;"
        "GRANT SELECT, TRIGGER ON alice.t TO bob");
    auto bob = session("bob");
    ASSERT_TRUE(expect_ok(*bob,
                          "SELECT pgtrickle.create_stream_table('public.bt', 'SELECT id, v FROM "
                          "alice.t', refresh_mode => 'DIFFERENTIAL')"));
    alice->exec("INSERT INTO alice.t VALUES (11, 11)");
    expect_ok(*bob, "SELECT pgtrickle.refresh_stream_table('public.bt')");
    EXPECT_EQ(last_action("public.bt"), "DIFFERENTIAL");
    EXPECT_TRUE(matches_as("bob", "public.bt"));

    alice->exec("REVOKE SELECT ON alice.t FROM bob; INSERT INTO alice.t VALUES (12, 12), (13, 13)");
    const long before = rows_of("public.bt");
    EXPECT_EQ(sqlstate_of(*bob, "SELECT pgtrickle.refresh_stream_table('public.bt')"), "42501");
    EXPECT_EQ(rows_of("public.bt"), before);
    EXPECT_EQ(count("SELECT 1 FROM public.bt WHERE id >= 12"), 0);
}

// Attack 6: bob's defining query calls his function, and his trigger on
// the storage fires on refresh; both try ALTER ROLE bob SUPERUSER. When a
// superuser refreshes, they must still run as bob.
TEST_F(Security, superuser_refresh_runs_owner_code_as_owner) {
    db->exec("CREATE SCHEMA bob AUTHORIZATION bob");
    auto bob = session("bob");
    bob->exec(R"sql(
CREATE TABLE bob.src (id int PRIMARY KEY, v int);
INSERT INTO bob.src SELECT g, g FROM generate_series(1, 5) g;
CREATE TABLE bob.calls (who text, what text);
CREATE FUNCTION bob.f(x int) RETURNS int LANGUAGE plpgsql VOLATILE AS $f$
BEGIN
  INSERT INTO bob.calls VALUES (current_user, 'f');
  BEGIN
    ALTER ROLE bob SUPERUSER;
  EXCEPTION WHEN OTHERS THEN
    NULL;
  END;
  RETURN x OPERATOR(pg_catalog.+) 1;
END $f$;
CREATE FUNCTION bob.log_insert() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO bob.calls VALUES (current_user, 'trigger');
  BEGIN
    ALTER ROLE bob SUPERUSER;
  EXCEPTION WHEN OTHERS THEN
    NULL;
  END;
  RETURN NULL;
END $f$)sql");
    ASSERT_TRUE(expect_ok(*bob,
                          "SELECT pgtrickle.create_stream_table('bob.sf', 'SELECT id, bob.f(v) AS "
                          "fv FROM bob.src', refresh_mode => 'FULL')"));
    bob->exec(
        "CREATE TRIGGER log_ins AFTER INSERT ON bob.sf FOR EACH STATEMENT EXECUTE FUNCTION "
        "bob.log_insert()");
    std::vector<std::string> sts = {"bob.sf"};
    // DIFFERENTIAL may refuse a VOLATILE function; when it takes it, the
    // same must hold.
    std::optional<SqlError> diff =
        error_in(*bob,
                 "SELECT pgtrickle.create_stream_table('bob.sd', 'SELECT id, bob.f(v) AS fv FROM "
                 "bob.src', refresh_mode => 'DIFFERENTIAL')");
    if (!diff) {
        bob->exec(
            "CREATE TRIGGER log_ins AFTER INSERT ON bob.sd FOR EACH STATEMENT EXECUTE FUNCTION "
            "bob.log_insert()");
        sts.push_back("bob.sd");
    } else {
        std::cout << "[ note ] DIFFERENTIAL over a VOLATILE function refused: " << diff->sqlstate
                  << " " << diff->message << "\n";
    }
    bob->exec("DELETE FROM bob.calls");

    db->exec("INSERT INTO bob.src VALUES (6, 6), (7, 7); DELETE FROM bob.src WHERE id = 1");
    for (const std::string& st : sts) {
        expect_ok(*db, "SELECT pgtrickle.refresh_stream_table($1)", {st});
    }
    EXPECT_EQ(last_action("bob.sf"), "FULL");
    if (sts.size() > 1) {
        EXPECT_EQ(last_action("bob.sd"), "DIFFERENTIAL");
    }
    EXPECT_EQ(db->scalar("SELECT coalesce(string_agg(DISTINCT who, ','), '') FROM bob.calls"),
              "bob")
        << "bob's code ran as someone else";
    EXPECT_GE(count("SELECT 1 FROM bob.calls WHERE what = 'f'"), 1) << "f never ran";
    EXPECT_GE(count("SELECT 1 FROM bob.calls WHERE what = 'trigger'"), 1)
        << "the storage trigger never fired";
    EXPECT_FALSE(is_superuser("bob")) << "bob's code made him a superuser";
    for (const std::string& st : sts) {
        EXPECT_TRUE(matches_as("bob", st));
    }
}

// Issue 45 finding 1: a superuser's routine alter_stream_table (a new
// mode, a new query) or create_or_replace_stream_table on bob's stream
// table must run bob's code as bob only. Every step of the redefinition
// runs as the owner; bob's IMMUTABLE function, whose VOLATILE callee tries
// ALTER ROLE bob SUPERUSER, is called in analysis, planning (a folded
// constant call) and refreshes. (The reported escalation did not
// reproduce through these calls on the build before: this guards the rule.)
TEST_F(Security, superuser_alter_runs_owner_code_as_owner) {
    db->exec("CREATE SCHEMA bob AUTHORIZATION bob");
    auto bob = session("bob");
    bob->exec(R"sql(
CREATE TABLE bob.src (id int PRIMARY KEY, v int);
INSERT INTO bob.src SELECT g, g FROM generate_series(1, 5) g;
CREATE TABLE bob.calls (who text);
CREATE FUNCTION bob.escalate() RETURNS void LANGUAGE plpgsql VOLATILE AS $f$
BEGIN
  INSERT INTO bob.calls VALUES (current_user);
  BEGIN
    ALTER ROLE bob SUPERUSER;
  EXCEPTION WHEN OTHERS THEN
    NULL;
  END;
END $f$;
-- Declared IMMUTABLE (so DIFFERENTIAL takes it, and the planner folds a
-- call with a constant): its VOLATILE callee may write.
CREATE FUNCTION bob.keep(x int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $f$
BEGIN
  PERFORM bob.escalate();
  RETURN x OPERATOR(pg_catalog.>) 0;
END $f$)sql");
    ASSERT_TRUE(expect_ok(*bob,
                          "SELECT pgtrickle.create_stream_table('bob.st', 'SELECT id, v FROM "
                          "bob.src WHERE bob.keep(v) AND bob.keep(1)', refresh_mode => 'FULL')"));
    const std::vector<std::string> calls = {
        "SELECT pgtrickle.alter_stream_table('bob.st', refresh_mode => 'DIFFERENTIAL')",
        "SELECT pgtrickle.alter_stream_table('bob.st', query => 'SELECT id, v FROM bob.src "
        "WHERE bob.keep(v) AND bob.keep(2) AND id > 1')",
        "SELECT pgtrickle.create_or_replace_stream_table('bob.st', 'SELECT id, v FROM bob.src "
        "WHERE bob.keep(v + 1) AND bob.keep(3)', refresh_mode => 'IMMEDIATE')",
        "SELECT pgtrickle.alter_stream_table('bob.st', refresh_mode => 'AUTO')",
        "SELECT * FROM pgtrickle.explain_refresh_mode('bob.st')",
        "SELECT * FROM pgtrickle.explain_st('bob.st', true)",
        "SELECT pgtrickle.repair_stream_table('bob.st')",
    };
    for (const std::string& call : calls) {
        expect_ok(*db, call);
        EXPECT_FALSE(is_superuser("bob")) << "bob's code made him a superuser: " << call;
        EXPECT_TRUE(matches_as("bob", "bob.st")) << call;
    }
    EXPECT_EQ(db->scalar("SELECT coalesce(string_agg(DISTINCT who, ','), '') FROM bob.calls"),
              "bob")
        << "bob's code ran as someone else";
    db->exec("INSERT INTO bob.src VALUES (9, 9)");
    expect_ok(*db, "SELECT pgtrickle.refresh_stream_table('bob.st')");
    EXPECT_TRUE(matches_as("bob", "bob.st"));
    EXPECT_FALSE(is_superuser("bob"));
}

// Attack 7: mallory's *(integer, double precision) in public, where AUTO's
// cost reading (1000 * date_part('epoch', ...)) would find it, before
// alice's and a superuser's refreshes of an AUTO stream table.
TEST_F(Security, planted_function_before_auto_refresh) {
    auto alice = session("alice");
    alice->exec(
        "CREATE TABLE alice.t (id int PRIMARY KEY, v int);"
        "INSERT INTO alice.t SELECT g, g % 100 FROM generate_series(1, 2000) g");
    ASSERT_TRUE(expect_ok(*alice,
                          "SELECT pgtrickle.create_stream_table('alice.sa', 'SELECT id, v FROM "
                          "alice.t WHERE v < 50', refresh_mode => 'AUTO')"));
    EXPECT_EQ(modes("alice.sa"), "AUTO/DIFFERENTIAL");
    auto mallory = session("mallory");
    planted::plant_logger(*mallory);
    planted::plant_arithmetic(*mallory, "public");
    mallory.reset();
    expect_armed(*alice, {{"SELECT 1000 * pg_catalog.date_part('epoch', interval '1 s')",
                           "public.*(integer, double precision)"}});
    expect_armed(*db, {{"SELECT 1000 * pg_catalog.date_part('epoch', interval '1 s')",
                        "public.*(integer, double precision)"}});

    for (int i = 0; i < 6; i++) {
        Conn& who = i % 2 == 0 ? *alice : *db;  // alice, then the superuser
        alice->exec("UPDATE alice.t SET v = (v + 7) % 100 WHERE id % 10 = " + std::to_string(i) +
                    "; INSERT INTO alice.t VALUES (" + std::to_string(3000 + i) + ", 1)");
        expect_ok(who, "SELECT pgtrickle.refresh_stream_table('alice.sa')");
        std::string ran = last_action("alice.sa");
        EXPECT_TRUE(ran == "DIFFERENTIAL" || ran == "FULL") << "refresh " << i << ": " << ran;
        EXPECT_TRUE(matches_as("alice", "alice.sa")) << "after refresh " << i;
    }
    for (const std::string& n : db->notices) {
        EXPECT_EQ(n.find("planted"), std::string::npos) << "superuser's session: " << n;
    }
    expect_untouched(*alice, "alice and a superuser refreshed the AUTO stream table");
}

// Attack 8: installing capture puts a trigger on alice's table and holds
// its lock until the transaction ends. bob may neither do that without
// the TRIGGER right nor, with an AUTO stream table, hold alice's writers
// up for as long as his transaction stays open.
TEST_F(Security, capture_needs_trigger_right_and_holds_no_lock) {
    auto alice = session("alice");
    alice->exec(
        "CREATE TABLE alice.t (id int PRIMARY KEY, v int);"
        "INSERT INTO alice.t SELECT g, g FROM generate_series(1, 10) g;"
        "GRANT SELECT ON alice.t TO bob");
    auto bob = session("bob");
    bob->exec("BEGIN");
    EXPECT_EQ(sqlstate_of(*bob,
                          "SELECT pgtrickle.create_stream_table('public.bt', 'SELECT id, v FROM "
                          "alice.t', refresh_mode => 'DIFFERENTIAL', initialize => false)"),
              "42501");
    bob->exec("ROLLBACK");
    EXPECT_EQ(triggers_on("alice.t"), 0);

    bob->exec("BEGIN");
    bob->notices.clear();
    ASSERT_TRUE(expect_ok(*bob,
                          "SELECT pgtrickle.create_stream_table('public.bt', 'SELECT id, v FROM "
                          "alice.t', refresh_mode => 'AUTO')"));
    EXPECT_EQ(bob->scalar("SELECT requested_mode || '/' || refresh_mode FROM "
                          "pgtrickle.pgt_stream_tables WHERE pgt_relid = 'public.bt'::regclass"),
              "AUTO/FULL");
    bool said_full = false;
    for (const std::string& n : bob->notices) {
        said_full = said_full || n.find("FULL") != std::string::npos;
    }
    EXPECT_TRUE(said_full) << "no NOTICE says why AUTO chose FULL";
    // bob's transaction is still open: alice's writes must not wait on it.
    alice->exec("SET lock_timeout = '2s'");
    EXPECT_EQ(sqlstate_of(*alice, "INSERT INTO alice.t VALUES (11, 11)"), "")
        << "alice's INSERT waited on bob's open transaction";
    bob->exec("COMMIT");
    EXPECT_EQ(triggers_on("alice.t"), 0);
    expect_ok(*bob, "SELECT pgtrickle.refresh_stream_table('public.bt')");
    EXPECT_EQ(last_action("public.bt"), "FULL");
    EXPECT_TRUE(matches_as("bob", "public.bt"));

    // With the right to put a trigger there, DIFFERENTIAL works.
    alice->exec("GRANT TRIGGER ON alice.t TO bob");
    ASSERT_TRUE(expect_ok(*bob,
                          "SELECT pgtrickle.create_stream_table('public.bt2', 'SELECT id, v FROM "
                          "alice.t', refresh_mode => 'DIFFERENTIAL')"));
    EXPECT_EQ(modes("public.bt2"), "DIFFERENTIAL/DIFFERENTIAL");
    alice->exec("INSERT INTO alice.t VALUES (12, 12); UPDATE alice.t SET v = 0 WHERE id = 1");
    expect_ok(*bob, "SELECT pgtrickle.refresh_stream_table('public.bt2')");
    EXPECT_EQ(last_action("public.bt2"), "DIFFERENTIAL");
    EXPECT_TRUE(matches_as("bob", "public.bt2"));
}

// Attack 10: with session_replication_role = replica ordinary triggers do
// not fire; the storage guard must (a stream table is written by
// refreshes only, whatever the role).
TEST_F(Security, guard_holds_under_replica_role) {
    db->exec(
        "CREATE TABLE public.src (id int PRIMARY KEY, v int);"
        "INSERT INTO public.src SELECT g, g FROM generate_series(1, 10) g;"
        "SELECT pgtrickle.create_stream_table('public.st', 'SELECT id, v FROM public.src', "
        "refresh_mode => 'DIFFERENTIAL')");
    db->exec("SET session_replication_role = replica");
    for (const char* dml :
         {"INSERT INTO public.st (id, v) VALUES (100, 1)", "UPDATE public.st SET v = v + 1",
          "DELETE FROM public.st WHERE id <= 5", "TRUNCATE public.st"}) {
        EXPECT_EQ(sqlstate_of(*db, dml), "55000") << dml;
    }
    db->exec("RESET session_replication_role");
    EXPECT_EQ(modes("public.st"), "DIFFERENTIAL/DIFFERENTIAL");
    EXPECT_TRUE(matches_query(*db, "public.st")) << "a write under replica role got through";
    db->exec("INSERT INTO public.src VALUES (11, 11)");
    expect_ok(*db, "SELECT pgtrickle.refresh_stream_table('public.st')");
    EXPECT_EQ(last_action("public.st"), "DIFFERENTIAL");
    EXPECT_TRUE(matches_query(*db, "public.st"));
}

// Attack 11 (robustness): odd inputs must get a specific SQLSTATE, never
// XX000 (an internal error a user can provoke at will). Prints each
// input's outcome.
TEST_F(Security, bad_inputs_get_specific_sqlstates) {
    db->exec(
        "CREATE TABLE public.plain (id int PRIMARY KEY, v int); INSERT INTO public.plain "
        "VALUES (1, 1); CREATE SEQUENCE public.seq");
    struct Input {
        std::string name, query, mode;
    };
    const std::vector<Input> inputs = {
        {"x1", "SELECT NULL AS n", "AUTO"},
        {"x2", "SELECT", "AUTO"},
        {"x3", "SELECT * FROM (SELECT * FROM (SELECT 1 AS a) s1) s2", "DIFFERENTIAL"},
        {"x4", "", "AUTO"},
        {"x5", "   ", "AUTO"},
        {"x6", "-- only a comment", "AUTO"},
        {"x7", ";", "AUTO"},
        {"x8", "SELECT 1 AS a; SELECT 2", "AUTO"},
        {"x9", "VALUES (1), (2)", "AUTO"},
        {"x10", "VALUES (1), (2)", "DIFFERENTIAL"},
        {"x11", "SELECT last_value, is_called FROM public.seq", "AUTO"},
        {"x12", "SELECT last_value FROM public.seq", "DIFFERENTIAL"},
        {"x13", "SELECT g FROM generate_series(1, 3) g", "AUTO"},
        {"x14", "SELECT g FROM generate_series(1, 3) g", "DIFFERENTIAL"},
        {"x15", "SELECT DISTINCT 1 AS a", "DIFFERENTIAL"},
        {"x16", "SELECT DISTINCT 1 AS a", "AUTO"},
        {"x17", "SELECT FROM public.plain", "DIFFERENTIAL"},
        {"x18", "SELECT NULL AS n FROM public.plain", "DIFFERENTIAL"},
        {"x19", "TABLE public.plain", "DIFFERENTIAL"},
        {"x20", "SELECT (SELECT 1) AS a", "DIFFERENTIAL"},
        {"x21", "SELECT * FROM public.plain FOR UPDATE", "AUTO"},
        {"x22", "SELECT 1 AS a WHERE false", "DIFFERENTIAL"},
        {"x23", "SELECT * FROM (SELECT * FROM (SELECT 1 AS a) s1) s2", "AUTO"},
        {"x24", "SELECT count(*) AS n", "DIFFERENTIAL"},
        {"x25", "SELECT * FROM (VALUES (1, 2)) v(a, b)", "DIFFERENTIAL"},
        {"x26", "SELECT id, v FROM public.plain", "sometimes"},
        {"", "SELECT id, v FROM public.plain", "AUTO"},
        {"a.b.c.d", "SELECT id, v FROM public.plain", "AUTO"},
        {"pgtrickle_changes.sneaky", "SELECT id, v FROM public.plain", "AUTO"},
    };
    for (const Input& in : inputs) {
        std::optional<SqlError> e =
            error_in(*db, "SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => $3)",
                     {in.name, in.query, in.mode});
        std::cout << "[ input ] " << in.mode << " '" << in.name << "' \"" << in.query
                  << "\": " << (e ? e->sqlstate + " " + e->message : std::string("created"))
                  << "\n";
        EXPECT_FALSE(e && e->sqlstate == "XX000")
            << in.mode << " \"" << in.query << "\": internal error: " << e->message;
    }
    std::optional<SqlError> e = error_in(*db, "SELECT * FROM pgtrickle.explain_st('public.plain')");
    std::cout << "[ input ] explain_st('public.plain'): "
              << (e ? e->sqlstate + " " + e->message : std::string("no error")) << "\n";
    EXPECT_TRUE(e && e->sqlstate == "42809")
        << "explain_st of a plain table: " << (e ? e->sqlstate + " " + e->message : "no error");
    for (const char* call :
         {"SELECT * FROM pgtrickle.explain_st('public.missing')",
          "SELECT * FROM pgtrickle.explain_st('')",
          "SELECT pgtrickle.refresh_stream_table('public.seq')",
          "SELECT pgtrickle.alter_stream_table('public.plain', schedule => '1m')",
          "SELECT pgtrickle.drop_stream_table('public.seq')"}) {
        std::optional<SqlError> err = error_in(*db, call);
        std::cout << "[ input ] " << call << ": "
                  << (err ? err->sqlstate + " " + err->message : std::string("no error")) << "\n";
        EXPECT_FALSE(err && err->sqlstate == "XX000") << call << ": " << err->message;
    }
}

// --- The scheduler and locks ---------------------------------------------------

// A cluster of this suite's own with the scheduler on.
Cluster& security_cluster() {
    static Cluster c;
    return c;
}

class SecurityScheduler : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        // Under the main cluster's directory (PGT_E2E_WORKDIR in the
        // environment moves it, as in main.cpp).
        const char* dir = std::getenv("PGT_E2E_WORKDIR");
        security_cluster().start(
            std::string(dir != nullptr ? dir : PGT_E2E_WORKDIR) + "/security_scheduler", true);
    }
    static void TearDownTestSuite() {
        security_cluster().stop();
        std::string crashes = security_cluster().crash_lines();
        if (!crashes.empty()) {
            ADD_FAILURE() << "security scheduler cluster's log shows a crash:\n" << crashes;
        }
    }

    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dbname_ = (std::string("ss_") + info->name()).substr(0, 63);
        Conn admin(security_cluster().conninfo("postgres"));
        admin.exec("DROP DATABASE IF EXISTS \"" + dbname_ + "\" WITH (FORCE)");
        admin.exec("CREATE DATABASE \"" + dbname_ + "\"");
        db = std::make_unique<Conn>(security_cluster().conninfo(dbname_));
        db->exec("CREATE EXTENSION pg_trickle");
    }

    void TearDown() override {
        db.reset();
        if (HasFailure()) {
            return;  // kept for inspection
        }
        try {
            Conn admin(security_cluster().conninfo("postgres"));
            admin.exec("DROP DATABASE IF EXISTS \"" + dbname_ + "\" WITH (FORCE)");
        } catch (const std::exception& e) {
            ADD_FAILURE() << "DROP DATABASE " << dbname_ << " failed: " << e.what();
        }
    }

    long rows_where(const std::string& rel, const std::string& where) {
        return std::stol(db->scalar("SELECT count(*) FROM " + rel + " WHERE " + where));
    }

    std::unique_ptr<Conn> db;
    std::string dbname_;
};

// Attack 9: any role that can lock a stream table (its owner, or anyone
// with LOCK rights on it) must not stall every other stream table's
// schedule: the scheduler waits at most pg_trickle.lock_timeout, records
// the refresh as SKIPPED and goes on; the locked one catches up later.
TEST_F(SecurityScheduler, scheduler_skips_a_locked_stream_table) {
    std::optional<SqlError> guc =
        error_in(*db, "ALTER SYSTEM SET pg_trickle.lock_timeout = '200ms'");
    EXPECT_FALSE(guc.has_value()) << "pg_trickle.lock_timeout cannot be set: "
                                  << (guc ? guc->sqlstate + " " + guc->message : "");
    db->exec("SELECT pg_reload_conf()");
    if (!guc) {
        EXPECT_TRUE(eventually(
            [&] {
                Conn fresh(security_cluster().conninfo(dbname_));
                return fresh.scalar("SHOW pg_trickle.lock_timeout") == "200ms";
            },
            "pg_trickle.lock_timeout = 200ms after reload"));
    }
    db->exec(
        "CREATE TABLE src1 (id int PRIMARY KEY, v int); CREATE TABLE src2 (id int PRIMARY KEY, v "
        "int); INSERT INTO src1 VALUES (1, 1); INSERT INTO src2 VALUES (1, 1);"
        "SELECT pgtrickle.create_stream_table('st1', 'SELECT id, v FROM src1', '1s', "
        "'DIFFERENTIAL');"
        "SELECT pgtrickle.create_stream_table('st2', 'SELECT id, v FROM src2', '1s', "
        "'DIFFERENTIAL')");
    const std::string st1_id =
        db->scalar("SELECT pgt_id FROM pgtrickle.pgt_stream_tables WHERE pgt_name = 'st1'");

    Conn locker(security_cluster().conninfo(dbname_));
    locker.exec("BEGIN; LOCK TABLE st1 IN ACCESS EXCLUSIVE MODE");
    // st1 has a change to apply (so its refresh must write st1 and wait).
    db->exec("INSERT INTO src1 VALUES (2, 2); INSERT INTO src2 VALUES (2, 2)");
    EXPECT_TRUE(eventually([&] { return rows_where("st2", "id = 2") == 1; },
                           "st2 to show its row while st1 is locked"));
    // A second change after the scheduler has certainly tried st1 once.
    db->exec("INSERT INTO src2 VALUES (3, 3)");
    EXPECT_TRUE(eventually([&] { return rows_where("st2", "id = 3") == 1; },
                           "st2 to show a later row while st1 is locked"));
    EXPECT_TRUE(eventually(
        [&] {
            return db->scalar(
                       "SELECT count(*) FROM pgtrickle.pgt_refresh_history WHERE pgt_id "
                       "= $1 AND status = 'SKIPPED'",
                       {st1_id}) != "0";
        },
        "a SKIPPED history row for st1 while it is locked"));
    locker.exec("COMMIT");

    EXPECT_TRUE(eventually([&] { return rows_where("st1", "id = 2") == 1; },
                           "st1 to catch up after the lock is released"));
    EXPECT_TRUE(matches_query(*db, "st1"));
    EXPECT_TRUE(matches_query(*db, "st2"));
    // Both were brought up to date by DIFFERENTIAL refreshes of the scheduler.
    for (const char* st : {"st1", "st2"}) {
        EXPECT_NE(db->scalar("SELECT count(*) FROM pgtrickle.pgt_refresh_history h JOIN "
                             "pgtrickle.pgt_stream_tables s USING (pgt_id) WHERE s.pgt_name = $1 "
                             "AND h.initiated_by = 'SCHEDULER' AND h.status = 'SUCCESS' AND "
                             "h.action = 'DIFFERENTIAL'",
                             {st}),
                  "0")
            << st;
    }
}

// The planted-operator attack against scheduled refreshes: the worker is
// a superuser whose search_path is the default ("$user", public). mallory
// plants in public the operators the AUTO cost query and the catalog
// lookups would reach unqualified; the scheduler refreshes an AUTO and a
// DIFFERENTIAL stream table through several changes. Nothing planted runs
// and mallory stays a plain role.
TEST_F(SecurityScheduler, planted_operators_run_nothing_in_scheduled_refreshes) {
    db->exec(R"sql(
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mallory') THEN CREATE ROLE mallory; END IF;
END $$;
ALTER ROLE mallory NOSUPERUSER;
GRANT CREATE, USAGE ON SCHEMA public TO mallory;
CREATE TABLE t (id int PRIMARY KEY, grp int, v int);
INSERT INTO t SELECT g, g % 4, g FROM generate_series(1, 50) g;
)sql");
    Conn mallory(security_cluster().conninfo(dbname_));
    mallory.exec(R"sql(
SET ROLE mallory;
CREATE TABLE public.planted_calls (what text, by_role text);
GRANT INSERT ON public.planted_calls TO PUBLIC;
CREATE FUNCTION public.planted_hit(what text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO public.planted_calls VALUES (what, current_user);
  BEGIN ALTER ROLE mallory SUPERUSER; EXCEPTION WHEN OTHERS THEN NULL; END;
END $f$;
CREATE FUNCTION public.p_mul(integer, double precision) RETURNS double precision
  LANGUAGE plpgsql AS $f$ BEGIN PERFORM public.planted_hit('*(integer, double precision)');
  RETURN $1::double precision * $2; END $f$;
CREATE OPERATOR public.* (LEFTARG = integer, RIGHTARG = double precision, FUNCTION = public.p_mul);
CREATE FUNCTION public.p_eq(oid, regclass) RETURNS boolean
  LANGUAGE plpgsql AS $f$ BEGIN PERFORM public.planted_hit('=(oid, regclass)');
  RETURN $1 = $2::oid; END $f$;
CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = regclass, FUNCTION = public.p_eq);
)sql");
    // Armed: in a session with the default path the planted * is reached.
    db->exec("SELECT 1000 * pg_catalog.date_part('epoch', interval '1 s')");
    EXPECT_NE(db->scalar("SELECT count(*) FROM public.planted_calls"), "0");
    db->exec("DELETE FROM public.planted_calls; ALTER ROLE mallory NOSUPERUSER");

    db->exec(
        "SELECT pgtrickle.create_stream_table('a', 'SELECT grp, sum(v) AS s FROM public.t GROUP BY "
        "grp', schedule => '1s', refresh_mode => 'AUTO');"
        "SELECT pgtrickle.create_stream_table('d', 'SELECT id, v FROM public.t WHERE v > 10', "
        "schedule => '1s', refresh_mode => 'DIFFERENTIAL')");
    // The oracle's own catalog lookups would reach the planted =(oid,
    // regclass) under the default path: it runs with pg_catalog alone.
    Conn checker(security_cluster().conninfo(dbname_));
    checker.exec("SET search_path = pg_catalog");
    for (int round = 0; round < 3; round++) {
        db->exec("UPDATE t SET v = v + 7 WHERE id % 3 = " + std::to_string(round) +
                 "; INSERT INTO t VALUES (" + std::to_string(100 + round) + ", 1, 99)");
        EXPECT_TRUE(eventually(
            [&] {
                return bool(matches_query(checker, "public.a")) &&
                       bool(matches_query(checker, "public.d"));
            },
            "a and d to catch up (round " + std::to_string(round) + ")"));
    }
    EXPECT_NE(db->scalar("SELECT count(*) FROM pgtrickle.pgt_refresh_history WHERE "
                         "initiated_by = 'SCHEDULER' AND status = 'SUCCESS' AND action <> "
                         "'NO_DATA'"),
              "0");
    EXPECT_EQ(db->scalar("SELECT coalesce(string_agg(DISTINCT what || ' as ' || by_role, '; '), "
                         "'') FROM public.planted_calls"),
              "");
    EXPECT_EQ(db->scalar("SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'"), "f");
    db->exec("ALTER ROLE mallory NOSUPERUSER; DROP OWNED BY mallory");
}

}  // namespace
}  // namespace pgt::e2e
