// Unit tests of the cost rules (src/core/policy/plan_rules): one-pass
// images, kept copies and plan size classes.
#include "core/policy/plan_rules.hpp"

#include <gtest/gtest.h>

namespace {

using namespace pgt::policy;  // NOLINT(google-build-using-namespace)

TEST(Policy, one_pass_when_the_prefilter_keeps_a_tenth_or_less) {
    EXPECT_TRUE(one_pass_images(1000, 100));
    EXPECT_TRUE(one_pass_images(1000, 0));
    EXPECT_FALSE(one_pass_images(1000, 101));
    EXPECT_FALSE(one_pass_images(0, 0)) << "unknown size (never analyzed)";
    EXPECT_FALSE(one_pass_images(1000, -1)) << "no estimate";
}

TEST(Policy, kept_copy_pays_for_a_large_table_filtered_to_its_fraction) {
    EXPECT_TRUE(kept_copy_pays(1e6, 1e4, 0.05));
    EXPECT_FALSE(kept_copy_pays(1e6, 1e5, 0.05));
    EXPECT_FALSE(kept_copy_pays(9999, 1, 0.05)) << "small tables are probed directly";
    EXPECT_FALSE(kept_copy_pays(1e6, -1, 0.05));
    EXPECT_TRUE(kept_copy_pays(10, 10, 1)) << "fraction 1: every candidate";
}

TEST(Policy, plan_size_classes_double_in_width) {
    EXPECT_EQ(plan_size_class(0), 0);
    EXPECT_EQ(plan_size_class(1), 1);
    EXPECT_EQ(plan_size_class(2), 1);
    EXPECT_EQ(plan_size_class(3), 2);
    EXPECT_EQ(plan_size_class(1000), 9);
    EXPECT_EQ(plan_size_class(1023), 10);
}

}  // namespace
