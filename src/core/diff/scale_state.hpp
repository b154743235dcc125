// The display scale of an exact numeric SUM/AVG, kept incrementally.
//
// PostgreSQL shows sum(numeric) with the largest display scale among the
// group's finite inputs (1.5 + 2.25 is 3.75, 1.50 + 2 is 3.50); the
// algebraic delta must show the same digits after values come and go. The
// state is that largest scale and how many inputs have it, packed in one
// int8 (scale × 2^40 + count) so one aggregate computes it in one pass:
//
//   accumulate(state, x, w): w more inputs of x's scale
//   merge(stored, inserted, deleted): the state after a refresh, or
//     nothing when the inputs with the largest scale are all gone (the
//     next largest is unknown: the group is recomputed)
//
// Invariant: a state describes finite inputs only (NaN and ±Infinity have
// no scale; a refresh that sees one recomputes the group).
#pragma once
#include "core/core.hpp"

#include <cstdint>
#include <optional>

namespace pgt::diff {

inline constexpr int64_t kScaleUnit = int64_t{1} << 40;  // count occupies the low 40 bits

struct ScaleCount {
    int64_t scale = 0;
    int64_t count = 0;
};

ScaleCount unpack_scale(int64_t state);
int64_t pack_scale(ScaleCount s);

// state with `weight` more (or, negative, fewer) inputs of scale `scale`,
// where they count toward the largest scale only.
int64_t accumulate_scale(int64_t state, int64_t scale, int64_t weight);

// Two partial states of disjoint inputs as one.
int64_t combine_scale(int64_t a, int64_t b);

// combine_scale and accumulate_scale for arguments from anywhere (the SQL
// functions): nothing when a count would leave the 40 bits it is kept in,
// or the state the range of int8, instead of wrapping into another state.
std::optional<int64_t> combine_scale_checked(int64_t a, int64_t b);
std::optional<int64_t> accumulate_scale_checked(int64_t state, int64_t scale, int64_t weight);

// stored: the group's state before; inserted / deleted: states of the
// inputs added and removed (counts as positive numbers). Nothing when the
// result is unknown: stored is missing, a deletion does not fit it, or every
// input of the largest scale was deleted while others may remain.
std::optional<int64_t> merge_scale(std::optional<int64_t> stored, int64_t inserted,
                                   int64_t deleted);

}  // namespace pgt::diff
