// Defining query analysis: parse, analyze, validate, rewrite, deparse.
// Invariant: the tree walkers run inside PostgreSQL frames, so they never
// throw; they record the first problem found and the C++ side reports it
// after the walk.
#include "pg/analyze/defining_query.hpp"
#include "pg/analyze/anti_join.hpp"
#include "pg/analyze/expand_views.hpp"
#include "pg/analyze/flatten_derived.hpp"
#include "pg/analyze/grouped_join.hpp"
#include "pg/analyze/inline_ctes.hpp"
#include "pg/analyze/join_using.hpp"
#include "pg/analyze/pull_up.hpp"
#include "pg/analyze/reduce_outer.hpp"
#include "pg/analyze/grouping_sets.hpp"
#include "pg/analyze/output_key.hpp"
#include "pg/analyze/lower_tree.hpp"
#include "pg/analyze/scan_shape.hpp"
#include "pg/analyze/stability.hpp"
#include "pg/boundary/subtransaction.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <string>

#include "core/error.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"
#include "pg/catalog/catalog_schema.hpp"
#include "pg/common/relation_names.hpp"

extern "C" {
#include "postgres.h"
#include "optimizer/optimizer.h"
#include "access/sysattr.h"
#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "rewrite/rewriteHandler.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
}

namespace pgt::pg {

namespace {

enum class Problem {
    kNone,
    kForUpdate,
    kModifyingCte,
    kLimitWithoutOrder,
    kTablesample,
    kTempSource,
    kCatalogSource
};

// Walker state: plain data only (it lives across PostgreSQL frames).
struct WalkState {
    Problem problem;
    Oid problem_relid;
    List* relids;  // palloc'd list of every relation read
    List* reads;   // RangeTblEntry* that need SELECT (the rewritten query's only)
    bool rewritten;
    List* functions;  // OIDs of the functions the query calls (not a view's own)
    List* types;      // OIDs of the types of its expressions (not a view's own)
    Oid inherited;    // a table read with inheritance children (theirs are not captured)
};

bool note_function(Oid func, void* ctx) {
    auto* st = static_cast<WalkState*>(ctx);
    st->functions = list_append_unique_oid(st->functions, func);
    return false;
}

// A type the query computes with, the element type of an array and the
// base types of a domain: an enum among them changes results when a value
// is renamed (catalog::record_dependencies, pgtrickle._on_ddl_end).
void note_type(WalkState* st, Oid type) {
    if (!OidIsValid(type) || list_member_oid(st->types, type)) {
        return;
    }
    st->types = lappend_oid(st->types, type);
    note_type(st, get_element_type(type));
    if (get_typtype(type) == TYPTYPE_DOMAIN) {
        note_type(st, getBaseType(type));
    }
}

// Expression nodes whose type the query's results depend on: columns,
// constants, parameters, function and aggregate results, casts.
bool is_typed_expression(Node* node) {
    switch (nodeTag(node)) {
        case T_Var:
        case T_Const:
        case T_Param:
        case T_FuncExpr:
        case T_Aggref:
        case T_WindowFunc:
        case T_RelabelType:
        case T_CoerceViaIO:
        case T_ArrayCoerceExpr:
        case T_CoerceToDomain:
        case T_ArrayExpr:
        case T_RowExpr:
        case T_CaseExpr:
        case T_CoalesceExpr:
        case T_MinMaxExpr:
        case T_SubLink:
            return true;
        default:
            return false;
    }
}

bool record(WalkState* st, Problem p, Oid relid) {
    st->problem = p;
    st->problem_relid = relid;
    return true;  // stops the walk
}

bool is_forbidden_source_schema(Oid nsp) {
    if (IsCatalogNamespace(nsp) || IsToastNamespace(nsp)) {
        return true;
    }
    const char* name = get_namespace_name(nsp);
    return name != nullptr && (strcmp(name, pgt::catalog::kSchema) == 0 ||
                               strcmp(name, pgt::catalog::kChangesSchema) == 0 ||
                               strcmp(name, "information_schema") == 0);
}

bool check_rte(RangeTblEntry* rte, WalkState* st) {
    if (rte->tablesample != nullptr) {
        return record(st, Problem::kTablesample, rte->relid);
    }
    if (rte->rtekind != RTE_RELATION) {
        return false;
    }
    if (get_rel_persistence(rte->relid) == RELPERSISTENCE_TEMP) {
        return record(st, Problem::kTempSource, rte->relid);
    }
    if (IsCatalogRelationOid(rte->relid) ||
        is_forbidden_source_schema(get_rel_namespace(rte->relid))) {
        return record(st, Problem::kCatalogSource, rte->relid);
    }
    st->relids = list_append_unique_oid(st->relids, rte->relid);
    if (rte->inh && rte->relkind == RELKIND_RELATION && !OidIsValid(st->inherited) &&
        has_subclass(rte->relid)) {
        st->inherited = rte->relid;
    }
    if (st->rewritten && (rte->requiredPerms & ACL_SELECT) != 0) {
        st->reads = lappend(st->reads, rte);
    }
    return false;
}

bool check_query(Query* q, WalkState* st) {
    if (q->rowMarks != NIL) {
        return record(st, Problem::kForUpdate, InvalidOid);
    }
    if (q->hasModifyingCTE || q->commandType != CMD_SELECT) {
        return record(st, Problem::kModifyingCte, InvalidOid);
    }
    if ((q->limitCount != nullptr || q->limitOffset != nullptr) && q->sortClause == NIL) {
        return record(st, Problem::kLimitWithoutOrder, InvalidOid);
    }
    return false;
}

bool validate_walker(Node* node, void* ctx);

// PostgreSQL's walkers take an old-style "bool (*)()" callback.
bool (*walker_fn())() {
    return reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(validate_walker));
}

bool validate_walker(Node* node, void* ctx) {
    auto* st = static_cast<WalkState*>(ctx);
    if (node == nullptr) {
        return false;
    }
    if (IsA(node, RangeTblEntry)) {
        return check_rte(reinterpret_cast<RangeTblEntry*>(node), st);
    }
    if (IsA(node, Query)) {
        Query* q = reinterpret_cast<Query*>(node);
        return check_query(q, st) ||
               query_tree_walker(q, walker_fn(), ctx, QTW_EXAMINE_RTES_BEFORE);
    }
    if (!st->rewritten) {
        (void)check_functions_in_node(node, note_function, ctx);
        if (is_typed_expression(node)) {
            note_type(st, exprType(node));
        }
    }
    return expression_tree_walker(node, walker_fn(), ctx);
}

[[noreturn]] void report(Problem p, Oid relid) {
    switch (p) {
        case Problem::kForUpdate:
            throw pgt::Error(
                "0A000", "FOR UPDATE/FOR SHARE is not allowed in a stream table query",
                "Row locking clauses lock source rows; a stream table only reads them.",
                "Remove the FOR UPDATE/FOR SHARE clause.");
        case Problem::kModifyingCte:
            throw pgt::Error("0A000",
                             "data-modifying statements are not allowed in a stream table query",
                             "", "Use a plain SELECT; WITH clauses may contain only SELECT.");
        case Problem::kLimitWithoutOrder:
            throw pgt::Error(
                "0A000", "LIMIT or OFFSET without ORDER BY is not allowed in a stream table query",
                "Without ORDER BY the rows kept are not determined by the data.",
                "Add an ORDER BY that determines which rows are kept.");
        case Problem::kTablesample:
            throw pgt::Error("0A000", "TABLESAMPLE is not allowed in a stream table query",
                             "A sample is random; the stream table could never equal its query.",
                             "Remove the TABLESAMPLE clause.");
        case Problem::kTempSource:
            throw pgt::Error(
                "0A000", "stream table query reads temporary table " + relation_display_name(relid),
                "Temporary tables are private to one session.",
                "Use a regular or unlogged table as the source.");
        case Problem::kCatalogSource:
            throw pgt::Error(
                "0A000", "stream table query reads system relation " + relation_display_name(relid),
                "System catalogs and pg_trickle's own tables change without capture.",
                "Select from user tables only.");
        case Problem::kNone:
            break;
    }
    throw pgt::Error("XX000", "unexpected validation state");
}

// Runs fn; a syntax or analysis error's cursor position then refers to the
// defining query (shown as QUERY: ... with its own caret), not to the
// statement that called the API.
template <typename F>
auto with_query_position(const std::string& sql, F&& fn) -> decltype(fn()) {
    try {
        return fn();
    } catch (const PgError& e) {
        ErrorData* ed = e.edata();
        if (ed->cursorpos > 0 && ed->internalquery == nullptr) {
            ed->internalpos = ed->cursorpos;
            ed->cursorpos = 0;
            ed->internalquery = pg_call([&] { return pstrdup(sql.c_str()); });
        }
        throw;
    }
}

RawStmt* parse_single_select(const std::string& sql) {
    List* stmts = with_query_position(
        sql, [&] { return pg_call([&] { return raw_parser(sql.c_str(), RAW_PARSE_DEFAULT); }); });
    if (list_length(stmts) != 1) {
        throw pgt::Error("42601", "stream table query must be exactly one statement",
                         "Found " + std::to_string(list_length(stmts)) + " statements.",
                         "Pass a single SELECT statement without a trailing second statement.");
    }
    RawStmt* raw = linitial_node(RawStmt, stmts);
    if (!IsA(raw->stmt, SelectStmt)) {
        throw pgt::Error("0A000", "stream table query must be a SELECT statement", "",
                         "Pass the query that defines the contents, e.g. SELECT ... FROM ....");
    }
    if (reinterpret_cast<SelectStmt*>(raw->stmt)->intoClause != nullptr) {
        throw pgt::Error("0A000", "SELECT INTO is not allowed in a stream table query", "",
                         "Remove the INTO clause; the stream table is the target.");
    }
    return raw;
}

// Whether the top-level select list has a * or t.* (the columns are then
// fixed when the stream table is created, not when a source changes).
bool selects_star(const RawStmt* raw) {
    const auto* select = reinterpret_cast<const SelectStmt*>(raw->stmt);
    ListCell* lc;
    foreach (lc, select->targetList) {
        const auto* target = static_cast<const ResTarget*>(lfirst(lc));
        if (target->val != nullptr && IsA(target->val, ColumnRef) &&
            IsA(llast(reinterpret_cast<const ColumnRef*>(target->val)->fields), A_Star)) {
            return true;
        }
    }
    return false;
}

std::vector<OutputColumn> output_columns(Query* q) {
    std::vector<OutputColumn> cols;
    std::set<std::string> seen;
    ListCell* lc;
    foreach (lc, q->targetList) {
        TargetEntry* te = lfirst_node(TargetEntry, lc);
        if (te->resjunk) {
            continue;
        }
        OutputColumn c{te->resname ? te->resname : "?column?", exprType((Node*)te->expr),
                       exprTypmod((Node*)te->expr), exprCollation((Node*)te->expr)};
        if (c.name.rfind(pgt::catalog::kReservedColumnPrefix, 0) == 0) {
            throw pgt::Error("42939", "column name \"" + c.name + "\" is reserved",
                             "Names starting with __pgt_ are used by pg_trickle's own columns.",
                             "Give the column another name with AS.");
        }
        if (!seen.insert(c.name).second) {
            throw pgt::Error("42701", "column \"" + c.name + "\" specified more than once",
                             "Every output column of a stream table query needs a distinct name.",
                             "Give the columns distinct names with AS.");
        }
        char typtype = pg_call([&] { return get_typtype(c.type); });
        if (typtype == TYPTYPE_PSEUDO) {
            char* tname = pg_call([&] { return format_type_be(c.type); });
            throw pgt::Error(
                "42P16", "column \"" + c.name + "\" has pseudo-type " + tname, "",
                "Cast the expression to a concrete type, or expand a row into columns.");
        }
        cols.push_back(std::move(c));
    }
    return cols;
}

void collect_sources(Query* q, WalkState* st) {
    pg_call([&] {
        (void)validate_walker(reinterpret_cast<Node*>(q), st);
        if (st->problem == Problem::kNone) {
            // Views expand into their base relations; walk those too.
            List* rewritten = QueryRewrite(static_cast<Query*>(copyObjectImpl(q)));
            st->rewritten = true;  // its references carry the rights the query runs with
            ListCell* lc;
            foreach (lc, rewritten) {
                if (validate_walker(static_cast<Node*>(lfirst(lc)), st)) {
                    break;
                }
            }
        }
    });
}

// The SELECT rights the walked references need (see ReadRight).
std::vector<ReadRight> read_rights(const WalkState& st) {
    std::vector<ReadRight> out;
    ListCell* lc;
    foreach (lc, st.reads) {
        auto* rte = static_cast<RangeTblEntry*>(lfirst(lc));
        ReadRight r{rte->relid, rte->checkAsUser, {}};
        for (int m = -1; (m = bms_next_member(rte->selectedCols, m)) >= 0;) {
            r.attnums.push_back(m + FirstLowInvalidHeapAttributeNumber);
        }
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace

std::string deparse_stored_query(const std::string& tree) {
    return with_pinned_search_path([&] {
        return std::string(pg_call([&] {
            Query* q = static_cast<Query*>(stringToNode(tree.c_str()));
            return pg_get_querydef(q, false);
        }));
    });
}

OutputColumn column_at(const AnalyzedQuery& q, int i) {
    if (i == static_cast<int>(q.columns.size())) {
        return {kGroupingSetColumn, INT4OID, -1, InvalidOid};
    }
    return q.columns.at(static_cast<std::size_t>(i));
}

bool has_grouping_set_column(const AnalyzedQuery& q) {
    const std::vector<int>& k = q.identity.key_columns;
    return q.identity.domain == rowid::Domain::kGroupKey && !k.empty() &&
           k.back() == static_cast<int>(q.columns.size());
}

namespace {

// q deparsed and analysed again: a lowering that leaves range table
// entries unreferenced (anti_join.hpp) gets a query with none.
Query* analysed_again(Query* q) {
    return with_pinned_search_path([&] {
        const std::string text = pg_call([&] { return pg_get_querydef(q, false); });
        RawStmt* raw = parse_single_select(text);
        return pg_call(
            [&] { return parse_analyze_fixedparams(raw, text.c_str(), nullptr, 0, nullptr); });
    });
}

// q, analysed: out holds what the text said (original, selects_star).
AnalyzedQuery analyze_query(Query* q, AnalyzedQuery out) {
    WalkState st{Problem::kNone, InvalidOid, NIL, NIL, false, NIL, NIL, InvalidOid};
    collect_sources(q, &st);
    if (st.problem != Problem::kNone) {
        report(st.problem, st.problem_relid);
    }
    out.columns = output_columns(q);
    out.reads = read_rights(st);  // before the shapes: a region counts a table's references
    // The row identity is what the operator tree's root proves.
    out.operators = lower_query_tree(q);
    out.identity = tree_identity(out.operators);
    out.deterministic =
        !pg_call([&] { return contain_mutable_functions(reinterpret_cast<Node*>(q)); });
    for (const ir::Node& n : out.operators.nodes) {
        out.deterministic = out.deterministic && !n.sampled;
    }
    derive_scan_shape(q, out);
    if (OidIsValid(st.inherited) && out.differential_blocker.empty()) {
        // Capture is installed on the table read, not on its children.
        out.differential_blocker =
            "table " + relation_display_name(st.inherited) +
            ", which has inheritance children (a change to a child is not captured)";
        out.scan = ScanShape{};
        out.join = JoinShape{};
        out.region = RegionShape{};
    }
    if (st.relids == NIL && out.differential_blocker.empty()) {
        // Nothing to capture: only a recompute can follow what it reads.
        out.differential_blocker = "a query that reads no table";
        out.scan = ScanShape{};
        out.join = JoinShape{};
        out.region = RegionShape{};
    }
    if (out.differential_blocker.empty()) {
        // Incremental maintenance would keep values computed at different
        // times side by side (docs/sql-reference.md, "Functions").
        const std::string unstable = unstable_construct(q);
        if (!unstable.empty()) {
            out.differential_blocker =
                unstable + ", whose value can change while no source table changes";
            out.scan = ScanShape{};
            out.join = JoinShape{};
            out.region = RegionShape{};
        }
    }
    if (has_grouping_set_column(out)) {
        append_grouping_set_column(q);
    }
    ListCell* lc;
    foreach (lc, st.functions) {
        out.functions.push_back(lfirst_oid(lc));
    }
    foreach (lc, st.types) {
        out.types.push_back(lfirst_oid(lc));
    }
    foreach (lc, st.relids) {
        Oid relid = lfirst_oid(lc);
        out.sources.push_back({relid, pg_call([&] { return get_rel_relkind(relid); })});
    }
    char* deparsed =
        with_pinned_search_path([&] { return pg_call([&] { return pg_get_querydef(q, false); }); });
    out.effective = deparsed;
    out.tree = pg_call([&] { return nodeToString(q); });
    return out;
}

// The query maintained over expanded views keeps them as written: its
// tree names the views (a reinitialisation expands their definitions as
// they are then), and they are sources (dependencies, DDL that marks).
void keep_views(Query* written, const std::vector<Oid>& views, AnalyzedQuery& a) {
    a.tree = pg_call([&] { return nodeToString(written); });
    for (Oid v : views) {
        bool known = false;
        for (const SourceRelation& s : a.sources) {
            known = known || s.relid == v;
        }
        if (!known) {
            a.sources.push_back({v, RELKIND_VIEW});
        }
    }
}

// A lowered query analysed (deparsed and analysed again first when asked),
// in a subtransaction: a lowering PostgreSQL cannot read back, or that the
// analysis refuses, leaves the query as written to decide.
std::optional<AnalyzedQuery> analyze_lowered(Query* lowered, bool again, const AnalyzedQuery& out) {
    try {
        return in_subtransaction([&] {
            return std::optional<AnalyzedQuery>(
                analyze_query(again ? analysed_again(lowered) : lowered, out));
        });
    } catch (const pgt::Error& e) {
        const std::string cls = e.sqlstate().substr(0, 2);
        if (cls != "42" && cls != "0A") {
            throw;  // a cancel, a resource or system error: not the lowering's
        }
        return std::nullopt;
    }
}

}  // namespace

AnalyzedQuery analyze_defining_query(const std::string& sql, bool stored) {
    AnalyzedQuery out;
    out.original = sql;
    RawStmt* raw = parse_single_select(sql);
    out.selects_star = !stored && selects_star(raw);
    Query* q = with_query_position(sql, [&] {
        return pg_call(
            [&] { return parse_analyze_fixedparams(raw, sql.c_str(), nullptr, 0, nullptr); });
    });
    // A stored effective query (re-analyzed by alter) already selects the
    // hidden grouping-set column: it is derived again below.
    if (stored) {
        drop_grouping_set_column(q);
    }
    // WITH queries are maintained as the derived tables they stand for
    // when that makes the query incremental (the stored query is then the
    // inlined one); otherwise they stay, and a recompute evaluates each once.
    // So are anti-joins written as LEFT JOIN ... WHERE r.k IS NULL (as the
    // NOT EXISTS they are) and outer joins with USING, NATURAL or an alias
    // (as the ON joins they are).
    auto* lowered = pg_call([&] { return static_cast<Query*>(copyObjectImpl(q)); });
    // Views are maintained over their tables, as the derived tables they
    // stand for, when reading those directly gives the same rows.
    const std::vector<Oid> views = expand_views(lowered);
    const bool inlined = inline_with_queries(lowered);
    const bool using_on = lower_join_using(lowered);
    // Outer joins whose padded rows WHERE removes are inner joins.
    const bool reduced = reduce_outer_joins(lowered);
    const bool anti = lower_anti_joins(lowered);
    // Plain derived tables (a WITH query without aggregates inlines to one)
    // are merged into the query, as PostgreSQL's planner merges them.
    const bool flattened = flatten_plain_derived_tables(lowered);
    // Grouped derived tables joined on their whole key are the correlated
    // subqueries of one group each.
    Query* before_groups = pg_call([&] { return static_cast<Query*>(copyObjectImpl(lowered)); });
    const bool groups = lower_joined_groups(lowered);
    if (groups) {
        // (a derived table that was the outer side of a join to groups is
        // now in the FROM list)
        (void)flatten_plain_derived_tables(lowered);
    }
    // A select over one grouped derived table (what a WITH query with GROUP
    // BY and a final SELECT inline to) is that grouped query.
    Query* pulled = pull_up_grouped_derived_table(lowered);
    if (pulled == nullptr) {
        // So is a select over one UNION ALL (a view of staging tables
        // unioned) the UNION ALL of its arms selected.
        pulled = pull_up_union_all(lowered);
    }
    lowered = pulled != nullptr ? pulled : lowered;
    std::string lowered_blocker;
    const bool again =
        !views.empty() || using_on || reduced || anti || flattened || groups || pulled != nullptr;
    if (inlined || again) {
        std::optional<AnalyzedQuery> a = analyze_lowered(lowered, again, out);
        if (a && a->differential_blocker.empty()) {
            if (groups && a->region.present) {
                // A recompute evaluates the query as written: one grouping
                // pass beats a subquery per row. So does the region's, where
                // the groups can be narrowed to the touched keys inside;
                // else it narrows the lowered one, which reaches one group
                // per key (a subquery per touched row).
                std::string narrowed =
                    narrowed_to_joined_groups(before_groups, a->identity.key_columns);
                if (!narrowed.empty()) {
                    a->region.query = narrowed;
                } else if (a->region.query.empty()) {
                    a->region.query = a->effective;
                }
                a->effective = with_pinned_search_path([&] {
                    return std::string(pg_call([&] { return pg_get_querydef(q, false); }));
                });
                a->region.whole_when_many = true;
            }
            if (!views.empty()) {
                keep_views(q, views, *a);
            }
            return *a;
        }
        lowered_blocker = a ? a->differential_blocker : "";
    }
    AnalyzedQuery kept = analyze_query(q, out);
    // What really blocks a query whose WITH queries or views were lowered.
    if (((inlined && kept.differential_blocker == kWithQueries) || !views.empty()) &&
        !lowered_blocker.empty()) {
        kept.differential_blocker = lowered_blocker;
    }
    return kept;
}

}  // namespace pgt::pg
