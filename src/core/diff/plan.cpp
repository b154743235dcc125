// The delta plan: the label, one step per operator, the terms of a join
// (see plan.hpp).
#include "core/diff/plan.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "core/diff/aggregate.hpp"
#include "core/diff/linear.hpp"
#include "core/diff/union_all.hpp"

namespace pgt::diff {

namespace {

// The label: a join region or a keyed pair of tables when analysis built
// one, otherwise the operators of the one-table level.
std::optional<Strategy> label(const ir::Tree& t, const PlanFacts& f) {
    if (f.region && f.derived) {
        return Strategy::kAlgebraicDerived;
    }
    if (f.region) {
        return f.region_algebraic ? Strategy::kAlgebraicJoin : Strategy::kJoinRegion;
    }
    if (f.join_pair) {
        return Strategy::kJoinRescan;
    }
    if (union_all_arms(t) || (f.union_aggregate && aggregated_union(t) >= 0)) {
        return Strategy::kUnionAll;
    }
    std::optional<OneTableLevel> level = one_table_level(t);
    if (!level) {
        return std::nullopt;
    }
    if (level->aggregate >= 0 && t.at(level->aggregate).op == ir::Op::kGroupingSets) {
        return Strategy::kGroupingSetsRescan;
    }
    // DISTINCT is GROUP BY every output, unless a key of the source in the
    // output makes it a no-op (the root's identity then is that key).
    const bool distinct_groups = t.at(t.root).op == ir::Op::kDistinct &&
                                 t.at(t.root).identity.domain == rowid::Domain::kGroupKey;
    if (level->aggregate >= 0 || distinct_groups) {
        return algebraic_aggregate(t) != nullptr ? Strategy::kAlgebraicGroup
                                                 : Strategy::kGroupRescan;
    }
    return Strategy::kScan;
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

// The join whose branches the program runs: the first one met from the
// root outside derived tables (a join region reads those as written),
// else the first one at all; -1 when the query has none (one table and
// semi-joins in its WHERE: the terms are the root's).
int top_join(const ir::Tree& t, const std::vector<bool>& inside) {
    int any = -1;
    for (int i = static_cast<int>(t.nodes.size()) - 1; i >= 0; i--) {
        if (t.at(i).op != ir::Op::kJoin) {
            continue;
        }
        if (!inside.at(static_cast<std::size_t>(i))) {
            return i;
        }
        any = any < 0 ? i : any;
    }
    return any;
}

std::vector<PlanTerm> terms_of(const PlanFacts& f, bool signs) {
    std::vector<PlanTerm> out = f.branches;
    for (PlanTerm& t : out) {
        t.sign = signs ? term_sign(t.reads) : 0;
    }
    return out;
}

bool extremes(const ir::Node& n) {
    return std::any_of(n.algebraic_aggs.begin(), n.algebraic_aggs.end(),
                       [](const ir::AlgebraicAgg& a) {
                           return a.kind == ir::AggKind::kMin || a.kind == ir::AggKind::kMax;
                       });
}

bool algebraic(Strategy s) {
    return s == Strategy::kAlgebraicGroup || s == Strategy::kAlgebraicJoin ||
           s == Strategy::kAlgebraicDerived;
}

bool joined(Strategy s) {
    return s == Strategy::kJoinRegion || s == Strategy::kAlgebraicJoin ||
           s == Strategy::kJoinRescan;
}

Step root_step(const ir::Tree& t, const DeltaPlan& p) {
    if (p.strategy == Strategy::kScan) {
        if (p.key_table) {
            return Step::kApplyLastEvent;
        }
        return t.at(t.root).identity.keyed() ? Step::kApplyNetted : Step::kApplyCounted;
    }
    return p.strategy == Strategy::kJoinRegion ? Step::kApplyRecomputed : Step::kApplyReplace;
}

// Under union_all: the arms' steps, the union's, and (an aggregate over
// the union) the aggregate level's; inside: below a derived table.
PlanStep union_step(const ir::Tree& t, int i, bool inside) {
    const ir::Node& n = t.at(i);
    PlanStep out;
    if (n.op == ir::Op::kSetOp) {
        out.step = i == t.root ? Step::kApplyUnion : Step::kUnionAll;
    } else if (n.op == ir::Op::kAggregate) {
        out.step = Step::kAlgebraic;
        out.rereads = extremes(n);
    } else if (n.op == ir::Op::kFilter) {
        out.step = inside || t.at(t.root).op == ir::Op::kSetOp ? Step::kNetted : Step::kRowFilter;
    } else if (n.op == ir::Op::kProject) {
        out.step = i == t.root ? Step::kApplyReplace : Step::kEvaluated;
    }
    return out;
}

// The step of node i; inside: it is below a derived table; join: the
// node top_join found.
PlanStep step_of(const ir::Tree& t, int i, const DeltaPlan& p, const PlanFacts& f, bool inside,
                 int join) {
    const ir::Node& n = t.at(i);
    const Strategy s = p.strategy;
    PlanStep out;
    if (n.op == ir::Op::kScan) {
        out.step = Step::kImages;
    } else if (s == Strategy::kUnionAll) {
        out = union_step(t, i, inside);
    } else if (s == Strategy::kAlgebraicDerived && inside) {
        if (n.op == ir::Op::kAggregate || n.op == ir::Op::kDistinct) {
            out.step = Step::kDerivedRows;  // the key branches find its groups
            out.terms = terms_of(f, false);
        }
    } else if (n.op == ir::Op::kFilter) {
        out.step = s == Strategy::kScan && p.key_table ? Step::kLastEvent
                   : joined(s)                         ? Step::kInBranch
                   : s == Strategy::kAlgebraicDerived  ? Step::kRowFilter
                                                       : Step::kNetted;
    } else if (n.op == ir::Op::kAggregate && algebraic(s)) {
        out.step = Step::kAlgebraic;
        out.rereads = extremes(n);
    } else if (n.op == ir::Op::kAggregate && s == Strategy::kGroupRescan) {
        out.step = Step::kGroupRescan;
    } else if (n.op == ir::Op::kGroupingSets) {
        out.step = Step::kSetsRescan;
    } else if (n.op == ir::Op::kJoin && s == Strategy::kJoinRescan) {
        out.step = Step::kKeyPair;
    } else if (n.op == ir::Op::kJoin && i == join && joined(s)) {
        const bool signs = s == Strategy::kAlgebraicJoin;
        out.step = signs ? Step::kSignedJoin : Step::kJoinKeys;
        out.terms = terms_of(f, signs);
    } else if (n.op == ir::Op::kProject && i == t.root) {
        out.step = root_step(t, p);
        if (join < 0 && joined(s) && s != Strategy::kJoinRescan) {
            out.terms = terms_of(f, s == Strategy::kAlgebraicJoin);
        }
    }
    return out;
}

}  // namespace

DeltaForm form_of(Step s) {
    switch (s) {
        case Step::kNone:
        case Step::kInBranch:
            return DeltaForm::kNone;
        case Step::kImages:
        case Step::kNetted:
        case Step::kLastEvent:
            return DeltaForm::kImages;
        case Step::kSignedJoin:
        case Step::kDerivedRows:
        case Step::kRowFilter:
        case Step::kEvaluated:
        case Step::kUnionAll:
            return DeltaForm::kSignedRows;
        case Step::kJoinKeys:
        case Step::kKeyPair:
        case Step::kGroupRescan:
        case Step::kSetsRescan:
            return DeltaForm::kTouchedKeys;
        case Step::kAlgebraic:
            return DeltaForm::kState;
        default:
            return DeltaForm::kApplied;
    }
}

bool keeps_state(const DeltaPlan& p) {
    return std::any_of(p.steps.begin(), p.steps.end(),
                       [](const PlanStep& s) { return s.step == Step::kAlgebraic; });
}

int term_sign(const std::vector<ir::TableRead>& reads) {
    int sign = -1;
    for (ir::TableRead r : reads) {
        if (r != ir::TableRead::kNow) {
            sign = -sign;
        }
        if (r == ir::TableRead::kOld) {
            sign = -sign;
        }
    }
    return sign;
}

std::optional<DeltaPlan> plan_delta(const ir::Tree& t, const PlanFacts& f) {
    if (t.root < 0) {
        return std::nullopt;
    }
    std::optional<Strategy> s = label(t, f);
    if (!s) {
        return std::nullopt;
    }
    DeltaPlan p;
    p.strategy = *s;
    p.key_table = ir::identity_source(t).relid != 0;
    p.tables = f.tables;
    const std::vector<bool> inside = inside_derived(t);
    const int join = top_join(t, inside);
    for (int i = 0; i < static_cast<int>(t.nodes.size()); i++) {
        p.steps.push_back(step_of(t, i, p, f, inside.at(static_cast<std::size_t>(i)), join));
    }
    return p;
}

}  // namespace pgt::diff
