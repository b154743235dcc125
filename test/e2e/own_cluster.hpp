// A test with a cluster of its own (started by the test with the settings it
// needs), stopped when the test ends; a backend crash in its server log
// fails the test.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <string>

#include "cluster.hpp"

namespace pgt::e2e {

class OwnClusterTest : public ::testing::Test {
protected:
    void TearDown() override {
        try {
            cluster_.stop();
        } catch (const std::exception& e) {
            ADD_FAILURE() << "stopping the cluster: " << e.what();
        }
        const std::string crashes = cluster_.crash_lines();
        if (!crashes.empty()) {
            ADD_FAILURE() << "the server log shows a crash:\n" << crashes;
        }
    }

    Cluster cluster_;
};

}  // namespace pgt::e2e
