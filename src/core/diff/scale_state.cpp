// Packed numeric display-scale state (see scale_state.hpp).
#include "core/diff/scale_state.hpp"

namespace pgt::diff {

ScaleCount unpack_scale(int64_t state) {
    return {state / kScaleUnit, state % kScaleUnit};
}

int64_t pack_scale(ScaleCount s) {
    return s.scale * kScaleUnit + s.count;
}

int64_t accumulate_scale(int64_t state, int64_t scale, int64_t weight) {
    return combine_scale(state, pack_scale({scale, weight}));
}

int64_t combine_scale(int64_t a, int64_t b) {
    ScaleCount x = unpack_scale(a), y = unpack_scale(b);
    if (x.count == 0) {
        return b;
    }
    if (y.count == 0 || x.scale > y.scale) {
        return a;
    }
    if (y.scale > x.scale) {
        return b;
    }
    return pack_scale({x.scale, x.count + y.count});
}

namespace {

bool count_fits(int64_t count) {
    return count > -kScaleUnit && count < kScaleUnit;
}

}  // namespace

std::optional<int64_t> combine_scale_checked(int64_t a, int64_t b) {
    ScaleCount x = unpack_scale(a), y = unpack_scale(b);
    // unpack_scale leaves |count| < kScaleUnit, so the sum cannot overflow;
    // a sum that fits packs within the range of a and b.
    if (x.count != 0 && y.count != 0 && x.scale == y.scale && !count_fits(x.count + y.count)) {
        return std::nullopt;
    }
    return combine_scale(a, b);
}

std::optional<int64_t> accumulate_scale_checked(int64_t state, int64_t scale, int64_t weight) {
    int64_t packed = 0;
    if (!count_fits(weight) || __builtin_mul_overflow(scale, kScaleUnit, &packed) ||
        __builtin_add_overflow(packed, weight, &packed)) {
        return std::nullopt;
    }
    return combine_scale_checked(state, packed);
}

std::optional<int64_t> merge_scale(std::optional<int64_t> stored, int64_t inserted,
                                   int64_t deleted) {
    if (!stored) {
        return std::nullopt;
    }
    ScaleCount s = unpack_scale(*stored), ins = unpack_scale(inserted), del = unpack_scale(deleted);
    if (s.count == 0) {  // no finite input before: nothing can be deleted
        return del.count > 0 ? std::nullopt : std::optional(inserted);
    }
    int64_t left = s.count;
    if (del.count > 0 && del.scale > s.scale) {
        return std::nullopt;  // removing inputs the state never had
    }
    if (del.count > 0 && del.scale == s.scale) {
        left -= del.count;
    }
    if (left < 0) {
        return std::nullopt;
    }
    if (ins.count > 0 && ins.scale > s.scale) {
        return inserted;
    }
    if (ins.count > 0 && ins.scale == s.scale) {
        left += ins.count;
    }
    // left == 0: every input of the largest scale is gone; whether smaller
    // ones remain is the caller's count to judge.
    return pack_scale({s.scale, left});
}

}  // namespace pgt::diff
