// SQL surface of the algebraic aggregates' numeric display-scale state
// (core/diff/scale_state.hpp): the aggregate
// pgtrickle.numeric_scale_state(x numeric, weight int8) and the merge a
// DIFFERENTIAL refresh applies, pgtrickle.numeric_scale_merge(stored,
// inserted, deleted).
// Invariant: this file only reads arguments; the state arithmetic is the
// core's. The only error is a state out of range (22003), raised with
// nothing but trivially destructible values in scope, so the per-row
// transition runs without the error boundary.
#include <optional>

#include "core/diff/scale_state.hpp"

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/numeric.h"

PG_FUNCTION_INFO_V1(pgt_numeric_scale_acc);
PG_FUNCTION_INFO_V1(pgt_numeric_scale_combine);
PG_FUNCTION_INFO_V1(pgt_numeric_scale_merge);
}

namespace {

[[noreturn]] void state_out_of_range() {
    ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                    errmsg("numeric display-scale state out of range"),
                    errdetail("A state counts at most 2^40 - 1 inputs of its largest scale.")));
    pg_unreachable();
}

}  // namespace

// numeric_scale_acc(state int8, x numeric, weight int8), STRICT: NULL
// inputs never reach it; NaN and ±Infinity have no display scale.
Datum pgt_numeric_scale_acc(PG_FUNCTION_ARGS) {
    int64 state = PG_GETARG_INT64(0);
    Numeric x = PG_GETARG_NUMERIC(1);
    int64 weight = PG_GETARG_INT64(2);
    if (numeric_is_nan(x) || numeric_is_inf(x)) {
        PG_RETURN_INT64(state);
    }
    int64 scale = DatumGetInt32(DirectFunctionCall1(numeric_scale, NumericGetDatum(x)));
    std::optional<int64_t> r = pgt::diff::accumulate_scale_checked(state, scale, weight);
    if (!r) {
        state_out_of_range();
    }
    PG_RETURN_INT64(*r);
}

Datum pgt_numeric_scale_combine(PG_FUNCTION_ARGS) {
    std::optional<int64_t> r =
        pgt::diff::combine_scale_checked(PG_GETARG_INT64(0), PG_GETARG_INT64(1));
    if (!r) {
        state_out_of_range();
    }
    PG_RETURN_INT64(*r);
}

// numeric_scale_merge(stored, inserted, deleted): NULL stored is unknown,
// NULL inserted/deleted are empty; NULL result: recompute the group.
Datum pgt_numeric_scale_merge(PG_FUNCTION_ARGS) {
    std::optional<int64_t> stored;
    if (!PG_ARGISNULL(0)) {
        stored = PG_GETARG_INT64(0);
    }
    int64 ins = PG_ARGISNULL(1) ? 0 : PG_GETARG_INT64(1);
    int64 del = PG_ARGISNULL(2) ? 0 : PG_GETARG_INT64(2);
    std::optional<int64_t> r = pgt::diff::merge_scale(stored, ins, del);
    if (!r) {
        PG_RETURN_NULL();
    }
    PG_RETURN_INT64(*r);
}
