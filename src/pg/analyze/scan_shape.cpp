// Scan/filter/project recognition and expression deparsing for DIFFERENTIAL.
// Invariant: volatility is judged on the analyzed expressions (a VOLATILE
// function blocks, a STABLE one is reported), never on the query text.
#include "pg/analyze/scan_shape.hpp"
#include "pg/analyze/derived_aggregate.hpp"
#include "pg/analyze/union_all.hpp"

#include "core/diff/aggregate.hpp"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ir/scan.hpp"
#include "pg/analyze/grouping_sets.hpp"
#include "pg/analyze/join_region.hpp"
#include "pg/analyze/output_key.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/common/type_facts.hpp"
#include "pg/boundary/guc.hpp"
#include "pg/common/settings.hpp"

extern "C" {
#include "postgres.h"
#include "catalog/heap.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "access/relation.h"
#include "access/sysattr.h"
#include "nodes/bitmapset.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/numeric.h"
#include "utils/ruleutils.h"
#include "rewrite/rewriteManip.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
}

namespace pgt::pg {
namespace {

struct BlockRule {
    bool (*applies)(const Query*);
    const char* construct;
};

// Query-level constructs DIFFERENTIAL does not maintain yet, in report order.
constexpr BlockRule kBlockers[] = {
    {[](const Query* q) { return q->cteList != NIL; }, kWithQueries},
    {[](const Query* q) { return q->hasWindowFuncs; }, "window functions"},
    {[](const Query* q) {
         return q->distinctClause != NIL && (q->hasAggs || q->groupClause != NIL);
     },
     "DISTINCT over aggregates or GROUP BY"},
    {[](const Query* q) { return q->hasTargetSRFs; }, "set-returning functions in the select list"},
    {[](const Query* q) {
         return q->hasSubLinks && !subqueries_in_supported_places(const_cast<Query*>(q));
     },
     "a subquery in a join condition"},
    {[](const Query* q) { return q->limitCount != nullptr || q->limitOffset != nullptr; },
     "LIMIT or OFFSET"},
};

}  // namespace

const char* relation_blocker(const RangeTblEntry* rte) {
    if (rte->rtekind != RTE_RELATION) {
        return "a subquery or function in FROM";
    }
    switch (rte->relkind) {
        case RELKIND_RELATION:
        case RELKIND_PARTITIONED_TABLE:
            return nullptr;
        case RELKIND_VIEW:
            // (Other views are expanded: expand_views.hpp.)
            return "a view owned by another role (not security_invoker), a security-barrier "
                   "view, or a view over a table with row-level security or that the owner may "
                   "not SELECT";
        case RELKIND_MATVIEW:
            return "a materialized view as source";
        case RELKIND_FOREIGN_TABLE:
            return "a foreign table as source";
        default:
            return "a relation of an unsupported kind as source";
    }
}

namespace {

struct FuncScan {
    List* volatile_names;
};

bool note_function(Oid func, void* ctx) {
    auto* scan = static_cast<FuncScan*>(ctx);
    char v = func_volatile(func);
    if (v == PROVOLATILE_VOLATILE) {
        scan->volatile_names = lappend(scan->volatile_names, get_func_name(func));
    }
    return false;
}

bool function_walker(Node* node, void* ctx) {
    if (node == nullptr) {
        return false;
    }
    if (IsA(node, Query)) {  // a subquery in WHERE (EXISTS, IN)
        return query_tree_walker(
            castNode(Query, node),
            reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(function_walker)), ctx, 0);
    }
    (void)check_functions_in_node(node, note_function, ctx);
    return expression_tree_walker(
        node, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(function_walker)), ctx);
}

std::vector<std::string> names_of(List* names) {
    std::vector<std::string> out;
    ListCell* lc;
    foreach (lc, names) {
        out.emplace_back(static_cast<char*>(lfirst(lc)));
    }
    return out;
}

}  // namespace

void for_each_binary_conjunct(Node* quals, const std::function<void(OpExpr*, Node*, Node*)>& fn) {
    ListCell* lc;
    foreach (lc, make_ands_implicit(reinterpret_cast<Expr*>(quals))) {
        Node* n = static_cast<Node*>(lfirst(lc));
        if (IsA(n, OpExpr) && list_length(castNode(OpExpr, n)->args) == 2) {
            OpExpr* op = castNode(OpExpr, n);
            fn(op, static_cast<Node*>(linitial(op->args)), static_cast<Node*>(lsecond(op->args)));
        }
    }
}

void for_each_column_equality(Node* quals, const std::function<void(const Var*, const Var*)>& fn) {
    for_each_binary_conjunct(quals, [&](OpExpr* op, Node* a, Node* b) {
        if (IsA(a, Var) && IsA(b, Var) && op_mergejoinable(op->opno, exprType(a)) &&
            castNode(Var, a)->varno != castNode(Var, b)->varno && castNode(Var, a)->varattno > 0 &&
            castNode(Var, b)->varattno > 0) {
            fn(castNode(Var, a), castNode(Var, b));
        }
    });
}

namespace {

struct ColumnsRead {
    Index varno;
    Index levels;  // subqueries entered
    Bitmapset* cols;
    bool row_value = false;  // the whole row read other than by IS [NOT] NULL
};

// Columns of ctx->varno read at the starting level, also from inside
// subqueries (correlated references to it).
bool columns_read_walker(Node* node, void* ctx) {
    if (node == nullptr) {
        return false;
    }
    auto* c = static_cast<ColumnsRead*>(ctx);
    auto read = [c](Node* n) {
        Var* v = IsA(n, Var) ? castNode(Var, n) : nullptr;
        if (v == nullptr || v->varlevelsup != c->levels ||
            static_cast<Index>(v->varno) != c->varno) {
            return false;
        }
        c->cols = bms_add_member(c->cols, v->varattno - FirstLowInvalidHeapAttributeNumber);
        return true;
    };
    if (IsA(node, NullTest) && read(reinterpret_cast<Node*>(castNode(NullTest, node)->arg))) {
        return false;  // over images, a row of the same columns: the same test
    }
    if (IsA(node, Var)) {
        c->row_value = c->row_value || (read(node) && castNode(Var, node)->varattno == 0);
        return false;
    }
    auto walker = reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(columns_read_walker));
    if (IsA(node, Query)) {
        c->levels++;
        bool r = query_tree_walker(castNode(Query, node), walker, ctx, 0);
        c->levels--;
        return r;
    }
    return expression_tree_walker(node, walker, ctx);
}

}  // namespace

// Columns of range-table entry rtindex (table relid) that q's own level
// reads (all of them for a whole-row reference), ascending; references
// from subqueries in q's expressions count.
std::vector<int> referenced_attnums(Query* q, Index rtindex, Oid relid, bool read_target_list,
                                    const char** system_column, bool* row_value) {
    std::vector<int> out;
    pg_call([&] {
        ColumnsRead read{rtindex, 0, nullptr, false};
        if (read_target_list) {
            (void)columns_read_walker((Node*)q->targetList, &read);
        }
        (void)columns_read_walker((Node*)q->jointree, &read);
        (void)columns_read_walker(q->havingQual, &read);
        Bitmapset* cols = read.cols;
        int first = bms_next_member(cols, -1);
        if (system_column != nullptr && first >= 0 &&
            first + FirstLowInvalidHeapAttributeNumber < 0) {
            *system_column = NameStr(
                SystemAttributeDefinition(first + FirstLowInvalidHeapAttributeNumber)->attname);
        }
        bool whole_row = bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, cols);
        if (row_value != nullptr) {
            *row_value = read.row_value;
        }
        Relation rel = relation_open(relid, AccessShareLock);
        TupleDesc desc = RelationGetDescr(rel);
        for (int a = 1; a <= desc->natts; a++) {
            if ((whole_row || bms_is_member(a - FirstLowInvalidHeapAttributeNumber, cols)) &&
                !TupleDescAttr(desc, a - 1)->attisdropped) {
                out.push_back(a);
            }
        }
        relation_close(rel, AccessShareLock);
    });
    return out;
}

std::string row_value_blocker(Oid relid) {
    return "the whole row of " + relation_display_name(relid) +
           " as a value (change images are not of the table's row type)";
}

namespace {

// Fills group_attnums when every grouping key is a plain column.
void plain_group_columns(Query* q, ScanShape& scan) {
    std::vector<int> attnums;
    bool plain = pg_call([&] {
        ListCell* lc;
        foreach (lc, q->groupClause != NIL ? q->groupClause : q->distinctClause) {
            SortGroupClause* sgc = lfirst_node(SortGroupClause, lc);
            TargetEntry* te = get_sortgroupclause_tle(sgc, q->targetList);
            if (!IsA(te->expr, Var) || castNode(Var, te->expr)->varattno < 1) {
                return false;
            }
            attnums.push_back(castNode(Var, te->expr)->varattno);
        }
        return true;
    });
    if (plain) {
        scan.group_attnums = attnums;
    }
}

}  // namespace

namespace {

// The display scale every finite value of numeric expression e shows,
// whatever the values, or -1. It follows numeric's own rules: a value of
// type numeric(p,s) is stored with scale s, an integer cast to numeric has
// scale 0, -x keeps x's scale, x + y and x - y show the larger of the two
// and x * y their sum. Runs under pg_call.
int fixed_numeric_scale(Node* e) {
    if (e == nullptr || exprType(e) != NUMERICOID) {
        return -1;
    }
    int32 typmod = exprTypmod(e);
    if (typmod >= static_cast<int32>(VARHDRSZ)) {
        // numeric(p,s) keeps s (-1000..1000) in the low 11 bits, signed.
        int scale = (((typmod - static_cast<int32>(VARHDRSZ)) & 0x7ff) ^ 1024) - 1024;
        return scale >= 0 ? scale : -1;
    }
    auto within = [](int s) { return s >= 0 && s <= NUMERIC_MAX_DISPLAY_SCALE ? s : -1; };
    if (IsA(e, Const)) {
        Const* c = castNode(Const, e);
        if (c->constisnull || numeric_is_nan(DatumGetNumeric(c->constvalue)) ||
            numeric_is_inf(DatumGetNumeric(c->constvalue))) {
            return -1;
        }
        return within(DatumGetInt32(DirectFunctionCall1(numeric_scale, c->constvalue)));
    }
    if (IsA(e, FuncExpr)) {
        FuncExpr* f = castNode(FuncExpr, e);
        switch (f->funcid) {
            case F_NUMERIC_INT2:
            case F_NUMERIC_INT4:
            case F_NUMERIC_INT8:
                return 0;
            default:
                return -1;
        }
    }
    if (!IsA(e, OpExpr)) {
        return -1;
    }
    OpExpr* o = castNode(OpExpr, e);
    Oid fn = get_opcode(o->opno);
    int a = fixed_numeric_scale(static_cast<Node*>(linitial(o->args)));
    if (list_length(o->args) == 1) {
        return fn == F_NUMERIC_UMINUS || fn == F_NUMERIC_UPLUS ? a : -1;
    }
    int b = fixed_numeric_scale(static_cast<Node*>(lsecond(o->args)));
    if (a < 0 || b < 0) {
        return -1;
    }
    switch (fn) {
        case F_NUMERIC_ADD:
        case F_NUMERIC_SUB:
            return a > b ? a : b;
        case F_NUMERIC_MUL:
            return within(a + b);
        default:
            return -1;
    }
}

// An aggregate output kept algebraically, or nothing.
std::optional<ir::AlgebraicAgg> algebraic_agg(const Aggref* a, List* ctx) {
    if (a->aggdistinct != NIL || a->aggkind != AGGKIND_NORMAL || a->agglevelsup != 0 ||
        list_length(a->args) > 1) {
        return std::nullopt;
    }
    ir::AlgebraicAgg x;
    auto numeric_sum = [&](ir::AggKind k, bool numeric, const char* type) {
        x.kind = k;
        x.numeric = numeric;
        x.result_type = type;
        if (numeric) {
            x.fixed_scale = pg_call([&] {
                return fixed_numeric_scale((Node*)linitial_node(TargetEntry, a->args)->expr);
            });
        }
    };
    switch (a->aggfnoid) {
        case F_COUNT_:
            x.kind = ir::AggKind::kCountStar;
            break;
        case F_COUNT_ANY:
            x.kind = ir::AggKind::kCount;
            break;
        case F_SUM_INT2:
        case F_SUM_INT4:
            numeric_sum(ir::AggKind::kSum, false, "pg_catalog.int8");
            break;
        case F_SUM_INT8:
            numeric_sum(ir::AggKind::kSum, false, "pg_catalog.numeric");
            break;
        case F_SUM_NUMERIC:
            numeric_sum(ir::AggKind::kSum, true, "pg_catalog.numeric");
            break;
        case F_AVG_INT2:
        case F_AVG_INT4:
        case F_AVG_INT8:
            numeric_sum(ir::AggKind::kAvg, false, "pg_catalog.numeric");
            break;
        case F_AVG_NUMERIC:
            numeric_sum(ir::AggKind::kAvg, true, "pg_catalog.numeric");
            break;
        default: {
            // pg_catalog's min(T)/max(T) for any T (LEAST/GREATEST order alike).
            if (list_length(a->args) != 1) {
                return std::nullopt;
            }
            Node* arg = (Node*)linitial_node(TargetEntry, a->args)->expr;
            // 0: not algebraic, 1: min, 2: max; 4: ties look alike.
            int how = pg_call([&] {
                const char* name = get_func_name(a->aggfnoid);
                if (get_func_namespace(a->aggfnoid) != PG_CATALOG_NAMESPACE || name == nullptr ||
                    (strcmp(name, "min") != 0 && strcmp(name, "max") != 0) ||
                    exprType(arg) != a->aggtype) {
                    return 0;
                }
                return (strcmp(name, "min") == 0 ? 1 : 2) +
                       (ties_look_alike(a->aggtype, exprTypmod(arg), exprCollation(arg)) ? 4 : 0);
            });
            if (how == 0) {
                return std::nullopt;
            }
            x.kind = (how & 3) == 1 ? ir::AggKind::kMin : ir::AggKind::kMax;
            x.exact_ties = (how & 4) != 0;
        }
    }
    if (ctx == nullptr) {
        return x;
    }
    std::string arg = a->args == NIL ? "" : pg_call([&] {
        return deparse_expression((Node*)linitial_node(TargetEntry, a->args)->expr, ctx, true,
                                  false);
    });
    if (a->aggfilter != nullptr) {
        std::string f =
            pg_call([&] { return deparse_expression((Node*)a->aggfilter, ctx, true, false); });
        arg = "CASE WHEN (" + f + ") THEN " + (arg.empty() ? std::string("1") : "(" + arg + ")") +
              " END";
    }
    x.arg = arg;
    return x;
}

// What the group strategies need beyond the operator tree: the source,
// whether the level groups, and its plain grouping columns (index advice).
void derive_groups(Query* q, const RangeTblEntry* rte, AnalyzedQuery& out) {
    out.scan.algebraic = diff::algebraic_aggregate(out.operators) != nullptr;
    out.scan.source_relid = rte->relid;
    // GROUP BY, or SELECT DISTINCT read as GROUP BY every output column
    // (unless a source key in the output makes the DISTINCT a no-op).
    out.scan.grouped =
        q->groupClause != NIL || out.scan.algebraic ||
        (q->distinctClause != NIL && out.identity.domain == rowid::Domain::kGroupKey);
    plain_group_columns(q, out.scan);
}

// The two base-table range-table indexes of `FROM a [INNER|LEFT|RIGHT] JOIN
// b ON ...` or `FROM a, b`, and which of them an outer join preserves (-1
// for an inner join); nothing for any other FROM clause.
struct JoinPair {
    int rt[2];
    int preserved;
};

std::optional<JoinPair> join_pair(Query* q) {
    List* from = q->jointree->fromlist;
    if (list_length(from) == 2 && IsA(linitial(from), RangeTblRef) &&
        IsA(lsecond(from), RangeTblRef)) {
        return JoinPair{
            {linitial_node(RangeTblRef, from)->rtindex, lsecond_node(RangeTblRef, from)->rtindex},
            -1};
    }
    if (list_length(from) == 1 && IsA(linitial(from), JoinExpr)) {
        JoinExpr* j = linitial_node(JoinExpr, from);
        int preserved = j->jointype == JOIN_INNER   ? -1
                        : j->jointype == JOIN_LEFT  ? 0
                        : j->jointype == JOIN_RIGHT ? 1
                                                    : -2;
        if (preserved != -2 && j->larg && IsA(j->larg, RangeTblRef) && j->rarg &&
            IsA(j->rarg, RangeTblRef)) {
            return JoinPair{
                {castNode(RangeTblRef, j->larg)->rtindex, castNode(RangeTblRef, j->rarg)->rtindex},
                preserved};
        }
    }
    return std::nullopt;
}

// An outer join's WHERE may read only the preserved side: a filter on the
// nullable side (e.g. `WHERE r.id IS NULL`) makes a row's presence depend
// on partners that no longer match, which the key-region rescan cannot see.
bool where_reads_only(Query* q, Index rt) {
    return pg_call([&] {
        Bitmapset* used = pull_varnos(nullptr, q->jointree->quals);
        return bms_is_empty(used) ||
               (bms_num_members(used) == 1 && bms_is_member(static_cast<int>(rt), used));
    });
}

// Plain-column equalities between the two sides (`a.x = b.y`, in ON or
// WHERE, at the top level of an AND): the columns each side is probed by.
void collect_equi_columns(Node* quals, const Index idx[2], JoinShape& join) {
    for_each_column_equality(quals, [&](const Var* va, const Var* vb) {
        for (int side = 0; side < 2; side++) {
            if (static_cast<Index>(va->varno) == idx[side] &&
                static_cast<Index>(vb->varno) == idx[1 - side]) {
                join.equi_attnums[side].push_back(va->varattno);
                join.equi_attnums[1 - side].push_back(vb->varattno);
            }
        }
    });
}

// Every join condition: WHERE and the ON of a JoinExpr.
void collect_join_columns(Query* q, const Index idx[2], JoinShape& join) {
    pg_call([&] {
        collect_equi_columns(q->jointree->quals, idx, join);
        Node* from = static_cast<Node*>(linitial(q->jointree->fromlist));
        if (IsA(from, JoinExpr)) {
            collect_equi_columns(castNode(JoinExpr, from)->quals, idx, join);
        }
    });
}

bool plain_select(const Query* q) {
    return q->setOperations == nullptr && q->cteList == NIL && !q->hasAggs &&
           q->groupClause == NIL && q->groupingSets == NIL && q->havingQual == nullptr &&
           !q->hasWindowFuncs && q->distinctClause == NIL && !q->hasTargetSRFs && !q->hasSubLinks &&
           q->limitCount == nullptr && q->limitOffset == nullptr;
}

// An inner join of two distinct tables with both unique keys selected:
// fills out.join, or sets a blocker naming what is missing. Returns false
// when the query is not a two-table inner join at all.
bool derive_join_shape(Query* q, AnalyzedQuery& out) {
    std::optional<JoinPair> pair = join_pair(q);
    if (!plain_select(q) || !pair) {
        return false;
    }
    Index idx[2] = {static_cast<Index>(pair->rt[0]), static_cast<Index>(pair->rt[1])};
    if (pair->preserved >= 0 && !where_reads_only(q, idx[pair->preserved])) {
        out.differential_blocker = "an outer join whose WHERE reads the nullable side";
        return true;
    }
    out.join.preserved = pair->preserved;
    for (int i = 0; i < 2; i++) {
        const RangeTblEntry* rte = rt_fetch(idx[i], q->rtable);
        if (const char* b = relation_blocker(rte)) {
            out.differential_blocker = b;
            return true;
        }
        out.join.relids[i] = rte->relid;
    }
    if (out.join.relids[0] == out.join.relids[1]) {
        out.differential_blocker = "a self-join";
        return true;
    }
    for (int i = 0; i < 2; i++) {
        std::optional<SelectedKey> key = selected_unique_key(q, idx[i]);
        if (!key) {
            out.differential_blocker =
                "a join without the primary key (or a NOT NULL unique key) of each table in the "
                "select list";
            return true;
        }
        out.join.key_outputs[i] = key->outputs;
        out.join.key_attnums[i] = key->attnums;
        // The keyed join's statements match keys with a bare `=` (IN).
        for (int a : key->attnums) {
            const Oid type = pg_call([&] { return get_atttype(out.join.relids[i], a); });
            if (unmatchable_type(type)) {
                out.differential_blocker =
                    "a join key of a type whose equality is not pg_catalog's";
                return true;
            }
        }
    }
    collect_join_columns(q, idx, out.join);
    out.join.present = true;
    return true;
}

// An aggregate without GROUP BY over one table whose outputs are all
// algebraic aggregates (kept from the images alone; else a join region
// recomputes it whole).
bool scalar_algebraic(Query* q) {
    if (q->groupClause != NIL || q->havingQual != nullptr || !q->hasAggs ||
        static_cast<RangeTblEntry*>(linitial(q->rtable))->rtekind != RTE_RELATION) {
        return false;
    }
    return algebraic_outputs(q, nullptr).has_value();
}

}  // namespace

namespace {

struct SlotCtx {
    std::vector<const Aggref*> aggrefs;
    std::size_t first;  // slot number of aggrefs[0]
};

// Each aggregate replaced by a parameter that deparses as its slot.
Node* slot_mutator(Node* node, void* ctx) {
    if (node == nullptr) {
        return nullptr;
    }
    auto* c = static_cast<SlotCtx*>(ctx);
    if (IsA(node, Aggref)) {
        const Aggref* a = castNode(Aggref, node);
        c->aggrefs.push_back(a);
        Param* p = makeNode(Param);
        p->paramkind = PARAM_EXTERN;
        p->paramid = ir::kAggSlotBase + static_cast<int>(c->first + c->aggrefs.size() - 1);
        p->paramtype = a->aggtype;
        p->paramtypmod = -1;
        p->paramcollid = a->aggcollid;
        p->location = -1;
        return reinterpret_cast<Node*>(p);
    }
    return expression_tree_mutator(
        node, reinterpret_cast<Node* (*)()>(reinterpret_cast<void (*)()>(slot_mutator)), ctx);
}

}  // namespace

std::optional<AlgebraicOutputs> algebraic_outputs(Query* q, List* ctx) {
    if (q->havingQual != nullptr || q->distinctClause != NIL || q->groupingSets != NIL ||
        !q->hasAggs) {
        return std::nullopt;
    }
    AlgebraicOutputs out;
    int p = 0;
    ListCell* lc;
    foreach (lc, q->targetList) {
        TargetEntry* te = lfirst_node(TargetEntry, lc);
        if (te->resjunk) {
            continue;
        }
        bool key = te->ressortgroupref != 0 && pg_call([&] {
                       return get_sortgroupref_clause_noerr(te->ressortgroupref, q->groupClause) !=
                              nullptr;
                   });
        out.templates.emplace_back();
        if (key) {
            p++;
            continue;
        }
        if (IsA(te->expr, Aggref)) {
            const Aggref* a = castNode(Aggref, te->expr);
            std::optional<ir::AlgebraicAgg> x = algebraic_agg(a, ctx);
            if (!x) {
                return std::nullopt;
            }
            x->output = p++;
            out.aggs.push_back({*x, a});
            continue;
        }
        // An expression over aggregates only (100 * sum(a) / sum(b)):
        // each aggregate kept hidden, the expression applied to them.
        SlotCtx slots{{}, out.aggs.size()};
        Node* templ = nullptr;
        bool plain = pg_call([&] {
            List* outside = pull_var_clause(
                reinterpret_cast<Node*>(te->expr),
                PVC_INCLUDE_AGGREGATES | PVC_INCLUDE_WINDOWFUNCS | PVC_INCLUDE_PLACEHOLDERS);
            ListCell* v;
            foreach (v, outside) {
                if (!IsA(lfirst(v), Aggref)) {
                    return false;  // a column outside the aggregates
                }
            }
            templ = slot_mutator(reinterpret_cast<Node*>(copyObjectImpl(te->expr)), &slots);
            return !checkExprHasSubLink(reinterpret_cast<Node*>(te->expr));
        });
        if (!plain || slots.aggrefs.empty()) {
            return std::nullopt;
        }
        for (const Aggref* a : slots.aggrefs) {
            std::optional<ir::AlgebraicAgg> x = algebraic_agg(a, ctx);
            bool collatable = pg_call([&] { return type_is_collatable(a->aggtype); });
            if (!x ||
                ((x->kind == ir::AggKind::kMin || x->kind == ir::AggKind::kMax) && collatable)) {
                return std::nullopt;  // (a hidden MIN/MAX of text would lose its collation)
            }
            x->output = -1;
            x->value_type = pg_call([&] { return format_type_be_qualified(a->aggtype); });
            out.aggs.push_back({*x, a});
        }
        out.templates.back() =
            pg_call([&] { return deparse_expression(templ, NIL, false, false); });
        p++;
    }
    return out;
}

std::vector<bool> keys_look_alike(Query* q, const std::vector<int>& key_columns) {
    std::vector<Node*> outputs;
    ListCell* lc;
    foreach (lc, q->targetList) {
        TargetEntry* te = lfirst_node(TargetEntry, lc);
        if (!te->resjunk) {
            outputs.push_back(reinterpret_cast<Node*>(te->expr));
        }
    }
    std::vector<bool> out;
    for (int p : key_columns) {
        Node* e = outputs.at(static_cast<std::size_t>(p));
        out.push_back(
            pg_call([&] { return ties_look_alike(exprType(e), exprTypmod(e), exprCollation(e)); }));
    }
    return out;
}

namespace {

bool safe_operator(Oid opno) {
    return get_func_leakproof(get_opcode(opno)) || get_op_btree_interpretation(opno) != NIL;
}

// [NOT] [I]LIKE with a constant pattern: whether it raises depends on the
// pattern alone (a bad escape), so it raises for every row or for none,
// the images' as the query's own.
bool like_with_constant_pattern(const OpExpr* op) {
    switch (get_opcode(op->opno)) {
        case F_TEXTLIKE:
        case F_TEXTNLIKE:
        case F_NAMELIKE:
        case F_NAMENLIKE:
        case F_BPCHARLIKE:
        case F_BPCHARNLIKE:
        case F_TEXTICLIKE:
        case F_TEXTICNLIKE:
        case F_BPCHARICLIKE:
        case F_BPCHARICNLIKE:
            break;
        default:
            return false;
    }
    const Node* pattern = static_cast<const Node*>(lsecond(op->args));
    while (IsA(pattern, RelabelType)) {
        pattern = reinterpret_cast<const Node*>(castNode(RelabelType, pattern)->arg);
    }
    return IsA(pattern, Const);
}

// True when node applies something to columns that might raise.
bool may_raise_walker(Node* node, void* ctx) {
    if (node == nullptr) {
        return false;
    }
    switch (nodeTag(node)) {
        case T_Var:
            return castNode(Var, node)->varattno <= 0 || castNode(Var, node)->varlevelsup != 0;
        case T_Const:
        case T_Param:
        case T_BoolExpr:
        case T_NullTest:
        case T_BooleanTest:
        case T_RelabelType:
        case T_List:
            break;
        case T_OpExpr:
        case T_DistinctExpr:
        case T_NullIfExpr:
            if (contain_var_clause(node) && !safe_operator(castNode(OpExpr, node)->opno) &&
                !(IsA(node, OpExpr) && like_with_constant_pattern(castNode(OpExpr, node)))) {
                return true;
            }
            break;
        case T_ScalarArrayOpExpr:
            if (contain_var_clause(node) &&
                !safe_operator(castNode(ScalarArrayOpExpr, node)->opno)) {
                return true;
            }
            break;
        case T_FuncExpr:
            if (contain_var_clause(node) && !get_func_leakproof(castNode(FuncExpr, node)->funcid)) {
                return true;
            }
            break;
        default:
            // Anything else over columns is not known to be safe; without
            // columns it computes the same as in the query itself.
            return contain_var_clause(node);
    }
    return expression_tree_walker(
        node, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(may_raise_walker)), ctx);
}

}  // namespace

std::string image_prefilter(Node* quals, Index rtindex, Oid relid) {
    if (quals == nullptr) {
        return "";
    }
    std::vector<std::string> parts;
    with_pinned_search_path([&] {
        List* conj = pg_call([&] { return make_ands_implicit(reinterpret_cast<Expr*>(quals)); });
        List* ctx = pg_call([&] { return deparse_context_for(kScanAlias, relid); });
        ListCell* lc;
        foreach (lc, conj) {
            Node* c = static_cast<Node*>(lfirst(lc));
            const char* text = pg_call([&]() -> const char* {
                Bitmapset* used = pull_varnos(nullptr, c);
                if (bms_num_members(used) != 1 || !bms_is_member(static_cast<int>(rtindex), used) ||
                    checkExprHasSubLink(c) || may_raise_walker(c, nullptr)) {
                    return nullptr;
                }
                Node* copy = static_cast<Node*>(copyObjectImpl(c));
                ChangeVarNodes(copy, static_cast<int>(rtindex), 1, 0);
                return deparse_expression(copy, ctx, true, false);
            });
            if (text != nullptr) {
                parts.push_back(std::string("(") + text + ")");
            }
        }
    });
    std::string out;
    for (const std::string& p : parts) {
        out += (out.empty() ? "" : " AND ") + p;
    }
    return out;
}

Expr* among_touched_keys(Expr* arg, Oid opno, Oid inputcollid, Oid element, Oid collation,
                         int slot) {
    Oid array = get_array_type(element);
    if (array == InvalidOid) {
        return nullptr;
    }
    Param* values = makeNode(Param);
    values->paramkind = PARAM_EXTERN;
    values->paramid = ir::kKeySlotBase + slot;  // ir::key_slot(slot)
    values->paramtype = array;
    values->paramtypmod = -1;
    values->paramcollid = collation;
    values->location = -1;
    ScalarArrayOpExpr* any = makeNode(ScalarArrayOpExpr);
    any->opno = opno;
    any->opfuncid = get_opcode(opno);
    any->useOr = true;
    any->inputcollid = inputcollid;
    any->args = list_make2(copyObjectImpl(arg), values);
    any->location = -1;
    return reinterpret_cast<Expr*>(any);
}

// Volatile functions block DIFFERENTIAL (named; STABLE ones are judged for
// the whole query by unstable_construct). Returns false when a blocker was set.
bool check_functions(Query* q, AnalyzedQuery& out) {
    FuncScan funcs{NIL};
    pg_call([&] {
        (void)function_walker((Node*)q->targetList, &funcs);
        (void)function_walker((Node*)q->jointree, &funcs);
        (void)function_walker(q->havingQual, &funcs);
    });
    if (funcs.volatile_names != NIL) {
        out.differential_blocker =
            "the volatile function " + names_of(funcs.volatile_names).front() + "()";
        return false;
    }
    return true;
}

std::string image_columns_blocker(Query* q, Oid relid, std::vector<int>& attnums) {
    const char* system_column = nullptr;
    bool row_value = false;
    attnums = referenced_attnums(q, 1, relid, true, &system_column, &row_value);
    // Change images carry user columns only, and not as the table's row type.
    if (system_column != nullptr) {
        return std::string("the system column ") + system_column;
    }
    return row_value ? row_value_blocker(relid) : "";
}

void derive_scan_shape(Query* q, AnalyzedQuery& out) {
    if (q->setOperations != nullptr) {
        derive_union_all(q, out);
        return;
    }
    // A two-table join with both keys selected has its own delta (over
    // counted rows: a join keyed through a unique key is a join region,
    // rewritten by key); otherwise a join region may still maintain it
    // (and names what it cannot).
    if (out.identity.domain == rowid::Domain::kKeylessRow && derive_join_shape(q, out)) {
        if (out.join.present) {
            if (!check_functions(q, out)) {
                out.join.present = false;
            }
            return;
        }
        out.differential_blocker.clear();
    }
    for (const BlockRule& rule : kBlockers) {
        if (rule.applies(q)) {
            out.differential_blocker = rule.construct;
            return;
        }
    }
    if (q->groupingSets != NIL) {
        out.differential_blocker =
            grouping_sets_blocker(q, g_max_grouping_set_branches, &out.blocker_is_limit);
        if (!out.differential_blocker.empty()) {
            return;
        }
    }
    // Joins, derived tables, DISTINCT ON and aggregates without GROUP BY
    // (one row, recomputed when a change reaches it) are join regions.
    if (q->hasDistinctOn && out.identity.domain != rowid::Domain::kGroupKey) {
        out.differential_blocker = "DISTINCT ON an expression that is not in the select list";
        return;
    }
    if (list_length(q->rtable) != 1 || q->hasDistinctOn || q->hasSubLinks ||
        static_cast<RangeTblEntry*>(linitial(q->rtable))->rtekind == RTE_SUBQUERY ||
        (out.identity.domain == rowid::Domain::kSynthetic && !scalar_algebraic(q))) {
        (void)derive_region_shape(q, out);
        if (!out.differential_blocker.empty()) {
            derive_derived_aggregate(q, out);  // an aggregate over a derived table's change
        }
        if (!out.differential_blocker.empty()) {
            derive_union_aggregate(q, out);  // an aggregate over a UNION ALL's change
        }
        return;
    }
    const RangeTblEntry* rte = static_cast<RangeTblEntry*>(linitial(q->rtable));
    if (const char* b = relation_blocker(rte)) {
        out.differential_blocker = b;
        return;
    }
    if (!check_functions(q, out)) {
        return;
    }
    if (q->groupClause != NIL && out.identity.domain != rowid::Domain::kGroupKey) {
        out.differential_blocker = "a GROUP BY expression that is not in the select list";
        return;
    }
    out.differential_blocker = image_columns_blocker(q, rte->relid, out.scan.referenced_attnums);
    if (!out.differential_blocker.empty()) {
        return;
    }
    derive_groups(q, rte, out);
    std::optional<diff::OneTableLevel> level = diff::one_table_level(out.operators);
    if (q->groupingSets != NIL && level && level->aggregate >= 0) {
        out.scan.grouped = false;  // one arm per set instead
        derive_scan_grouping_sets(q, rte->relid, out.operators.at(level->aggregate));
        if (has_empty_grouping_set(q)) {
            out.auto_full_reason = kEmptySetReason;
        }
    }
}

}  // namespace pgt::pg
