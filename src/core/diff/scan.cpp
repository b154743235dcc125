// Δ(Scan R): the images of R's changed rows (see linear.hpp).
#include "core/diff/linear.hpp"

namespace pgt::diff {

std::optional<ir::ScanFilterProject> delta_scan(const ir::Node& scan, const ir::DeltaInput& delta) {
    if (scan.op != ir::Op::kScan || !scan.images) {
        return std::nullopt;
    }
    ir::ScanFilterProject d;
    d.delta = delta;
    d.alias = ir::kImageAlias;
    d.columns = scan.image_columns;
    return d;
}

std::optional<ir::ScanFilterProject> differentiate_linear(const ir::Tree& t, int node,
                                                          const ir::DeltaInput& delta) {
    const ir::Node& n = t.at(node);
    if (n.op == ir::Op::kScan) {
        return delta_scan(n, delta);
    }
    if ((n.op != ir::Op::kFilter && n.op != ir::Op::kProject) || n.children.size() != 1) {
        return std::nullopt;
    }
    std::optional<ir::ScanFilterProject> d = differentiate_linear(t, n.children[0], delta);
    if (!d) {
        return std::nullopt;
    }
    const bool applied = n.op == ir::Op::kFilter ? delta_filter(n, *d) : delta_project(n, *d);
    return applied ? d : std::nullopt;
}

namespace {

// The only child of node i if it has operator op, else -1.
int child_if(const ir::Tree& t, int i, ir::Op op) {
    if (i < 0 || t.at(i).children.size() != 1) {
        return -1;
    }
    int c = t.at(i).children[0];
    return t.at(c).op == op ? c : -1;
}

}  // namespace

std::optional<OneTableLevel> one_table_level(const ir::Tree& t) {
    if (t.root < 0) {
        return std::nullopt;
    }
    OneTableLevel l;
    l.project = t.at(t.root).op == ir::Op::kDistinct  ? child_if(t, t.root, ir::Op::kProject)
                : t.at(t.root).op == ir::Op::kProject ? t.root
                                                      : -1;
    if (l.project < 0) {
        return std::nullopt;
    }
    int below = l.project;
    l.having = child_if(t, below, ir::Op::kFilter);
    below = l.having >= 0 ? l.having : below;
    l.aggregate = child_if(t, below, ir::Op::kAggregate);
    if (l.aggregate < 0) {
        l.aggregate = child_if(t, below, ir::Op::kGroupingSets);
    }
    if (l.aggregate < 0 && l.having >= 0) {
        // A filter right under the projection without an aggregate is WHERE.
        l.where = l.having;
        l.having = -1;
    } else {
        below = l.aggregate >= 0 ? l.aggregate : below;
        l.where = child_if(t, below, ir::Op::kFilter);
    }
    below = l.where >= 0 ? l.where : (l.aggregate >= 0 ? l.aggregate : l.project);
    l.scan = child_if(t, below, ir::Op::kScan);
    if (l.scan < 0 || !t.at(l.scan).images) {
        return std::nullopt;
    }
    return l;
}

std::optional<ir::ScanFilterProject> differentiate_one_table(const ir::Tree& t,
                                                             const OneTableLevel& level,
                                                             const ir::DeltaInput& delta) {
    if (level.aggregate < 0) {
        return differentiate_linear(t, level.project, delta);
    }
    std::optional<ir::ScanFilterProject> d =
        differentiate_linear(t, t.at(level.aggregate).children.at(0), delta);
    if (!d || !delta_project(t.at(level.project), *d)) {
        return std::nullopt;
    }
    return d;
}

}  // namespace pgt::diff
