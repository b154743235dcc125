// Δ(π_e E) = π_e Δ(E) (see linear.hpp).
#include "core/diff/linear.hpp"

#include "core/sql/quote.hpp"

namespace pgt::diff {

bool delta_project(const ir::Node& project, ir::ScanFilterProject& d) {
    if (project.op != ir::Op::kProject || !d.outputs.empty()) {
        return false;
    }
    std::vector<ir::OutputColumn> outputs;
    for (const ir::Column& c : project.columns) {
        if (c.image.empty()) {
            return false;
        }
        outputs.push_back({c.image, sql::quote_identifier(c.name)});
    }
    d.outputs = std::move(outputs);
    return true;
}

}  // namespace pgt::diff
