// The Rust pg_trickle's monitoring and operations functions and views, as
// its users call them: stream_tables_info, quick_health, st_refresh_stats,
// trigger_inventory, check_cdc_health, stream_table_to_publication,
// bulk_create, pause_all and resume_all.
#include <string>

#include "fixture.hpp"

namespace pgt::e2e {
namespace {

class RustApi : public DbTest {
protected:
    void two_stream_tables() {
        db->exec(
            "CREATE TABLE src (id int PRIMARY KEY, g int, v int);"
            "INSERT INTO src SELECT i, i % 3, i FROM generate_series(1, 30) i;"
            "SELECT pgtrickle.create_stream_table('sums', 'SELECT g, sum(v) AS s FROM src GROUP "
            "BY g', '1m', 'DIFFERENTIAL');"
            "SELECT pgtrickle.create_stream_table('big', 'SELECT id, v FROM src WHERE v > 10', "
            "'1m', 'FULL')");
    }
};

TEST_F(RustApi, monitoring_views_and_functions_report_each_stream_table) {
    EXPECT_EQ(db->scalar("SELECT status FROM pgtrickle.quick_health"), "EMPTY");
    two_stream_tables();
    db->exec("UPDATE src SET v = v + 1 WHERE id < 5");
    refresh("sums");
    EXPECT_EQ(last_action("sums"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "sums");
    EXPECT_EQ(db->scalar("SELECT string_agg(pgt_name || ':' || refresh_mode || ':' || "
                         "(staleness = '0') || ':' || stale, ',' ORDER BY pgt_name) FROM "
                         "pgtrickle.stream_tables_info"),
              "big:FULL:false:false,sums:DIFFERENTIAL:true:false");
    Result q = db->exec("SELECT * FROM pgtrickle.quick_health");
    EXPECT_EQ(q.at(0, 0), "2");  // total_stream_tables
    EXPECT_EQ(q.at(0, 1), "0");  // error_tables
    EXPECT_EQ(q.at(0, 4), "OK");
    Result st = db->exec(
        "SELECT pgt_name, total_refreshes, successful_refreshes, failed_refreshes, "
        "total_rows_inserted, last_refresh_action, last_refresh_status FROM "
        "pgtrickle.st_refresh_stats() WHERE pgt_name = 'sums'");
    ASSERT_EQ(st.size(), 1u);
    EXPECT_EQ(st.at(0, 1), "2");
    EXPECT_EQ(st.at(0, 2), "2");
    EXPECT_EQ(st.at(0, 3), "0");
    EXPECT_EQ(st.at(0, 5), "DIFFERENTIAL");
    EXPECT_EQ(st.at(0, 6), "SUCCESS");
    // A suspended stream table makes the whole CRITICAL.
    db->exec("SELECT pgtrickle.pause_stream_table('big')");
    EXPECT_EQ(db->scalar("SELECT status FROM pgtrickle.quick_health"), "CRITICAL");
}

// One capture per source: its DML and TRUNCATE triggers; one disabled by
// hand is reported (fires no more in every session), one missing too.
TEST_F(RustApi, trigger_inventory_and_cdc_health_report_capture_triggers) {
    two_stream_tables();
    EXPECT_EQ(db->scalar("SELECT string_agg(source_table || ':' || trigger_type || ':' || present "
                         "|| ':' || enabled, ',' ORDER BY trigger_type) FROM "
                         "pgtrickle.trigger_inventory()"),
              "public.src:DML:true:true,public.src:TRUNCATE:true:true");
    EXPECT_EQ(db->scalar("SELECT source_table || ':' || cdc_mode || ':' || coalesce(alert, 'ok') "
                         "FROM pgtrickle.check_cdc_health()"),
              "public.src:TRIGGER:ok");
    const std::string trig = db->scalar(
        "SELECT trigger_name FROM pgtrickle.trigger_inventory() WHERE trigger_type = 'DML'");
    db->exec("ALTER TABLE src ENABLE TRIGGER " + trig);  // no longer ALWAYS
    EXPECT_EQ(db->scalar("SELECT alert FROM pgtrickle.check_cdc_health()"),
              "capture_trigger_not_always_enabled");
    db->exec("ALTER TABLE src ENABLE ALWAYS TRIGGER " + trig);
    EXPECT_EQ(db->scalar("SELECT coalesce(alert, 'ok') FROM pgtrickle.check_cdc_health()"), "ok");
}

TEST_F(RustApi, a_publication_of_a_stream_table_goes_with_it) {
    two_stream_tables();
    db->exec("SELECT pgtrickle.stream_table_to_publication('sums')");
    EXPECT_EQ(db->scalar("SELECT string_agg(pubname || ':' || tablename, ',') FROM "
                         "pg_publication_tables"),
              "pgt_pub_sums:sums");
    EXPECT_EQ(db->error_of("SELECT pgtrickle.stream_table_to_publication('sums')").sqlstate,
              "42710");
    db->exec("SELECT pgtrickle.drop_stream_table_publication('sums')");
    EXPECT_EQ(count("SELECT 1 FROM pg_publication"), 0);
    db->exec("SELECT pgtrickle.stream_table_to_publication('sums')");
    db->exec("SELECT pgtrickle.drop_stream_table('sums')");
    EXPECT_EQ(count("SELECT 1 FROM pg_publication"), 0);
    EXPECT_EQ(db->error_of("SELECT pgtrickle.stream_table_to_publication('src')").sqlstate,
              "42809");
}

// All or none: a failing definition names its index and name, keeps its
// SQLSTATE, and nothing of the others is left.
TEST_F(RustApi, bulk_create_creates_all_or_none) {
    db->exec(
        "CREATE TABLE src (id int PRIMARY KEY, g int, v int); INSERT INTO src VALUES (1, 1, 1)");
    SqlError e = db->error_of(
        R"(SELECT pgtrickle.bulk_create('[{"name": "a", "query": "SELECT id, v FROM src"},)"
        R"( {"name": "b", "query": "SELECT id FROM src", "partition_by": "id"}]'))");
    EXPECT_EQ(e.sqlstate, "0A000");
    EXPECT_NE(e.message.find("definition 1 (b)"), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("partition_by"), std::string::npos) << e.message;
    EXPECT_EQ(count("SELECT 1 FROM pgtrickle.pgt_stream_tables"), 0);
    EXPECT_EQ(count("SELECT 1 FROM pg_class WHERE relname IN ('a', 'b')"), 0);
    const std::string out = db->scalar(
        R"(SELECT pgtrickle.bulk_create('[{"name": "a", "query": "SELECT id, v FROM src"},)"
        R"( {"name": "b", "query": "SELECT g, count(*) AS n FROM src GROUP BY g",)"
        R"(  "refresh_mode": "DIFFERENTIAL", "schedule": "5m"}]'))");
    EXPECT_EQ(db->scalar("SELECT string_agg(e->>'name' || ':' || (e->>'status') || ':' || "
                         "((e->>'pgt_id')::bigint = s.pgt_id), ',') FROM "
                         "jsonb_array_elements($1::jsonb) e JOIN pgtrickle.pgt_stream_tables s "
                         "ON s.pgt_name = e->>'name'",
                         {out}),
              "a:created:true,b:created:true");
    EXPECT_EQ(modes("b"), "DIFFERENTIAL/DIFFERENTIAL");
    db->exec("INSERT INTO src VALUES (2, 1, 5)");
    refresh("b");
    EXPECT_EQ(last_action("b"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "b");
}

TEST_F(RustApi, pause_all_and_resume_all_change_every_stream_table_the_caller_owns) {
    two_stream_tables();
    EXPECT_EQ(db->scalar("SELECT pgtrickle.pause_all()"), "2");
    EXPECT_EQ(db->scalar("SELECT string_agg(DISTINCT status, ',') FROM "
                         "pgtrickle.pgt_stream_tables"),
              "SUSPENDED");
    EXPECT_EQ(db->scalar("SELECT pgtrickle.pause_all()"), "0");
    EXPECT_EQ(db->scalar("SELECT pgtrickle.resume_all()"), "2");
    EXPECT_EQ(db->scalar("SELECT string_agg(DISTINCT status, ',') FROM "
                         "pgtrickle.pgt_stream_tables"),
              "ACTIVE");
    db->exec("UPDATE src SET v = 0 WHERE id = 3");
    refresh("sums");
    EXPECT_MATCHES_QUERY(*db, "sums");
    EXPECT_EQ(last_action("sums"), "DIFFERENTIAL");
}

}  // namespace
}  // namespace pgt::e2e
