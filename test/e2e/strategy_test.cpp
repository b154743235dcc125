// The refresh mode, row identity and delta strategy each query shape gets,
// pinned: the engine's moves onto the operator tree must keep them (a
// change here is a change of behaviour to explain, not to re-pin). Each
// shape is then changed and refreshed, and must equal its query.
#include <algorithm>
#include <string>
#include <vector>

#include "fixture.hpp"

namespace pgt::e2e {
namespace {

struct Shape {
    const char* name;
    const char* query;
    // DIFFERENTIAL: created so (and refreshed so); FULL: what AUTO resolves to.
    const char* mode;
    const char* identity;  // explain_st's row_identity
    const char* strategy;  // explain_st's strategy ("" for none: FULL)
};

const std::vector<Shape> kShapes = {
    {"scan", "SELECT id, val FROM t WHERE val > 0", "DIFFERENTIAL", "scan_key(id)", "scan"},
    {"scan_keyless", "SELECT grp, val FROM t", "DIFFERENTIAL", "keyless_row(grp, val)", "scan"},
    {"agg", "SELECT grp, sum(val) AS s, count(*) AS n FROM t GROUP BY grp", "DIFFERENTIAL",
     "group_key(grp)", "algebraic_group"},
    {"agg_scalar", "SELECT count(*) AS n, sum(val) AS s FROM t", "DIFFERENTIAL", "synthetic()",
     "algebraic_group"},
    {"agg_having", "SELECT grp, max(note) AS m FROM t GROUP BY grp HAVING count(*) > 1",
     "DIFFERENTIAL", "group_key(grp)", "group_rescan"},
    {"distinct_rows", "SELECT DISTINCT grp FROM t", "DIFFERENTIAL", "group_key(grp)",
     "group_rescan"},
    {"rollup_sets", "SELECT grp, note, count(*) AS n FROM t GROUP BY ROLLUP (grp, note)", "FULL",
     "group_key(grp, note, __pgt_gset)", ""},
    {"grouping_sets",
     "SELECT grp, note, count(*) AS n FROM t GROUP BY GROUPING SETS ((grp, note), (grp))",
     "DIFFERENTIAL", "group_key(grp, note, __pgt_gset)", "grouping_sets_rescan"},
    // t.id stays unique through a join on d's primary key.
    {"join_keys", "SELECT t.id, d.grp, d.name FROM t JOIN d ON d.grp = t.grp", "DIFFERENTIAL",
     "scan_key(id)", "join_region"},
    {"join_plain", "SELECT t.id, d.name, t.val FROM t JOIN d ON d.grp = t.grp", "DIFFERENTIAL",
     "scan_key(id)", "join_region"},
    {"join_comma", "SELECT t.id, d.name FROM t, d WHERE d.grp = t.grp AND t.val > 3",
     "DIFFERENTIAL", "scan_key(id)", "join_region"},
    {"join_not_on_a_key", "SELECT t.id, d.grp, d.name FROM t JOIN d ON d.name = t.note",
     "DIFFERENTIAL", "keyless_row(id, grp, name)", "join_rescan"},
    {"join_key_unselected", "SELECT d.name, t.val FROM t JOIN d ON d.grp = t.grp", "DIFFERENTIAL",
     "keyless_row(name, val)", "join_region"},
    {"join_agg", "SELECT d.name, sum(t.val) AS s FROM t JOIN d ON d.grp = t.grp GROUP BY d.name",
     "DIFFERENTIAL", "group_key(name)", "algebraic_join"},
    // Grouped by a derived table's aggregate: its change as signed rows.
    {"agg_of_agg",
     "SELECT g.n, count(*) AS k FROM (SELECT d.grp, count(t.id) AS n FROM d LEFT JOIN t ON t.grp "
     "= d.grp GROUP BY d.grp) g GROUP BY g.n",
     "DIFFERENTIAL", "group_key(n)", "algebraic_derived"},
    {"left_join", "SELECT t.id, d.name FROM t LEFT JOIN d ON d.grp = t.grp", "DIFFERENTIAL",
     "scan_key(id)", "join_region"},
    {"semi_join", "SELECT id, val FROM t WHERE EXISTS (SELECT 1 FROM d WHERE d.grp = t.grp)",
     "DIFFERENTIAL", "scan_key(id)", "join_region"},
    {"union_all", "SELECT id FROM t UNION ALL SELECT grp FROM d", "DIFFERENTIAL", "keyless_row(id)",
     "union_all"},
    {"union_agg",
     "SELECT grp, count(*) AS n, sum(val) AS s FROM (SELECT grp, val FROM t UNION ALL SELECT grp, "
     "1 FROM d) u GROUP BY grp",
     "DIFFERENTIAL", "group_key(grp)", "union_all"},
    {"set_union", "SELECT id FROM t UNION SELECT grp FROM d", "FULL", "keyless_row(id)", ""},
    {"window_fn", "SELECT id, row_number() OVER (ORDER BY id) AS r FROM t", "FULL", "scan_key(id)",
     ""},
};

class Strategy : public DbTest {
protected:
    std::string explain(const std::string& st, const std::string& property) {
        return db->scalar(
            "SELECT coalesce(value, '') FROM pgtrickle.explain_st($1) WHERE property = $2",
            {st, property});
    }
};

TEST_F(Strategy, every_shape_keeps_its_mode_identity_and_strategy) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, grp int NOT NULL, val numeric, note text);"
        "CREATE TABLE d (grp int PRIMARY KEY, name text);"
        "INSERT INTO t SELECT i, i % 7, i * 1.5, 'n' || (i % 3) FROM generate_series(1, 200) i;"
        "INSERT INTO d SELECT g, 'd' || g FROM generate_series(0, 5) g;"
        "ANALYZE t; ANALYZE d;");
    for (const Shape& s : kShapes) {
        SCOPED_TRACE(s.name);
        // The dry run says what creating it then does, and creates nothing.
        const std::string requested = *s.strategy ? "DIFFERENTIAL" : "AUTO";
        const std::string before = state();
        auto validated = [&](const char* property) {
            return db->scalar(
                "SELECT coalesce(value, '') FROM pgtrickle.validate_query($1, $2) WHERE property "
                "= $3",
                {s.query, requested, property});
        };
        EXPECT_EQ(validated("refresh_mode"), s.mode);
        EXPECT_EQ(validated("row_identity"), s.identity);
        EXPECT_EQ(validated("strategy"), s.strategy);
        EXPECT_EQ(state(), before);
        try {
            db->exec("SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => $3)",
                     {s.name, s.query, requested});
        } catch (const SqlError& e) {
            ADD_FAILURE() << s.name << ": " << e.what();
            continue;
        }
        EXPECT_EQ(modes(s.name), std::string(*s.strategy ? "DIFFERENTIAL/" : "AUTO/") + s.mode);
        EXPECT_EQ(explain(s.name, "row_identity"), s.identity);
        EXPECT_EQ(explain(s.name, "strategy"), s.strategy);
        std::string tree = explain(s.name, "operator_tree");
        std::string root_rule = *s.strategy ? s.strategy : "recompute (FULL)";
        EXPECT_NE(tree.find("rule: " + root_rule), std::string::npos) << tree;
        EXPECT_MATCHES_QUERY(*db, s.name);
    }
    db->exec(
        "UPDATE t SET val = val + 1, grp = (grp + 1) % 7 WHERE id % 5 = 0;"
        "DELETE FROM t WHERE id % 11 = 0;"
        "INSERT INTO t SELECT i, i % 6, i, 'n9' FROM generate_series(201, 230) i;"
        "UPDATE d SET name = name || 'x' WHERE grp = 2;");
    for (const Shape& s : kShapes) {
        SCOPED_TRACE(s.name);
        refresh(s.name);
        EXPECT_EQ(last_action(s.name), std::string(s.mode));
        EXPECT_MATCHES_QUERY(*db, s.name);
    }
}

TEST_F(Strategy, explain_shows_the_operator_tree_with_identity_and_rule_per_node) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, grp int NOT NULL, val numeric);"
        "INSERT INTO t VALUES (1, 1, 10), (2, 1, 20);");
    db->exec(
        "SELECT pgtrickle.create_stream_table('st', "
        "'SELECT id, val * 2 AS v FROM t WHERE val > 5', refresh_mode => 'DIFFERENTIAL')");
    std::string buffer = explain("st", "change_buffers");
    EXPECT_EQ(explain("st", "operator_tree"),
              "Project  [SCAN_KEY (id)]  rule: scan (apply: the last event of each key upserts "
              "or deletes its row, found by one probe)\n"
              "  Filter (val > (5)::numeric)  [SCAN_KEY (id)]  rule: evaluated on the last "
              "after-image of each key; conjuncts that cannot raise also on every image first\n"
              "    Scan public.t  [SCAN_KEY (id)]  rule: delta: change images (before -1, after "
              "+1) from " +
                  buffer);
    EXPECT_MATCHES_QUERY(*db, "st");
}

// The operator tree shows the delta plan's branches under the join whose
// change they compute: how each reads every table, the sign where their
// rows are summed, and how each reads an outer join.
TEST_F(Strategy, explain_lists_a_joins_branches_with_their_reads_and_signs) {
    db->exec(
        "CREATE TABLE a (id int PRIMARY KEY, g int);"
        "CREATE TABLE b (id int PRIMARY KEY, a_id int, v int);"
        "INSERT INTO a SELECT i, i % 3 FROM generate_series(1, 20) i;"
        "INSERT INTO b SELECT i, i % 20 + 1, i FROM generate_series(1, 60) i;");
    db->exec(
        "SELECT pgtrickle.create_stream_table('sums', 'SELECT a.g, sum(b.v) AS s FROM a JOIN b "
        "ON b.a_id = a.id GROUP BY a.g', refresh_mode => 'DIFFERENTIAL')");
    db->exec(
        "SELECT pgtrickle.create_stream_table('rows', 'SELECT a.id, b.v FROM a LEFT JOIN b ON "
        "b.a_id = a.id', refresh_mode => 'DIFFERENTIAL')");
    EXPECT_EQ(explain("sums", "strategy"), "algebraic_join");
    const std::string sums = explain("sums", "operator_tree");
    EXPECT_NE(
        sums.find("\n        - branch 1 (+1): public.a signed images, public.b now\n"
                  "        - branch 2 (+1): public.a now, public.b signed images\n"
                  "        - branch 3 (-1): public.a signed images, public.b signed images\n"),
        std::string::npos)
        << sums;
    EXPECT_EQ(explain("rows", "strategy"), "join_region");
    const std::string rows = explain("rows", "operator_tree");
    EXPECT_NE(rows.find("- branch 4: public.a now, public.b images; outer joins: padded\n"),
              std::string::npos)
        << rows;
    db->exec(
        "UPDATE b SET a_id = a_id % 7 + 1, v = v + 1 WHERE id % 4 = 0; DELETE FROM a WHERE id = "
        "3;");
    for (const char* st : {"sums", "rows"}) {
        refresh(st);
        EXPECT_EQ(last_action(st), "DIFFERENTIAL");
        EXPECT_MATCHES_QUERY(*db, st);
    }
}

// explain_st prints no line wider than 200 characters: a literal wider
// than that is printed as SQL continues a literal over lines, and the
// printed statement runs as the stored one does.
TEST_F(Strategy, explain_prints_the_plan_as_a_tree_of_lines_that_still_run) {
    std::string wide;
    for (int i = 0; i < 60; i++) {
        wide += "it''s " + std::to_string(i) + " ";
    }
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, grp int NOT NULL, note text);"
        "INSERT INTO t SELECT g, g % 3, CASE WHEN g % 2 = 0 THEN '" +
        wide + "' ELSE 'x' END FROM generate_series(1, 20) g;");
    db->exec("SELECT pgtrickle.create_stream_table('st', $1, refresh_mode => 'DIFFERENTIAL')",
             {"SELECT grp, count(*) AS n FROM t WHERE note <> '" + wide + "' GROUP BY grp"});
    EXPECT_EQ(explain("st", "strategy"), "algebraic_group");
    const std::string plan = explain("st", "delta_plan");
    EXPECT_EQ(plan.rfind("refresh: the steps below, in order\n", 0), 0U) << plan;
    std::size_t widest = 0;
    for (const char* prop : {"operator_tree", "delta_plan"}) {
        widest = std::max(widest, static_cast<std::size_t>(std::stoul(db->scalar(
                                      "SELECT max(pg_catalog.length(l)) FROM "
                                      "pgtrickle.explain_st('st') e, "
                                      "pg_catalog.regexp_split_to_table(e.value, E'\\n') l WHERE "
                                      "e.property = $1",
                                      {prop}))));
    }
    EXPECT_LE(widest, 200U);
    // The last step, the FULL refresh query, printed under "`- ": its lines
    // less the 5 characters of the tree run and give the query's rows.
    const std::string head = "`- FULL refresh query (fills the hidden aggregate state)\n";
    const std::size_t at = plan.find(head);
    ASSERT_NE(at, std::string::npos) << plan;
    std::string printed;
    for (std::size_t from = at + head.size(); from < plan.size();) {
        std::size_t nl = plan.find('\n', from);
        std::size_t to = nl == std::string::npos ? plan.size() : nl;
        EXPECT_EQ(plan.compare(from, 5, "     "), 0) << plan.substr(from, to - from);
        printed += plan.substr(from + 5, to - from - 5) + "\n";
        from = to + 1;
    }
    EXPECT_NE(printed.find("'\n"), std::string::npos) << "the literal is continued: " << printed;
    EXPECT_EQ(
        db->scalar("SELECT string_agg(grp || ':' || n, ',' ORDER BY grp) FROM (" + printed + ") q"),
        db->scalar("SELECT string_agg(grp || ':' || n, ',' ORDER BY grp) FROM st"));
    EXPECT_EQ(db->scalar("SELECT sum(n) FROM st"), "10");
}

TEST_F(Strategy, validate_query_says_why_and_refuses_as_create_would) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, grp int NOT NULL, val numeric);"
        "CREATE TABLE d (grp int PRIMARY KEY, name text);");
    const std::string before = state();
    Result r = db->exec(
        "SELECT property, coalesce(value, '') FROM pgtrickle.validate_query('SELECT t.id, "
        "d.name FROM t JOIN d ON d.grp = t.grp') ORDER BY property");
    std::string all;
    for (size_t i = 0; i < r.size(); i++) {
        all += r.at(i, 0) + "=" + r.at(i, 1) + "\n";
    }
    EXPECT_NE(all.find("refresh_mode=DIFFERENTIAL\n"), std::string::npos) << all;
    EXPECT_NE(all.find("strategy=join_region\n"), std::string::npos) << all;
    EXPECT_NE(all.find("index=CREATE INDEX ON public.t (grp);"), std::string::npos) << all;
    EXPECT_NE(all.find("rule: delta: change images (before -1, after +1) from its change buffer"),
              std::string::npos)
        << all;
    // AUTO says why it recomputes; DIFFERENTIAL is refused as by create.
    EXPECT_NE(db->scalar("SELECT value FROM pgtrickle.validate_query('SELECT id FROM t UNION "
                         "SELECT grp FROM d') WHERE property = 'reason'")
                  .find("UNION"),
              std::string::npos);
    EXPECT_EQ(db->error_of("SELECT * FROM pgtrickle.validate_query('SELECT id FROM t UNION "
                           "SELECT grp FROM d', 'DIFFERENTIAL')")
                  .sqlstate,
              "0A000");
    EXPECT_EQ(
        db->error_of("SELECT * FROM pgtrickle.validate_query('SELECT FROM nowhere')").sqlstate,
        "42P01");
    EXPECT_EQ(db->error_of("SELECT * FROM pgtrickle.validate_query('SELEC 1')").sqlstate, "42601");
    EXPECT_EQ(state(), before);
}

// explain_st(name, with_analyze => true): the next refresh's statements run under EXPLAIN
// ANALYZE in a subtransaction that is rolled back.
TEST_F(Strategy, explain_analyze_runs_the_next_refresh_and_applies_nothing) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, grp int NOT NULL, val numeric);"
        "CREATE TABLE d (grp int PRIMARY KEY, name text);"
        "INSERT INTO t SELECT i, i % 3, i FROM generate_series(1, 50) i;"
        "INSERT INTO d VALUES (0, 'a'), (1, 'b'), (2, 'c');");
    db->exec(
        "SELECT pgtrickle.create_stream_table('st', 'SELECT t.id, d.name, t.val FROM t JOIN d ON "
        "d.grp = t.grp', refresh_mode => 'DIFFERENTIAL')");
    const std::string analyzed =
        "SELECT property, value FROM pgtrickle.explain_st('st', with_analyze => true) WHERE "
        "property LIKE "
        "'analyze:%' ORDER BY property";
    Result idle = db->exec(analyzed);
    ASSERT_EQ(idle.size(), 1u);
    EXPECT_EQ(idle.at(0, 1), "NO_DATA");
    db->exec("UPDATE t SET val = val + 1 WHERE id <= 3; UPDATE d SET name = 'z' WHERE grp = 2");
    const std::string history = db->scalar("SELECT count(*) FROM pgtrickle.pgt_refresh_history");
    Result plans = db->exec(analyzed);
    bool apply = false, images = false;
    for (size_t i = 0; i < plans.size(); i++) {
        const std::string what = plans.at(i, 0), plan = plans.at(i, 1);
        if (what == "analyze: refresh") {
            EXPECT_EQ(plan, "DIFFERENTIAL");
            continue;
        }
        EXPECT_NE(plan.find("actual time="), std::string::npos) << what << ":\n" << plan;
        apply = apply || what == "analyze: apply";
        images = images || what.rfind("analyze: change images of source", 0) == 0;
    }
    EXPECT_TRUE(apply);
    EXPECT_TRUE(images);
    // Nothing of it stays: the stream table still has the old rows, no
    // history was kept, and the next refresh applies the change.
    EXPECT_FALSE(matches_query(*db, "st"));
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_refresh_history"), history);
    refresh("st");
    EXPECT_EQ(last_action("st"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "st");
    // It runs the refresh as the owner: only the owner may.
    db->exec("CREATE ROLE pgt_explain_other; GRANT SELECT ON st TO pgt_explain_other");
    db->exec("SET ROLE pgt_explain_other");
    EXPECT_EQ(db->error_of("SELECT * FROM pgtrickle.explain_st('st', true)").sqlstate, "42501");
    EXPECT_EQ(db->scalar("SELECT count(*) > 0 FROM pgtrickle.explain_st('st')"), "t");
    db->exec("RESET ROLE");
}

// A FULL refresh of a keyed stream table finds the rows to write with a
// plain query, which PostgreSQL runs in parallel when it would run the
// query so (here made cheap to start: a small table), as REFRESH
// MATERIALIZED VIEW's; a second statement writes them. A first population
// and a keyless one go the same way.
TEST_F(Strategy, full_refresh_finds_the_rows_to_write_with_a_parallel_plan) {
    db->exec(
        "CREATE TABLE t (id int PRIMARY KEY, grp int NOT NULL, val int);"
        "INSERT INTO t SELECT i, i % 7, i FROM generate_series(1, 5000) i; ANALYZE t");
    db->exec(
        "SELECT pgtrickle.create_stream_table('st', 'SELECT grp, sum(val) AS s, count(*) AS n "
        "FROM t GROUP BY grp', refresh_mode => 'FULL')");
    db->exec("UPDATE t SET val = val + 1 WHERE id % 3 = 0; DELETE FROM t WHERE grp = 6");
    db->exec(
        "SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; "
        "SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2");
    Result plans = db->exec(
        "SELECT property, value FROM pgtrickle.explain_st('st', with_analyze => true) WHERE "
        "property LIKE 'analyze:%' ORDER BY property");
    std::string rows_plan, apply_plan;
    for (size_t i = 0; i < plans.size(); i++) {
        if (plans.at(i, 0) == "analyze: FULL recompute: rows to write") {
            rows_plan = plans.at(i, 1);
        } else if (plans.at(i, 0) == "analyze: FULL apply") {
            apply_plan = plans.at(i, 1);
        }
    }
    // Planned, not launched: how many workers start depends on what else
    // the server runs.
    EXPECT_NE(rows_plan.find("Workers Planned: "), std::string::npos) << rows_plan;
    EXPECT_NE(apply_plan.find("Named Tuplestore Scan"), std::string::npos) << apply_plan;
    refresh("st");
    EXPECT_EQ(last_action("st"), "FULL");
    EXPECT_MATCHES_QUERY(*db, "st");
    // The first population of a new one, and a keyless one, the same way.
    db->exec(
        "SELECT pgtrickle.create_stream_table('first', 'SELECT grp, max(val) AS m FROM t GROUP "
        "BY grp', refresh_mode => 'FULL')");
    db->exec(
        "SELECT pgtrickle.create_stream_table('keyless', 'SELECT val % 5 AS r FROM t', "
        "refresh_mode => 'FULL')");
    db->exec("UPDATE t SET val = val * 2 WHERE id % 5 = 1");
    for (const char* st : {"first", "keyless"}) {
        refresh(st);
        EXPECT_EQ(last_action(st), "FULL") << st;
        EXPECT_MATCHES_QUERY(*db, st);
    }
    db->exec("RESET ALL");
}

}  // namespace
}  // namespace pgt::e2e
