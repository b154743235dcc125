// Waiting on what a background worker does: poll a condition until it
// holds or a deadline passes. Invariant: an exception from the condition
// counts as "not yet" (the server may be restarting), and the failure
// names what was waited for and the last error seen.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <functional>
#include <string>
#include <thread>

namespace pgt::e2e {

inline ::testing::AssertionResult eventually(
    const std::function<bool()>& pred, const std::string& what,
    std::chrono::milliseconds timeout = std::chrono::seconds(30),
    std::chrono::milliseconds poll = std::chrono::milliseconds(50)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string last_error;
    while (std::chrono::steady_clock::now() < deadline) {
        try {
            if (pred()) {
                return ::testing::AssertionSuccess();
            }
        } catch (const std::exception& e) {
            last_error = e.what();
        }
        std::this_thread::sleep_for(poll);
    }
    auto f = ::testing::AssertionFailure();
    f << "timed out after " << timeout.count() << " ms waiting for: " << what;
    if (!last_error.empty()) {
        f << " (last error: " << last_error << ")";
    }
    return f;
}

}  // namespace pgt::e2e
