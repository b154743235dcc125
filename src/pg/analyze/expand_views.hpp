// Views read by the query expanded into the derived tables they stand for,
// as PostgreSQL's rewriter expands them before planning, so the query is
// maintained over the views' tables (a dbt project's staging models are
// views):
//
//   CREATE VIEW stg_orders AS SELECT id AS order_id, amt AS amount
//                             FROM raw_orders WHERE NOT deleted;
//   SELECT sum(amount) FROM stg_orders
//   =>  SELECT sum(amount) FROM (SELECT id AS order_id, amt AS amount
//                                FROM raw_orders WHERE NOT deleted) stg_orders
//
// Invariant: only when reading the tables directly, as the stream table's
// owner, gives what reading the views gives: no view is a security barrier
// (whose conditions must run first); no table reached has row-level
// security enabled, so every role reads the same rows of it; the caller
// may SELECT every table reached (the refresh reads them as it); and the
// role PostgreSQL checks each view and table as (the caller, or the owner
// of the view whose query reads it unless that view is security_invoker)
// may SELECT it, so a query that fails as written fails expanded too. The stream table keeps the
// query as written (pgt_stream_tables. query_tree): a reinitialisation, which CREATE OR REPLACE
// VIEW of a view read marks, expands the views' current definitions.
#pragma once

#include <vector>

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace pgt::pg {

// Expands every view q reads, at every level, in place, and returns the
// views expanded (none: q is unchanged). The result is to be deparsed and
// analysed again.
std::vector<Oid> expand_views(Query* q);

}  // namespace pgt::pg
