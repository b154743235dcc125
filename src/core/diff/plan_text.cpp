// The delta plan in words, for explain_st's operator tree (see plan.hpp).
#include <string>
#include <vector>

#include "core/diff/plan.hpp"

namespace pgt::diff {

namespace {

// A join's terms printed before "... and N more": enough to show the
// pattern, few enough for a region of 1,024 branches.
constexpr std::size_t kTermsShown = 8;

std::string step_text(Step s, const DeltaPlan& p, const PlanStep& step) {
    switch (s) {
        case Step::kImages:
            return "delta: change images (before -1, after +1)";
        case Step::kNetted:
            return "evaluated on netted images; conjuncts that cannot raise also before netting";
        case Step::kLastEvent:
            return "evaluated on the last after-image of each key; conjuncts that cannot raise "
                   "also on every image first";
        case Step::kInBranch:
            return "copied into each branch; conjuncts of one table that cannot raise also "
                   "filter its images";
        case Step::kRowFilter:
            return "evaluated on the derived table's signed rows";
        case Step::kJoinKeys:
        case Step::kSignedJoin:
            return "delta: one branch per non-empty set of changed tables (their images, the "
                   "other tables as they are now)";
        case Step::kKeyPair:
            return "recompute the output rows of the keys the change touches";
        case Step::kGroupRescan:
            return "recompute the groups the change touches, from their source rows";
        case Step::kSetsRescan:
            return "recompute the groups the change touches, in every grouping set";
        case Step::kAlgebraic:
            return std::string(
                       "algebraic: new value from the stored one, hidden state columns and the "
                       "change's signed images; ") +
                   (step.rereads ? "a group whose MIN/MAX lost its extreme is read again"
                                 : "no group is read again");
        case Step::kDerivedRows:
            return "delta as signed rows: the touched groups now (+1) and before the change "
                   "(-1), each table before it read from its images by its unique key";
        case Step::kApplyLastEvent:
            return "apply: the last event of each key upserts or deletes its row, found by one "
                   "probe";
        case Step::kApplyNetted:
            return "apply: the last netted image of each key upserts or deletes its row";
        case Step::kApplyCounted:
            return "apply: each netted image adds or removes that many copies of its row";
        case Step::kApplyReplace:
            return "apply: replace the rows of the touched identities";
        case Step::kApplyRecomputed:
            return std::string(
                       "apply: recompute the identity keys the branches find, replace their "
                       "rows") +
                   (p.key_table ? "; a change of the key's table alone (no kept copies): the "
                                  "last event of each key, joined to the other tables as they "
                                  "are"
                                : "");
        case Step::kEvaluated:
            return "evaluated on each netted image: signed rows of the union";
        case Step::kUnionAll:
            return "delta: the sum of its arms' signed rows";
        case Step::kApplyUnion:
            return "delta: the sum of its arms' signed rows; apply: each row's net count adds or "
                   "removes that many copies of it";
        default:
            return "";
    }
}

const char* read_text(ir::TableRead r, bool signs) {
    switch (r) {
        case ir::TableRead::kNow:
            return "now";
        case ir::TableRead::kOld:
            return "before-images";
        case ir::TableRead::kNew:
            return "after-images";
        default:
            return signs ? "signed images" : "images";
    }
}

const char* padding_text(ir::Padding p) {
    switch (p) {
        case ir::Padding::kInner:
            return "inner";
        case ir::Padding::kPadded:
            return "padded";
        case ir::Padding::kPreserved:
            return "ON false";
        case ir::Padding::kLeftAlone:
            return "left rows alone";
        case ir::Padding::kRightAlone:
            return "right rows alone";
        case ir::Padding::kLeftGone:
            return "left side padded";
        case ir::Padding::kRightGone:
            return "right side padded";
        default:
            return "as written";
    }
}

// "branch 2 (-1): public.a before-images, public.b now"; a term with outer
// joins or WHERE subqueries adds how it reads each:
// "branch 3: public.a now, public.b images; outer joins: padded; subqueries: images"
std::string term_text(const DeltaPlan& p, const PlanTerm& term, std::size_t k) {
    std::string out = "branch " + std::to_string(k + 1);
    if (term.sign != 0) {
        out += term.sign > 0 ? " (+1)" : " (-1)";
    }
    out += ":";
    for (std::size_t i = 0; i < term.reads.size(); i++) {
        const std::string table = i < p.tables.size() ? p.tables[i] : "table " + std::to_string(i);
        out += (i == 0 ? " " : ", ") + table + " " + read_text(term.reads[i], term.sign != 0);
    }
    for (std::size_t j = 0; j < term.padding.size(); j++) {
        out += (j == 0 ? "; outer joins: " : ", ") + std::string(padding_text(term.padding[j]));
    }
    for (std::size_t j = 0; j < term.subqueries.size(); j++) {
        out += (j == 0 ? "; subqueries: " : ", ") +
               std::string(term.subqueries[j] == ir::SubqueryRead::kTrue ? "dropped" : "images");
    }
    return out;
}

std::vector<std::string> terms_text(const DeltaPlan& p, const std::vector<PlanTerm>& terms) {
    std::vector<std::string> out;
    for (std::size_t k = 0; k < terms.size() && k < kTermsShown; k++) {
        out.push_back(term_text(p, terms[k], k));
    }
    if (terms.size() > kTermsShown) {
        out.push_back("... and " + std::to_string(terms.size() - kTermsShown) + " more branches");
    }
    return out;
}

}  // namespace

void describe_plan(ir::Tree& t, const std::optional<DeltaPlan>& plan) {
    if (t.root < 0) {
        return;
    }
    if (!plan) {
        t.at(t.root).rule = "recompute (FULL)";
        return;
    }
    for (std::size_t i = 0; i < t.nodes.size() && i < plan->steps.size(); i++) {
        const PlanStep& s = plan->steps[i];
        t.nodes[i].rule = step_text(s.step, *plan, s);
        t.nodes[i].rule_terms = terms_text(*plan, s.terms);
    }
    // The root names the strategy, then what it does there.
    std::string& root = t.at(t.root).rule;
    root = std::string(strategy_name(plan->strategy)) + (root.empty() ? "" : " (" + root + ")");
}

}  // namespace pgt::diff
