// Names of existing relations, for generated SQL and for messages.
// Invariant: the SQL form is always quoted and schema-qualified.
#pragma once

#include <string>

extern "C" {
#include "postgres.h"
}

namespace pgt::pg {

// schema.name of a relation with identifiers quoted as needed, for SQL.
std::string quoted_relation_name(Oid relid);

// "schema.name" of a relation, for messages (PostgreSQL's style).
std::string relation_display_name(Oid relid);

// The role owning a relation.
Oid relation_owner(Oid relid);

}  // namespace pgt::pg
