// Names of relations for generated SQL (quoted) and for messages.
// Invariant: SQL always gets quote_qualified_identifier's output.
#include "pg/common/relation_names.hpp"

#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "utils/builtins.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

namespace pgt::pg {

namespace {

std::string relation_name(Oid relid, bool quoted) {
    char* s = pg_call([&] {
        char* nsp = get_namespace_name(get_rel_namespace(relid));
        char* rel = get_rel_name(relid);
        if (nsp == nullptr || rel == nullptr) {
            elog(ERROR, "relation %u does not exist", relid);
        }
        return quoted ? quote_qualified_identifier(nsp, rel) : psprintf("\"%s.%s\"", nsp, rel);
    });
    return s;
}

}  // namespace

std::string quoted_relation_name(Oid relid) {
    return relation_name(relid, true);
}

std::string relation_display_name(Oid relid) {
    return relation_name(relid, false);
}

Oid relation_owner(Oid relid) {
    return pg_call([&] {
        HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
        if (!HeapTupleIsValid(tup)) {
            elog(ERROR, "cache lookup failed for relation %u", relid);
        }
        Oid owner = ((Form_pg_class)GETSTRUCT(tup))->relowner;
        ReleaseSysCache(tup);
        return owner;
    });
}

std::vector<int> live_attnums(Oid relid) {
    std::vector<int> out;
    pg_call([&] {
        Relation rel = relation_open(relid, AccessShareLock);
        TupleDesc desc = RelationGetDescr(rel);
        for (int a = 1; a <= desc->natts; a++) {
            if (!TupleDescAttr(desc, a - 1)->attisdropped) {
                out.push_back(a);
            }
        }
        relation_close(rel, AccessShareLock);
    });
    return out;
}

bool column_leads_index(Oid relid, AttrNumber attnum) {
    if (attnum < 1) {
        return false;
    }
    return pg_call([&] {
        Relation rel = relation_open(relid, AccessShareLock);
        List* indexes = RelationGetIndexList(rel);
        bool led = false;
        ListCell* lc;
        foreach (lc, indexes) {
            HeapTuple tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
            if (HeapTupleIsValid(tup)) {
                auto* ix = reinterpret_cast<Form_pg_index>(GETSTRUCT(tup));
                led = led ||
                      (ix->indisvalid && ix->indnkeyatts > 0 && ix->indkey.values[0] == attnum);
                ReleaseSysCache(tup);
            }
        }
        relation_close(rel, AccessShareLock);
        return led;
    });
}

bool column_leads_index(Oid relid, const std::string& column) {
    AttrNumber attnum = pg_call([&] { return get_attnum(relid, column.c_str()); });
    return column_leads_index(relid, attnum);
}

}  // namespace pgt::pg
