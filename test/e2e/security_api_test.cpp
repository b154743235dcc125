// Attacks on the API functions themselves (issue 45, finding 2): a caller
// whose search_path lists public before pg_catalog must not reach
// mallory's operators and functions through any function of the
// extension. Every SQL and PL/pgSQL function pins its path, or has a body
// bound when the extension was created (BEGIN ATOMIC); C functions run
// their SQL under the pinned path.
#include <set>
#include <string>
#include <vector>

#include "fixture.hpp"
#include "planted.hpp"

namespace pgt::e2e {
namespace {

class SecurityApi : public DbTest {
protected:
    void SetUp() override {
        DbTest::SetUp();
        planted::reset_roles(*db);
        db->exec("GRANT CREATE, USAGE ON SCHEMA public TO alice, bob, mallory");
    }

    void TearDown() override {
        if (db) {
            planted::forget_roles(*db);
        }
        DbTest::TearDown();
    }

    std::unique_ptr<Conn> session(const std::string& role, const std::string& path) {
        auto c = std::make_unique<Conn>(conninfo());
        if (role != "postgres") {
            c->exec("SET ROLE " + role);
        }
        c->exec("SET search_path = " + path);
        return c;
    }
};

// The functions of the extension a role may call, by name.
std::set<std::string> callable_functions(Conn& db) {
    Result r = db.exec(
        "SELECT DISTINCT p.proname::text FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_depend d "
        "ON d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid AND "
        "d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass JOIN "
        "pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_trickle' WHERE "
        "pg_catalog.has_function_privilege('public', p.oid, 'EXECUTE') AND p.prorettype <> "
        "ALL (ARRAY['pg_catalog.trigger'::pg_catalog.regtype, "
        "'pg_catalog.event_trigger'::pg_catalog.regtype, 'pg_catalog.internal'::"
        "pg_catalog.regtype]) AND p.prokind = 'f'");
    std::set<std::string> out;
    for (size_t i = 0; i < r.size(); i++) {
        out.insert(r.at(i, 0));
    }
    return out;
}

// Each callable function of the extension, called (the name in front is
// the function's). Stream tables: bob.d (DIFFERENTIAL), bob.f (FULL),
// bob.i (IMMEDIATE), bob.a (AUTO), over bob.t; the caller creates and drops
// its own.
const std::vector<std::pair<std::string, std::string>> kCalls = {
    {"create_stream_table",
     "SELECT pgtrickle.create_stream_table('public.mine', 'SELECT id, v FROM bob.t', "
     "refresh_mode => 'DIFFERENTIAL')"},
    {"create_stream_table_if_not_exists",
     "SELECT pgtrickle.create_stream_table_if_not_exists('public.mine', 'SELECT id, v FROM "
     "bob.t')"},
    {"create_or_replace_stream_table",
     "SELECT pgtrickle.create_or_replace_stream_table('public.mine', 'SELECT id, v FROM bob.t', "
     "refresh_mode => 'DIFFERENTIAL')"},
    {"create_or_replace_stream_table",
     "SELECT pgtrickle.create_or_replace_stream_table('public.mine', 'SELECT id, k, v FROM "
     "bob.t', refresh_mode => 'AUTO')"},
    {"alter_stream_table", "SELECT pgtrickle.alter_stream_table('bob.d', schedule => '5m')"},
    {"alter_stream_table",
     "SELECT pgtrickle.alter_stream_table('bob.f', refresh_mode => 'DIFFERENTIAL')"},
    {"refresh_stream_table", "SELECT pgtrickle.refresh_stream_table('bob.d')"},
    {"refresh_stream_table", "SELECT pgtrickle.refresh_stream_table('bob.a')"},
    {"refresh_if_stale", "SELECT pgtrickle.refresh_if_stale('bob.d', interval '0')"},
    {"_refresh_if_stale",
     "SELECT pgtrickle._refresh_if_stale(pgtrickle._stream_table_id('bob.a'), interval '0')"},
    {"pause_stream_table", "SELECT pgtrickle.pause_stream_table('bob.d')"},
    {"resume_stream_table", "SELECT pgtrickle.resume_stream_table('bob.d')"},
    {"alter_stream_table",
     "SELECT pgtrickle.alter_stream_table('bob.d', refresh_mode => 'DIFFERENTIAL', cdc_mode => "
     "'trigger', status => 'PAUSED', fuse => 'off')"},
    {"resume_stream_table", "SELECT pgtrickle.resume_stream_table('bob.d')"},
    {"_schedule_overdue", "SELECT pgtrickle._schedule_overdue('0 3 * * *', '2 days')"},
    {"pg_stat_stream_tables", "SELECT * FROM pgtrickle.pg_stat_stream_tables"},
    {"repair_stream_table", "SELECT * FROM pgtrickle.repair_stream_table('bob.i')"},
    {"get_refresh_history", "SELECT * FROM pgtrickle.get_refresh_history('bob.d')"},
    {"_refresh_error",
     "SELECT pgtrickle._refresh_error(refresh_id) FROM pgtrickle.pgt_refresh_history"},
    {"list_sources", "SELECT * FROM pgtrickle.list_sources('bob.i')"},
    {"export_definition", "SELECT pgtrickle.export_definition('bob.a')"},
    {"get_staleness", "SELECT pgtrickle.get_staleness('bob.d')"},
    {"explain_st", "SELECT * FROM pgtrickle.explain_st('bob.d')"},
    {"explain_st", "SELECT * FROM pgtrickle.explain_st('bob.a', true)"},
    {"_explain_st",
     "SELECT * FROM pgtrickle._explain_st(pgtrickle._stream_table_id('bob.f'), "
     "false)"},
    {"_explain_refresh", "SELECT * FROM pgtrickle._explain_refresh('bob.d')"},
    {"_explain_program", "SELECT pgtrickle._explain_program('{\"main\": \"SELECT 1\"}')"},
    {"_delta_plan", "SELECT pgtrickle._delta_plan(pgtrickle._stream_table_id('bob.d'))"},
    {"_delta_statement", "SELECT pgtrickle._delta_statement(pgtrickle._stream_table_id('bob.d'))"},
    {"_recompute_query", "SELECT pgtrickle._recompute_query(pgtrickle._stream_table_id('bob.d'))"},
    {"_format_statement", "SELECT pgtrickle._format_statement('SELECT 1 FROM pg_class')"},
    {"explain_refresh_mode", "SELECT * FROM pgtrickle.explain_refresh_mode('bob.a')"},
    {"explain_refresh_mode", "SELECT * FROM pgtrickle.explain_refresh_mode('bob.w')"},
    {"_mode_reason", "SELECT pgtrickle._mode_reason(pgtrickle._stream_table_id('bob.w'))"},
    {"validate_query",
     "SELECT * FROM pgtrickle.validate_query('SELECT k, count(*) AS n FROM "
     "bob.t GROUP BY k', 'DIFFERENTIAL')"},
    {"pgt_status", "SELECT * FROM pgtrickle.pgt_status()"},
    {"health_check", "SELECT * FROM pgtrickle.health_check()"},
    {"change_buffer_sizes", "SELECT * FROM pgtrickle.change_buffer_sizes()"},
    {"refresh_timeline", "SELECT * FROM pgtrickle.refresh_timeline()"},
    {"dependency_tree", "SELECT * FROM pgtrickle.dependency_tree()"},
    {"version", "SELECT pgtrickle.version()"},
    {"_instance", "SELECT * FROM pgtrickle._instance()"},
    {"_scheduler_state", "SELECT * FROM pgtrickle._scheduler_state()"},
    {"_open_catalog", "SELECT pgtrickle._open_catalog()"},
    {"_stream_table_id", "SELECT pgtrickle._stream_table_id('bob.d')"},
    {"_staleness", "SELECT pgtrickle._staleness(pgtrickle._stream_table_id('bob.d'))"},
    {"_pending_changes",
     "SELECT pgtrickle._pending_changes(f.pgt_id, f.source_id, 0) FROM pgtrickle.pgt_frontiers f"},
    {"_immediate_triggers",
     "SELECT * FROM pgtrickle._immediate_triggers(pgtrickle._stream_table_id('bob.i'))"},
    {"_immediate_counters", "SELECT * FROM pgtrickle._immediate_counters('bob.i')"},
    {"encode_row_id_v2", "SELECT pgtrickle.encode_row_id_v2('scan_key', ROW(1))"},
    {"encode_row_id_v2",
     "SELECT pgtrickle.encode_row_id_v2('synthetic', 'scalar_aggregate_singleton', ROW())"},
    {"_encode_row_id_v2_fields", "SELECT pgtrickle._encode_row_id_v2_fields('scan_key', 1)"},
    {"row_probe_v1",
     "SELECT pgtrickle.row_probe_v1(pgtrickle.encode_row_id_v2('scan_key', ROW(1)))"},
    {"numeric_scale_acc", "SELECT pgtrickle.numeric_scale_acc(0, 1.25, 1)"},
    {"numeric_scale_combine", "SELECT pgtrickle.numeric_scale_combine(1, 2)"},
    {"numeric_scale_merge", "SELECT pgtrickle.numeric_scale_merge(2, 1, 0)"},
    {"_refresh_progress", "SELECT * FROM pgtrickle._refresh_progress()"},
    {"refresh_progress", "SELECT * FROM pgtrickle.refresh_progress"},
    {"st_refresh_stats", "SELECT * FROM pgtrickle.st_refresh_stats()"},
    {"trigger_inventory", "SELECT * FROM pgtrickle.trigger_inventory()"},
    {"check_cdc_health", "SELECT * FROM pgtrickle.check_cdc_health()"},
    {"stream_tables_info", "SELECT * FROM pgtrickle.stream_tables_info"},
    {"quick_health", "SELECT * FROM pgtrickle.quick_health"},
    {"stream_table_to_publication", "SELECT pgtrickle.stream_table_to_publication('bob.d')"},
    {"drop_stream_table_publication", "SELECT pgtrickle.drop_stream_table_publication('bob.d')"},
    {"_publication", "SELECT pgtrickle._publication(pgtrickle._stream_table_id('bob.d'), true)"},
    {"_publication", "SELECT pgtrickle._publication(pgtrickle._stream_table_id('bob.d'), false)"},
    {"bulk_create",
     "SELECT pgtrickle.bulk_create('[{\"name\": \"public.bulk1\", \"query\": \"SELECT id, v "
     "FROM bob.t\", \"refresh_mode\": \"DIFFERENTIAL\"}]')"},
    {"drop_stream_table", "SELECT pgtrickle.drop_stream_table('public.bulk1')"},
    {"pause_all", "SELECT pgtrickle.pause_all()"},
    {"resume_all", "SELECT pgtrickle.resume_all()"},
    {"_set_status_all", "SELECT pgtrickle._set_status_all('ACTIVE')"},
    {"drop_stream_table", "SELECT pgtrickle.drop_stream_table('public.mine')"},
};

// Every SQL and PL/pgSQL function of the extension pins its search_path,
// or is a SQL-standard body (bound to its operators and functions when
// the extension was created): none looks a name up in its caller's path.
TEST_F(SecurityApi, every_sql_function_pins_its_path_or_is_bound_at_creation) {
    Result r = db->exec(
        "SELECT p.oid::pg_catalog.regprocedure::text FROM pg_catalog.pg_proc p JOIN "
        "pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND "
        "d.objid = p.oid AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass JOIN "
        "pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_trickle' JOIN "
        "pg_catalog.pg_language l ON l.oid = p.prolang WHERE l.lanname NOT IN ('c', 'internal') "
        "AND p.prosqlbody IS NULL AND NOT EXISTS (SELECT FROM pg_catalog.unnest(p.proconfig) c "
        "WHERE c = 'search_path=pg_catalog, pg_temp') ORDER BY 1");
    std::string unpinned;
    for (size_t i = 0; i < r.size(); i++) {
        unpinned += "\n  " + r.at(i, 0);
    }
    EXPECT_EQ(unpinned, "") << "functions that resolve names in their caller's search_path";
}

// A superuser whose search_path puts public before pg_catalog calls every
// function of the extension (and writes the sources, firing capture and
// IMMEDIATE triggers): mallory's operators, functions and aggregates in
// public shadow pg_catalog's for that session, and none of them runs.
TEST_F(SecurityApi, planted_operators_before_pg_catalog_reach_no_api_function) {
    db->exec("CREATE SCHEMA bob AUTHORIZATION bob; GRANT USAGE ON SCHEMA bob TO PUBLIC");
    auto bob = session("bob", "pg_catalog, pg_temp");
    bob->exec(
        "CREATE TABLE bob.t (id int PRIMARY KEY, k int, v int);"
        "INSERT INTO bob.t SELECT g, g % 5, g FROM generate_series(1, 50) g;"
        "GRANT SELECT ON bob.t TO PUBLIC;"
        "SELECT pgtrickle.create_stream_table('bob.d', 'SELECT k, count(*) AS n, sum(v) AS s "
        "FROM bob.t WHERE v > 2 GROUP BY k', refresh_mode => 'DIFFERENTIAL');"
        "SELECT pgtrickle.create_stream_table('bob.f', 'SELECT k, max(v) AS m FROM bob.t GROUP "
        "BY k', refresh_mode => 'FULL');"
        "SELECT pgtrickle.create_stream_table('bob.i', 'SELECT k, count(*) AS n FROM bob.t "
        "WHERE v <> 7 GROUP BY k', refresh_mode => 'IMMEDIATE');"
        "SELECT pgtrickle.create_stream_table('bob.a', 'SELECT id, v FROM bob.t WHERE v < 40', "
        "refresh_mode => 'AUTO');"
        "SELECT pgtrickle.create_stream_table('bob.w', 'SELECT id, sum(v) OVER (ORDER BY id) "
        "AS s FROM bob.t', refresh_mode => 'AUTO')");
    db->exec("SET search_path = pg_catalog, pg_temp");
    auto mallory = session("mallory", "pg_catalog, pg_temp");
    planted::plant_logger(*mallory);
    planted::plant(*mallory, "public");
    mallory.reset();

    auto su = session("postgres", "public, pg_catalog");
    // The trap works in that session: text equality reaches mallory's.
    su->exec("SELECT 'a'::text = 'b'::text");
    ASSERT_NE(planted::calls(*db).find("public.=(text, text)"), std::string::npos);
    db->exec("DELETE FROM public.planted_calls; ALTER ROLE mallory NOSUPERUSER");

    std::set<std::string> called;
    for (const auto& [fn, call] : kCalls) {
        called.insert(fn);
        std::optional<SqlError> e = error_in(*su, call);
        EXPECT_FALSE(e) << call << ": " << e->sqlstate << " " << e->message;
        EXPECT_EQ(planted::calls(*db), "") << "mallory's code ran in " << call;
        db->exec("DELETE FROM public.planted_calls");
    }
    for (const std::string& fn : callable_functions(*db)) {
        EXPECT_TRUE(called.count(fn)) << "pgtrickle." << fn << " is not attacked by this test";
    }
    // Writes fire capture (bob.d), change notes (bob.f) and IMMEDIATE (bob.i)
    // (the writes' own operators named: the session would reach mallory's).
    su->exec(
        "INSERT INTO bob.t VALUES (51, 1, 51);"
        "UPDATE bob.t SET v = v OPERATOR(pg_catalog.+) 1 WHERE id OPERATOR(pg_catalog.<) 10;"
        "DELETE FROM bob.t WHERE id OPERATOR(pg_catalog.=) 20");
    EXPECT_EQ(planted::calls(*db), "") << "mallory's code ran in a write's triggers";
    db->exec("DELETE FROM public.planted_calls");
    su->exec(
        "SELECT pgtrickle.refresh_stream_table('bob.d'); "
        "SELECT pgtrickle.refresh_stream_table('bob.a')");
    EXPECT_EQ(planted::calls(*db), "") << "mallory's code ran in a refresh";
    EXPECT_FALSE(planted::is_superuser(*db, "mallory"));
    for (const char* st : {"bob.d", "bob.i", "bob.a"}) {
        EXPECT_TRUE(matches_query(*db, st)) << st;
    }
    EXPECT_EQ(modes("bob.i"), "IMMEDIATE/IMMEDIATE");
    EXPECT_EQ(last_action("bob.d"), "DIFFERENTIAL");
}

}  // namespace
}  // namespace pgt::e2e

namespace pgt::e2e {
namespace {

// Finding 6: the error text of alice's failed refresh quotes a value of
// her secret column. mallory (no right on anything of alice's) cannot read
// it, from the history table or through the API functions; alice and a
// member of pg_read_all_stats (pg_monitor's) can, as with
// pg_stat_activity.query.
TEST_F(SecurityApi, refresh_errors_are_read_by_the_owner_and_pg_read_all_stats_only) {
    db->exec(
        "DO $$ BEGIN CREATE ROLE watcher; EXCEPTION WHEN duplicate_object THEN NULL; END $$;"
        "GRANT pg_monitor TO watcher;"
        "CREATE SCHEMA alice AUTHORIZATION alice; GRANT USAGE ON SCHEMA alice TO PUBLIC");
    auto alice = session("alice", "pg_catalog, pg_temp");
    alice->exec(
        "CREATE TABLE alice.t (id int PRIMARY KEY, secret text);"
        "INSERT INTO alice.t VALUES (1, '42');"
        "SELECT pgtrickle.create_stream_table('alice.st', 'SELECT id, secret::int AS n FROM "
        "alice.t', refresh_mode => 'FULL')");
    alice->exec("UPDATE alice.t SET secret = 'rotated-pw-Zq9'");
    const std::optional<SqlError> failed =
        error_in(*alice, "SELECT pgtrickle.refresh_stream_table('alice.st')");
    ASSERT_TRUE(failed);
    ASSERT_NE(failed->message.find("rotated-pw-Zq9"), std::string::npos) << failed->message;
    // What the scheduler records of such a refresh (catalog::record_failed_refresh).
    db->exec(
        "INSERT INTO pgtrickle.pgt_refresh_history (pgt_id, action, status, initiated_by, "
        "start_time, end_time, error_message) SELECT pgt_id, 'FULL', 'FAILED', 'SCHEDULER', "
        "now(), now(), $1 FROM pgtrickle.pgt_stream_tables WHERE pgt_name = 'st'",
        {failed->sqlstate + ": " + failed->message});

    const std::vector<std::string> reads = {
        "SELECT coalesce(string_agg(error_message, ''), '') FROM "
        "pgtrickle.get_refresh_history('alice.st')",
        "SELECT coalesce(string_agg(error_message, ''), '') FROM pgtrickle.refresh_timeline()",
    };
    auto mallory = session("mallory", "pg_catalog, pg_temp");
    EXPECT_EQ(sqlstate_of(*mallory, "SELECT error_message FROM pgtrickle.pgt_refresh_history"),
              "42501");
    EXPECT_EQ(mallory->scalar("SELECT count(*) FROM pgtrickle.pgt_refresh_history WHERE status "
                              "= 'FAILED'"),
              "1")
        << "the rest of the history stays readable";
    for (const std::string& read : reads) {
        EXPECT_EQ(mallory->scalar(read), "") << read;
        EXPECT_NE(alice->scalar(read).find("rotated-pw-Zq9"), std::string::npos) << read;
    }
    auto watcher = session("watcher", "pg_catalog, pg_temp");
    for (const std::string& read : reads) {
        EXPECT_NE(watcher->scalar(read).find("rotated-pw-Zq9"), std::string::npos) << read;
    }
    watcher.reset();
    db->exec("DROP OWNED BY watcher; DROP ROLE watcher");
    alice->exec(
        "UPDATE alice.t SET secret = '7'; SELECT pgtrickle.refresh_stream_table('alice.st')");
    EXPECT_EQ(last_action("alice.st"), "FULL");
    EXPECT_TRUE(matches_query(*db, "alice.st"));
}

}  // namespace
}  // namespace pgt::e2e
