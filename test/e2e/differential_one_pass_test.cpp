// Single-table delta statements that read both images of a buffer row in
// one scan of the change buffer (ir::ScanFilterProject::one_pass), chosen
// at creation when the planner expects the WHERE's prefilter to keep at
// most a tenth of the table's rows.
// Invariant: after every refresh each stream table equals its query,
// whichever form its statement has.
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "fixture.hpp"
#include "property_gen.hpp"

namespace pgt::e2e {
namespace {

class DifferentialOnePass : public DbTest {
protected:
    void SetUp() override {
        DbTest::SetUp();
        // op.z holds equal numerics of different scales (1.5 and 1.50) and
        // NULLs; v is spread evenly over 0..999, so `v < 40` keeps 4%.
        db->exec(
            "CREATE TABLE op (id int PRIMARY KEY, g int, v int, z numeric, t text);"
            "INSERT INTO op SELECT i, i % 7, (i * 37) % 1000, (ARRAY[1.5, 1.50, 2, NULL])[i % 4 + "
            "1], 'a' || i % 5 FROM generate_series(1, 5000) i;"
            "ANALYZE op;"
            // new rows and moved keys draw from ranges of their own
            "CREATE SEQUENCE op_new START 10000; CREATE SEQUENCE op_moved START 1000000");
    }

    void create(const std::string& name, const std::string& query) {
        db->exec("SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => 'DIFFERENTIAL')",
                 {name, query});
        EXPECT_MATCHES_QUERY(*db, name);
    }

    // Whether st's delta statements split buffer rows in one scan.
    bool one_pass(const std::string& st) {
        return delta_program(st).find("LATERAL (VALUES (-1") != std::string::npos;
    }

    ::testing::AssertionResult refreshed_ok(const std::string& st) {
        refresh(st);
        if (last_action(st) == "FULL") {
            return ::testing::AssertionFailure() << st << " refreshed " << last_action(st);
        }
        return matches_query(*db, st);
    }
};

// Every single-table statement form: algebraic groups, a scalar aggregate,
// a group rescan (MIN/MAX; over a numeric, of a fixed scale: which of 1.5
// and 1.50 max() returns is not defined), plain rows, DISTINCT, the arms of
// a UNION ALL; and a filter that keeps most rows.
const std::vector<std::pair<std::string, std::string>> kQueries = {
    {"op_sum", "SELECT g, sum(z) AS s, count(*) AS n, avg(v) AS a FROM op WHERE v < 40 GROUP BY g"},
    {"op_total", "SELECT sum(v) AS s, count(z) AS n FROM op WHERE v < 30 AND t <> 'a1'"},
    {"op_minmax",
     "SELECT g, min(t) AS lo, max(v) AS hi, max(round(z, 2)) AS hz FROM op WHERE v < 40 GROUP BY "
     "g"},
    {"op_rows", "SELECT id, v, z, t FROM op WHERE v >= 960"},
    {"op_distinct", "SELECT DISTINCT g, z::text AS zt FROM op WHERE v < 50"},
    // a filter an all-NULL image (the old side of an insert) would pass
    {"op_nulls", "SELECT id, z FROM op WHERE v IS NULL OR v < 30"},
    {"op_wide", "SELECT g, count(*) AS n, sum(z) AS s FROM op WHERE v >= 100 GROUP BY g"},
    // a UNION ALL: each arm decides by its own filter (the last keeps most)
    {"op_union",
     "SELECT id, v FROM op WHERE v >= 960 UNION ALL SELECT id, z::int FROM op WHERE v < 30 UNION "
     "ALL SELECT id, v FROM op WHERE v >= 100"},
};

// One random statement: rows crossing the filters both ways, numerics
// changed to an equal value of another scale, keys moved, inserts,
// deletes, one row changed several times, NULLs.
std::string random_statement(std::mt19937_64& g) {
    auto num = [&](int lo, int hi) {
        return std::to_string(std::uniform_int_distribution<int>(lo, hi)(g));
    };
    switch (std::uniform_int_distribution<int>(0, 9)(g)) {
        case 0:
            return "UPDATE op SET v = (v + " + num(1, 60) +
                   ") % 1000 WHERE id % 97 = " + num(0, 96);
        case 1:
            return "UPDATE op SET v = 1000 - v WHERE id % 89 = " + num(0, 88);
        case 2:
            return "UPDATE op SET z = CASE z::text WHEN '1.5' THEN 1.50 WHEN '1.50' THEN 1.5 "
                   "WHEN '2' THEN NULL ELSE 2 END WHERE v < 60 AND id % 3 = " +
                   num(0, 2);
        case 3:
            return "INSERT INTO op VALUES (nextval('op_new'), " + num(0, 6) + ", " + num(0, 999) +
                   ", " + num(0, 3) + ".50, 'a" + num(0, 4) + "')";
        case 4:
            return "DELETE FROM op WHERE id % 101 = " + num(0, 100);
        case 5:
            return "UPDATE op SET g = " + num(0, 6) + ", t = 'a" + num(0, 4) +
                   "' WHERE v < 60 AND id % 5 = " + num(0, 4);
        case 6:
            // the same rows changed three times in one transaction
            return "UPDATE op SET v = 5 WHERE id % 211 = 3; UPDATE op SET v = 500 WHERE id % 211 "
                   "= 3; UPDATE op SET v = " +
                   num(0, 999) + " WHERE id % 211 = 3";
        case 7:
            return "UPDATE op SET id = nextval('op_moved') WHERE id % 151 = " + num(0, 150);
        case 8:
            return "UPDATE op SET v = CASE WHEN v IS NULL THEN " + num(0, 999) +
                   " END WHERE id % 173 = " + num(0, 172);
        default:
            return "DELETE FROM op WHERE v BETWEEN 20 AND 25; INSERT INTO op VALUES "
                   "(nextval('op_new'), 2, 22, 1.5, 'a2')";
    }
}

TEST_F(DifferentialOnePass, chosen_when_the_filter_keeps_few_rows) {
    for (const auto& [name, query] : kQueries) {
        create(name, query);
    }
    for (const auto& [name, query] : kQueries) {
        EXPECT_EQ(one_pass(name), name != "op_wide") << name;
    }
    // A table never analyzed has no estimate: two scans.
    db->exec("CREATE TABLE op2 (id int PRIMARY KEY, v int)");
    create("op2_rows", "SELECT id FROM op2 WHERE v < 3");
    EXPECT_FALSE(one_pass("op2_rows"));
}

TEST_F(DifferentialOnePass, both_forms_follow_random_changes_exactly) {
    for (const auto& [name, query] : kQueries) {
        create(name, query);
    }
    const uint64_t seed = property::property_seed();
    std::cout << "PGT_PROPERTY_SEED=" << seed << " (one-pass images)" << std::endl;
    std::mt19937_64 g(seed);
    for (int batch = 0; batch < 40 && !HasFailure(); batch++) {
        std::string sql = "BEGIN;";
        for (int n = std::uniform_int_distribution<int>(1, 4)(g); n > 0; n--) {
            sql += random_statement(g) + ";";
        }
        if (batch % 9 == 4) {
            db->exec(sql + "ROLLBACK");  // nothing to see
        } else {
            db->exec(sql + "COMMIT");
        }
        for (const auto& [name, query] : kQueries) {
            EXPECT_TRUE(refreshed_ok(name)) << "batch " << batch << ": " << sql;
        }
    }
}

}  // namespace
}  // namespace pgt::e2e
