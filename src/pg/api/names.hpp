// Stream-table names as users pass them ('s.t', '"Mixed Case"."my table"')
// resolved against the catalogs, with the checks every API call shares.
// Invariant: names are parsed by PostgreSQL's parse_ident (strict) and
// quoted with quote_identifier when put back into SQL.
#pragma once

#include <string>
#include <vector>

#include "pg/analyze/defining_query.hpp"
#include "pg/boundary/spi.hpp"
#include "pg/catalog/catalog.hpp"
#include "pg/common/quote.hpp"

extern "C" {
#include "postgres.h"
}

namespace pgt::pg {

struct NewRelationName {
    Oid nsp;
    std::string schema;
    std::string relname;
    std::string quoted() const;  // "schema"."relname", quoted as needed
    Oid lookup_oid() const;      // the relation's OID once it exists
};

// A name for a new stream table: schema exists, is not temporary or ours,
// and no relation has the name yet (42P07).
NewRelationName resolve_new_relation_name(const std::string& name);

// Schema and name of an existing relation.
NewRelationName existing_relation_name(Oid relid);

// The relation a stream-table name (read as parse_ident reads it; 42602
// when it is not a name) resolves to in the search path, InvalidOid when
// none.
Oid relation_named(const std::string& name);

// The stream table called name: 42P01 if no relation, 42809 if the relation
// is not a stream table, 42501 if must_own and the caller does not own it.
catalog::StreamTableRow resolve_stream_table(Spi& spi, const std::string& name, bool must_own);

}  // namespace pgt::pg
