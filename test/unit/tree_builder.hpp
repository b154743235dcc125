// Builds operator trees bottom-up the way the analyzer lowers a query
// level, for the unit tests of the tree and of the plans made over it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/ir/tree.hpp"

namespace pgt::test {

using ir::Column;
using ir::ColumnRef;
using ir::Node;
using ir::Op;
using ir::Tree;

// Builds trees bottom-up the way the analyzer lowers a query level.
struct Builder {
    Tree t;

    int scan(int columns, std::vector<std::vector<int>> keys = {}) {
        Node n;
        n.op = Op::kScan;
        n.relation = "public.t";
        for (int i = 0; i < columns; i++) {
            n.columns.push_back(Column{"c" + std::to_string(i), 23, "", std::nullopt, ""});
        }
        n.unique_keys = std::move(keys);
        return t.add(std::move(n));
    }
    // A node over child whose columns are the child's, unchanged.
    int pass(Op op, int child) {
        Node n;
        n.op = op;
        n.children = {child};
        for (std::size_t i = 0; i < t.at(child).columns.size(); i++) {
            Column c = t.at(child).columns[i];
            c.ref = ColumnRef{child, static_cast<int>(i)};
            n.columns.push_back(c);
        }
        return t.add(std::move(n));
    }
    // A select list: column i is child column picks[i], or an expression (-1).
    int project(int child, const std::vector<int>& picks, Op op = Op::kProject) {
        Node n;
        n.op = op;
        n.children = {child};
        for (int p : picks) {
            Column c{"o", 23, p < 0 ? "1 + 1" : "", std::nullopt, ""};
            if (p >= 0) {
                c.ref = ColumnRef{child, p};
            }
            n.columns.push_back(c);
        }
        return t.add(std::move(n));
    }
    int aggregate(int child, int keys, Op op = Op::kAggregate) {
        Node n;
        n.op = op;
        n.children = {child};
        for (int i = 0; i < keys; i++) {
            n.columns.push_back(Column{"k" + std::to_string(i), 23, "", std::nullopt, ""});
        }
        n.key_count = keys;
        return t.add(std::move(n));
    }
    int join(int left, int right, std::vector<std::pair<int, int>> equalities = {},
             ir::JoinKind kind = ir::JoinKind::kInner) {
        Node n;
        n.op = Op::kJoin;
        n.join = kind;
        n.equalities = std::move(equalities);
        n.children = {left, right};
        n.columns = t.at(left).columns;
        for (const Column& c : t.at(right).columns) {
            n.columns.push_back(c);
        }
        return t.add(std::move(n));
    }
    ir::RootIdentity root(int r) {
        t.root = r;
        ir::derive_identities(t);
        return ir::root_identity(t);
    }
};

}  // namespace pgt::test
