// e2e test runner: starts the private cluster, runs every test, stops it,
// and fails the run if the server log shows a crash.
// Invariant: the cluster is stopped on every exit path that gtest allows.
#include <gtest/gtest.h>

#include <iostream>

#include "cluster.hpp"

namespace {

class ClusterEnvironment : public ::testing::Environment {
public:
    void SetUp() override { pgt::e2e::cluster().start(PGT_E2E_WORKDIR); }
    void TearDown() override {
        pgt::e2e::cluster().stop();
        std::string crashes = pgt::e2e::cluster().crash_lines();
        if (!crashes.empty()) {
            ADD_FAILURE() << "server log shows a crash:\n" << crashes;
        }
    }
};

}  // namespace

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    ::testing::AddGlobalTestEnvironment(new ClusterEnvironment);
    return RUN_ALL_TESTS();
}
