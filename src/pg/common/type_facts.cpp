// Facts about PostgreSQL types that generated SQL relies on: how values
// compare and look, and which operators serve them.
// Invariant: each runs under pg_call, reads caches only, and creates nothing.
#include "pg/common/type_facts.hpp"

#include "pg/boundary/boundary.hpp"
#include "pg/common/quote.hpp"

#include <algorithm>
#include <tuple>

extern "C" {
#include "postgres.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "utils/rel.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

namespace pgt::pg {

// Whether equal values of the type always look the same (MIN/MAX keep the
// stored extreme on a tie only then: 1.0 = 1.00 and 0 = -0 do not). A
// char(n) value is padded to n, so 'a' and 'a ' (equal) are stored alike;
// unbounded bpchar keeps the spaces it was given. Runs under pg_call.
bool ties_look_alike(Oid type, int32 typmod, Oid collation) {
    switch (type) {
        case INT2OID:
        case INT4OID:
        case INT8OID:
        case OIDOID:
        case BOOLOID:
        case DATEOID:
        case TIMESTAMPOID:
        case TIMESTAMPTZOID:
            return true;
        case BPCHAROID:
            if (typmod < 0) {
                return false;
            }
            [[fallthrough]];
        case TEXTOID:
        case VARCHAROID:
            return OidIsValid(collation) && get_collation_isdeterministic(collation);
        default:
            return false;
    }
}

// The query is filtered on a key with `x OPERATOR(pg_catalog.=) ANY
// (ARRAY(SELECT DISTINCT ...))`: the type needs that equality, an array
// type and a hash or sort support. Returns the type's name when it falls
// short (the key then narrows the region through the identity only).
std::optional<std::string> unmatchable_type(Oid type) {
    bool ok = pg_call([&] {
        TypeCacheEntry* tc =
            lookup_type_cache(type, TYPECACHE_EQ_OPR | TYPECACHE_HASH_PROC | TYPECACHE_CMP_PROC);
        bool in_catalog = false;
        if (OidIsValid(tc->eq_opr)) {
            HeapTuple tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(tc->eq_opr));
            if (HeapTupleIsValid(tup)) {
                in_catalog =
                    ((Form_pg_operator)GETSTRUCT(tup))->oprnamespace == PG_CATALOG_NAMESPACE;
                ReleaseSysCache(tup);
            }
        }
        return in_catalog && OidIsValid(get_array_type(getBaseType(type))) &&
               (OidIsValid(tc->hash_proc) || OidIsValid(tc->cmp_proc));
    });
    if (ok) {
        return std::nullopt;
    }
    return std::string(pg_call([&] { return format_type_be(type); }));
}

// The equality of type's default btree opclass, printed schema-qualified
// ("OPERATOR(pg_catalog.=)"); "" when the type has none. Runs under pg_call.
const char* btree_equality(Oid type) {
    TypeCacheEntry* tc = lookup_type_cache(type, TYPECACHE_EQ_OPR | TYPECACHE_BTREE_OPFAMILY);
    if (!OidIsValid(tc->eq_opr) || !OidIsValid(tc->btree_opf)) {
        return "";
    }
    HeapTuple tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(tc->eq_opr));
    if (!HeapTupleIsValid(tup)) {
        return "";
    }
    auto* op = reinterpret_cast<Form_pg_operator>(GETSTRUCT(tup));
    char* printed =
        psprintf("OPERATOR(%s.%s)", quote_identifier(get_namespace_name(op->oprnamespace)),
                 NameStr(op->oprname));
    ReleaseSysCache(tup);
    return printed;
}

// The given live columns of a table as its change images carry them: how
// an update is told to leave each one's value as it was (ir::Sameness).
std::vector<ir::SourceColumn> source_columns(Oid relid, const std::vector<int>& attnums) {
    std::vector<ir::SourceColumn> out;
    std::vector<std::tuple<int, char*, ir::Sameness>> cols;
    pg_call([&] {
        Relation rel = relation_open(relid, AccessShareLock);
        TupleDesc desc = RelationGetDescr(rel);
        for (int i = 0; i < desc->natts; i++) {
            Form_pg_attribute att = TupleDescAttr(desc, i);
            if (att->attisdropped ||
                std::find(attnums.begin(), attnums.end(), att->attnum) == attnums.end()) {
                continue;
            }
            // The buffer holds the base type (see buffer_columns).
            int32 typmod = att->atttypmod;
            Oid base = getBaseTypeAndTypmod(att->atttypid, &typmod);
            ir::Sameness same = ir::Sameness::kImage;
            if (ties_look_alike(base, typmod, att->attcollation)) {
                same = ir::Sameness::kEqual;
            } else if (base == NUMERICOID || base == FLOAT4OID || base == FLOAT8OID ||
                       base == BPCHAROID || base == TEXTOID || base == VARCHAROID) {
                same = ir::Sameness::kEqualThenImage;
            }
            cols.emplace_back(att->attnum, pstrdup(quote_identifier(NameStr(att->attname))), same);
        }
        relation_close(rel, AccessShareLock);
    });
    for (auto& [attnum, name, same] : cols) {
        out.push_back({attnum, name, same});
    }
    return out;
}

}  // namespace pgt::pg
