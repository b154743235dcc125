// A construct's stream tables, one per query shape, created in one mode and
// checked after every round of random changes: what the tests of lowered
// constructs (WITH, anti-joins) share.
// Invariant: after each round every stream table equals its query, and a
// DIFFERENTIAL one's refresh ran DIFFERENTIAL.
#pragma once

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "fixture.hpp"

namespace pgt::e2e {

struct ConstructCase {
    const char* name;
    const char* query;
};

class ConstructTest : public DbTest {
protected:
    // The tables the cases read, created before each test.
    virtual const char* schema() const = 0;

    void SetUp() override {
        DbTest::SetUp();
        db->exec(schema());
    }

    // Creates each case in mode (it must be maintained so), then runs
    // `rounds` rounds of change(rng, round), refreshing and checking each.
    void run_cases(const std::vector<ConstructCase>& cases, const std::string& mode,
                   const std::function<void(std::mt19937&, int)>& change, int rounds = 6) {
        for (const ConstructCase& k : cases) {
            db->exec("SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => $3)",
                     {k.name, k.query, mode});
            EXPECT_EQ(modes(k.name), mode + "/" + mode) << k.query;
            EXPECT_MATCHES_QUERY(*db, k.name);
        }
        std::mt19937 rng(46);
        for (int round = 0; round < rounds; round++) {
            change(rng, round);
            for (const ConstructCase& k : cases) {
                if (mode == "DIFFERENTIAL") {
                    refresh(k.name);
                    EXPECT_EQ(last_action(k.name), "DIFFERENTIAL") << k.name << " round " << round;
                }
                EXPECT_MATCHES_QUERY(*db, k.name) << " round " << round;
            }
        }
    }

    // Stream table `name`, DIFFERENTIAL, through `rounds` rounds of
    // change(rng, round), every second round switched to FULL (refreshed,
    // changed again) and back: each DIFFERENTIAL refresh after that is
    // exact, whatever the FULL ones left.
    void full_refreshes_between(const std::string& name,
                                const std::function<void(std::mt19937&, int)>& change,
                                int rounds = 4) {
        std::mt19937 rng(7);
        for (int round = 0; round < rounds; round++) {
            change(rng, round);
            if (round % 2 == 1) {
                db->exec("SELECT pgtrickle.alter_stream_table($1, refresh_mode => 'FULL')", {name});
                refresh(name);
                EXPECT_EQ(last_action(name), "FULL");
                EXPECT_MATCHES_QUERY(*db, name) << " round " << round;
                change(rng, round + 10);
                db->exec("SELECT pgtrickle.alter_stream_table($1, refresh_mode => 'DIFFERENTIAL')",
                         {name});
                change(rng, round + 20);
            }
            refresh(name);
            EXPECT_EQ(last_action(name), "DIFFERENTIAL") << round;
            EXPECT_MATCHES_QUERY(*db, name) << " round " << round;
        }
    }

    // Queries a lowering leaves as written: AUTO recomputes each (FULL),
    // before and after `change`, equal to its query.
    void expect_recomputed(const std::vector<std::string>& queries, const std::string& change) {
        for (std::size_t i = 0; i < queries.size(); i++) {
            db->exec("SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => 'AUTO')",
                     {"kept" + std::to_string(i), queries[i]});
            EXPECT_EQ(modes("kept" + std::to_string(i)), "AUTO/FULL") << queries[i];
        }
        db->exec(change);
        for (std::size_t i = 0; i < queries.size(); i++) {
            refresh("kept" + std::to_string(i));
            EXPECT_EQ(last_action("kept" + std::to_string(i)), "FULL") << queries[i];
            EXPECT_MATCHES_QUERY(*db, "kept" + std::to_string(i));
        }
    }

    // One round's changes to an `od (id, cu, amt)` table of orders: an
    // insert, an update of its amount and customer, deletes by customer and
    // by id (ids up to 150, amounts up to 30).
    void change_orders(std::mt19937& rng, int round) {
        std::uniform_int_distribution<int> id(1, 150), small(0, 30);
        db->exec("INSERT INTO od VALUES (1000 + $1, $2, $3)",
                 {std::to_string(round), std::to_string(id(rng)), std::to_string(small(rng))});
        db->exec("UPDATE od SET amt = $2, cu = $3 WHERE id = $1",
                 {std::to_string(id(rng)), std::to_string(small(rng)), std::to_string(id(rng))});
        db->exec("DELETE FROM od WHERE cu = $1 OR id = $2",
                 {std::to_string(id(rng)), std::to_string(id(rng))});
    }
};

}  // namespace pgt::e2e
