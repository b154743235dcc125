// e2e test runner: starts the private cluster, runs every test, stops it,
// and fails the run if the server log shows a crash.
// Invariant: the cluster is stopped on every exit path that gtest allows.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>

#include "cluster.hpp"

namespace {

class ClusterEnvironment : public ::testing::Environment {
public:
    // PGT_E2E_WORKDIR in the environment: another directory for the main
    // cluster, so two runs (say, of different suites) do not share one.
    void SetUp() override {
        const char* dir = std::getenv("PGT_E2E_WORKDIR");
        pgt::e2e::cluster().start(dir != nullptr ? dir : PGT_E2E_WORKDIR);
    }
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
