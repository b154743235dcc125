// Rule names per operator for explain_st (see rules.hpp).
#include "core/diff/rules.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "core/ir/tree.hpp"

namespace pgt::diff {

namespace {

bool is(std::optional<Strategy> strategy, Strategy s) {
    return strategy == s;
}

// Whether node i is below a derived table (kSubquery) of t.
std::vector<bool> inside_derived(const ir::Tree& t) {
    std::vector<bool> inside(t.nodes.size(), false);
    for (int i = static_cast<int>(t.nodes.size()) - 1; i >= 0; i--) {
        for (int c : t.at(i).children) {
            inside.at(static_cast<std::size_t>(c)) =
                inside.at(static_cast<std::size_t>(i)) || t.at(i).op == ir::Op::kSubquery;
        }
    }
    return inside;
}

// The rule of one operator under strategy; "" leaves it unnamed. derived:
// whether it is below a derived table (inside_derived).
std::string rule_for(const ir::Tree& t, int i, std::optional<Strategy> strategy, bool derived) {
    const ir::Node& n = t.at(i);
    const bool root = i == t.root;
    // A scan keyed by its source's key follows each key's last event
    // (apply_sql); other scans net their images.
    const bool by_key = is(strategy, Strategy::kScan) && ir::identity_source(t).relid != 0;
    if (is(strategy, Strategy::kAlgebraicDerived) && derived) {
        return n.op == ir::Op::kAggregate || n.op == ir::Op::kDistinct
                   ? "delta as signed rows: the touched groups now (+1) and before the change "
                     "(-1), each table before it read from its images by its unique key"
                   : "";
    }
    const bool joined = is(strategy, Strategy::kJoinRegion) ||
                        is(strategy, Strategy::kAlgebraicJoin) ||
                        is(strategy, Strategy::kJoinRescan);
    switch (n.op) {
        case ir::Op::kFilter:
            if (by_key) {
                return "evaluated on the last after-image of each key; conjuncts that cannot "
                       "raise also on every image first";
            }
            return joined ? "copied into each branch; conjuncts of one table that cannot raise "
                            "also filter its images"
                          : "evaluated on netted images; conjuncts that cannot raise also "
                            "before netting";
        case ir::Op::kAggregate:
            if (is(strategy, Strategy::kAlgebraicGroup) || is(strategy, Strategy::kAlgebraicJoin) ||
                is(strategy, Strategy::kAlgebraicDerived)) {
                const bool extremes = std::any_of(n.algebraic_aggs.begin(), n.algebraic_aggs.end(),
                                                  [](const ir::AlgebraicAgg& a) {
                                                      return a.kind == ir::AggKind::kMin ||
                                                             a.kind == ir::AggKind::kMax;
                                                  });
                return std::string(
                           "algebraic: new value from the stored one, hidden state "
                           "columns and the change's signed images; ") +
                       (extremes ? "a group whose MIN/MAX lost its extreme is read again"
                                 : "no group is read again");
            }
            return is(strategy, Strategy::kGroupRescan)
                       ? "recompute the groups the change touches, from their source rows"
                       : "";
        case ir::Op::kGroupingSets:
            return "recompute the groups the change touches, in every grouping set";
        case ir::Op::kJoin:
            if (is(strategy, Strategy::kJoinRescan)) {
                return "recompute the output rows of the keys the change touches";
            }
            return joined ? "delta: one branch per non-empty set of changed tables (their images, "
                            "the other tables as they are now)"
                          : "";
        case ir::Op::kProject:
            if (!root) {
                return "";
            }
            if (is(strategy, Strategy::kScan)) {
                if (by_key) {
                    return "apply: the last event of each key upserts or deletes its row, found "
                           "by one probe";
                }
                return n.identity.keyed()
                           ? "apply: the last netted image of each key upserts or deletes its row"
                           : "apply: each netted image adds or removes that many copies of its row";
            }
            if (!is(strategy, Strategy::kJoinRegion)) {
                return "apply: replace the rows of the touched identities";
            }
            return std::string(
                       "apply: recompute the identity keys the branches find, replace their rows") +
                   (ir::identity_source(t).relid != 0
                        ? "; a change of the key's table alone (no kept copies): the last event "
                          "of each key, joined to the other tables as they are"
                        : "");
        default:
            return "";
    }
}

}  // namespace

void describe_rules(ir::Tree& t, std::optional<Strategy> strategy) {
    if (t.root < 0) {
        return;
    }
    const bool incremental = strategy.has_value();
    if (!incremental) {
        t.at(t.root).rule = "recompute (FULL)";
        return;
    }
    const std::vector<bool> inside = inside_derived(t);
    for (int i = 0; i < static_cast<int>(t.nodes.size()); i++) {
        ir::Node& n = t.at(i);
        if (n.op == ir::Op::kScan) {
            n.rule = "delta: change images (before -1, after +1)";
            continue;
        }
        n.rule = rule_for(t, i, strategy, inside[static_cast<std::size_t>(i)]);
    }
    // The root names the strategy, then what it does there.
    std::string& root = t.at(t.root).rule;
    root = std::string(strategy_name(*strategy)) + (root.empty() ? "" : " (" + root + ")");
}

}  // namespace pgt::diff
