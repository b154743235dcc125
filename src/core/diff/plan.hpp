// The delta plan of a stream table: how a refresh computes and applies the
// change of its query, as one step per operator of the tree. Each step
// takes its children's Δ in the form their steps give it and hands its own
// to its parent:
//
//   Project      apply: replace the rows of the touched identities   applied
//     Aggregate  algebraic: signed rows into stored values and state  state
//       Join     branch 1 (+1): a signed images, b now               signed rows
//                branch 2 (+1): a now, b signed images
//                branch 3 (-1): a signed images, b signed images
//         Scan a change images (before -1, after +1)                  images
//         Scan b change images (before -1, after +1)                  images
//
// The strategy (what pgt_stream_tables.delta_strategy stores, what the
// program builders are chosen by) is the plan's label, decided here and
// nowhere else. The plan is made from the operator tree and the facts
// analysis found that the tree does not show yet (PlanFacts: the join
// region it rendered with the reads of each branch, a keyed pair of
// tables, a derived table's change, an algebraic form over a union).
// Invariant: a plan is made only for a composition a program builder
// implements (nullopt otherwise: the caller refuses, never approximates);
// a join step's terms are the branches the program runs, in order.
#pragma once
#include "core/core.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/diff/strategy.hpp"
#include "core/ir/scan.hpp"
#include "core/ir/tree.hpp"

namespace pgt::diff {

// What a step hands its parent.
enum class DeltaForm : std::uint8_t {
    kNone,         // no Δ of its own: its parent's step reads it as written
    kImages,       // a source's change images: before-images -1, after-images +1
    kSignedRows,   // rows of its output with a sign: +1 entered, -1 left
    kTouchedKeys,  // the identity keys whose rows may have changed
    kState,        // folded into the stored rows' hidden state
    kApplied,      // written into the stream table
};

enum class Step : std::uint8_t {
    kNone,             // treated inside its parent's step (or a FULL recompute)
    kImages,           // Scan: change images from its Δ input
    kNetted,           // Filter on netted images (prefilter before netting)
    kLastEvent,        // Filter on each key's last after-image
    kInBranch,         // Filter copied into each branch of a join
    kJoinKeys,         // Join: branches that find the touched identity keys
    kSignedJoin,       // Join: Σ ± ⋈ over the sets of changed tables
    kKeyPair,          // Join of two keyed tables: the rows of touched keys
    kGroupRescan,      // Aggregate/Distinct: touched groups recomputed
    kSetsRescan,       // GroupingSets: touched groups of every set recomputed
    kAlgebraic,        // Aggregate: signed rows into stored values and state
    kRowFilter,        // Filter over a derived table's signed rows
    kDerivedRows,      // grouped derived table: touched groups now +1, before -1
    kApplyLastEvent,   // root: each key's last event upserts or deletes its row
    kApplyNetted,      // root: each key's last netted image upserts or deletes
    kApplyCounted,     // root: each netted image adds or removes copies
    kApplyReplace,     // root: the rows of the touched identities replaced
    kApplyRecomputed,  // root: the keys the branches found recomputed, replaced
    kEvaluated,        // Project of a union's arm: evaluated on each netted image
    kUnionAll,         // UNION ALL: the sum of its arms' signed rows
    kApplyUnion,       // root UNION ALL: that sum, applied by each row's net count
};

// One term of a join step: per table reference of the join (in the order
// of PlanFacts::tables), how it is read; per outer join its padding and
// per WHERE subquery its reading (terms that find keys); the sign of its
// rows (+1/-1 for a signed join, 0 for a term that finds keys).
struct PlanTerm {
    std::vector<ir::TableRead> reads;
    std::vector<ir::Padding> padding = {};
    std::vector<ir::SubqueryRead> subqueries = {};
    int sign = 0;
};

struct PlanStep {
    Step step = Step::kNone;
    std::vector<PlanTerm> terms;  // kJoinKeys, kSignedJoin
    bool rereads = false;  // kAlgebraic: a group whose MIN/MAX lost its extreme is read again
};

// What analysis found that the tree does not show yet.
struct PlanFacts {
    bool region = false;            // it rendered a join region
    bool region_algebraic = false;  // ... keeping its aggregates algebraically
    bool join_pair = false;         // two tables whose keys are both selected
    bool derived = false;           // ... over a grouped derived table's change
    bool union_aggregate = false;   // algebraic aggregates over a UNION ALL
    // The region's branches (a derived table's: its own), as the terms
    // they render (no sign: the plan gives it); tables: the quoted names
    // of the table references they read.
    std::vector<PlanTerm> branches;
    std::vector<std::string> tables;
};

struct DeltaPlan {
    Strategy strategy = Strategy::kScan;
    std::vector<PlanStep> steps;  // one per node of the tree, same positions
    // The identity is one table's key, read once (ir::identity_source): a
    // change of that table alone is applied by each key's last event.
    bool key_table = false;
    std::vector<std::string> tables;  // PlanFacts::tables
};

// The form of Δ a step hands its parent.
DeltaForm form_of(Step s);

// nullopt when no program builder maintains the tree with these facts.
std::optional<DeltaPlan> plan_delta(const ir::Tree& t, const PlanFacts& f);

// Whether a step keeps aggregates algebraically: hidden state columns in
// storage, which a FULL refresh fills.
bool keeps_state(const DeltaPlan& p);

// The sign of a signed join term: (-1)^(|S|+1) over the set S of tables
// read from images, times -1 per table read from before-images only.
int term_sign(const std::vector<ir::TableRead>& reads);

// Sets Node::rule (and Node::rule_terms under a join) of t's operators
// from plan for explain_st; no plan: the root is recomputed by FULL. The
// root's rule starts with the strategy's name.
void describe_plan(ir::Tree& t, const std::optional<DeltaPlan>& plan);

}  // namespace pgt::diff
