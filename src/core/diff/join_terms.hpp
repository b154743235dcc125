// The terms of Δ(join): which tables each branch of a join region reads
// from its change images and which as they are now, and how it reads each
// outer join and each WHERE subquery. Pure data; the analyzer deparses one
// branch per term (src/pg/analyze/join_region.cpp).
//
//   keys of changed rows (region_terms)     Σ terms, each a superset finder:
//     one table changed:  that table's images of both kinds, others now
//     several tables:     every non-empty set of a group's tables read from
//                         before-images (an old row whose partner also
//                         changed, EC-01), others now
//     × per outer join, the ways a row of that state can be padded
//   signed change of an inner join (signed_terms)
//     Σ over non-empty S: (−1)^(|S|+1) ⋈(Δ_i for i ∈ S; the others now)
//   the same without signed images (image_terms)
//     every S and choice of before/after per table, sign by parity
// Invariant: for every output row whose source rows changed, some term of
// region_terms reads those rows the way that row has them; extra terms only
// cost work, never change a result (the region they find is recomputed).
#pragma once
#include "core/core.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/ir/scan.hpp"

namespace pgt::diff {

// How a branch reads one table (kNow, kOld, kNew, kBoth).
using TableRead = ir::TableRead;

// How a branch reads one WHERE subquery (of a region's FROM), and one
// outer join (ir::SubqueryRead, ir::Padding).
using SubqueryRead = ir::SubqueryRead;
using Padding = ir::Padding;

// Whether a padding leaves the nullable side's columns NULL in the keys
// (LEFT/RIGHT: the nullable table; FULL: rarg), and whether it leaves the
// FULL JOIN's larg NULL.
bool pads_nullable(Padding p);
bool pads_other(Padding p);
// Whether the branch reads the join with ON false (Preserved, *Alone).
bool join_on_false(Padding p);

// An outer join of the region's FROM, by table index (into the groups
// passed to region_terms).
struct OuterJoinTables {
    std::size_t nullable = 0;  // LEFT/RIGHT: the nullable table; FULL: rarg
    bool full = false;
    std::size_t other = 0;  // FULL: larg
};

struct RegionTerm {
    std::vector<TableRead> tables;         // per table
    std::vector<SubqueryRead> subqueries;  // per WHERE subquery
    std::vector<Padding> padding;          // per outer join
};

// Per outer join, the ways a branch reading `tables` must read it: a row of
// the old (new) state with a changed row is found where each outer join is
// read the way that row has it.
std::vector<std::vector<Padding>> padding_ways(const std::vector<TableRead>& tables,
                                               const std::vector<OuterJoinTables>& outer);

// The number of terms region_terms would return (without making them).
std::size_t count_region_terms(const std::vector<int>& groups, const std::vector<int>& parents,
                               const std::vector<OuterJoinTables>& outer);

// The branches that find every changed row's identity key. groups: per
// table, -1 for the query's FROM, k for subquery k; parents: per subquery,
// the earlier subquery whose WHERE holds it, or -1 (one of the query's).
// Per group (FROM first), its tables' states with the others now: with a
// subquery's group, that subquery and each around it read images (the
// ones around it over their tables as now, its condition in place of the
// conjunct holding it) and the others are true (their conjuncts dropped).
// Throws kInternalError for a group of 63 tables or more.
std::vector<RegionTerm> region_terms(const std::vector<int>& groups,
                                     const std::vector<int>& parents,
                                     const std::vector<OuterJoinTables>& outer);

struct SignedTerm {
    std::vector<TableRead> tables;  // kNow, or kBoth (signed images) / kOld / kNew
    std::vector<bool> semis;        // per semi-join: reads its flipped values
    int sign = 1;
};

// Σ over non-empty sets S of tables and semi-joins: (−1)^(|S|+1), each
// member read as signed images (kBoth). In the order of the set's bit
// mask, tables first.
std::vector<SignedTerm> signed_terms(std::size_t tables, std::size_t semis);

// The same sum without signed images: every S and, per member, before- or
// after-images, sign (−1)^(|S|+1) times −1 per before-image. In base-3
// order (now, old, new per table, the first table fastest).
std::vector<SignedTerm> image_terms(std::size_t tables);

// How many terms signed_terms (signs) or image_terms (!signs) gives.
uint64_t count_signed_terms(std::size_t members, bool signs);

}  // namespace pgt::diff
