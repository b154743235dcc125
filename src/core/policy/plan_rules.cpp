#include "core/policy/plan_rules.hpp"

#include <cmath>

namespace pgt::policy {

bool one_pass_images(double rows, double kept) {
    return rows > 0 && kept >= 0 && kept <= kOnePassFraction * rows;
}

bool kept_copy_pays(double rows, double kept, double fraction) {
    if (fraction >= 1) {
        return true;
    }
    if (rows < kKeptCopyMinRows) {
        return false;  // small (or never analyzed): probes are cheap already
    }
    return kept >= 0 && kept <= fraction * rows;
}

int plan_size_class(double rows) {
    return static_cast<int>(std::floor(std::log2(rows + 1)));
}

}  // namespace pgt::policy
