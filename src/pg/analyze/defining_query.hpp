// The defining query of a stream table, through PostgreSQL's own parser,
// analyzer and rewriter: validated, deparsed schema-qualified, with its
// output columns and source relations.
// Invariant: analyze_defining_query() either returns a query every later
// step can run, or throws; it creates nothing.
#pragma once

#include <string>
#include <vector>

extern "C" {
#include "postgres.h"
}

namespace pgt::pg {

struct OutputColumn {
    std::string name;
    Oid type;
    int32 typmod;
    Oid collation;
};

struct SourceRelation {
    Oid relid;
    char relkind;
};

// How rows of the stream table are identified (docs/row-identity-v2.md).
struct RowIdentityShape {
    std::string domain;            // scan_key | group_key | synthetic | keyless_row
    std::vector<int> key_columns;  // indexes into AnalyzedQuery::columns
};

struct AnalyzedQuery {
    std::string original;                 // as the user wrote it
    std::string effective;                // deparsed, every object schema-qualified
    std::vector<OutputColumn> columns;    // user-visible output columns, in order
    std::vector<SourceRelation> sources;  // views and base relations read, no duplicates
    RowIdentityShape identity;            // the proven key, or keyless_row of every column
};

AnalyzedQuery analyze_defining_query(const std::string& sql);

}  // namespace pgt::pg
