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
};

}  // namespace pgt::e2e
