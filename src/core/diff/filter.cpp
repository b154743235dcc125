// Δ(σ_p E) = σ_p Δ(E) (see linear.hpp).
#include "core/diff/linear.hpp"

namespace pgt::diff {

bool delta_filter(const ir::Node& filter, ir::ScanFilterProject& d) {
    if (filter.op != ir::Op::kFilter || !d.outputs.empty() ||
        (filter.image_condition.empty() && !filter.condition.empty())) {
        return false;
    }
    // Filters stacked on one scan are one conjunction.
    auto conjoin = [](std::string& into, const std::string& p) {
        if (!p.empty()) {
            into = into.empty() ? p : "(" + into + ") AND (" + p + ")";
        }
    };
    conjoin(d.predicate, filter.image_condition);
    conjoin(d.prefilter, filter.prefilter);
    return true;
}

}  // namespace pgt::diff
