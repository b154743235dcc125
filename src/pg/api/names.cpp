// Name resolution and ownership checks shared by the SQL API.
// Invariant: every lookup goes through pg_call; errors use PostgreSQL's
// own SQLSTATEs for missing, existing and wrong-kind relations.
#include "pg/api/names.hpp"

#include "core/error.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/catalog/catalog_schema.hpp"
#include "pg/common/relation_names.hpp"

extern "C" {
#include "postgres.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/namespace.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_type.h"
#include "nodes/value.h"
#include "miscadmin.h"
#include "parser/scansup.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
}

namespace pgt::pg {

std::string NewRelationName::quoted() const {
    const char* q =
        pg_call([&] { return quote_qualified_identifier(schema.c_str(), relname.c_str()); });
    return q;
}

Oid NewRelationName::lookup_oid() const {
    Oid relid = pg_call([&] { return get_relname_relid(relname.c_str(), nsp); });
    if (relid == InvalidOid) {
        throw pgt::Error("XX000", "stream table storage " + quoted() + " was not created");
    }
    return relid;
}

namespace {

// The parts of a qualified name as parse_ident reads them (strict): an
// unquoted part is an identifier (a keyword is one: 'select' names the
// relation "select"), a quoted one is taken as written; each truncated to
// NAMEDATALEN - 1 bytes, as the parser does.
List* name_parts(const std::string& name) {
    return pg_call([&] {
        Datum parsed =
            DirectFunctionCall2(parse_ident, CStringGetTextDatum(name.c_str()), BoolGetDatum(true));
        Datum* items = nullptr;
        bool* nulls = nullptr;
        int n = 0;
        deconstruct_array(DatumGetArrayTypeP(parsed), TEXTOID, -1, false, TYPALIGN_INT, &items,
                          &nulls, &n);
        List* parts = NIL;
        for (int i = 0; i < n; i++) {
            char* part = TextDatumGetCString(items[i]);
            truncate_identifier(part, static_cast<int>(strlen(part)), false);
            parts = lappend(parts, makeString(part));
        }
        return parts;
    });
}

RangeVar* parse_name(const std::string& name) {
    List* parts = nullptr;
    try {
        parts = name.empty() ? NIL : name_parts(name);
    } catch (const PgError& e) {
        if (e.sqlstate() != "22023") {
            throw;
        }
    }
    if (parts == NIL) {
        throw pgt::Error("42602", "invalid stream table name " + sql_literal(name),
                         "Unquoted, each part of a name must be an identifier: a letter or "
                         "underscore, then letters, digits, underscores or dollar signs.",
                         "Double-quote a part that is not an identifier, as in SQL (for "
                         "example '\"123\"' or 'myschema.\"my table\"').");
    }
    return pg_call([&] { return makeRangeVarFromNameList(parts); });
}

}  // namespace

NewRelationName resolve_new_relation_name(const std::string& name) {
    RangeVar* rv = parse_name(name);
    NewRelationName n;
    n.nsp = pg_call([&] { return RangeVarGetCreationNamespace(rv); });
    n.schema = pg_call([&] { return get_namespace_name(n.nsp); });
    n.relname = rv->relname;
    if (pg_call([&] { return isAnyTempNamespace(n.nsp); })) {
        throw pgt::Error("0A000", "stream tables cannot be temporary", "",
                         "Create the stream table in a regular schema.");
    }
    if (n.schema == pgt::catalog::kSchema || n.schema == pgt::catalog::kChangesSchema) {
        throw pgt::Error("42939", "schema \"" + n.schema + "\" is reserved for pg_trickle", "",
                         "Create the stream table in another schema.");
    }
    if (pg_call([&] { return get_relname_relid(n.relname.c_str(), n.nsp); }) != InvalidOid) {
        throw pgt::Error("42P07", "relation \"" + n.schema + "." + n.relname + "\" already exists",
                         "", "Choose another name, or drop the existing relation first.");
    }
    return n;
}

NewRelationName existing_relation_name(Oid relid) {
    NewRelationName n;
    n.nsp = pg_call([&] { return get_rel_namespace(relid); });
    n.schema = pg_call([&] { return get_namespace_name(n.nsp); });
    n.relname = pg_call([&] { return get_rel_name(relid); });
    return n;
}

Oid relation_named(const std::string& name) {
    RangeVar* rv = parse_name(name);
    return pg_call([&] { return RangeVarGetRelid(rv, NoLock, true); });
}

catalog::StreamTableRow resolve_stream_table(Spi& spi, const std::string& name, bool must_own) {
    RangeVar* rv = parse_name(name);
    Oid relid = pg_call([&] { return RangeVarGetRelid(rv, NoLock, false); });
    std::optional<catalog::StreamTableRow> row = catalog::find_by_relid(spi, relid);
    if (!row) {
        throw pgt::Error("42809", "\"" + name + "\" is not a stream table", "",
                         "pgtrickle.pgt_status() lists the stream tables.");
    }
    if (must_own && !pg_call([&] { return pg_class_ownercheck(relid, GetUserId()); })) {
        throw pgt::Error("42501",
                         "must be owner of stream table " + existing_relation_name(relid).quoted());
    }
    return *row;
}

}  // namespace pgt::pg
