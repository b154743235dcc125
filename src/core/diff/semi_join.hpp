// The branches of an algebraic join region: each term of the signed change
// of the join (core/diff/join_terms) as one statement selecting
// (weight, keys..., arguments...), and the counted semi-join, whose change
// is the set of correlation values whose existence flipped.
//
//   inner join term S (no semi-join in S):
//     SELECT sign · Π sign of each member of S AS w, keys FROM (branch) b
//   term with semi-joins s_1..s_m:
//     (branch without those EXISTS, also selecting each y_m) b
//       ⋈ d_m: Σ sign of s_m's images per x, where it is not 0
//     per row: flip_m = [exists now] − [existed before] for its y_m
//     (NOT EXISTS: the reverse), from s_m's rows now counted up to
//     |net| + 1; the row's weight times every flip, rows with a flip 0 out
//
// Invariant: the branches of one region sum, with their weights, to the
// change of the join's rows (keys and arguments) between the states before
// and after the window.
#pragma once
#include "core/core.hpp"

#include <cstddef>
#include <string>
#include <vector>

#include "core/diff/join_terms.hpp"

namespace pgt::diff {

// A WHERE conjunct `[NOT] EXISTS (SELECT ... FROM s WHERE ...)` whose
// existence per correlation value y is counted (the analyzer's SemiJoin, as
// text): s's columns x_p compared with y_p by equal_p, and s's own
// conditions.
struct CountedSemiJoin {
    bool anti = false;                  // NOT EXISTS
    std::vector<std::string> inner;     // each x: s's column, quoted
    std::vector<std::string> equal;     // each equality, OPERATOR(schema.=)
    std::vector<std::string> s_filter;  // s's own conditions over alias "s"
    std::vector<std::string> i_filter;  // the same over the images alias
    std::string from;                   // s, quoted ([ONLY] schema.table)
};

// A term's weight over the branch alias `alias`: its sign as int8 times
// alias.__pgt_sg<n> of each member table read as images (n counts them, in
// table order).
std::string term_weight(const SignedTerm& term, const std::string& alias);

// SELECT <term weight> AS __pgt_w, b.__pgt_k1..k<entries> FROM (inner) b:
// a term of tables only, inner selecting the entries then the signs.
std::string signed_branch_sql(const SignedTerm& term, std::size_t entries,
                              const std::string& inner);

// SELECT <sign>::int8 AS __pgt_w, b.* FROM (inner) b: a term of before-
// and after-images without signed reads (diff::image_terms).
std::string image_branch_sql(const SignedTerm& term, const std::string& inner);

// A term with semi-joins `in` (their images: `images`, the signed images
// relation of each s): inner is the query's FROM/WHERE without their EXISTS
// conjuncts, selecting the entries, then each semi-join's y values as the
// next key columns, then the member tables' signs.
std::string semi_join_branch_sql(const SignedTerm& term, std::size_t entries,
                                 const std::string& inner,
                                 const std::vector<const CountedSemiJoin*>& in,
                                 const std::vector<std::string>& images);

}  // namespace pgt::diff
