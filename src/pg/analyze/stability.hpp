// Whether a defining query's value can change while no source row does: a
// VOLATILE function, a STABLE one that reads the clock, the catalog,
// statistics or the session, CURRENT_DATE and its kin. Incremental
// maintenance would keep values computed at different times; such a query
// is recomputed (FULL) only.
// Invariant: STABLE built-ins whose only instability is a setting pinned
// for the stream table (policy::stable_use) pass; nothing else that is
// not IMMUTABLE does.
#pragma once

#include <string>

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace pgt::pg {

// The first construct of q (views expanded, subqueries included) whose
// value can change while no source changes, named for an error
// ("the STABLE function now()"); "" when there is none. Runs the walk
// inside PostgreSQL frames.
std::string unstable_construct(Query* q);

}  // namespace pgt::pg
