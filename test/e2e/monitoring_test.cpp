// The monitoring functions of the everyday API: get_refresh_history,
// list_sources, staleness (get_staleness, refresh_if_stale, pgt_status),
// refresh_timeline, explain_refresh_mode, change_buffer_sizes (as a role
// that may not read the source, too) and dependency_tree, as a user calls
// them, with the errors of a wrong name or argument.
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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

// Staleness is the time since the table was last known equal to its
// sources: zero while nothing it reads has changed since its refresh (it
// does not age when idle), the time since the refresh once a change is
// pending, NULL before it was ever populated; FULL tables, which know
// nothing of their sources' changes, age from their refresh.
TEST_F(Monitoring, staleness_is_zero_while_nothing_is_pending_and_ages_after_a_change) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, v int);"
        "INSERT INTO t SELECT i, i FROM generate_series(1, 10) i;"
        "SELECT pgtrickle.create_stream_table('d', 'SELECT id, v FROM t WHERE v > 2', "
        "refresh_mode => 'DIFFERENTIAL');"
        "SELECT pgtrickle.create_stream_table('f', 'SELECT count(*) AS n FROM t', "
        "refresh_mode => 'FULL');"
        "SELECT pgtrickle.create_stream_table('never', 'SELECT id FROM t', "
        "refresh_mode => 'DIFFERENTIAL', initialize => false)");
    db->exec("SELECT pg_sleep(0.05)");
    EXPECT_EQ(db->scalar("SELECT pgtrickle.get_staleness('d')"), "0");
    EXPECT_EQ(db->scalar("SELECT staleness = interval '0' FROM pgtrickle.pgt_status() "
                         "WHERE name = 'public.d'"),
              "t");
    EXPECT_EQ(db->scalar("SELECT pgtrickle.get_staleness('f') > 0"), "t");
    EXPECT_EQ(db->scalar("SELECT pgtrickle.get_staleness('never') IS NULL"), "t");
    EXPECT_EQ(db->scalar("SELECT pgtrickle.refresh_if_stale('d', '1 hour')"), "f");
    EXPECT_EQ(db->scalar("SELECT pgtrickle.refresh_if_stale('d', '0')"), "f");
    EXPECT_EQ(count("SELECT * FROM pgtrickle.get_refresh_history('d')"), 1);

    db->exec("UPDATE t SET v = v + 10 WHERE id = 1");
    db->exec("SELECT pg_sleep(0.05)");
    EXPECT_EQ(db->scalar("SELECT pgtrickle.get_staleness('d') >= 0.05"), "t");
    EXPECT_EQ(db->scalar("SELECT pgtrickle.refresh_if_stale('d', '1 hour')"), "f");
    EXPECT_EQ(db->scalar("SELECT pgtrickle.refresh_if_stale('d', '0')"), "t");
    EXPECT_MATCHES_QUERY(*db, "d");
    EXPECT_EQ(last("d").substr(0, 13), "DIFFERENTIAL/");
    EXPECT_EQ(db->scalar("SELECT pgtrickle.get_staleness('d')"), "0");
    EXPECT_EQ(db->scalar("SELECT pgtrickle.refresh_if_stale('never', '1 day')"), "t");
    EXPECT_MATCHES_QUERY(*db, "never");
    EXPECT_EQ(db->error_of("SELECT pgtrickle.refresh_if_stale('d', NULL)").sqlstate, "22004");
    EXPECT_EQ(db->error_of("SELECT pgtrickle.refresh_if_stale('d', '-1 s')").sqlstate, "22023");
    EXPECT_EQ(db->error_of("SELECT pgtrickle.get_staleness('t')").sqlstate, "42809");
}

// Pending rows per (stream table, source) count the changes its next
// refresh consumes, per consumer; a role that may not read the source sees
// no row for it (nor a staleness that would tell a change is pending).
TEST_F(Monitoring, change_buffer_sizes_counts_per_consumer_and_hides_unreadable_sources) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, v int);"
        "INSERT INTO t SELECT i, i FROM generate_series(1, 10) i;"
        "SELECT pgtrickle.create_stream_table('a', 'SELECT id, v FROM t', "
        "refresh_mode => 'DIFFERENTIAL');"
        "SELECT pgtrickle.create_stream_table('b', 'SELECT id FROM t WHERE v > 3', "
        "refresh_mode => 'DIFFERENTIAL')");
    db->exec("INSERT INTO t VALUES (11, 11), (12, 12); DELETE FROM t WHERE id = 1");
    refresh("a");
    db->exec("UPDATE t SET v = 0 WHERE id = 2");
    Result r = db->exec(
        "SELECT stream_table, source_table, cdc_mode, pending_rows, buffer_bytes > 0 "
        "FROM pgtrickle.change_buffer_sizes() ORDER BY 1");
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r.at(0, 0), "public.a");
    EXPECT_EQ(r.at(0, 1), "public.t");
    EXPECT_EQ(r.at(0, 2), "trigger");
    EXPECT_EQ(r.at(0, 3), "1");
    EXPECT_EQ(r.at(0, 4), "t");
    EXPECT_EQ(r.at(1, 0), "public.b");
    EXPECT_EQ(r.at(1, 3), "4");
    // Not counted for a role that cannot read t.
    db->exec(
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'peeker') THEN "
        "CREATE ROLE peeker; END IF; END $$;"
        "GRANT USAGE ON SCHEMA pgtrickle TO peeker");
    const std::string buffer = db->scalar("SELECT buffer_name FROM pgtrickle.pgt_sources");
    db->exec("SET ROLE peeker");
    EXPECT_EQ(count("SELECT * FROM pgtrickle.change_buffer_sizes()"), 0);
    EXPECT_EQ(db->scalar("SELECT pgtrickle._pending_changes(f.pgt_id, f.source_id) IS NULL "
                         "FROM pgtrickle.pgt_frontiers f LIMIT 1"),
              "t");
    EXPECT_EQ(db->error_of("SELECT * FROM " + buffer).sqlstate, "42501");
    db->exec("RESET ROLE");
    db->exec("GRANT SELECT ON t TO peeker; SET ROLE peeker");
    EXPECT_EQ(count("SELECT * FROM pgtrickle.change_buffer_sizes()"), 2);
    db->exec("RESET ROLE");
    refresh("a");
    refresh("b");
    EXPECT_MATCHES_QUERY(*db, "a");
    EXPECT_MATCHES_QUERY(*db, "b");
    EXPECT_EQ(last("b").substr(0, 13), "DIFFERENTIAL/");
}

TEST_F(Monitoring, refresh_timeline_and_explain_refresh_mode) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, v int);"
        "INSERT INTO t SELECT i, i FROM generate_series(1, 10) i;"
        "SELECT pgtrickle.create_stream_table('a', 'SELECT id, v FROM t', "
        "refresh_mode => 'DIFFERENTIAL');"
        "SELECT pgtrickle.create_stream_table('w', 'SELECT id, sum(v) OVER (ORDER BY id) AS s "
        "FROM t', refresh_mode => 'AUTO')");
    db->exec("UPDATE t SET v = v + 1 WHERE id = 3");
    refresh("a");
    EXPECT_MATCHES_QUERY(*db, "a");
    Result tl =
        db->exec("SELECT stream_table, action, initiated_by FROM pgtrickle.refresh_timeline()");
    ASSERT_EQ(tl.size(), 3u);
    EXPECT_EQ(tl.at(0, 0), "public.a");
    EXPECT_EQ(tl.at(0, 1), "DIFFERENTIAL");
    EXPECT_EQ(tl.at(1, 0), "public.w");
    EXPECT_EQ(tl.at(1, 2), "CREATE");
    EXPECT_EQ(count("SELECT * FROM pgtrickle.refresh_timeline(1)"), 1);
    Result a = db->exec("SELECT * FROM pgtrickle.explain_refresh_mode('a')");
    EXPECT_EQ(a.at(0, 0), "DIFFERENTIAL");
    EXPECT_EQ(a.at(0, 1), "DIFFERENTIAL");
    EXPECT_EQ(a.at(0, 3), "DIFFERENTIAL");
    Result w = db->exec("SELECT * FROM pgtrickle.explain_refresh_mode('w')");
    EXPECT_EQ(w.at(0, 0), "AUTO");
    EXPECT_EQ(w.at(0, 1), "FULL");
    EXPECT_NE(lower(w.at(0, 2)).find("window"), std::string::npos) << w.at(0, 2);
    EXPECT_EQ(w.at(0, 3), "FULL");
}

// A chain over two tables: the tree, rooted at the stream table nobody
// reads, lists each stream table's sources below it; dot and mermaid give
// one node per relation and one edge per dependency.
TEST_F(Monitoring, dependency_tree_as_text_dot_and_mermaid) {
    db->exec(
        "CREATE TABLE orders (id int PRIMARY KEY, cust int, amount int);"
        "CREATE TABLE customers (id int PRIMARY KEY, region text);"
        "SELECT pgtrickle.create_stream_table('by_cust', 'SELECT cust, sum(amount) AS total "
        "FROM orders GROUP BY cust', refresh_mode => 'DIFFERENTIAL');"
        "SELECT pgtrickle.create_stream_table('by_region', 'SELECT c.region, sum(b.total) AS "
        "total FROM by_cust b JOIN customers c ON c.id = b.cust GROUP BY c.region', "
        "refresh_mode => 'DIFFERENTIAL')");
    Result t = db->exec("SELECT tree_line, node_type, depth FROM pgtrickle.dependency_tree()");
    ASSERT_EQ(t.size(), 4u);
    EXPECT_EQ(t.at(0, 0), "public.by_region");
    EXPECT_EQ(t.at(0, 1), "STREAM_TABLE");
    EXPECT_EQ(t.at(1, 0), "├── public.by_cust");
    EXPECT_EQ(t.at(1, 1), "STREAM_TABLE");
    EXPECT_EQ(t.at(2, 0), "│   └── public.orders");
    EXPECT_EQ(t.at(2, 1), "TABLE");
    EXPECT_EQ(t.at(2, 2), "2");
    EXPECT_EQ(t.at(3, 0), "└── public.customers");
    const std::string dot =
        db->scalar("SELECT string_agg(tree_line, E'\\n') FROM pgtrickle.dependency_tree('dot')");
    EXPECT_EQ(dot.rfind("digraph pg_trickle {", 0), 0u) << dot;
    EXPECT_EQ(count("SELECT * FROM pgtrickle.dependency_tree('dot') WHERE tree_line LIKE '%->%'"),
              3);
    EXPECT_EQ(count("SELECT * FROM pgtrickle.dependency_tree('mermaid') WHERE tree_line LIKE "
                    "'%-->%'"),
              3);
    EXPECT_EQ(db->scalar("SELECT tree_line FROM pgtrickle.dependency_tree('mermaid') LIMIT 1"),
              "graph LR");
    // Every edge joins two declared nodes, named n<oid> (a dot in a
    // mermaid id would split it).
    auto dangling = [&](const std::string& format, const std::string& node_re,
                        const std::string& edge_re) {
        return db->scalar(
            "WITH l AS (SELECT tree_line FROM pgtrickle.dependency_tree($1)), "
            "nodes AS (SELECT (regexp_match(tree_line, $2))[1] AS id FROM l), "
            "ends AS (SELECT unnest(regexp_match(tree_line, $3)) AS id FROM l) "
            "SELECT count(*) FILTER (WHERE id !~ '^n[0-9]+$' OR id NOT IN (SELECT id FROM nodes "
            "WHERE id IS NOT NULL)) || '/' || count(*) FROM ends WHERE id IS NOT NULL",
            {format, node_re, edge_re});
    };
    EXPECT_EQ(dangling("dot", R"re(^  "([^"]+)" \[)re", R"re(^  "([^"]+)" -> "([^"]+)";$)re"),
              "0/6");
    EXPECT_EQ(dangling("mermaid", R"re(^  ([^ \[(]+)[\[(])re", R"re(^  ([^ ]+) --> ([^ ]+)$)re"),
              "0/6");
    EXPECT_EQ(db->error_of("SELECT * FROM pgtrickle.dependency_tree('svg')").sqlstate, "22023");
}

// The `query: |` blocks of monitoring/postgres_exporter.yml, in order.
std::vector<std::string> exporter_queries() {
    std::ifstream in(std::string(PGT_SOURCE_DIR) + "/monitoring/postgres_exporter.yml");
    std::vector<std::string> out;
    std::string line;
    bool inside = false;
    while (std::getline(in, line)) {
        if (line.find("query: |") != std::string::npos) {
            out.emplace_back();
            inside = true;
        } else if (inside && line.rfind("    ", 0) == 0) {
            out.back() += line.substr(4) + "\n";
        } else {
            inside = false;
        }
    }
    return out;
}

// Every exporter query runs as a member of pg_monitor (and nothing else)
// and returns the stream tables' rows, pending changes counted; any other
// role reads the views too, as pg_stat_* views, without the pending
// changes of sources it may not read.
TEST_F(Monitoring, every_exporter_query_runs_as_pg_monitor) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, v int);"
        "INSERT INTO t SELECT i, i FROM generate_series(1, 10) i;"
        "SELECT pgtrickle.create_stream_table('a', 'SELECT id, v FROM t', "
        "refresh_mode => 'DIFFERENTIAL');"
        "SELECT pgtrickle.create_stream_table('g', 'SELECT v % 2 AS p, count(*) AS n FROM t "
        "GROUP BY 1', refresh_mode => 'DIFFERENTIAL')");
    db->exec("UPDATE t SET v = v + 1 WHERE id < 4");
    refresh("a");
    EXPECT_MATCHES_QUERY(*db, "a");
    EXPECT_EQ(last("a").substr(0, 13), "DIFFERENTIAL/");
    db->exec(
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'exporter') THEN "
        "CREATE ROLE exporter; END IF; IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = "
        "'outsider') THEN CREATE ROLE outsider; END IF; END $$;"
        "GRANT pg_monitor TO exporter");
    const std::vector<std::string> queries = exporter_queries();
    ASSERT_EQ(queries.size(), 3u);
    db->exec("SET ROLE exporter");
    for (const std::string& q : queries) {
        SCOPED_TRACE(q);
        Result r = db->exec(q);
        EXPECT_GE(r.size(), 2u);  // both stream tables (refresh_stats: per action too)
    }
    EXPECT_EQ(db->scalar("SELECT staleness_seconds FROM pgtrickle.stream_tables WHERE name = "
                         "'public.a'"),
              "0");
    EXPECT_EQ(db->scalar("SELECT pending_rows FROM pgtrickle.change_buffers WHERE stream_table "
                         "= 'public.g'"),
              "3");
    EXPECT_EQ(db->scalar("SELECT refreshes FROM pgtrickle.refresh_stats WHERE name = 'public.a' "
                         "AND action = 'DIFFERENTIAL'"),
              "1");
    db->exec("RESET ROLE; SET ROLE outsider");
    EXPECT_EQ(count("SELECT * FROM pgtrickle.stream_tables"), 2);
    EXPECT_GE(count("SELECT * FROM pgtrickle.refresh_stats"), 2);
    EXPECT_EQ(count("SELECT * FROM pgtrickle.change_buffers"), 0)
        << "sources the role may not read are not listed";
    db->exec("RESET ROLE");
}

// pgtrickle.refresh_progress: while a refresh runs in another session, a
// pg_monitor member sees it (the stream table, who started it, its step);
// once it ends, the row is gone. Any role may read it, as pg_stat_progress_*.
TEST_F(Monitoring, refresh_progress_shows_a_running_refresh) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY);"
        "INSERT INTO t SELECT i FROM generate_series(1, 3) i;"
        "CREATE FUNCTION slow_id(i int) RETURNS int LANGUAGE sql AS "
        "'SELECT i FROM pg_sleep(0.5)';"
        "SELECT pgtrickle.create_stream_table('slow', 'SELECT slow_id(id) AS id FROM t', "
        "refresh_mode => 'FULL');"
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'exporter') THEN "
        "CREATE ROLE exporter; END IF; IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = "
        "'outsider') THEN CREATE ROLE outsider; END IF; END $$;"
        "GRANT pg_monitor TO exporter");
    EXPECT_EQ(count("SELECT * FROM pgtrickle.refresh_progress"), 0);
    std::string refresher_pid;
    std::thread refresher([&] {
        Conn other(conninfo());
        refresher_pid = other.scalar("SELECT pg_backend_pid()");
        other.exec("SELECT pgtrickle.refresh_stream_table('slow')");
    });
    db->exec("SET ROLE exporter");
    std::string seen;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (seen.find("FULL recompute") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
        Result r = db->exec(
            "SELECT pid || ' ' || name || ' ' || initiated_by || ' ' || step_name || ' ' || "
            "(step >= 2) || ' ' || (started_at <= step_started_at) || ' ' || (elapsed >= "
            "'0'::interval) FROM pgtrickle.refresh_progress");
        seen = r.size() == 1 ? r.at(0, 0) : "";
    }
    refresher.join();
    EXPECT_EQ(seen,
              refresher_pid + " public.slow MANUAL FULL recompute: rows to write true true true");
    EXPECT_EQ(count("SELECT * FROM pgtrickle.refresh_progress"), 0);
    db->exec("RESET ROLE; SET ROLE outsider");
    EXPECT_EQ(count("SELECT * FROM pgtrickle.refresh_progress"), 0);
    db->exec("RESET ROLE");
    EXPECT_MATCHES_QUERY(*db, "slow");
}

// pg_trickle.log_min_duration_refresh: a refresh that takes at least that
// long logs one line naming the stream table, what ran and the rows
// written; -1 (the default) logs none. Read here as the client receives
// LOG lines (client_min_messages = log).
TEST_F(Monitoring, log_min_duration_refresh_logs_slow_refreshes) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, v int);"
        "INSERT INTO t SELECT i, i FROM generate_series(1, 10) i;"
        "SELECT pgtrickle.create_stream_table('a', 'SELECT id, v FROM t', "
        "refresh_mode => 'DIFFERENTIAL')");
    auto logged = [&] {
        long n = 0;
        for (const std::string& m : db->notices) {
            n += m.find("pg_trickle: refresh of \"public.a\" took") != std::string::npos ? 1 : 0;
        }
        return n;
    };
    db->exec("SET client_min_messages = log");
    db->exec("UPDATE t SET v = v + 1 WHERE id = 1");
    refresh("a");
    EXPECT_EQ(logged(), 0);
    db->exec("SET pg_trickle.log_min_duration_refresh = 0");
    db->exec("UPDATE t SET v = v + 1 WHERE id = 2");
    refresh("a");
    EXPECT_EQ(logged(), 1);
    db->exec("SET pg_trickle.log_min_duration_refresh = '1h'");
    db->exec("UPDATE t SET v = v + 1 WHERE id = 3");
    refresh("a");
    EXPECT_EQ(logged(), 1);
    db->exec("RESET pg_trickle.log_min_duration_refresh; RESET client_min_messages");
    EXPECT_MATCHES_QUERY(*db, "a");
    EXPECT_EQ(last("a").substr(0, 13), "DIFFERENTIAL/");
    // Superuser only, as log_min_duration_statement.
    db->exec(
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'plain_user') THEN "
        "CREATE ROLE plain_user; END IF; END $$; SET ROLE plain_user");
    EXPECT_EQ(db->error_of("SET pg_trickle.log_min_duration_refresh = 0").sqlstate, "42501");
    db->exec("RESET ROLE");
}

}  // namespace
}  // namespace pgt::e2e
