// The monitoring functions of the everyday API: get_refresh_history and
// list_sources, as a user calls them, with the errors of a wrong name.
#include <string>

#include "fixture.hpp"

namespace pgt::e2e {
namespace {

class Monitoring : public DbTest {};

TEST_F(Monitoring, refresh_history_lists_the_latest_refreshes_first) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, v int);"
        "INSERT INTO t SELECT i, i FROM generate_series(1, 10) i;"
        "SELECT pgtrickle.create_stream_table('st', 'SELECT id, v FROM t', "
        "refresh_mode => 'DIFFERENTIAL')");
    refresh("st");  // nothing changed
    db->exec("UPDATE t SET v = v + 1 WHERE id <= 3");
    refresh("st");
    EXPECT_MATCHES_QUERY(*db, "st");
    Result h = db->exec(
        "SELECT action, initiated_by, rows_inserted, rows_deleted, duration_ms >= 0, "
        "error_message IS NULL FROM pgtrickle.get_refresh_history('st')");
    ASSERT_EQ(h.size(), 3u);
    EXPECT_EQ(h.at(0, 0), "DIFFERENTIAL");
    EXPECT_EQ(h.at(0, 1), "MANUAL");
    EXPECT_EQ(h.at(0, 2), "3");  // keyed rows are updated in place: counted as inserted
    EXPECT_EQ(h.at(0, 3), "0");
    EXPECT_EQ(h.at(0, 4), "t");
    EXPECT_EQ(h.at(0, 5), "t");
    EXPECT_EQ(h.at(1, 0), "NO_DATA");
    EXPECT_EQ(h.at(2, 0), "FULL");
    EXPECT_EQ(h.at(2, 1), "CREATE");
    EXPECT_EQ(count("SELECT * FROM pgtrickle.get_refresh_history('st', max_rows => 2)"), 2);
    EXPECT_EQ(db->scalar("SELECT max(refresh_id) = min(refresh_id) FROM "
                         "pgtrickle.get_refresh_history('st', 1)"),
              "t");
    EXPECT_EQ(db->error_of("SELECT * FROM pgtrickle.get_refresh_history('t')").sqlstate, "42809");
    EXPECT_EQ(db->error_of("SELECT * FROM pgtrickle.get_refresh_history('nope')").sqlstate,
              "42P01");
}

TEST_F(Monitoring, list_sources_names_each_source_and_its_capture) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, grp int, v int);"
        "CREATE TABLE d (grp int PRIMARY KEY, name text);"
        "CREATE VIEW dv AS SELECT grp, name FROM d;"
        "SELECT pgtrickle.create_stream_table('j', 'SELECT t.id, d.name FROM t JOIN d ON d.grp "
        "= t.grp', refresh_mode => 'DIFFERENTIAL');"
        "SELECT pgtrickle.create_stream_table('f', 'SELECT count(*) AS n FROM dv', "
        "refresh_mode => 'FULL')");
    Result j = db->exec(
        "SELECT source_table, source_type, cdc_mode, columns_used FROM "
        "pgtrickle.list_sources('j') ORDER BY 1");
    ASSERT_EQ(j.size(), 2u);
    EXPECT_EQ(j.at(0, 0), "d");
    EXPECT_EQ(j.at(0, 1), "TABLE");
    EXPECT_EQ(j.at(0, 2), "trigger");
    EXPECT_EQ(j.at(0, 3), "grp, name");
    EXPECT_EQ(j.at(1, 0), "t");
    EXPECT_EQ(j.at(1, 3), "id, grp");
    Result f = db->exec(
        "SELECT source_table, source_type, cdc_mode FROM "
        "pgtrickle.list_sources('f') ORDER BY 1");
    ASSERT_EQ(f.size(), 2u);
    EXPECT_EQ(f.at(0, 0), "d");
    EXPECT_EQ(f.at(0, 2), "none");
    EXPECT_EQ(f.at(1, 0), "dv");
    EXPECT_EQ(f.at(1, 1), "VIEW");
    EXPECT_EQ(db->error_of("SELECT * FROM pgtrickle.list_sources('dv')").sqlstate, "42809");
    EXPECT_MATCHES_QUERY(*db, "j");
    EXPECT_MATCHES_QUERY(*db, "f");
}

}  // namespace
}  // namespace pgt::e2e
