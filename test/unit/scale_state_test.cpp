// Unit tests of the packed numeric display-scale state
// (src/core/diff/scale_state): merged states agree with a recomputation
// over the multiset of input scales, or say the group must be recomputed.
#include "core/diff/scale_state.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace {

using pgt::diff::accumulate_scale;
using pgt::diff::combine_scale;
using pgt::diff::merge_scale;
using pgt::diff::pack_scale;
using pgt::diff::unpack_scale;

// The state PostgreSQL's recomputation implies: largest scale, count at it.
int64_t recomputed(const std::map<int64_t, int64_t>& inputs) {
    int64_t state = 0;
    for (const auto& [scale, count] : inputs) {
        if (count > 0) {
            state = accumulate_scale(state, scale, count);
        }
    }
    return state;
}

TEST(ScaleState, packs_scale_and_count) {
    int64_t s = pack_scale({3, 17});
    EXPECT_EQ(unpack_scale(s).scale, 3);
    EXPECT_EQ(unpack_scale(s).count, 17);
    EXPECT_EQ(accumulate_scale(0, 2, 1), pack_scale({2, 1}));
    EXPECT_EQ(accumulate_scale(pack_scale({2, 1}), 1, 5), pack_scale({2, 1}));
    EXPECT_EQ(accumulate_scale(pack_scale({2, 1}), 2, 5), pack_scale({2, 6}));
    EXPECT_EQ(accumulate_scale(pack_scale({2, 1}), 4, 1), pack_scale({4, 1}));
    EXPECT_EQ(combine_scale(0, pack_scale({1, 2})), pack_scale({1, 2}));
}

TEST(ScaleState, checked_forms_refuse_what_would_wrap) {
    const int64_t max = INT64_MAX;
    const int64_t full = pgt::diff::kScaleUnit - 1;
    EXPECT_FALSE(pgt::diff::combine_scale_checked(max, max));
    EXPECT_FALSE(pgt::diff::combine_scale_checked(pack_scale({2, full}), pack_scale({2, 1})));
    EXPECT_EQ(pgt::diff::combine_scale_checked(pack_scale({2, full}), pack_scale({1, 1})),
              pack_scale({2, full}));
    EXPECT_EQ(pgt::diff::combine_scale_checked(pack_scale({2, 3}), pack_scale({2, 4})),
              pack_scale({2, 7}));
    EXPECT_FALSE(pgt::diff::accumulate_scale_checked(0, 1, max));
    EXPECT_FALSE(pgt::diff::accumulate_scale_checked(0, max, 1));
    EXPECT_EQ(pgt::diff::accumulate_scale_checked(0, 2, 5), pack_scale({2, 5}));
}

TEST(ScaleState, deleting_the_last_input_of_the_largest_scale_is_unknown) {
    int64_t stored = pack_scale({3, 1});
    std::optional<int64_t> m = merge_scale(stored, 0, pack_scale({3, 1}));
    ASSERT_TRUE(m);
    EXPECT_EQ(unpack_scale(*m).count, 0);  // the caller recomputes if inputs remain
    EXPECT_FALSE(merge_scale(std::nullopt, 0, 0));
    EXPECT_FALSE(merge_scale(pack_scale({2, 1}), 0, pack_scale({3, 1})));
    EXPECT_FALSE(merge_scale(0, 0, pack_scale({0, 1})));
}

// Random histories of inserts and deletes: after every refresh, a merged
// state either equals the recomputed one or asks for recomputation (count
// 0 while inputs remain, or nothing); after a recomputation the model's
// state is taken as stored.
RC_GTEST_PROP(ScaleState, merge_agrees_with_recomputation, ()) {
    std::map<int64_t, int64_t> inputs;  // scale → how many inputs have it
    std::optional<int64_t> stored = 0;
    const int refreshes = *rc::gen::inRange(1, 30);
    for (int r = 0; r < refreshes; r++) {
        std::map<int64_t, int64_t> ins, del;
        const int changes = *rc::gen::inRange(0, 6);
        for (int c = 0; c < changes; c++) {
            int64_t scale = *rc::gen::inRange<int64_t>(0, 4);
            int64_t w = *rc::gen::inRange<int64_t>(1, 3);
            if (*rc::gen::arbitrary<bool>() && inputs[scale] - del[scale] >= w) {
                del[scale] += w;
            } else {
                ins[scale] += w;
            }
        }
        for (auto& [s, w] : ins) {
            inputs[s] += w;
        }
        for (auto& [s, w] : del) {
            inputs[s] -= w;
        }
        std::optional<int64_t> m = merge_scale(stored, recomputed(ins), recomputed(del));
        int64_t truth = recomputed(inputs);
        int64_t remaining = 0;
        for (const auto& [s, c] : inputs) {
            remaining += c;
        }
        bool rescan = !m || (remaining > 0 && unpack_scale(*m).count == 0);
        if (!rescan && remaining > 0) {
            RC_ASSERT(*m == truth);
        }
        stored = rescan || remaining == 0 ? truth : *m;
    }
}

}  // namespace
