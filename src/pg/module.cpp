// Module entry: PG_MODULE_MAGIC and _PG_init (settings, hooks, workers).
// Invariant: _PG_init only registers; it runs no SQL and allocates nothing
// that outlives a failed load.
#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "fmgr.h"

PG_MODULE_MAGIC;

PGDLLEXPORT void _PG_init(void);
}

void _PG_init(void) {
    pgt::pg::pgt_entry([] {});
}
