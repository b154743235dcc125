// The everyday lifecycle API beyond create/alter/drop: create_or_replace_
// stream_table as dbt calls it on every run (create, no-op, or change in
// place, never a drop), and export_definition.
#include <string>

#include "fixture.hpp"

namespace pgt::e2e {
namespace {

class CreateOrReplace : public DbTest {
protected:
    std::string history_rows() {
        return db->scalar("SELECT count(*) FROM pgtrickle.pgt_refresh_history");
    }
    std::string relid(const std::string& st) {
        return db->scalar("SELECT $1::regclass::oid::text", {st});
    }
};

TEST_F(CreateOrReplace, creates_then_does_nothing_then_changes_in_place) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, grp int, v int);"
        "INSERT INTO t SELECT i, i % 3, i FROM generate_series(1, 30) i;");
    const std::string call =
        "SELECT pgtrickle.create_or_replace_stream_table('st', $1, refresh_mode => "
        "'DIFFERENTIAL')";
    db->exec(call, {"SELECT id, v FROM t WHERE v > 5"});
    EXPECT_EQ(modes("st"), "DIFFERENTIAL/DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "st");
    const std::string oid = relid("st"), rows = history_rows();
    // The same definition (spelled differently): nothing happens.
    db->notices.clear();
    db->exec(call, {"select id, v from t where v > 5"});
    ASSERT_EQ(db->notices.size(), 1u);
    EXPECT_NE(db->notices[0].find("is unchanged"), std::string::npos) << db->notices[0];
    EXPECT_EQ(history_rows(), rows);
    // Another filter, the same columns: changed in place and recomputed.
    db->exec("CREATE VIEW reader AS SELECT id FROM st");
    db->exec(call, {"SELECT id, v FROM t WHERE v > 20"});
    EXPECT_EQ(relid("st"), oid);
    EXPECT_EQ(last_action("st"), "FULL");
    EXPECT_MATCHES_QUERY(*db, "st");
    EXPECT_EQ(count("SELECT * FROM reader"), 10);
    // A new schedule alone changes only the schedule.
    const std::string after = history_rows();
    db->exec(
        "SELECT pgtrickle.create_or_replace_stream_table('st', 'SELECT id, v FROM t WHERE v > "
        "20', schedule => '5m', refresh_mode => 'DIFFERENTIAL')");
    EXPECT_EQ(db->scalar("SELECT schedule FROM pgtrickle.pgt_stream_tables"), "5m");
    EXPECT_EQ(history_rows(), after);
    // Changes keep being applied DIFFERENTIAL.
    db->exec("UPDATE t SET v = v + 100 WHERE id <= 4");
    refresh("st");
    EXPECT_EQ(last_action("st"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "st");
}

// export_definition's statement, run after the stream table is dropped,
// creates it again with the same mode, schedule, channel and rows; a wrong
// name is 42P01 as for the other functions.
TEST_F(CreateOrReplace, export_definition_creates_the_stream_table_again) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, grp int, v int);"
        "INSERT INTO t SELECT i, i % 3, i FROM generate_series(1, 30) i;"
        "SELECT pgtrickle.create_stream_table('sums', $q$SELECT grp, sum(v) AS s FROM t "
        "WHERE v <> 7 GROUP BY grp$q$, schedule => '5m', refresh_mode => 'IMMEDIATE', "
        "notify => 'sums_changed')");
    const std::string sql = db->scalar("SELECT pgtrickle.export_definition('sums')");
    EXPECT_EQ(sql,
              "SELECT pgtrickle.create_stream_table('public.sums', 'SELECT grp, sum(v) AS s FROM "
              "t WHERE v <> 7 GROUP BY grp', schedule => '5m', refresh_mode => 'IMMEDIATE', "
              "notify => 'sums_changed');");
    const std::string before = db->scalar(
        "SELECT schedule || ' ' || requested_mode || ' ' || refresh_mode || ' ' || "
        "notify_channel FROM pgtrickle.pgt_stream_tables");
    db->exec("SELECT pgtrickle.drop_stream_table('sums')");
    db->exec(sql);
    EXPECT_EQ(db->scalar("SELECT schedule || ' ' || requested_mode || ' ' || refresh_mode || ' ' "
                         "|| notify_channel FROM pgtrickle.pgt_stream_tables"),
              before);
    db->exec("UPDATE t SET v = v + 1 WHERE id < 10");
    EXPECT_MATCHES_QUERY(*db, "sums");
    EXPECT_EQ(db->scalar("SELECT cdc_mode FROM pgtrickle.list_sources('sums')"), "immediate");
    EXPECT_EQ(db->error_of("SELECT pgtrickle.export_definition('nope')").sqlstate, "42P01");
}

TEST_F(CreateOrReplace, refuses_what_create_refuses_and_changes_nothing) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, v int);"
        "SELECT pgtrickle.create_or_replace_stream_table('st', 'SELECT id, v FROM t')");
    const std::string before = state();
    EXPECT_EQ(db->error_of("SELECT pgtrickle.create_or_replace_stream_table('st', 'SELECT id, v "
                           "FROM t UNION SELECT 1, 2', refresh_mode => 'DIFFERENTIAL')")
                  .sqlstate,
              "0A000");
    EXPECT_EQ(
        db->error_of("SELECT pgtrickle.create_or_replace_stream_table('t', 'SELECT 1')").sqlstate,
        "42P07");
    EXPECT_EQ(state(), before);
    EXPECT_MATCHES_QUERY(*db, "st");
}

// A new query with other output columns rebuilds the storage; what users
// added to it stays: table and column GRANTs, comments, their own indexes.
// An index on a column the new query no longer has is left out, with a
// NOTICE naming it.
TEST_F(CreateOrReplace, a_rebuild_keeps_grants_comments_and_indexes) {
    db->exec(
        "CREATE TABLE src (id int PRIMARY KEY, grp int, val int);"
        "INSERT INTO src SELECT g, g % 3, g FROM generate_series(1, 20) g;"
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'st_reader') THEN "
        "CREATE ROLE st_reader; END IF; IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = "
        "'st_col_reader') THEN CREATE ROLE st_col_reader; END IF; END $$;"
        "SELECT pgtrickle.create_stream_table('st', 'SELECT id, grp, val FROM src', "
        "refresh_mode => 'DIFFERENTIAL');"
        "GRANT SELECT ON st TO st_reader WITH GRANT OPTION;"
        "GRANT SELECT (grp) ON st TO st_col_reader;"
        "COMMENT ON TABLE st IS 'values by id';"
        "COMMENT ON COLUMN st.grp IS 'the group';"
        "CREATE INDEX st_grp_idx ON st (grp);"
        "CREATE INDEX st_val_idx ON st (val) WHERE val > 3");
    const std::string before = relid("st");
    db->exec(
        "SELECT pgtrickle.alter_stream_table('st', query => 'SELECT id, grp, val * 2 AS val2 "
        "FROM src')");
    EXPECT_NE(relid("st"), before);  // rebuilt
    EXPECT_EQ(db->scalar("SELECT has_table_privilege('st_reader', 'st', 'SELECT WITH GRANT "
                         "OPTION')::text || has_table_privilege('st_col_reader', 'st', "
                         "'SELECT')::text || has_column_privilege('st_col_reader', 'st', 'grp', "
                         "'SELECT')::text"),
              "truefalsetrue");
    EXPECT_EQ(db->scalar("SELECT obj_description('st'::regclass, 'pg_class') || ' / ' || "
                         "col_description('st'::regclass, 2)"),
              "values by id / the group");
    EXPECT_EQ(db->scalar("SELECT string_agg(indexrelid::regclass::text, ',' ORDER BY "
                         "indexrelid::regclass::text) FROM "
                         "pg_index WHERE indrelid = 'st'::regclass AND indexrelid::regclass::text "
                         "LIKE 'st\\_%' AND indexrelid::regclass::text NOT LIKE '%\\_\\_pgt%'"),
              "st_grp_idx");
    bool told = false;
    for (const std::string& m : db->notices) {
        told = told || (m.find("st_val_idx") != std::string::npos &&
                        m.find("not made again") != std::string::npos);
    }
    EXPECT_TRUE(told);
    db->exec("UPDATE src SET grp = grp + 1 WHERE id < 5");
    refresh("st");
    EXPECT_MATCHES_QUERY(*db, "st");
    EXPECT_EQ(last("st").substr(0, 13), "DIFFERENTIAL/");
}

}  // namespace
}  // namespace pgt::e2e
