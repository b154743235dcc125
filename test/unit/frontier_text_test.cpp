// Unit tests of diff::frontier_text: a refresh's snapshot recorded as a
// frontier with the refreshing transaction's own id in progress.
#include "core/diff/scan_delta.hpp"
#include "core/error.hpp"

#include <gtest/gtest.h>

namespace {

using pgt::diff::frontier_text;

// xmax is the own id while no later id has completed: unchanged.
TEST(FrontierText, an_own_id_at_or_past_xmax_is_in_progress_already) {
    EXPECT_EQ(frontier_text("100:100:", "100"), "100:100:");
    EXPECT_EQ(frontier_text("90:100:95", "100"), "90:100:95");
}

// A later id completed (a subtransaction that aborted, or another session):
// the own id joins the in-progress list, in order, and lowers xmin.
TEST(FrontierText, an_own_id_below_xmax_joins_the_in_progress_list) {
    EXPECT_EQ(frontier_text("100:102:", "100"), "100:102:100");
    EXPECT_EQ(frontier_text("90:110:95,105", "100"), "90:110:95,100,105");
    EXPECT_EQ(frontier_text("104:110:104,106", "100"), "100:110:100,104,106");
    EXPECT_EQ(frontier_text("90:110:95,100", "100"), "90:110:95,100");
}

TEST(FrontierText, text_that_is_no_snapshot_is_refused) {
    EXPECT_THROW(frontier_text("100", "100"), pgt::Error);
    EXPECT_THROW(frontier_text("a:100:", "100"), pgt::Error);
    EXPECT_THROW(frontier_text("100:101:", ""), pgt::Error);
}

}  // namespace
