// Prefilters and kept copies of a join region's sources, and the column
// equalities tables are probed by.
// Invariant: a kept copy is proposed only for a table whose kept rows
// cannot go stale while the table stands still (immutable own conditions).
#include "pg/analyze/region_parts.hpp"

#include "pg/analyze/join_region.hpp"
#include "pg/analyze/grouping_sets.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/diff/apply.hpp"
#include "core/diff/join_region.hpp"
#include "core/diff/join_terms.hpp"
#include "core/ir/scan.hpp"
#include "pg/analyze/scan_shape.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"
#include "pg/common/type_facts.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/common/settings.hpp"

extern "C" {
#include "postgres.h"
#include "access/relation.h"
#include "access/htup_details.h"
#include "catalog/pg_index.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "catalog/pg_namespace.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "rewrite/rewriteManip.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

namespace pgt::pg::region {
namespace {

// Plain-column equalities between two tables, per source: what each table
// is probed by when a branch joins another table's images to it.
void collect_equalities(Node* quals, const std::vector<RegionTable>& tables, RegionShape& region) {
    for_each_column_equality(quals, [&](const Var* a, const Var* b) {
        for (const Var* v : {a, b}) {
            for (const RegionTable& t : tables) {
                if (t.sublink < 0 && t.path.size() == 1 &&
                    static_cast<Index>(v->varno) == t.path[0]) {
                    region.equi_attnums[t.source].push_back(v->varattno);
                }
            }
        }
    });
}

struct QualsCtx {
    const std::vector<RegionTable>* tables;
    RegionShape* region;
};

// WHERE and the ON of every inner join: conditions no output row escapes.
void filtering_quals(Node* n, std::vector<Node*>& out) {
    if (n == nullptr) {
        return;
    }
    if (IsA(n, FromExpr)) {
        out.push_back(castNode(FromExpr, n)->quals);
        ListCell* lc;
        foreach (lc, castNode(FromExpr, n)->fromlist) {
            filtering_quals(static_cast<Node*>(lfirst(lc)), out);
        }
    } else if (IsA(n, JoinExpr)) {
        JoinExpr* j = castNode(JoinExpr, n);
        if (j->jointype == JOIN_INNER) {
            out.push_back(j->quals);
        }
        filtering_quals(j->larg, out);
        filtering_quals(j->rarg, out);
    }
}

// The one table of the region that reads source s; nullptr when it is
// read more than once (a self-join).
const RegionTable* only_use(const std::vector<RegionTable>& tables, std::size_t s) {
    const RegionTable* only = nullptr;
    int uses = 0;
    for (const RegionTable& t : tables) {
        if (t.source == s) {
            uses++;
            only = &t;
        }
    }
    return uses == 1 ? only : nullptr;
}

// Whether a condition of `quals` over table `varno` alone calls a mutable
// function. Runs under pg_call.
bool own_conditions_mutable(const std::vector<Node*>& quals, int varno) {
    for (Node* qual : quals) {
        List* conj = make_ands_implicit(reinterpret_cast<Expr*>(qual));
        ListCell* lc;
        foreach (lc, conj) {
            Node* c = static_cast<Node*>(lfirst(lc));
            Bitmapset* used = pull_varnos(nullptr, c);
            if (bms_is_member(varno, used) && bms_num_members(used) == 1 &&
                contain_mutable_functions(c)) {
                return true;
            }
        }
    }
    return false;
}

}  // namespace

bool quals_walker(Node* n, void* ctx);

bool quals_walker(Node* n, void* ctx) {
    if (n == nullptr) {
        return false;
    }
    auto* c = static_cast<QualsCtx*>(ctx);
    if (IsA(n, FromExpr)) {
        collect_equalities(castNode(FromExpr, n)->quals, *c->tables, *c->region);
        ListCell* lc;
        foreach (lc, castNode(FromExpr, n)->fromlist) {
            (void)quals_walker(static_cast<Node*>(lfirst(lc)), ctx);
        }
    } else if (IsA(n, JoinExpr)) {
        JoinExpr* j = castNode(JoinExpr, n);
        collect_equalities(j->quals, *c->tables, *c->region);
        (void)quals_walker(j->larg, ctx);
        (void)quals_walker(j->rarg, ctx);
    }
    return false;
}

// Per source, the conditions its change images must meet to reach any
// output row (tables read once at the top level only).
std::vector<std::string> region_prefilters(Query* q, const std::vector<RegionTable>& tables,
                                           const RegionShape& region,
                                           const std::vector<SubquerySite>& sublinks) {
    std::vector<std::string> out(region.relids.size());
    for (std::size_t s = 0; s < region.relids.size(); s++) {
        const RegionTable* only = only_use(tables, s);
        if (only == nullptr) {
            continue;
        }
        // A table of a WHERE subquery: that subquery's own conditions; of
        // a derived table (a plain inner join): the derived table's (a row
        // failing them is in none of its rows).
        Query* level =
            only->sublink < 0
                ? q
                : castNode(Query,
                           sublinks.at(static_cast<std::size_t>(only->sublink)).link->subselect);
        for (std::size_t d = 0; d + 1 < only->path.size(); d++) {
            level = rt_fetch(only->path[d], level->rtable)->subquery;
        }
        std::vector<Node*> quals;
        filtering_quals(reinterpret_cast<Node*>(level->jointree), quals);
        for (Node* qual : quals) {
            std::string p = image_prefilter(qual, only->path.back(), region.relids[s]);
            if (!p.empty()) {
                out[s] += (out[s].empty() ? "" : " AND ") + p;
            }
        }
    }
    return out;
}

// Per source: the kept copy it may have (ir::KeptCopy without a table;
// `from` "" for none). A candidate is a table read once, in the FROM of
// a query without outer joins, grouping sets or subqueries other than
// semi-joins (SemiJoin) (or of a
// derived table of it, a plain inner join), whose
// prefilter is not empty and whose own conditions are all immutable (the
// copy must not go stale while the table stands still), and which another
// table is probed by on a column with a btree equality (the copy's index).
std::vector<ir::KeptCopy> kept_candidates(Query* q, const std::vector<RegionTable>& tables,
                                          const RegionShape& region, bool plain) {
    std::vector<ir::KeptCopy> out(region.relids.size());
    if (!plain || g_kept_copy_fraction <= 0) {
        return out;
    }
    for (std::size_t s = 0; s < region.relids.size(); s++) {
        const RegionTable* only = only_use(tables, s);
        if (only == nullptr || only->sublink >= 0 || s >= region.prefilters.size() ||
            region.prefilters[s].empty()) {
            continue;
        }
        // Its level: the query, or the (plain inner join) derived table
        // holding it; its own conditions are that level's.
        Query* level = q;
        for (std::size_t d = 0; d + 1 < only->path.size(); d++) {
            level = rt_fetch(only->path[d], level->rtable)->subquery;
        }
        std::vector<Node*> quals;
        filtering_quals(reinterpret_cast<Node*>(level->jointree), quals);
        Index rtindex = only->path.back();
        const RangeTblEntry* rte = rt_fetch(rtindex, level->rtable);
        bool mutable_conditions =
            pg_call([&] { return own_conditions_mutable(quals, static_cast<int>(rtindex)); });
        if (mutable_conditions || rte->rtekind != RTE_RELATION ||
            (rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_PARTITIONED_TABLE)) {
            continue;
        }
        // What it is probed by: at the top level, region.equi_attnums; in a
        // derived table, the equalities of that level.
        std::vector<int> equi = region.equi_attnums[s];
        for (std::size_t q_i = 0; only->path.size() > 1 && q_i < quals.size(); q_i++) {
            pg_call([&] {
                for_each_column_equality(quals[q_i], [&](const Var* a, const Var* b) {
                    for (const Var* v : {a, b}) {
                        if (v->varno == static_cast<int>(rtindex) && v->varlevelsup == 0) {
                            equi.push_back(v->varattno);
                        }
                    }
                });
            });
        }
        for (int attnum : equi) {
            const char* equal = pg_call([&] {
                return btree_equality(get_atttype(rte->relid, static_cast<AttrNumber>(attnum)));
            });
            if (*equal == '\0') {
                continue;
            }
            std::string column = pg_call([&] {
                return quote_identifier(
                    get_attname(rte->relid, static_cast<AttrNumber>(attnum), false));
            });
            // Every such column is indexed (a probe by any of them); the
            // first one also finds the rows a change deletes.
            if (out[s].probe_column.empty()) {
                out[s].probe_column = column;
                out[s].probe_equal = equal;
                out[s].from = (rte->inh ? "" : "ONLY ") + quoted_relation_name(rte->relid);
            }
            if (std::find(out[s].index_columns.begin(), out[s].index_columns.end(), column) ==
                out[s].index_columns.end()) {
                out[s].index_columns.push_back(column);
            }
        }
    }
    return out;
}

void collect_equi_attnums(Query* q, const std::vector<RegionTable>& tables, RegionShape& region) {
    region.equi_attnums.resize(region.relids.size());
    QualsCtx ctx{&tables, &region};
    pg_call([&] { (void)quals_walker(reinterpret_cast<Node*>(q->jointree), &ctx); });
}

}  // namespace pgt::pg::region
