// Row identity shape of a defining query, from PostgreSQL's metadata:
//   SELECT ... FROM t (one table, no set ops/SRFs/aggregates)
//       → scan_key if t's primary key (or a NOT NULL unique index) is output
//   SELECT g1, g2, agg(...) ... GROUP BY g1, g2   → group_key (g1, g2)
//   SELECT agg(...) ... (no GROUP BY)             → synthetic singleton
//   ... GROUP BY ROLLUP (g1, g2) (distinct sets)  → group_key (g1, g2, __pgt_gset)
//   SELECT DISTINCT ON (k) k, ...                  → group_key (k)
//   anything else                                  → keyless_row (all columns)
// Invariant: only proofs, never guesses: an unproven key is keyless_row.
#include "pg/analyze/output_key.hpp"

#include <optional>

#include "pg/analyze/grouping_sets.hpp"
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

std::optional<RowIdentityShape> scan_key(Query* q) {
    if (q->hasAggs || q->groupClause != NIL || q->setOperations != nullptr || q->hasTargetSRFs ||
        q->hasDistinctOn || list_length(q->jointree->fromlist) != 1 ||
        !IsA(linitial(q->jointree->fromlist), RangeTblRef)) {
        return std::nullopt;
    }
    Index rtindex = linitial_node(RangeTblRef, q->jointree->fromlist)->rtindex;
    RangeTblEntry* rte = rt_fetch(rtindex, q->rtable);
    if (rte->rtekind != RTE_RELATION || rte->tablesample != nullptr) {
        return std::nullopt;
    }
    List* keys = pg_call([&] { return unique_keys_of(rte->relid); });
    ListCell* kc;
    foreach (kc, keys) {
        RowIdentityShape shape{"scan_key", {}};
        ListCell* ac;
        foreach (ac, static_cast<List*>(lfirst(kc))) {
            std::optional<int> col = output_of_var(q, rtindex, lfirst_int(ac));
            if (!col) {
                break;
            }
            shape.key_columns.push_back(*col);
        }
        if (static_cast<int>(shape.key_columns.size()) ==
            list_length(static_cast<List*>(lfirst(kc)))) {
            return shape;
        }
    }
    return std::nullopt;
}

// group_key over the output columns of a GROUP BY or DISTINCT ON clause;
// nothing when one of its expressions is not in the select list.
std::optional<RowIdentityShape> clause_key(Query* q, List* clause) {
    RowIdentityShape shape{"group_key", {}};
    ListCell* lc;
    foreach (lc, clause) {
        SortGroupClause* sgc = lfirst_node(SortGroupClause, lc);
        TargetEntry* te = pg_call([&] { return get_sortgroupclause_tle(sgc, q->targetList); });
        std::optional<int> col = te->resjunk ? std::nullopt : output_index(q, te);
        if (!col) {
            return std::nullopt;
        }
        shape.key_columns.push_back(*col);
    }
    return shape;
}

std::optional<RowIdentityShape> group_key(Query* q, size_t ncols) {
    if (q->setOperations != nullptr || q->hasTargetSRFs ||
        (!q->hasAggs && q->groupClause == NIL && q->groupingSets == NIL)) {
        return std::nullopt;
    }
    if (q->groupingSets != NIL) {
        // The grouping expressions and the hidden GROUPING() column (not
        // under DISTINCT: the hidden column would take part in it).
        if (q->distinctClause != NIL ||
            grouping_sets_of(q, kMaxGroupingSets).verdict != GroupingSetsVerdict::kKeyed) {
            return std::nullopt;
        }
        std::optional<RowIdentityShape> shape = clause_key(q, q->groupClause);
        if (shape) {
            shape->key_columns.push_back(static_cast<int>(ncols));
        }
        return shape;
    }
    if (q->groupClause == NIL) {
        return RowIdentityShape{"synthetic", {}};  // one row at most
    }
    return clause_key(q, q->groupClause);  // nothing when a grouping expression is not output
}

// SELECT DISTINCT <exprs> FROM ... (no DISTINCT ON, no grouping): the rows
// are unique as a whole, so every output column together is the key.
std::optional<RowIdentityShape> distinct_key(Query* q, size_t ncols) {
    if (q->distinctClause == NIL || q->hasDistinctOn || q->hasAggs || q->groupClause != NIL ||
        q->setOperations != nullptr || q->hasTargetSRFs || ncols == 0) {
        return std::nullopt;
    }
    RowIdentityShape shape{"group_key", {}};
    for (int i = 0; i < static_cast<int>(ncols); i++) {
        shape.key_columns.push_back(i);
    }
    return shape;
}

// SELECT DISTINCT ON (<exprs>) ...: one row per value of the DISTINCT ON
// expressions, so they are the key when every one of them is selected.
std::optional<RowIdentityShape> distinct_on_key(Query* q) {
    if (!q->hasDistinctOn || q->hasAggs || q->groupClause != NIL || q->setOperations != nullptr ||
        q->hasTargetSRFs) {
        return std::nullopt;
    }
    return clause_key(q, q->distinctClause);  // nothing when one is not output
}

}  // namespace

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

RowIdentityShape derive_row_identity(Query* q, const std::vector<OutputColumn>& cols) {
    if (auto s = scan_key(q)) {
        return *s;
    }
    if (auto g = group_key(q, cols.size())) {
        return *g;
    }
    if (auto d = distinct_key(q, cols.size())) {
        return *d;
    }
    if (auto d = distinct_on_key(q)) {
        return *d;
    }
    RowIdentityShape keyless{"keyless_row", {}};
    for (int i = 0; i < static_cast<int>(cols.size()); i++) {
        keyless.key_columns.push_back(i);
    }
    return keyless;
}

}  // namespace pgt::pg
