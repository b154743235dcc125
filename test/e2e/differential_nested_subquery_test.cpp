// Subqueries nested in subqueries at any depth (TPC-H q20: an IN whose
// subquery holds another IN and a correlated scalar aggregate). A nested
// subquery's tables join its top-level subquery's region group: a branch
// reading their images reaches the query through each subquery around it,
// over those subqueries' tables as they are now (region_sites,
// diff::region_terms).
// Invariant: after every round of random changes each stream table equals
// its query, and the refresh that ran was the one asserted.
#include <random>
#include <utility>
#include <string>
#include <vector>

#include "construct_cases.hpp"

namespace pgt::e2e {
namespace {

const char* kSchema =
    "CREATE TABLE sp (id int PRIMARY KEY, nat int NOT NULL, name text NOT NULL);"
    "CREATE TABLE pt (id int PRIMARY KEY, name text NOT NULL);"
    "CREATE TABLE ps (pt int, sp int, avail int, PRIMARY KEY (pt, sp));"
    "CREATE TABLE li (id int PRIMARY KEY, pt int, sp int, qty int, late bool NOT NULL);"
    "INSERT INTO sp SELECT g, g % 4, 'supplier ' || g FROM generate_series(1, 30) g;"
    "INSERT INTO pt SELECT g, CASE WHEN g % 3 = 0 THEN 'forest ' ELSE 'plain ' END || g FROM "
    "generate_series(1, 40) g;"
    "INSERT INTO ps SELECT p, s, (p * 7 + s * 3) % 40 FROM generate_series(1, 40) p, "
    "generate_series(1, 30) s WHERE (p + s) % 6 = 0;"
    "INSERT INTO li SELECT g, 1 + g % 40, 1 + g % 30, g % 9, g % 4 = 0 FROM generate_series(1, "
    "300) g;";

const std::vector<ConstructCase> kCases = {
    // TPC-H q20's shape.
    {"q20_shape",
     "SELECT s.name FROM sp s WHERE s.id IN (SELECT ps.sp FROM ps WHERE ps.pt IN (SELECT pt.id "
     "FROM pt WHERE pt.name LIKE 'forest%') AND ps.avail > (SELECT 0.5 * sum(li.qty) FROM li "
     "WHERE li.pt = ps.pt AND li.sp = ps.sp AND NOT li.late)) AND s.nat = 1"},
    {"not_exists_in_exists",
     "SELECT s.id, s.name FROM sp s WHERE EXISTS (SELECT 1 FROM ps WHERE ps.sp = s.id AND NOT "
     "EXISTS (SELECT 1 FROM li WHERE li.pt = ps.pt AND li.sp = ps.sp))"},
    {"exists_in_not_in",
     "SELECT p.id FROM pt p WHERE p.id NOT IN (SELECT ps.pt FROM ps WHERE ps.avail > 20 AND "
     "EXISTS (SELECT 1 FROM li WHERE li.sp = ps.sp AND li.late))"},
    {"three_levels",
     "SELECT s.id FROM sp s WHERE EXISTS (SELECT 1 FROM ps WHERE ps.sp = s.id AND ps.pt IN "
     "(SELECT li.pt FROM li WHERE li.qty > 4 AND EXISTS (SELECT 1 FROM pt WHERE pt.id = li.pt "
     "AND pt.name LIKE 'forest%')))"},
    // The innermost subquery reads the query's own row, two levels up.
    {"correlated_two_up",
     "SELECT s.id, s.nat FROM sp s WHERE EXISTS (SELECT 1 FROM ps WHERE ps.sp = s.id AND EXISTS "
     "(SELECT 1 FROM li WHERE li.pt = ps.pt AND li.sp = s.id AND li.qty > 3))"},
    {"grouped_over_nested",
     "SELECT s.nat, count(*) AS n FROM sp s WHERE s.id IN (SELECT ps.sp FROM ps JOIN pt ON "
     "pt.id = ps.pt WHERE pt.id IN (SELECT li.pt FROM li WHERE NOT li.late)) GROUP BY s.nat"},
    {"scalar_in_select_list",
     "SELECT s.id, (SELECT count(*) FROM ps WHERE ps.sp = s.id AND ps.pt IN (SELECT pt.id FROM "
     "pt WHERE pt.name LIKE 'forest%')) AS forest_parts FROM sp s"},
    // An inner join's ON is part of WHERE.
    {"in_join_condition",
     "SELECT s.id FROM sp s WHERE EXISTS (SELECT 1 FROM ps JOIN pt ON pt.id = ps.pt AND pt.id "
     "IN (SELECT li.pt FROM li WHERE li.late) WHERE ps.sp = s.id)"},
    {"nested_under_or",
     "SELECT s.id FROM sp s WHERE EXISTS (SELECT 1 FROM ps WHERE ps.sp = s.id AND (ps.avail > "
     "30 OR ps.pt IN (SELECT li.pt FROM li WHERE li.qty = 8)))"},
};

class DifferentialNestedSubquery : public ConstructTest {
protected:
    const char* schema() const override { return kSchema; }

    // Changes to every table: line items inserted, moved, deleted; parts
    // renamed in and out of 'forest'; availability and suppliers' nations.
    void change(std::mt19937& rng, int round) {
        std::uniform_int_distribution<int> li(1, 320), pt(1, 40), sp(1, 30), qty(0, 9), av(0, 40);
        const std::string r = std::to_string(round);
        db->exec("INSERT INTO li VALUES (400 + $1, $2, $3, $4, $5)",
                 {r, std::to_string(pt(rng)), std::to_string(sp(rng)), std::to_string(qty(rng)),
                  round % 2 == 0 ? "true" : "false"});
        db->exec("UPDATE li SET qty = $2, late = NOT late WHERE id = $1",
                 {std::to_string(li(rng)), std::to_string(qty(rng))});
        db->exec("UPDATE li SET pt = $2 WHERE id = $1",
                 {std::to_string(li(rng)), std::to_string(pt(rng))});
        db->exec("DELETE FROM li WHERE id = $1 OR sp = $2",
                 {std::to_string(li(rng)), std::to_string(sp(rng))});
        db->exec(
            "UPDATE pt SET name = CASE WHEN name LIKE 'forest%' THEN 'plain' ELSE 'forest' END "
            "|| id WHERE id = $1",
            {std::to_string(pt(rng))});
        db->exec("UPDATE ps SET avail = $3 WHERE pt = $1 OR sp = $2",
                 {std::to_string(pt(rng)), std::to_string(sp(rng)), std::to_string(av(rng))});
        db->exec("INSERT INTO ps VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                 {std::to_string(pt(rng)), std::to_string(sp(rng)), std::to_string(av(rng))});
        db->exec("DELETE FROM ps WHERE pt = $1 AND sp > $2",
                 {std::to_string(pt(rng)), std::to_string(sp(rng))});
        db->exec("UPDATE sp SET nat = (nat + 1) % 4 WHERE id = $1", {std::to_string(sp(rng))});
        // A subquery row and the rows nested under it, changed together: a
        // pair leaves ps as a line item of it arrives, and the reverse.
        const std::string pick = std::to_string(li(rng));
        db->exec(
            "WITH gone AS (DELETE FROM ps WHERE (pt, sp) IN (SELECT pt, sp FROM ps ORDER BY (pt "
            "* 31 + sp * 17 + $1) % 97 LIMIT 2) RETURNING pt, sp) INSERT INTO li SELECT 600 + "
            "$2 * 4 + row_number() OVER (), pt, sp, 9, false FROM gone",
            {pick, r});
        db->exec(
            "WITH gone AS (DELETE FROM li WHERE id IN (SELECT id FROM li ORDER BY (id * 13 + $1) "
            "% 101 LIMIT 2) RETURNING pt, sp) INSERT INTO ps SELECT DISTINCT pt, sp, 35 FROM gone "
            "ON CONFLICT (pt, sp) DO UPDATE SET avail = 39 - ps.avail",
            {pick});
    }
};

TEST_F(DifferentialNestedSubquery, nested_subqueries_are_maintained_differentially) {
    run_cases(
        kCases, "DIFFERENTIAL", [&](std::mt19937& rng, int round) { change(rng, round); }, 8);
}

TEST_F(DifferentialNestedSubquery, nested_subqueries_are_maintained_immediately) {
    run_cases(
        kCases, "IMMEDIATE", [&](std::mt19937& rng, int round) { change(rng, round); }, 8);
}

// Two subqueries side by side — nested in a subquery, or the query's own —
// whose results flip together for one row around them (its line items go
// and its part leaves 'forest' in one transaction): a branch through one
// reads the other as it is now, so only the later ranked one's branch may
// keep the other as written.
TEST_F(DifferentialNestedSubquery, siblings_that_flip_together_are_found) {
    const std::vector<ConstructCase> cases = {
        {"both_siblings",
         "SELECT s.id FROM sp s WHERE EXISTS (SELECT 1 FROM ps WHERE ps.sp = s.id AND EXISTS "
         "(SELECT 1 FROM li WHERE li.pt = ps.pt AND li.sp = ps.sp) AND ps.pt IN (SELECT pt.id "
         "FROM pt WHERE pt.name LIKE 'forest%'))"},
        {"both_siblings_reversed",
         "SELECT s.id FROM sp s WHERE EXISTS (SELECT 1 FROM ps WHERE ps.sp = s.id AND ps.pt IN "
         "(SELECT pt.id FROM pt WHERE pt.name LIKE 'forest%') AND EXISTS (SELECT 1 FROM li "
         "WHERE li.pt = ps.pt AND li.sp = ps.sp))"},
        // The same at the query's level: its own two subqueries.
        {"top_level_siblings",
         "SELECT s.id FROM sp s WHERE EXISTS (SELECT 1 FROM li WHERE li.sp = s.id AND li.id = "
         "1000) AND s.id IN (SELECT ps.sp FROM ps JOIN pt ON pt.id = ps.pt WHERE pt.name LIKE "
         "'forest%')"},
    };
    // Supplier 100 has one partsupp row, of a forest part with a line item;
    // each round takes both away or brings both back.
    db->exec(
        "INSERT INTO sp VALUES (100, 1, 'alone'); INSERT INTO pt VALUES (100, 'forest 100');"
        "INSERT INTO ps VALUES (100, 100, 5); INSERT INTO li VALUES (1000, 100, 100, 1, false)");
    for (const char* mode : {"DIFFERENTIAL", "IMMEDIATE"}) {
        std::vector<ConstructCase> named;
        std::vector<std::string> names;
        for (const ConstructCase& k : cases) {
            names.push_back(std::string(k.name) + "_" + mode);
        }
        for (std::size_t i = 0; i < cases.size(); i++) {
            named.push_back({names[i].c_str(), cases[i].query});
        }
        run_cases(
            named, mode,
            [&](std::mt19937&, int round) {
                db->exec(round % 2 == 0
                             ? "BEGIN; DELETE FROM li WHERE id = 1000; UPDATE pt SET name = "
                               "'plain 100' WHERE id = 100; COMMIT"
                             : "BEGIN; INSERT INTO li VALUES (1000, 100, 100, 1, false); UPDATE "
                               "pt SET name = 'forest 100' WHERE id = 100; COMMIT");
            },
            4);
    }
}

// A subquery in the select list, HAVING or an outer join's condition of a
// subquery is refused by DIFFERENTIAL, naming it (AUTO recomputes it).
TEST_F(DifferentialNestedSubquery, nested_subqueries_outside_where_are_refused) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"SELECT s.id FROM sp s WHERE s.id IN (SELECT (SELECT max(li.sp) FROM li WHERE li.pt = "
         "ps.pt) FROM ps)",
         "a subquery in the select list or HAVING of a subquery"},
        {"SELECT s.id FROM sp s WHERE EXISTS (SELECT 1 FROM ps LEFT JOIN pt ON pt.id = ps.pt "
         "AND pt.id IN (SELECT li.pt FROM li) WHERE ps.sp = s.id)",
         "a subquery in a join condition of a subquery"},
        {"SELECT s.id FROM sp s WHERE s.id IN (SELECT ps.sp FROM ps GROUP BY ps.sp HAVING "
         "count(*) > (SELECT count(*) FROM li WHERE li.sp = ps.sp))",
         "a subquery in the select list or HAVING of a subquery"},
    };
    std::vector<std::string> kept;
    for (const auto& [query, reason] : cases) {
        SqlError e = db->error_of("SELECT pgtrickle.create_stream_table('refused', $q$" + query +
                                  "$q$, refresh_mode => 'DIFFERENTIAL')");
        EXPECT_EQ(e.sqlstate, "0A000") << query;
        EXPECT_NE(e.message.find(reason), std::string::npos) << e.message;
        kept.push_back(query);
    }
    expect_recomputed(kept, "UPDATE li SET sp = 1 WHERE id < 50; UPDATE ps SET avail = 0");
}

}  // namespace
}  // namespace pgt::e2e
