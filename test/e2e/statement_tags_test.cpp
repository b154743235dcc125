// Our statements in pg_stat_statements: on a cluster of its own with
// pg_stat_statements preloaded (default track = top, as most installations
// run it), every statement the scheduler runs begins with a comment
// /* pg_trickle: ... */, naming the stream table when it is run for one
// ("refresh of <name>"), or "scheduler" for its bookkeeping. A name that
// holds "*/" cannot end the comment. IMMEDIATE maintenance (nested in the
// writer's statement, seen with track = all) names its stream table too.
// Invariant: waits are polling loops; the test's own statements after the
// reset begin with /* e2e */ so they are told apart.
#include <memory>
#include <string>

#include "eventually.hpp"
#include "oracle.hpp"
#include "own_cluster.hpp"
#include "pg_conn.hpp"

namespace pgt::e2e {
namespace {

using StatementTags = OwnClusterTest;

TEST_F(StatementTags, our_statements_name_their_stream_table_in_pg_stat_statements) {
    cluster_.start(PGT_E2E_WORKDIR "/statement_tags", /*scheduler=*/true, true, false,
                   "shared_preload_libraries = 'pg_trickle, pg_stat_statements'\n");
    Conn admin(cluster_.conninfo());
    admin.exec("CREATE EXTENSION pg_trickle; CREATE EXTENSION pg_stat_statements");
    admin.exec("CREATE ROLE tag_owner LOGIN; GRANT CREATE ON SCHEMA public TO tag_owner");
    Conn db(cluster_.conninfo() + " user=tag_owner");
    db.exec("CREATE TABLE src (id int PRIMARY KEY, g int, v int)");
    db.exec("INSERT INTO src SELECT i, i % 5, i FROM generate_series(1, 100) i");
    db.exec(
        "SELECT pgtrickle.create_stream_table('\"odd*/name\"', "
        "'SELECT g, sum(v) AS s, count(*) AS c FROM src GROUP BY g', '1s', 'DIFFERENTIAL')");
    db.exec(
        "SELECT pgtrickle.create_stream_table('full_st', "
        "'SELECT g, max(v) AS m FROM src GROUP BY g', '1s', 'FULL')");
    db.exec(
        "SELECT pgtrickle.create_stream_table('imm_st', "
        "'SELECT g, count(*) AS c FROM src GROUP BY g', refresh_mode => 'IMMEDIATE')");
    const std::string before =
        db.scalar("SELECT coalesce(max(refresh_id), 0) FROM pgtrickle.pgt_refresh_history");
    admin.exec("SELECT pg_stat_statements_reset()");

    db.exec("INSERT INTO src VALUES (1000, 1, 7)");
    ASSERT_TRUE(eventually(
        [&] {
            return db.scalar(
                       "/* e2e */ SELECT string_agg(DISTINCT h.action, ',' ORDER BY "
                       "h.action) FROM pgtrickle.pgt_refresh_history h WHERE h.refresh_id "
                       "> $1 AND h.initiated_by = 'SCHEDULER' AND h.status = 'SUCCESS'",
                       {before}) == "DIFFERENTIAL,FULL";
        },
        "a scheduled DIFFERENTIAL and a scheduled FULL refresh"));
    // Entries of this database that read our catalog or generated columns:
    // none without the tag (the test's own are marked /* e2e */).
    auto entries = [&](const std::string& where) {
        return admin.scalar(
            "/* e2e */ SELECT coalesce(string_agg(left(s.query, 80), E'\\n' "
            "ORDER BY s.query), '') FROM pg_stat_statements s JOIN pg_database d "
            "ON d.oid = s.dbid WHERE d.datname = 'postgres' AND " +
            where);
    };
    EXPECT_EQ(entries("s.query NOT LIKE '/* e2e */%' AND s.query NOT LIKE '/* pg_trickle: %' AND "
                      "(s.query LIKE '%pgtrickle%' OR s.query LIKE '%\\_\\_pgt\\_%')"),
              "");
    EXPECT_NE(entries("s.query LIKE '/* pg_trickle: refresh of public.\"odd_/name\" */ %'"), "");
    EXPECT_NE(entries("s.query LIKE '/* pg_trickle: refresh of public.full_st */ %'"), "");
    EXPECT_NE(entries("s.query LIKE '/* pg_trickle: scheduler */ %'"), "");

    // IMMEDIATE: its statements run inside the writer's, tracked with track = all.
    admin.exec("SET pg_stat_statements.track = 'all'");
    admin.exec("INSERT INTO src VALUES (1001, 2, 8)");
    EXPECT_NE(entries("s.query LIKE '/* pg_trickle: maintenance of public.imm_st */ %'"), "");

    for (const char* st : {"\"odd*/name\"", "full_st", "imm_st"}) {
        ASSERT_TRUE(eventually([&] { return bool(matches_query(db, st)); },
                               std::string(st) + " to equal its query"));
    }
    EXPECT_EQ(db.scalar("SELECT string_agg(refresh_mode, ',' ORDER BY pgt_name) FROM "
                        "pgtrickle.pgt_stream_tables"),
              "FULL,IMMEDIATE,DIFFERENTIAL");
}

}  // namespace
}  // namespace pgt::e2e
