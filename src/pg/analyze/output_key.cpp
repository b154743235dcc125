// Unique keys of tables from PostgreSQL's metadata (primary key, NOT NULL
// unique indexes), and which of them a query selects. The row identity of
// a query is decided on its operator tree (core/ir/tree.cpp) from these.
// Invariant: only proofs, never guesses: an index that does not prove
// uniqueness of every row (partial, deferrable, on expressions or on
// nullable columns) is no key.
#include "pg/analyze/output_key.hpp"

#include <optional>

#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_index.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pg_list.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"
}

namespace pgt::pg {
namespace {

// Output column index of a non-junk target entry, counting only non-junk ones.
std::optional<int> output_index(Query* q, TargetEntry* wanted) {
    int i = 0;
    ListCell* lc;
    foreach (lc, q->targetList) {
        TargetEntry* te = lfirst_node(TargetEntry, lc);
        if (te->resjunk) {
            continue;
        }
        if (te == wanted) {
            return i;
        }
        i++;
    }
    return std::nullopt;
}

std::optional<int> output_of_var(Query* q, Index rtindex, AttrNumber attno) {
    ListCell* lc;
    foreach (lc, q->targetList) {
        TargetEntry* te = lfirst_node(TargetEntry, lc);
        Var* v = reinterpret_cast<Var*>(te->expr);
        if (!te->resjunk && IsA(v, Var) && v->varno == static_cast<int>(rtindex) &&
            v->varattno == attno && v->varlevelsup == 0) {
            return output_index(q, te);
        }
    }
    return std::nullopt;
}

// Key columns (attnums) of every usable unique index: the primary key first,
// then immediate, non-partial, plain-column unique indexes on NOT NULL columns.
// Written into a palloc'd List of IntLists (runs inside pg_call).
List* unique_keys_of(Oid relid) {
    List* keys = NIL;
    Relation rel = relation_open(relid, AccessShareLock);
    TupleDesc desc = RelationGetDescr(rel);
    Oid pk = RelationGetPrimaryKeyIndex(rel);
    List* indexes = RelationGetIndexList(rel);
    ListCell* lc;
    foreach (lc, indexes) {
        HeapTuple tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
        if (!HeapTupleIsValid(tup)) {
            continue;
        }
        Form_pg_index idx = (Form_pg_index)GETSTRUCT(tup);
        bool usable = idx->indisunique && idx->indimmediate && idx->indisvalid &&
                      heap_attisnull(tup, Anum_pg_index_indpred, nullptr) &&
                      heap_attisnull(tup, Anum_pg_index_indexprs, nullptr);
        List* cols = NIL;
        for (int k = 0; usable && k < idx->indnkeyatts; k++) {
            AttrNumber att = idx->indkey.values[k];
            usable = att > 0 && (idx->indisprimary || TupleDescAttr(desc, att - 1)->attnotnull);
            cols = lappend_int(cols, att);
        }
        if (usable) {
            keys = idx->indexrelid == pk ? lcons(cols, keys) : lappend(keys, cols);
        }
        ReleaseSysCache(tup);
    }
    relation_close(rel, AccessShareLock);
    return keys;
}

}  // namespace

std::vector<std::vector<int>> unique_keys(Oid relid) {
    std::vector<std::vector<int>> out;
    List* keys = pg_call([&] { return unique_keys_of(relid); });
    ListCell* kc;
    foreach (kc, keys) {
        out.emplace_back();
        ListCell* ac;
        foreach (ac, static_cast<List*>(lfirst(kc))) {
            out.back().push_back(lfirst_int(ac));
        }
    }
    return out;
}

namespace {}  // namespace

std::optional<SelectedKey> selected_unique_key(Query* q, Index rtindex) {
    RangeTblEntry* rte = rt_fetch(rtindex, q->rtable);
    List* keys = pg_call([&] { return unique_keys_of(rte->relid); });
    ListCell* kc;
    foreach (kc, keys) {
        SelectedKey key;
        ListCell* ac;
        foreach (ac, static_cast<List*>(lfirst(kc))) {
            std::optional<int> col = output_of_var(q, rtindex, lfirst_int(ac));
            if (!col) {
                break;
            }
            key.outputs.push_back(*col);
            key.attnums.push_back(lfirst_int(ac));
        }
        if (static_cast<int>(key.outputs.size()) == list_length(static_cast<List*>(lfirst(kc)))) {
            return key;
        }
    }
    return std::nullopt;
}

}  // namespace pgt::pg
