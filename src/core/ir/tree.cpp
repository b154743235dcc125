// Row identity per operator, and the operator tree as explain text.
// Invariant: an identity is claimed only when the operator's rule proves
// it from its children's (and a table's unique keys); anything else is
// KEYLESS_ROW over every column.
#include "core/ir/tree.hpp"
#include "core/sql/format.hpp"
#include "core/sql/names.hpp"

#include <algorithm>
#include <cstddef>

namespace pgt::ir {

namespace {

const Identity kKeyless{};

// The operators that pass their input's rows through unchanged in number
// and identity (a Window adds columns after its input's).
bool passes_rows(Op op) {
    return op == Op::kFilter || op == Op::kWindow || op == Op::kLimit;
}

// Whether the query level below `n` (down to its FROM) aggregates or
// expands rows by set-returning functions.
bool level_has(const Tree& t, int n, Op wanted) {
    for (int i = n;;) {
        const Node& node = t.at(i);
        if (node.op == wanted) {
            return true;
        }
        bool within_level = passes_rows(node.op) || node.op == Op::kProject ||
                            node.op == Op::kProjectSet || node.op == Op::kDistinct ||
                            node.op == Op::kAggregate || node.op == Op::kGroupingSets;
        if (!within_level || node.children.empty()) {
            return false;
        }
        i = node.children.front();
    }
}

bool aggregates(const Tree& t, int n) {
    return level_has(t, n, Op::kAggregate) || level_has(t, n, Op::kGroupingSets);
}

// A key of the child carried through a projection: each key column's
// first output that is that column unchanged; nullopt when one is not
// selected.
std::optional<std::vector<int>> projected_key(const Node& project, int child,
                                              const std::vector<int>& key) {
    std::vector<int> out;
    for (int c : key) {
        auto it =
            std::find_if(project.columns.begin(), project.columns.end(), [&](const Column& col) {
                return col.ref && *col.ref == ColumnRef{child, c};
            });
        if (it == project.columns.end()) {
            return std::nullopt;
        }
        out.push_back(static_cast<int>(it - project.columns.begin()));
    }
    return out;
}

Identity project_identity(const Tree& t, const Node& n) {
    const int child = n.children.front();
    const Identity& in = t.at(child).identity;
    if (in.domain == rowid::Domain::kSynthetic) {
        return in;
    }
    Identity out{in.domain, {}, in.set_column};
    for (const std::vector<int>& key : in.keys) {
        if (std::optional<std::vector<int>> k = projected_key(n, child, key)) {
            out.keys.push_back(*k);
        }
    }
    return out.keys.empty() ? kKeyless : out;
}

Identity key_identity(rowid::Domain domain, std::vector<int> key) {
    return Identity{domain, {std::move(key)}, false};
}

std::vector<int> first_columns(int count) {
    std::vector<int> key;
    for (int i = 0; i < count; i++) {
        key.push_back(i);
    }
    return key;
}

// DISTINCT keeps its input's identity where it has one; over plain rows
// the rows are unique as a whole. DISTINCT ON is keyed by its expressions
// (over an aggregate, by the groups).
Identity distinct_identity(const Tree& t, int self, const Node& n) {
    const Identity& in = t.at(n.children.front()).identity;
    if (level_has(t, self, Op::kProjectSet) || in.set_column) {
        return kKeyless;
    }
    if (n.on) {
        if (aggregates(t, self)) {
            return in;
        }
        bool selected =
            std::none_of(n.distinct_on.begin(), n.distinct_on.end(), [](int c) { return c < 0; });
        return selected ? key_identity(rowid::Domain::kGroupKey, n.distinct_on) : kKeyless;
    }
    if (in.keyed()) {
        return in;
    }
    if (aggregates(t, self) || n.columns.empty()) {
        return kKeyless;
    }
    return key_identity(rowid::Domain::kGroupKey,
                        first_columns(static_cast<int>(n.columns.size())));
}

Identity scan_identity(const Node& n) {
    if (n.sampled || n.unique_keys.empty()) {
        return kKeyless;
    }
    return Identity{rowid::Domain::kScanKey, n.unique_keys, false};
}

// Whether every column of `key` (positions in the join's output) is equal,
// by one of `eq`, to a column outside [lo, hi): the key's side then has at
// most one row per row of the other side.
bool key_matched(const std::vector<int>& key, int lo, int hi,
                 const std::vector<std::pair<int, int>>& eq) {
    auto outside = [&](int c) { return c < lo || c >= hi; };
    return std::all_of(key.begin(), key.end(), [&](int k) {
        return std::any_of(eq.begin(), eq.end(), [&](const std::pair<int, int>& e) {
            return (e.first == k && outside(e.second)) || (e.second == k && outside(e.first));
        });
    });
}

bool usable(const Identity& id) {
    return id.keyed() && !id.set_column && id.domain != rowid::Domain::kSynthetic;
}

std::vector<int> shifted(const std::vector<int>& key, int by) {
    std::vector<int> out;
    for (int c : key) {
        out.push_back(c + by);
    }
    return out;
}

// Whether some unique key of a side (its columns at [lo, lo + width) of
// the join's output) is matched to the other side.
bool side_matched(const Identity& side, int lo, int width,
                  const std::vector<std::pair<int, int>>& eq) {
    return usable(side) &&
           std::any_of(side.keys.begin(), side.keys.end(), [&](const std::vector<int>& key) {
               return key_matched(shifted(key, lo), lo, lo + width, eq);
           });
}

// The identity of node `self` when `extra` equalities (positions in its
// output) also hold: a WHERE over inner joins (comma joins) passes its
// equalities down to the joins below it.
Identity identity_with(const Tree& t, int self, const std::vector<std::pair<int, int>>& extra);

// Keys through a join (functional dependencies): a side joined on a unique
// key of the other side keeps its keys, since each of its rows meets at
// most one row there. An inner join keeps the keys of each side whose
// partner is so matched; a left join those of its preserved (left) side
// when the right is matched, a right join the mirror; a full join none
// (its padded rows carry NULL keys).
Identity join_identity(const Tree& t, const Node& n,
                       const std::vector<std::pair<int, int>>& extra) {
    if (n.children.size() != 2 || n.join == JoinKind::kFull || n.join == JoinKind::kSemi ||
        n.join == JoinKind::kAnti) {
        return kKeyless;
    }
    const bool inner = n.join == JoinKind::kInner;
    std::vector<std::pair<int, int>> eq = n.equalities;
    if (inner) {
        eq.insert(eq.end(), extra.begin(), extra.end());
    }
    const int shift = static_cast<int>(t.at(n.children[0]).columns.size());
    const int width = static_cast<int>(n.columns.size());
    // Equalities within one side hold for that side's rows too (inner only).
    std::vector<std::pair<int, int>> in_left, in_right;
    for (const auto& [a, b] : inner ? eq : std::vector<std::pair<int, int>>{}) {
        if (a < shift && b < shift) {
            in_left.emplace_back(a, b);
        } else if (a >= shift && b >= shift) {
            in_right.emplace_back(a - shift, b - shift);
        }
    }
    const Identity left = identity_with(t, n.children[0], in_left);
    const Identity right = identity_with(t, n.children[1], in_right);
    const bool right_single = side_matched(right, shift, width - shift, eq);
    const bool left_single = side_matched(left, 0, shift, eq);
    Identity out = kKeyless;
    auto keep = [&](const Identity& side, int lo) {
        if (!usable(side)) {
            return;
        }
        if (out.keys.empty()) {
            out.domain = side.domain;
        }
        for (const std::vector<int>& key : side.keys) {
            out.keys.push_back(shifted(key, lo));
        }
    };
    if (right_single && n.join != JoinKind::kRight) {
        keep(left, 0);
    }
    if (left_single && n.join != JoinKind::kLeft) {
        keep(right, shift);
    }
    return out.keys.empty() ? kKeyless : out;
}

Identity identity_with(const Tree& t, int self, const std::vector<std::pair<int, int>>& extra) {
    const Node& n = t.at(self);
    if (extra.empty() || n.op != Op::kJoin || n.join != JoinKind::kInner) {
        return n.identity;
    }
    return join_identity(t, n, extra);
}

Identity filter_identity(const Tree& t, const Node& n) {
    const int child = n.children.front();
    Identity joined = identity_with(t, child, n.equalities);
    return joined.keyed() ? joined : t.at(child).identity;
}

Identity identity_of(const Tree& t, int self) {
    const Node& n = t.at(self);
    switch (n.op) {
        case Op::kScan:
            return scan_identity(n);
        case Op::kFilter:
            return filter_identity(t, n);
        case Op::kJoin:
            return join_identity(t, n, {});
        case Op::kWindow:
        case Op::kLimit:
            return t.at(n.children.front()).identity;
        case Op::kProject:
            return project_identity(t, n);
        case Op::kAggregate:
            if (n.key_count == 0) {
                return Identity{rowid::Domain::kSynthetic, {}, false};
            }
            return key_identity(rowid::Domain::kGroupKey, first_columns(n.key_count));
        case Op::kGroupingSets:
            if (!n.keyed_sets) {
                return kKeyless;
            }
            return Identity{rowid::Domain::kGroupKey, {first_columns(n.key_count)}, true};
        case Op::kDistinct:
            return distinct_identity(t, self, n);
        default:
            // Derived tables, set operations, functions, VALUES and WITH
            // queries prove no key (yet): their rows are counted.
            return kKeyless;
    }
}

}  // namespace

std::optional<ColumnRef> scan_column(const Tree& t, int node, int column) {
    while (t.at(node).op != Op::kScan) {
        const Column& c = t.at(node).columns.at(static_cast<std::size_t>(column));
        if (!c.ref) {
            return std::nullopt;
        }
        node = c.ref->node;
        column = c.ref->column;
    }
    return ColumnRef{node, column};
}

IdentitySource identity_source(const Tree& t) {
    if (t.root < 0) {
        return {};
    }
    const Node& root = t.at(t.root);
    if (root.identity.domain != rowid::Domain::kScanKey || root.identity.keys.empty()) {
        return {};
    }
    int scan = -1;
    std::vector<int> at_scan;
    for (int c : root.identity.keys.front()) {
        std::optional<ColumnRef> at = scan_column(t, t.root, c);
        if (!at || (scan >= 0 && scan != at->node)) {
            return {};
        }
        scan = at->node;
        at_scan.push_back(at->column);
    }
    const Node& s = t.at(scan);
    const bool is_key =
        std::any_of(s.unique_keys.begin(), s.unique_keys.end(), [&](const std::vector<int>& k) {
            return std::all_of(k.begin(), k.end(), [&](int c) {
                return std::find(at_scan.begin(), at_scan.end(), c) != at_scan.end();
            });
        });
    const auto reads = std::count_if(t.nodes.begin(), t.nodes.end(), [&](const Node& n) {
        return n.op == Op::kScan && n.relid == s.relid;
    });
    if (!is_key || reads != 1) {
        return {};
    }
    return IdentitySource{s.relid, at_scan};
}

uint32_t identity_relation(const Tree& t) {
    return identity_source(t).relid;
}

const char* op_name(Op op) {
    static constexpr const char* kNames[] = {
        "Scan",    "Values",     "FunctionScan",   "CteScan",   "Subquery",     "Filter",
        "Project", "ProjectSet", "Join",           "Aggregate", "GroupingSets", "Distinct",
        "Window",  "SetOp",      "RecursiveUnion", "Limit"};
    return kNames[static_cast<std::size_t>(op)];
}

const char* join_kind_name(JoinKind kind) {
    static constexpr const char* kNames[] = {"inner", "left", "right", "full", "semi", "anti"};
    return kNames[static_cast<std::size_t>(kind)];
}

void derive_identities(Tree& t) {
    for (std::size_t i = 0; i < t.nodes.size(); i++) {
        t.nodes[i].identity = identity_of(t, static_cast<int>(i));
    }
}

RootIdentity root_identity(const Tree& t) {
    const Node& root = t.at(t.root);
    const Identity& id = root.identity;
    RootIdentity out{id.domain, {}};
    if (!id.keyed()) {
        out.columns = first_columns(static_cast<int>(root.columns.size()));
        return out;
    }
    if (!id.keys.empty()) {
        out.columns = id.keys.front();
    }
    if (id.set_column) {
        out.columns.push_back(static_cast<int>(root.columns.size()));
    }
    return out;
}

namespace {

std::string column_list(const Node& n, const std::vector<int>& cols) {
    std::string out;
    for (int c : cols) {
        out += out.empty() ? "" : ", ";
        out += c >= 0 && c < static_cast<int>(n.columns.size())
                   ? n.columns[static_cast<std::size_t>(c)].name
                   : sql::kGroupingSetColumn;
    }
    return out;
}

std::string identity_text(const Node& n) {
    const Identity& id = n.identity;
    std::string out = rowid::domain_name(id.domain);
    if (!id.keys.empty()) {
        std::vector<int> key = id.keys.front();
        if (id.set_column) {
            key.push_back(-1);
        }
        out += " (" + column_list(n, key) + ")";
    }
    return out;
}

std::string node_head(const Node& n) {
    std::string out = op_name(n.op);
    switch (n.op) {
        case Op::kScan:
        case Op::kFunctionScan:
        case Op::kCteScan:
            out += " " + n.relation;
            break;
        case Op::kJoin:
            out += std::string(" ") + join_kind_name(n.join);
            out += n.condition.empty() ? "" : " ON " + n.condition;
            break;
        case Op::kFilter:
            out += " " + n.condition;
            break;
        case Op::kSetOp: {
            static constexpr const char* kSetOps[] = {"UNION", "INTERSECT", "EXCEPT"};
            out += std::string(" ") + kSetOps[static_cast<std::size_t>(n.set_op)];
            out += n.all ? " ALL" : "";
            break;
        }
        case Op::kAggregate:
        case Op::kGroupingSets:
            out += " by (" + column_list(n, first_columns(n.key_count)) + ")";
            break;
        case Op::kDistinct:
            out += n.on ? " ON (" + column_list(n, n.distinct_on) + ")" : "";
            break;
        default:
            break;
    }
    if (!n.detail.empty()) {
        out += " " + n.detail;
    }
    return out;
}

void format_node(const Tree& t, int i, int depth, std::vector<bool>& shown, std::string& out) {
    const Node& n = t.at(i);
    out += std::string(static_cast<std::size_t>(depth) * 2, ' ') + node_head(n);
    out += "  [" + identity_text(n) + "]";
    if (!n.rule.empty()) {
        out += "  rule: " + n.rule;
    }
    if (shown[static_cast<std::size_t>(i)]) {
        out += "  (shown above)\n";
        return;
    }
    shown[static_cast<std::size_t>(i)] = true;
    out += "\n";
    for (const std::string& term : n.rule_terms) {
        out += std::string(static_cast<std::size_t>(depth) * 2 + 4, ' ') + "- " + term + "\n";
    }
    for (int c : n.children) {
        format_node(t, c, depth + 1, shown, out);
    }
}

}  // namespace

std::string format_tree(const Tree& t) {
    std::string out;
    if (t.root < 0) {
        return out;
    }
    std::vector<bool> shown(t.nodes.size(), false);
    format_node(t, t.root, 0, shown, out);
    if (!out.empty() && out.back() == '\n') {
        out.pop_back();
    }
    return sql::wrap_lines(out, sql::kPlanWidth);
}

}  // namespace pgt::ir
