// Range-table entries as the query rewrites of src/pg/analyze see them:
// who reads an entry, and an entry a rewrite left unreferenced.
// Called inside pg_call (they run PostgreSQL's tree walkers).
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace pgt::pg {

// Whether node reads entry varno of the query level it belongs to (a Query
// inside node is one level further down, as a subquery or LATERAL derived
// table is); whole_row_only: only as a whole row (x.*, x as a value).
bool reads_entry(Node* node, int varno, bool whole_row_only = false);

// Whether q reads its entry varno as a whole row, at any level.
bool read_as_whole_row(Query* q, int varno);

// A join entry nothing references any more, made an empty RTE_RESULT
// (which deparses to nothing): the caller deparses the query and analyses
// it again, which drops it.
void make_placeholder(Query* q, int rtindex);

}  // namespace pgt::pg
