// Names of existing relations, for generated SQL and for messages.
// Invariant: the SQL form is always quoted and schema-qualified.
#pragma once

#include <string>
#include <vector>

extern "C" {
#include "postgres.h"
#include "access/attnum.h"
}

namespace pgt::pg {

// schema.name of a relation with identifiers quoted as needed, for SQL.
std::string quoted_relation_name(Oid relid);

// "schema.name" of a relation, for messages (PostgreSQL's style).
std::string relation_display_name(Oid relid);

// The role owning a relation.
Oid relation_owner(Oid relid);

// Every live (not dropped) column of relid, in attnum order.
std::vector<int> live_attnums(Oid relid);

// Whether a valid index of the relation has the column (by name, or by
// attnum) as its first key: a filter on it can be an index scan.
bool column_leads_index(Oid relid, AttrNumber attnum);
bool column_leads_index(Oid relid, const std::string& column);

}  // namespace pgt::pg
