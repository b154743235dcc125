// Outer joins written with USING, NATURAL or an alias, maintained as the
// ON joins they are (src/pg/analyze/join_using.cpp): a merged column is
// the expression PostgreSQL gives it (COALESCE of both sides for FULL).
// Invariant: after every round of random changes each stream table equals
// its query, and the refresh that ran was the one asserted.
#include <random>
#include <string>
#include <vector>

#include "construct_cases.hpp"

namespace pgt::e2e {
namespace {

const char* kSchema =
    "CREATE TABLE fa (k int PRIMARY KEY, x int);"
    "CREATE TABLE fb (k int PRIMARY KEY, y int);"
    "CREATE TABLE fc (id int PRIMARY KEY, k int, z int);"
    "INSERT INTO fa SELECT g, g % 7 FROM generate_series(1, 40) g;"
    "INSERT INTO fb SELECT g, g % 5 FROM generate_series(20, 60) g;"
    "INSERT INTO fc SELECT g, g % 50, g FROM generate_series(1, 80) g";

const std::vector<ConstructCase> kCases = {
    {"u_full", "SELECT k, x, y FROM fa FULL JOIN fb USING (k)"},
    {"u_natural", "SELECT k, x, y FROM fa NATURAL FULL JOIN fb"},
    {"u_left_agg",
     "SELECT k, count(*) AS n, sum(z) AS s FROM fc LEFT JOIN fa USING (k) WHERE fc.z > 3 "
     "GROUP BY k"},
    {"u_right", "SELECT k, x, y FROM fa RIGHT JOIN fb USING (k)"},
    {"u_alias", "SELECT j.k, j.x, j.y FROM (fa LEFT JOIN fb USING (k)) AS j"},
    {"u_self", "SELECT k, a.x, b.x AS bx FROM fa a FULL JOIN fa b USING (k)"},
};

class DifferentialJoinUsing : public ConstructTest {
protected:
    const char* schema() const override { return kSchema; }

    void change(std::mt19937& rng, int round) {
        std::uniform_int_distribution<int> key(1, 70), val(0, 9);
        const std::string r = std::to_string(round);
        db->exec("INSERT INTO fa VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET x = excluded.x",
                 {std::to_string(key(rng)), std::to_string(val(rng))});
        db->exec("DELETE FROM fb WHERE k = $1", {std::to_string(key(rng))});
        db->exec("INSERT INTO fb VALUES ($1, $2) ON CONFLICT (k) DO NOTHING",
                 {std::to_string(key(rng)), std::to_string(val(rng))});
        db->exec("UPDATE fa SET k = k + 100 WHERE k = $1", {std::to_string(key(rng))});
        db->exec("INSERT INTO fc VALUES (1000 + $1, $2, $3)",
                 {r, std::to_string(key(rng)), std::to_string(val(rng))});
        db->exec("UPDATE fc SET k = $2 WHERE id = $1",
                 {std::to_string(key(rng)), std::to_string(key(rng))});
    }
};

TEST_F(DifferentialJoinUsing, using_natural_and_aliased_outer_joins_are_maintained) {
    run_cases(kCases, "DIFFERENTIAL", [&](std::mt19937& rng, int round) { change(rng, round); });
}

TEST_F(DifferentialJoinUsing, using_natural_and_aliased_outer_joins_are_maintained_immediately) {
    run_cases(kCases, "IMMEDIATE", [&](std::mt19937& rng, int round) { change(rng, round); });
}

}  // namespace
}  // namespace pgt::e2e
