// Lowering PostgreSQL's analysed Query to the operator tree (core/ir/tree):
// one node per operator of each query level, FROM first, then WHERE,
// grouping, HAVING, windows, the select list, DISTINCT, ORDER BY/LIMIT;
// derived tables, set operations and WITH queries as subtrees.
// Invariant: lowering only reads the query and the catalogs (it creates
// nothing and changes no node of q); expressions are deparsed by
// PostgreSQL's deparser, schema-qualified, where a level can be deparsed
// on its own (not inside LATERAL).
#pragma once

#include "core/ir/tree.hpp"
#include "pg/analyze/defining_query.hpp"

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace pgt::pg {

// The tree of an analysed (not rewritten) query, identities derived.
ir::Tree lower_query_tree(Query* q);

// The stream table's row identity as the tree's root proves it.
RowIdentityShape tree_identity(const ir::Tree& t);

}  // namespace pgt::pg
