// dbt-pgtrickle, the Rust pg_trickle's dbt adapter, against this extension:
// the statements its macros (dbt-pgtrickle/macros, the stream_table
// materialization) send, rendered as dbt renders them — Python booleans as
// True/False, the model's query between $pgtrickle$ quotes with relations
// as "database"."schema"."table", each call in its own BEGIN/COMMIT — for a
// first run, a run with nothing changed, a run with a status, a run with a
// changed query, --full-refresh, its health test and drop_all.
#include <string>

#include "fixture.hpp"

namespace pgt::e2e {
namespace {

class DbtAdapter : public DbTest {
protected:
    std::string qualified(const std::string& table) {
        return "\"" + db->scalar("SELECT current_database()") + "\".\"public\".\"" + table + "\"";
    }

    // The model: compiled SQL of `select ... from {{ ref('orders') }} ...`.
    std::string model(const std::string& filter) {
        return "select customer_id, sum(amount) as total, count(*) as n\nfrom " +
               qualified("orders") + "\nwhere " + filter + "\ngroup by customer_id";
    }

    // pgtrickle_has_create_or_replace
    bool has_create_or_replace() {
        return db->scalar(
                   "SELECT EXISTS(\n          SELECT 1 FROM pg_proc p\n          JOIN "
                   "pg_namespace n ON n.oid = p.pronamespace\n          WHERE n.nspname = "
                   "'pgtrickle'\n            AND p.proname = 'create_or_replace_stream_table'\n  "
                   "      )") == "t";
    }

    // pgtrickle_stream_table_exists
    bool exists() {
        return db->scalar(
                   "SELECT EXISTS(\n        SELECT 1 FROM pgtrickle.pgt_stream_tables\n        "
                   "WHERE pgt_schema = 'public'\n          AND pgt_name = 'order_totals'\n      ) "
                   "AS st_exists") == "t";
    }

    // The arguments after initialize, as both create macros render them for
    // a model that sets none of them.
    static std::string rest_of_arguments() {
        return "      NULL,\n      NULL,\n      NULL,\n      False,\n      False,\n      NULL,\n"
               "      NULL,\n      NULL,\n      NULL,\n      False,\n      NULL\n    );\n";
    }

    // pgtrickle_create_or_replace_stream_table / pgtrickle_create_stream_table
    void create(const char* function, const std::string& query) {
        db->exec("\n    BEGIN;\n    SELECT pgtrickle." + std::string(function) +
                 "(\n      'public.order_totals',\n      $pgtrickle$" + query +
                 "$pgtrickle$,\n      '1m',\n      'AUTO',\n      True,\n" + rest_of_arguments() +
                 "    COMMIT;\n  ");
        db->exec("\n    SELECT 1\n  ");  // the materialization's 'main' statement
    }

    // pgtrickle_get_stream_table_info: the status it reads.
    std::string info_status() {
        return db
            ->exec(
                "SELECT pgt_name, pgt_schema, defining_query, schedule, refresh_mode, status,\n"
                "             requested_cdc_mode,\n             COALESCE(fuse_mode, 'off') AS "
                "fuse_mode,\n             fuse_ceiling,\n             fuse_sensitivity,\n         "
                "    st_partition_key\n      FROM pgtrickle.pgt_stream_tables\n      WHERE "
                "pgt_schema = 'public'\n        AND pgt_name = 'order_totals'")
            .at(0, 5);
    }

    // pgtrickle_alter_stream_table with a status and the catalog's refresh
    // mode (DIFFERENTIAL) differing from the model's (AUTO).
    void alter_status(const std::string& status) {
        db->exec(
            "\n        BEGIN;\n        SELECT pgtrickle.alter_stream_table(\n          "
            "'public.order_totals',\n          query => NULL,\n          schedule => NULL,\n   "
            "       refresh_mode => 'AUTO',\n          status => '" +
            status +
            "',\n          cdc_mode => NULL,\n          fuse => NULL,\n          fuse_ceiling "
            "=> NULL,\n          fuse_sensitivity => NULL,\n          append_only => False,\n   "
            "       max_differential_joins => NULL,\n          max_delta_fraction => NULL\n     "
            "   );\n        COMMIT;\n      ");
    }

    // The generic test stream_table_healthy: a row when it is not healthy.
    long unhealthy() {
        return count(
            "SELECT\n    pgt_name,\n    pgt_schema,\n    status,\n    EXTRACT(EPOCH FROM "
            "staleness)::int AS staleness_seconds,\n    consecutive_errors,\n    "
            "last_refresh_at,\n    is_populated,\n    CASE\n      WHEN status = 'PAUSED' THEN "
            "'paused'\n      WHEN consecutive_errors > 0 THEN 'erroring'\n      WHEN stale = "
            "true THEN 'stale'\n      WHEN staleness IS NOT NULL\n           AND EXTRACT(EPOCH "
            "FROM staleness) > 300\n      THEN 'stale'\n      ELSE 'healthy'\n    END AS "
            "health_status\n  FROM pgtrickle.pg_stat_stream_tables\n  WHERE pgt_schema = "
            "'public'\n    AND pgt_name = 'order_totals'\n    AND (\n      status = 'PAUSED'\n   "
            "   OR consecutive_errors > 0\n      OR stale = true\n      OR (staleness IS NOT NULL "
            "AND EXTRACT(EPOCH FROM staleness) > 300)\n    )");
    }

    std::string history_rows() {
        return db->scalar("SELECT count(*) FROM pgtrickle.pgt_refresh_history");
    }
    std::string storage() { return db->scalar("SELECT 'public.order_totals'::regclass::oid"); }
};

TEST_F(DbtAdapter, runs_reruns_alters_rebuilds_and_drops_a_model) {
    db->exec(
        "CREATE TABLE orders (id int PRIMARY KEY, customer_id int, amount numeric);"
        "INSERT INTO orders SELECT i, i % 7, i * 1.5 FROM generate_series(1, 200) i");
    // First run: the fast path (create_or_replace exists).
    ASSERT_TRUE(has_create_or_replace());
    ASSERT_FALSE(exists());
    create("create_or_replace_stream_table", model("amount > 10"));
    ASSERT_TRUE(exists());
    EXPECT_EQ(modes("order_totals"), "AUTO/DIFFERENTIAL");
    EXPECT_EQ(last_action("order_totals"), "FULL");
    EXPECT_MATCHES_QUERY(*db, "order_totals");
    EXPECT_EQ(unhealthy(), 0);

    // Changes reach it DIFFERENTIAL (pgtrickle_refresh).
    db->exec(
        "UPDATE orders SET amount = amount + 1 WHERE id % 5 = 0; DELETE FROM orders WHERE id < 8");
    db->exec(
        "\n    BEGIN;\n    SELECT pgtrickle.refresh_stream_table('public.order_totals');\n    "
        "COMMIT;\n  ");
    EXPECT_EQ(last_action("order_totals"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "order_totals");

    // A run with nothing changed does nothing.
    const std::string rows = history_rows(), oid = storage(),
                      stamp = db->scalar("SELECT data_timestamp FROM pgtrickle.pgt_stream_tables");
    create("create_or_replace_stream_table", model("amount > 10"));
    EXPECT_EQ(history_rows(), rows);
    EXPECT_EQ(storage(), oid);
    EXPECT_EQ(db->scalar("SELECT data_timestamp FROM pgtrickle.pgt_stream_tables"), stamp);

    // A model with `status: PAUSED`: the materialization reads the catalog
    // and alters; the mode it passes is the one requested already, so no
    // refresh runs. Then `status: ACTIVE` again.
    create("create_or_replace_stream_table", model("amount > 10"));
    EXPECT_EQ(info_status(), "ACTIVE");
    alter_status("PAUSED");
    EXPECT_EQ(info_status(), "SUSPENDED");
    EXPECT_EQ(history_rows(), rows);
    EXPECT_EQ(count("SELECT 1 FROM pgtrickle.pg_stat_stream_tables WHERE status = 'SUSPENDED'"), 1);
    alter_status("ACTIVE");
    EXPECT_EQ(info_status(), "ACTIVE");
    EXPECT_EQ(history_rows(), rows);
    EXPECT_EQ(modes("order_totals"), "AUTO/DIFFERENTIAL");

    // A changed query: altered in place (same columns), recomputed once.
    create("create_or_replace_stream_table", model("amount > 100"));
    EXPECT_EQ(storage(), oid);
    EXPECT_EQ(std::stol(history_rows()), std::stol(rows) + 1);
    EXPECT_EQ(last_action("order_totals"), "FULL");
    EXPECT_MATCHES_QUERY(*db, "order_totals");
    db->exec("INSERT INTO orders SELECT i, i % 9, i FROM generate_series(201, 203) i");
    refresh("order_totals");
    EXPECT_EQ(last_action("order_totals"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "order_totals");

    // --full-refresh: the legacy path drops and creates.
    ASSERT_TRUE(exists());
    db->exec(
        "\n    BEGIN;\n    SELECT pgtrickle.drop_stream_table('public.order_totals');\n    "
        "COMMIT;\n  ");
    ASSERT_FALSE(exists());
    create("create_stream_table", model("amount > 100"));
    EXPECT_EQ(modes("order_totals"), "AUTO/DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "order_totals");
    EXPECT_EQ(unhealthy(), 0);

    // drop_all_stream_tables
    db->exec(
        "\n    BEGIN;\n    SELECT pgtrickle.drop_stream_table('public.order_totals');\n    "
        "COMMIT;\n  ");
    EXPECT_FALSE(exists());
    EXPECT_EQ(count("SELECT 1 FROM pg_class WHERE relname = 'order_totals'"), 0);
}

// The Rust API's other arguments: each fails with 0A000 naming it unless
// it has its default, and nothing is created or changed; cdc_mode 'auto'
// and 'trigger' are kept (export_definition repeats them), 'wal' refused.
TEST_F(DbtAdapter, other_arguments_of_the_rust_api_take_effect_or_are_refused) {
    db->exec("CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 2)");
    const char* refused[] = {"partition_by => 'id'",
                             "append_only => true",
                             "temporal => true",
                             "storage_backend => 'citus'",
                             "sink => 'x'",
                             "max_delta_fraction => 0.5",
                             "diamond_consistency => 'none'",
                             "output_distribution_column => 'id'",
                             "cdc_mode => 'wal'"};
    for (const char* arg : refused) {
        for (const char* f : {"create_stream_table", "create_or_replace_stream_table"}) {
            if (std::string(arg).rfind("sink", 0) == 0 &&
                std::string(f) == "create_or_replace_stream_table") {
                continue;  // not an argument of create_or_replace, as in the Rust API
            }
            const auto e = db->error_of("SELECT pgtrickle." + std::string(f) +
                                        "('st', 'SELECT id, v FROM t', " + arg + ")");
            EXPECT_EQ(e.sqlstate, "0A000") << f << " " << arg;
            EXPECT_NE(e.message.find(std::string(arg).substr(0, std::string(arg).find(' '))),
                      std::string::npos)
                << e.message;
        }
    }
    EXPECT_EQ(count("SELECT 1 FROM pgtrickle.pgt_stream_tables"), 0);
    EXPECT_EQ(count("SELECT 1 FROM pg_class WHERE relname = 'st'"), 0);
    db->exec(
        "SELECT pgtrickle.create_stream_table('st', 'SELECT id, v FROM t', storage_backend => "
        "'heap', cdc_mode => 'Auto', append_only => false)");
    EXPECT_EQ(db->scalar("SELECT requested_cdc_mode FROM pgtrickle.pgt_stream_tables"), "auto");
    EXPECT_NE(db->scalar("SELECT pgtrickle.export_definition('st')").find("cdc_mode => 'auto'"),
              std::string::npos);
    const std::string before = state();
    EXPECT_EQ(db->error_of("SELECT pgtrickle.alter_stream_table('st', fuse => 'on')").sqlstate,
              "0A000");
    EXPECT_EQ(db->error_of("SELECT pgtrickle.alter_stream_table('st', schedule => '5m', "
                           "tier => 'hot')")
                  .sqlstate,
              "0A000");
    EXPECT_EQ(state(), before);
    EXPECT_EQ(db->scalar("SELECT schedule FROM pgtrickle.pgt_stream_tables"), "calculated");
    db->exec("SELECT pgtrickle.alter_stream_table('st', cdc_mode => 'trigger', fuse => 'off')");
    EXPECT_EQ(db->scalar("SELECT requested_cdc_mode FROM pgtrickle.pgt_stream_tables"), "trigger");
    db->exec("UPDATE t SET v = 3");
    refresh("st");
    EXPECT_MATCHES_QUERY(*db, "st");
}

}  // namespace
}  // namespace pgt::e2e
