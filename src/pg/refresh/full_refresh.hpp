// Refresh of a stream table: FULL (recompute) or DIFFERENTIAL (apply the
// captured changes in the frontier window), under one snapshot.
// Invariant: readers are never blocked (no ACCESS EXCLUSIVE lock; old rows
// stay visible until commit); one writer per stream table holds the refresh
// lock for the rest of the transaction; every statement of one refresh
// reads under the same snapshot, and the frontier moves to exactly it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/diff/plan.hpp"
#include "core/refresh_mode.hpp"
#include "pg/analyze/defining_query.hpp"
#include "pg/boundary/spi.hpp"
#include "pg/catalog/catalog.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/cdc/change_buffer.hpp"

namespace pgt::pg {

struct RefreshResult {
    explicit RefreshResult(RefreshAction a) : action(a) {}
    RefreshAction action;
    int64_t rows_inserted = 0;
    int64_t rows_deleted = 0;
    std::optional<int64_t> source_changes;  // counted for AUTO stream tables
    std::optional<double> kept_refill_ms;   // time spent refilling kept copies
    std::string reason;                     // as history records it ("" none)
};

// Refreshes st the way its mode says (DIFFERENTIAL falls back to FULL only
// when a source was truncated, and says so in history). initiated_by:
// CREATE | MANUAL | ALTER | SCHEDULER.
RefreshResult refresh(Spi& spi, const catalog::StreamTableRow& st, const std::string& initiated_by,
                      const std::string& reason);

// Recomputes st (FULL) whatever its mode; DIFFERENTIAL frontiers move to
// the recompute's snapshot.
RefreshResult full_refresh(Spi& spi, const catalog::StreamTableRow& st,
                           const std::string& initiated_by, const std::string& reason);

// The sources DIFFERENTIAL maintenance of q captures, each with the
// columns it captures (prepare_maintenance installs exactly these).
using CaptureNeeds = std::vector<std::pair<Oid, std::vector<int>>>;
CaptureNeeds capture_needs(const AnalyzedQuery& q);

// Sets up (or tears down) change capture for st's mode and query: frontiers,
// captures and st.delta_program. Call before the FULL refresh that populates.
void prepare_maintenance(Spi& spi, catalog::StreamTableRow& st, const AnalyzedQuery& q);

// Inside a pinned scope: delta statements get at least
// pg_trickle.refresh_work_mem, and are planned with at most
// pg_trickle.delta_random_page_cost (they probe tables per changed row).
// A FULL recompute runs with the session's work_mem.
void pin_refresh_memory();
void pin_delta_planning();
// Both, and JIT off: what every delta statement runs with.
void pin_delta_settings();

// IMMEDIATE over several tables: st.delta_program (a program whose sources'
// changes are the transition relations registered on spi) run now, under
// a snapshot taken now (newest: GetLatestSnapshot, not the transaction's),
// as a DIFFERENTIAL refresh runs its program; no frontier, no history. The
// caller holds the locks and is the owner.
RefreshResult apply_transition_program(Spi& spi, const catalog::StreamTableRow& st, bool newest);

// One delta statement of a refresh as EXPLAIN (ANALYZE, BUFFERS) ran it.
struct ExplainedStatement {
    std::string what;  // "change images of source 0", "apply", "FULL recompute", ...
    std::string plan;
};

struct ExplainedRefresh {
    std::string action;  // what the refresh did: FULL, DIFFERENTIAL, NO_DATA
    std::string reason;  // why, as history records it ("" none)
    std::vector<ExplainedStatement> statements;
};

// Runs st's next refresh as refresh() would, inside a subtransaction that
// is then rolled back: nothing is applied, no frontier moves, no history
// is kept. Its delta statements (change images, apply, fallbacks, a FULL
// recompute) run under EXPLAIN (ANALYZE, BUFFERS); image steps run twice
// (explained, then for real, as the statements after them read them).
ExplainedRefresh explain_refresh(Spi& spi, const catalog::StreamTableRow& st);

// q's operator tree as explain_st prints it, with the steps of plan on its
// nodes: the strategy at the root (no plan: the recompute of FULL), a
// join's branches under it, and on the scan of each table in `deltas` the
// change buffer its Δ is read from.
std::string operator_tree_text(const AnalyzedQuery& q, const std::optional<diff::DeltaPlan>& plan,
                               const std::map<Oid, std::string>& deltas);

// The delta plan of a stream table maintaining q incrementally
// (diff::plan_delta over q's tree and what analysis found); its label is
// the strategy. Call only when DIFFERENTIAL can maintain q (no blocker).
diff::DeltaPlan delta_plan(const AnalyzedQuery& q);

// Drops the stream table's kept copies and their catalog rows.
void drop_kept_copies(Spi& spi, int64_t pgt_id);

}  // namespace pgt::pg
