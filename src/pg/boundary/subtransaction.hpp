// Running C++ code inside an internal subtransaction (what a PL/pgSQL
// BEGIN ... EXCEPTION block does): everything it did is undone when it
// throws, and the caller decides what to do with the error.
// Invariant: memory context and resource owner are the caller's again
// afterwards, whether fn returned or threw; fn's pallocs live in the
// caller's memory context (so an error copied there outlives the rollback).
#pragma once

#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
}

namespace pgt::pg {

template <typename F>
auto in_subtransaction(F&& fn) -> decltype(fn()) {
    MemoryContext cxt = CurrentMemoryContext;
    ResourceOwner owner = CurrentResourceOwner;
    auto back = [&] {
        MemoryContextSwitchTo(cxt);
        CurrentResourceOwner = owner;
    };
    pg_call([] { BeginInternalSubTransaction(nullptr); });
    MemoryContextSwitchTo(cxt);
    try {
        auto result = fn();
        pg_call([] { ReleaseCurrentSubTransaction(); });
        back();
        return result;
    } catch (...) {
        pg_call([] { RollbackAndReleaseCurrentSubTransaction(); });
        back();
        throw;
    }
}

}  // namespace pgt::pg
