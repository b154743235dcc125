// Lowering an analysed Query to the operator tree (see lower_tree.hpp).
// Invariant: every ColumnRef made here names a column of the node's own
// child at the position PostgreSQL's Var resolves to (a relation's column
// attno is at position attno - 1 of its leaf; a join's columns are its
// left input's, then its right input's).
#include "pg/analyze/lower_tree.hpp"
#include "core/sql/names.hpp"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pg/analyze/grouping_sets.hpp"
#include "pg/analyze/output_key.hpp"
#include "pg/analyze/scan_shape.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"
#include "pg/common/quote.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/common/type_facts.hpp"

extern "C" {
#include "postgres.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/typcache.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
}

namespace pgt::pg {
namespace {

// Deparsed text of a level's expressions, by node address.
using Texts = std::map<const Node*, std::string>;

// Where each range-table entry's columns start in a FROM node's output.
using FromMap = std::map<Index, int>;

struct Lowering {
    ir::Tree tree;
    // WITH queries in scope, innermost level last: name → node (-1 while
    // its own definition is lowered: a recursive reference).
    std::vector<std::map<std::string, int>> ctes;
};

int lower_level(Lowering& L, Query* q, bool deparse);

void collect_join_quals(Node* n, std::vector<Node*>& out) {
    if (n == nullptr) {
        return;
    }
    if (IsA(n, JoinExpr)) {
        JoinExpr* j = castNode(JoinExpr, n);
        collect_join_quals(j->larg, out);
        collect_join_quals(j->rarg, out);
        if (j->quals != nullptr) {
            out.push_back(j->quals);
        }
    } else if (IsA(n, FromExpr)) {
        ListCell* lc;
        foreach (lc, castNode(FromExpr, n)->fromlist) {
            collect_join_quals(static_cast<Node*>(lfirst(lc)), out);
        }
    }
}

// The level's expressions a node shows: WHERE, every ON, HAVING, the
// select list (junk entries too: grouping keys), LIMIT and OFFSET.
std::vector<Node*> level_expressions(Query* q) {
    std::vector<Node*> out;
    collect_join_quals(reinterpret_cast<Node*>(q->jointree), out);
    for (Node* n : {q->jointree->quals, q->havingQual, q->limitCount, q->limitOffset}) {
        if (n != nullptr) {
            out.push_back(n);
        }
    }
    ListCell* lc;
    foreach (lc, q->targetList) {
        out.push_back(reinterpret_cast<Node*>(lfirst_node(TargetEntry, lc)->expr));
    }
    return out;
}

// Deparses exprs in q's context in one pass: each is appended to a copy
// of the select list between markers (`0 AS __pgt_a<i>, <expr> AS
// __pgt_e<i>`), everything else of the query kept so that the deparser
// resolves what it always does (sort group references, window clauses).
Texts deparse_level(Query* q, const std::vector<Node*>& exprs) {
    std::string text = with_pinned_search_path([&] {
        return std::string(pg_call([&] {
            Query* c = static_cast<Query*>(copyObjectImpl(q));
            int resno = list_length(c->targetList);
            for (std::size_t i = 0; i < exprs.size(); i++) {
                std::string a = sql::kDeparseOpen + std::to_string(i),
                            e = sql::kDeparseClose + std::to_string(i);
                c->targetList = lappend(
                    c->targetList,
                    makeTargetEntry(reinterpret_cast<Expr*>(makeConst(
                                        INT4OID, -1, InvalidOid, 4, Int32GetDatum(0), false, true)),
                                    static_cast<AttrNumber>(++resno), pstrdup(a.c_str()), false));
                c->targetList = lappend(
                    c->targetList,
                    makeTargetEntry(static_cast<Expr*>(copyObjectImpl(exprs[i])),
                                    static_cast<AttrNumber>(++resno), pstrdup(e.c_str()), false));
            }
            return pg_get_querydef(c, false);
        }));
    });
    Texts out;
    for (std::size_t i = 0; i < exprs.size(); i++) {
        // The deparser breaks the select list into lines (",\n    ").
        const std::string open = "0 AS " + (sql::kDeparseOpen + std::to_string(i)) + ",";
        const std::string close = " AS " + (sql::kDeparseClose + std::to_string(i));
        std::size_t from = text.find(open);
        if (from == std::string::npos) {
            continue;
        }
        from = text.find_first_not_of(" \n", from + open.size());
        if (from == std::string::npos) {
            continue;
        }
        for (std::size_t to = text.find(close, from); to != std::string::npos;
             to = text.find(close, to + 1)) {
            std::size_t after = to + close.size();
            if (after == text.size() || !isdigit(static_cast<unsigned char>(text[after]))) {
                out[exprs[i]] = text.substr(from, to - from);
                break;
            }
        }
    }
    return out;
}

std::string text_of(const Texts& texts, const Node* n) {
    auto it = texts.find(n);
    return it == texts.end() ? "" : it->second;
}

// The table a level reads when it reads that one table and nothing else
// (no subquery in an expression, no system column): its expressions are
// then also deparsed over the table's change images. nullptr otherwise.
RangeTblEntry* image_table(Query* q, std::vector<int>& read) {
    List* from = q->jointree->fromlist;
    if (list_length(q->rtable) != 1 || list_length(from) != 1 ||
        !IsA(linitial(from), RangeTblRef) || q->hasSubLinks) {
        return nullptr;
    }
    RangeTblEntry* rte = rt_fetch(castNode(RangeTblRef, linitial(from))->rtindex, q->rtable);
    if (rte->rtekind != RTE_RELATION) {
        return nullptr;
    }
    const char* system_column = nullptr;
    read = referenced_attnums(q, 1, rte->relid, true, &system_column);
    return system_column == nullptr ? rte : nullptr;
}

// WHERE, HAVING and the select list of a one-table level, deparsed over
// kScanAlias with every column prefixed (Column::image).
Texts deparse_images(Query* q, Oid relid) {
    std::vector<Node*> exprs;
    for (Node* n : {q->jointree->quals, q->havingQual}) {
        if (n != nullptr) {
            exprs.push_back(n);
        }
    }
    ListCell* lc;
    foreach (lc, q->targetList) {
        TargetEntry* te = lfirst_node(TargetEntry, lc);
        if (!te->resjunk) {
            exprs.push_back(reinterpret_cast<Node*>(te->expr));
        }
    }
    std::vector<char*> texts(exprs.size(), nullptr);
    with_pinned_search_path([&] {
        pg_call([&] {
            List* ctx = deparse_context_for(kScanAlias, relid);
            for (std::size_t i = 0; i < exprs.size(); i++) {
                texts[i] = deparse_expression(exprs[i], ctx, true, false);
            }
        });
    });
    Texts out;
    for (std::size_t i = 0; i < exprs.size(); i++) {
        out[exprs[i]] = texts[i];
    }
    return out;
}

// The algebraic form of a one-table level's aggregates, when they have one
// (algebraic_outputs, arguments over the images).
void set_algebraic_form(Query* q, Oid relid, ir::Node& aggregate) {
    std::optional<AlgebraicOutputs> outs = with_pinned_search_path([&] {
        List* ctx = pg_call([&] { return deparse_context_for(kScanAlias, relid); });
        return algebraic_outputs(q, ctx);
    });
    if (!outs) {
        return;
    }
    aggregate.algebraic = true;
    aggregate.output_templates = outs->templates;
    for (const AlgebraicOutput& o : outs->aggs) {
        aggregate.algebraic_aggs.push_back(o.agg);
    }
}

// The column a Var of this level is in the FROM node's output.
std::optional<int> var_position(Query* q, const FromMap& from, const Node* e) {
    if (e == nullptr || !IsA(e, Var)) {
        return std::nullopt;
    }
    const Var* v = reinterpret_cast<const Var*>(e);
    if (v->varlevelsup != 0 || v->varattno <= 0) {
        return std::nullopt;
    }
    RangeTblEntry* rte = rt_fetch(v->varno, q->rtable);
    if (rte->rtekind == RTE_JOIN) {
        if (v->varattno > list_length(rte->joinaliasvars)) {
            return std::nullopt;
        }
        return var_position(q, from,
                            static_cast<Node*>(list_nth(rte->joinaliasvars, v->varattno - 1)));
    }
    auto it = from.find(static_cast<Index>(v->varno));
    if (it == from.end()) {
        return std::nullopt;
    }
    return it->second + v->varattno - 1;
}

// The conjuncts `a = b` of a condition between two columns of this level's
// FROM (positions in the FROM node's output, as var_position), compared by
// their type's default equality with a deterministic collation: two values
// it calls equal are the same value, so a unique key matched this way
// matches at most one row.
std::vector<std::pair<int, int>> column_equalities(Query* q, const FromMap& from, Node* quals) {
    std::vector<std::pair<int, int>> out;
    if (quals == nullptr) {
        return out;
    }
    pg_call([&] {
        for_each_binary_conjunct(quals, [&](OpExpr* op, Node* a, Node* b) {
            const Oid type = exprType(a);
            if (type != exprType(b) ||
                lookup_type_cache(type, TYPECACHE_EQ_OPR)->eq_opr != op->opno ||
                (OidIsValid(op->inputcollid) && !get_collation_isdeterministic(op->inputcollid))) {
                return;
            }
            std::optional<int> pa = var_position(q, from, a);
            std::optional<int> pb = var_position(q, from, b);
            if (pa && pb && *pa != *pb) {
                out.emplace_back(*pa, *pb);
            }
        });
    });
    return out;
}

// Columns named as the range-table entry names them, types where known.
std::vector<ir::Column> rte_columns(RangeTblEntry* rte) {
    std::vector<ir::Column> cols;
    int attno = 0;
    ListCell* lc;
    foreach (lc, rte->eref->colnames) {
        attno++;
        ir::Column c;
        c.name = strVal(lfirst(lc));
        if (rte->rtekind == RTE_RELATION && !c.name.empty()) {
            c.type =
                pg_call([&] { return get_atttype(rte->relid, static_cast<AttrNumber>(attno)); });
        }
        cols.push_back(std::move(c));
    }
    return cols;
}

// Columns that are the child's, unchanged.
std::vector<ir::Column> passed_columns(const ir::Tree& t, int child) {
    std::vector<ir::Column> cols = t.at(child).columns;
    for (std::size_t i = 0; i < cols.size(); i++) {
        cols[i].ref = ir::ColumnRef{child, static_cast<int>(i)};
    }
    return cols;
}

int add_node(Lowering& L, ir::Op op, std::vector<int> children, std::vector<ir::Column> cols) {
    ir::Node n;
    n.op = op;
    n.children = std::move(children);
    n.columns = std::move(cols);
    return L.tree.add(std::move(n));
}

int lower_scan(Lowering& L, RangeTblEntry* rte) {
    int n = add_node(L, ir::Op::kScan, {}, rte_columns(rte));
    ir::Node& s = L.tree.at(n);
    s.relid = rte->relid;
    s.relation = quoted_relation_name(rte->relid);
    s.sampled = rte->tablesample != nullptr;
    for (const std::vector<int>& key : unique_keys(rte->relid)) {
        std::vector<int> positions;
        for (int attno : key) {
            positions.push_back(attno - 1);
        }
        s.unique_keys.push_back(std::move(positions));
    }
    return n;
}

int lower_cte_scan(Lowering& L, RangeTblEntry* rte) {
    int target = -1;
    std::size_t level = L.ctes.size();
    if (rte->ctelevelsup < level) {
        const std::map<std::string, int>& scope = L.ctes[level - 1 - rte->ctelevelsup];
        auto it = scope.find(rte->ctename);
        target = it == scope.end() ? -1 : it->second;
    }
    std::vector<int> children;
    if (target >= 0) {
        children.push_back(target);
    }
    int n = add_node(L, ir::Op::kCteScan, children, rte_columns(rte));
    L.tree.at(n).relation = quote_ident(rte->ctename);
    if (target < 0) {
        L.tree.at(n).detail = "(recursive reference)";
    }
    return n;
}

int lower_rte(Lowering& L, Query* q, Index rtindex, bool deparse) {
    RangeTblEntry* rte = rt_fetch(rtindex, q->rtable);
    switch (rte->rtekind) {
        case RTE_RELATION:
            return lower_scan(L, rte);
        case RTE_SUBQUERY: {
            int child = lower_level(L, rte->subquery, deparse && !rte->lateral);
            std::vector<ir::Column> cols = rte_columns(rte);
            for (std::size_t i = 0; i < cols.size() && i < L.tree.at(child).columns.size(); i++) {
                cols[i].ref = ir::ColumnRef{child, static_cast<int>(i)};
                cols[i].type = L.tree.at(child).columns[i].type;
            }
            int n = add_node(L, ir::Op::kSubquery, {child}, cols);
            L.tree.at(n).relation = quote_ident(rte->eref->aliasname);
            L.tree.at(n).detail = rte->lateral ? "LATERAL" : "";
            return n;
        }
        case RTE_CTE:
            return lower_cte_scan(L, rte);
        case RTE_VALUES:
            return add_node(L, ir::Op::kValues, {}, rte_columns(rte));
        default: {
            int n = add_node(L, ir::Op::kFunctionScan, {}, rte_columns(rte));
            L.tree.at(n).relation = quote_ident(rte->eref->aliasname);
            L.tree.at(n).detail = rte->lateral ? "LATERAL" : "";
            return n;
        }
    }
}

int lower_join(Lowering& L, ir::JoinKind kind, int left, int right, std::string condition,
               FromMap& lmap, const FromMap& rmap) {
    std::vector<ir::Column> cols = passed_columns(L.tree, left);
    const int shift = static_cast<int>(cols.size());
    for (ir::Column c : passed_columns(L.tree, right)) {
        cols.push_back(std::move(c));
    }
    for (const auto& [rtindex, offset] : rmap) {
        lmap[rtindex] = offset + shift;
    }
    int n = add_node(L, ir::Op::kJoin, {left, right}, cols);
    L.tree.at(n).join = kind;
    L.tree.at(n).condition = std::move(condition);
    return n;
}

ir::JoinKind join_kind(JoinType t) {
    switch (t) {
        case JOIN_LEFT:
            return ir::JoinKind::kLeft;
        case JOIN_RIGHT:
            return ir::JoinKind::kRight;
        case JOIN_FULL:
            return ir::JoinKind::kFull;
        default:
            return ir::JoinKind::kInner;
    }
}

int lower_from_item(Lowering& L, Query* q, Node* item, const Texts& texts, FromMap& map,
                    bool deparse) {
    if (IsA(item, RangeTblRef)) {
        Index rtindex = static_cast<Index>(castNode(RangeTblRef, item)->rtindex);
        map[rtindex] = 0;
        return lower_rte(L, q, rtindex, deparse);
    }
    if (IsA(item, JoinExpr)) {
        JoinExpr* j = castNode(JoinExpr, item);
        FromMap rmap;
        int left = lower_from_item(L, q, j->larg, texts, map, deparse);
        int right = lower_from_item(L, q, j->rarg, texts, rmap, deparse);
        int n =
            lower_join(L, join_kind(j->jointype), left, right, text_of(texts, j->quals), map, rmap);
        L.tree.at(n).equalities = column_equalities(q, map, j->quals);
        return n;
    }
    // A nested FROM list: a cross join of its items.
    int n = -1;
    ListCell* lc;
    foreach (lc, castNode(FromExpr, item)->fromlist) {
        FromMap imap;
        int next = lower_from_item(L, q, static_cast<Node*>(lfirst(lc)), texts, imap, deparse);
        if (n < 0) {
            map = imap;
            n = next;
        } else {
            n = lower_join(L, ir::JoinKind::kInner, n, next, "", map, imap);
        }
    }
    return n;
}

int lower_from(Lowering& L, Query* q, const Texts& texts, FromMap& map, bool deparse) {
    if (q->jointree->fromlist == NIL) {
        int n = add_node(L, ir::Op::kValues, {}, {});
        L.tree.at(n).detail = "(no FROM)";
        return n;
    }
    return lower_from_item(L, q, reinterpret_cast<Node*>(q->jointree), texts, map, deparse);
}

int add_filter(Lowering& L, int child, std::string condition) {
    int n = add_node(L, ir::Op::kFilter, {child}, passed_columns(L.tree, child));
    L.tree.at(n).condition = std::move(condition);
    return n;
}

// GROUP BY keys (and grouping sets): key j is the j-th group clause's
// select-list entry.
int lower_grouping(Lowering& L, Query* q, int child, const Texts& texts, const FromMap& from) {
    std::vector<ir::Column> keys;
    ListCell* lc;
    foreach (lc, q->groupClause) {
        SortGroupClause* sgc = lfirst_node(SortGroupClause, lc);
        TargetEntry* te = pg_call([&] { return get_sortgroupclause_tle(sgc, q->targetList); });
        ir::Column c;
        c.name = te->resname != nullptr ? te->resname : "";
        c.type = pg_call([&] { return exprType(reinterpret_cast<Node*>(te->expr)); });
        c.expr = text_of(texts, reinterpret_cast<Node*>(te->expr));
        if (std::optional<int> p = var_position(q, from, reinterpret_cast<Node*>(te->expr))) {
            c.ref = ir::ColumnRef{child, *p};
        }
        keys.push_back(std::move(c));
    }
    const bool sets = q->groupingSets != NIL;
    int n = add_node(L, sets ? ir::Op::kGroupingSets : ir::Op::kAggregate, {child}, keys);
    ir::Node& g = L.tree.at(n);
    g.key_count = static_cast<int>(keys.size());
    if (sets) {
        GroupingSets gs = grouping_sets_of(q, kMaxGroupingSets);
        g.keyed_sets = gs.verdict == GroupingSetsVerdict::kKeyed;
        g.detail = std::to_string(gs.values.size()) + " sets";
    }
    return n;
}

// Whether select-list entry te is group clause j's key (then the output
// is the grouping node's column j, read through the nodes above it).
std::optional<int> group_key_of(Query* q, const TargetEntry* te) {
    if (te->ressortgroupref == 0) {
        return std::nullopt;
    }
    int j = 0;
    ListCell* lc;
    foreach (lc, q->groupClause) {
        if (lfirst_node(SortGroupClause, lc)->tleSortGroupRef == te->ressortgroupref) {
            return j;
        }
        j++;
    }
    return std::nullopt;
}

int lower_project(Lowering& L, Query* q, int child, const Texts& texts, const Texts& images,
                  const FromMap& from, bool grouped) {
    std::vector<ir::Column> cols;
    ListCell* lc;
    foreach (lc, q->targetList) {
        TargetEntry* te = lfirst_node(TargetEntry, lc);
        if (te->resjunk) {
            continue;
        }
        Node* e = reinterpret_cast<Node*>(te->expr);
        ir::Column c;
        c.name = te->resname != nullptr ? te->resname : "";
        c.type = pg_call([&] { return exprType(e); });
        c.expr = text_of(texts, e);
        c.image = text_of(images, e);
        c.alike = !c.image.empty() && pg_call([&] {
            return ties_look_alike(exprType(e), exprTypmod(e), exprCollation(e));
        });
        if (!c.image.empty() && unmatchable_type(c.type)) {
            c.equal = pg_call([&] { return btree_equality(c.type); });
        }
        std::optional<int> p = grouped ? group_key_of(q, te) : var_position(q, from, e);
        if (p) {
            c.ref = ir::ColumnRef{child, *p};
        }
        cols.push_back(std::move(c));
    }
    int n = add_node(L, q->hasTargetSRFs ? ir::Op::kProjectSet : ir::Op::kProject, {child}, cols);
    return n;
}

int lower_distinct(Lowering& L, Query* q, int child) {
    int n = add_node(L, ir::Op::kDistinct, {child}, passed_columns(L.tree, child));
    ir::Node& d = L.tree.at(n);
    d.on = q->hasDistinctOn;
    ListCell* lc;
    foreach (lc, d.on ? q->distinctClause : NIL) {
        SortGroupClause* sgc = lfirst_node(SortGroupClause, lc);
        TargetEntry* te = pg_call([&] { return get_sortgroupclause_tle(sgc, q->targetList); });
        int pos = -1, i = 0;
        ListCell* tc;
        foreach (tc, q->targetList) {
            TargetEntry* t = lfirst_node(TargetEntry, tc);
            if (t == te && !t->resjunk) {
                pos = i;
            }
            i += t->resjunk ? 0 : 1;
        }
        d.distinct_on.push_back(pos);
    }
    return n;
}

int lower_limit(Lowering& L, Query* q, int child, const Texts& texts) {
    int n = add_node(L, ir::Op::kLimit, {child}, passed_columns(L.tree, child));
    std::string detail;
    if (q->limitCount != nullptr) {
        detail += "LIMIT " + text_of(texts, q->limitCount);
    }
    if (q->limitOffset != nullptr) {
        detail +=
            (detail.empty() ? "" : " ") + std::string("OFFSET ") + text_of(texts, q->limitOffset);
    }
    L.tree.at(n).detail = detail;
    return n;
}

// Columns named by the select list (a set operation's output).
std::vector<ir::Column> target_columns(Query* q) {
    std::vector<ir::Column> cols;
    ListCell* lc;
    foreach (lc, q->targetList) {
        TargetEntry* te = lfirst_node(TargetEntry, lc);
        if (!te->resjunk) {
            ir::Column c;
            c.name = te->resname != nullptr ? te->resname : "";
            c.type = pg_call([&] { return exprType(reinterpret_cast<Node*>(te->expr)); });
            cols.push_back(std::move(c));
        }
    }
    return cols;
}

int lower_set_operation(Lowering& L, Query* q, Node* op, bool deparse, bool recursive) {
    if (IsA(op, RangeTblRef)) {
        RangeTblEntry* rte = rt_fetch(castNode(RangeTblRef, op)->rtindex, q->rtable);
        return lower_level(L, rte->subquery, deparse);
    }
    SetOperationStmt* s = castNode(SetOperationStmt, op);
    int left = lower_set_operation(L, q, s->larg, deparse, false);
    int right = lower_set_operation(L, q, s->rarg, deparse, false);
    int n = add_node(L, recursive ? ir::Op::kRecursiveUnion : ir::Op::kSetOp, {left, right},
                     passed_columns(L.tree, left));
    ir::Node& node = L.tree.at(n);
    node.set_op = s->op == SETOP_INTERSECT ? ir::SetOpKind::kIntersect
                  : s->op == SETOP_EXCEPT  ? ir::SetOpKind::kExcept
                                           : ir::SetOpKind::kUnion;
    node.all = s->all;
    return n;
}

// The WITH queries of a level, each lowered once (readers share it).
void lower_ctes(Lowering& L, Query* q, bool deparse) {
    L.ctes.emplace_back();
    ListCell* lc;
    foreach (lc, q->cteList) {
        CommonTableExpr* cte = lfirst_node(CommonTableExpr, lc);
        L.ctes.back()[cte->ctename] = -1;
        Query* cq = castNode(Query, cte->ctequery);
        int n = cte->cterecursive && cq->setOperations != nullptr
                    ? lower_set_operation(L, cq, cq->setOperations, deparse, true)
                    : lower_level(L, cq, deparse);
        L.ctes.back()[cte->ctename] = n;
    }
}

int lower_select(Lowering& L, Query* q, bool deparse) {
    Texts texts = deparse ? deparse_level(q, level_expressions(q)) : Texts{};
    std::vector<int> read;
    RangeTblEntry* one = deparse ? image_table(q, read) : nullptr;
    Texts images = one != nullptr ? deparse_images(q, one->relid) : Texts{};
    FromMap from;
    int n = lower_from(L, q, texts, from, deparse);
    if (one != nullptr) {
        L.tree.at(n).images = true;
        L.tree.at(n).image_columns = source_columns(one->relid, read);
    }
    if (q->jointree->quals != nullptr) {
        n = add_filter(L, n, text_of(texts, q->jointree->quals));
        L.tree.at(n).equalities = column_equalities(q, from, q->jointree->quals);
        if (one != nullptr) {
            L.tree.at(n).image_condition = text_of(images, q->jointree->quals);
            L.tree.at(n).prefilter = image_prefilter(q->jointree->quals, 1, one->relid);
        }
    }
    // HAVING alone also makes the level one group (SELECT 1 FROM t HAVING p:
    // one row or none, not one per source row).
    const bool grouped =
        q->groupClause != NIL || q->groupingSets != NIL || q->hasAggs || q->havingQual != nullptr;
    if (grouped) {
        n = lower_grouping(L, q, n, texts, from);
        if (one != nullptr) {
            set_algebraic_form(q, one->relid, L.tree.at(n));
        }
    }
    if (q->havingQual != nullptr) {
        n = add_filter(L, n, text_of(texts, q->havingQual));
        L.tree.at(n).image_condition = text_of(images, q->havingQual);
    }
    if (q->hasWindowFuncs) {
        n = add_node(L, ir::Op::kWindow, {n}, passed_columns(L.tree, n));
    }
    n = lower_project(L, q, n, texts, images, from, grouped);
    if (q->distinctClause != NIL) {
        n = lower_distinct(L, q, n);
    }
    if (q->limitCount != nullptr || q->limitOffset != nullptr) {
        n = lower_limit(L, q, n, texts);
    }
    return n;
}

int lower_level(Lowering& L, Query* q, bool deparse) {
    lower_ctes(L, q, deparse);
    int n;
    if (q->setOperations != nullptr) {
        n = lower_set_operation(L, q, q->setOperations, deparse, false);
        L.tree.at(n).columns = target_columns(q);
        if (q->limitCount != nullptr || q->limitOffset != nullptr) {
            n = lower_limit(L, q, n, Texts{});
        }
    } else {
        n = lower_select(L, q, deparse);
    }
    L.ctes.pop_back();
    return n;
}

}  // namespace

RowIdentityShape tree_identity(const ir::Tree& t) {
    ir::RootIdentity id = ir::root_identity(t);
    return RowIdentityShape{id.domain, id.columns};
}

ir::Tree lower_query_tree(Query* q) {
    Lowering L;
    L.tree.root = lower_level(L, q, true);
    ir::derive_identities(L.tree);
    return std::move(L.tree);
}

}  // namespace pgt::pg
