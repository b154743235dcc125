// Unit tests of refresh-mode resolution and status parsing (src/core).
// Invariant: every row of the mode table has a test here.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/refresh_mode.hpp"

namespace {

std::string sqlstate_of(auto&& fn) {
    try {
        fn();
    } catch (const pgt::Error& e) {
        return e.sqlstate();
    }
    return "no error";
}

TEST(RefreshMode, full_is_full_without_notice) {
    auto m = pgt::resolve_refresh_mode("full");
    EXPECT_EQ(m.requested, "FULL");
    EXPECT_EQ(m.effective, "FULL");
    EXPECT_TRUE(m.notice.empty());
}

TEST(RefreshMode, auto_resolves_to_full_and_says_why) {
    auto m = pgt::resolve_refresh_mode(" Auto ");
    EXPECT_EQ(m.requested, "AUTO");
    EXPECT_EQ(m.effective, "FULL");
    EXPECT_NE(m.notice.find("FULL"), std::string::npos);
}

TEST(RefreshMode, differential_and_immediate_are_not_supported_yet) {
    EXPECT_EQ(sqlstate_of([] { pgt::resolve_refresh_mode("DIFFERENTIAL"); }), "0A000");
    EXPECT_EQ(sqlstate_of([] { pgt::resolve_refresh_mode("immediate"); }), "0A000");
}

TEST(RefreshMode, unknown_mode_is_invalid_parameter) {
    EXPECT_EQ(sqlstate_of([] { pgt::resolve_refresh_mode("sometimes"); }), "22023");
    EXPECT_EQ(sqlstate_of([] { pgt::resolve_refresh_mode(""); }), "22023");
}

TEST(Status, active_and_suspended_only) {
    EXPECT_EQ(pgt::parse_status("active"), "ACTIVE");
    EXPECT_EQ(pgt::parse_status("SUSPENDED"), "SUSPENDED");
    EXPECT_EQ(sqlstate_of([] { pgt::parse_status("ERROR"); }), "22023");
}

}  // namespace
