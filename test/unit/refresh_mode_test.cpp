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
    auto m = pgt::resolve_refresh_mode("full", "");
    EXPECT_EQ(m.requested, "FULL");
    EXPECT_EQ(m.effective, "FULL");
    EXPECT_TRUE(m.notice.empty());
}

TEST(RefreshMode, auto_picks_differential_when_supported) {
    auto m = pgt::resolve_refresh_mode(" Auto ", "");
    EXPECT_EQ(m.requested, "AUTO");
    EXPECT_EQ(m.effective, "DIFFERENTIAL");
    EXPECT_TRUE(m.notice.empty());
}

TEST(RefreshMode, auto_falls_back_to_full_and_names_the_construct) {
    auto m = pgt::resolve_refresh_mode("AUTO", "a join");
    EXPECT_EQ(m.effective, "FULL");
    EXPECT_NE(m.notice.find("a join"), std::string::npos) << m.notice;
}

TEST(RefreshMode, differential_when_supported_else_rejected_naming_the_construct) {
    EXPECT_EQ(pgt::resolve_refresh_mode("differential", "").effective, "DIFFERENTIAL");
    try {
        pgt::resolve_refresh_mode("DIFFERENTIAL", "aggregates");
        FAIL() << "no error";
    } catch (const pgt::Error& e) {
        EXPECT_EQ(e.sqlstate(), "0A000");
        EXPECT_NE(std::string(e.message()).find("aggregates"), std::string::npos);
    }
}

TEST(RefreshMode, immediate_is_not_supported_yet) {
    EXPECT_EQ(sqlstate_of([] { pgt::resolve_refresh_mode("immediate", ""); }), "0A000");
}

TEST(RefreshMode, unknown_mode_is_invalid_parameter) {
    EXPECT_EQ(sqlstate_of([] { pgt::resolve_refresh_mode("sometimes", ""); }), "22023");
    EXPECT_EQ(sqlstate_of([] { pgt::resolve_refresh_mode("", ""); }), "22023");
}

TEST(Status, active_and_suspended_only) {
    EXPECT_EQ(pgt::parse_status("active"), "ACTIVE");
    EXPECT_EQ(pgt::parse_status("SUSPENDED"), "SUSPENDED");
    EXPECT_EQ(sqlstate_of([] { pgt::parse_status("ERROR"); }), "22023");
}

}  // namespace
