// FULL and DIFFERENTIAL refresh in the caller's transaction.
// Invariant: the generated statements name every object schema-qualified
// and run under the pinned search_path, as the stream table's owner in a
// security-restricted operation, with the one refresh snapshot; a DIFFERENTIAL refresh moves every
// frontier it read.
#include "pg/refresh/full_refresh.hpp"
#include "pg/refresh/locks.hpp"
#include "pg/refresh/progress.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/diff/apply.hpp"
#include "core/policy/auto_mode.hpp"
#include "core/refresh_mode.hpp"
#include "core/diff/join_region.hpp"
#include "core/diff/program.hpp"
#include "core/diff/scan_delta.hpp"
#include "core/sql/names.hpp"
#include "core/sql/quote.hpp"
#include "pg/common/quote.hpp"
#include "pg/boundary/as_role.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"
#include "pg/boundary/subtransaction.hpp"
#include "pg/catalog/catalog_schema.hpp"
#include "pg/cdc/commit_marks.hpp"
#include "pg/cdc/frontier.hpp"
#include "pg/guard/storage_guard.hpp"
#include "pg/refresh/query_settings.hpp"
#include "pg/cdc/snapshot.hpp"
#include "pg/refresh/storage.hpp"
#include "pg/security/rights.hpp"
#include "pg/common/settings.hpp"
#include "pg/common/type_facts.hpp"
#include "pg/scheduler/shared_state.hpp"

extern "C" {
#include "postgres.h"
#include "miscadmin.h"
#include "access/xact.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"
}

namespace pgt::pg {

// A delta statement runs with at least pg_trickle.refresh_work_mem
// (inside a pinned scope, which restores the session's value): a change
// window sorted or hashed on disk cost a refresh twice its in-memory time.
void pin_refresh_memory() {
    if (g_refresh_work_mem_kb > work_mem) {
        pin_setting("work_mem", std::to_string(g_refresh_work_mem_kb).c_str());
    }
}

// Delta statements are planned with at most
// pg_trickle.delta_random_page_cost: they probe the tables per changed row,
// and at random_page_cost 4 the planner chose a 6,000,000-row scan of
// lineitem over 30,000 probes of its primary key (TPC-H q12 at SF 1: 0.95 s
// of a 1.07 s refresh; 0.28 s at 1.1).
void pin_delta_planning() {
    if (g_delta_random_page_cost >= 0 && random_page_cost > g_delta_random_page_cost) {
        char value[32];
        snprintf(value, sizeof value, "%g", g_delta_random_page_cost);
        pin_setting("random_page_cost", value);
    }
}

void pin_delta_settings() {
    // A delta statement is short; its cost estimates are not (unknown CTE
    // sizes), and JIT compiling it took 0.7 s of a 0.7 s refresh.
    pin_setting("jit", "off");
    pin_refresh_memory();
    pin_delta_planning();
}

namespace {

struct Window {
    CaptureSource source;
    Frontier frontier;
    // The buffer's commit mark read just before the snapshot (the next
    // frontier's), and after it: equal to the frontier's, the window is
    // empty without reading the buffer (commit_marks.hpp).
    std::optional<std::string> mark_before;
    bool quiet = false;
};

// Set while explain_refresh runs: each delta statement is run under
// EXPLAIN (ANALYZE, BUFFERS) and its plan kept here.
std::vector<ExplainedStatement>* t_explained = nullptr;

// The comment naming the stream table the running refresh is for
// (sql::statement_tag), before each statement made for it.
std::string t_tag;

// Sets t_tag for one refresh of st (restored after: refreshes nest when a
// refresh's query reads a stream table that is refreshed on demand).
class TagScope {
public:
    explicit TagScope(const catalog::StreamTableRow& st) : saved_(std::move(t_tag)) {
        t_tag =
            sql::statement_tag("refresh of " + quote_ident(st.schema) + "." + quote_ident(st.name));
    }
    ~TagScope() { t_tag = std::move(saved_); }
    TagScope(const TagScope&) = delete;
    TagScope& operator=(const TagScope&) = delete;

private:
    std::string saved_;
};

// Runs a statement of the refresh (or, explaining, runs it under EXPLAIN
// ANALYZE and answers an apply's result of zero rows).
SpiRows run_statement(Spi& spi, const RefreshSnapshot& rs, const std::string& what,
                      const std::string& sql, const std::vector<SpiParam>& params = {},
                      bool replan = false) {
    if (t_explained == nullptr) {
        progress_statement(what);
        return spi.query_at(rs.snapshot, t_tag + sql, params, replan);
    }
    SpiRows plan =
        spi.query_at(rs.snapshot, t_tag + "EXPLAIN (ANALYZE, BUFFERS) " + sql, params, replan);
    std::string text;
    for (const auto& row : plan.rows) {
        text += (text.empty() ? "" : "\n") + row.at(0).value_or("");
    }
    t_explained->push_back({what, text});
    SpiRows none;
    none.rows.push_back({"0", "0", "0"});
    return none;
}

// Writes the difference between the query's rows and the stored ones.
// The rows to write are computed first by a plain SELECT, which
// PostgreSQL may run in parallel (REFRESH MATERIALIZED VIEW's query is;
// a statement that also writes never is), then written by a second
// statement reading them (diff::full_diff_steps).
SpiRows full_difference(Spi& spi, const RefreshSnapshot& rs, const std::vector<std::string>& outs,
                        const ir::IdentityTarget& target, const std::string& query,
                        const std::string& row_id, const std::vector<bool>& alike, bool empty) {
    const diff::FullDiffSteps steps =
        diff::full_diff_steps(outs, target, query, row_id, alike, empty, sql::kFullRowsRelation);
    if (t_explained != nullptr) {
        (void)run_statement(spi, rs, "FULL recompute: rows to write", steps.rows);
    }
    progress_statement("FULL recompute: rows to write");
    (void)spi.register_rows(rs.snapshot, t_tag + steps.rows, sql::kFullRowsRelation);
    SpiRows counts = run_statement(spi, rs, "FULL apply", steps.apply, {}, true);
    spi.unregister_relations();
    return counts;
}

// Recomputes the defining query and writes only the difference to what the
// stream table holds: unchanged rows keep their row version (no WAL, no
// trigger, no notification); a keyed row whose values changed is updated in
// place.
RefreshResult recompute(Spi& spi, const catalog::StreamTableRow& st, const RefreshSnapshot& rs) {
    std::vector<std::string> outs;
    std::vector<bool> alike;  // compared by equality, not by text
    for (const OutputColumn& c : user_columns(st.relid)) {
        outs.push_back(quote_ident(c.name));
        alike.push_back(pg_call([&] { return ties_look_alike(c.type, c.typmod, c.collation); }));
    }
    // A hidden identity column (GROUPING of a grouping-sets query) is stored too.
    for (const std::string& c : st.identity_columns) {
        if (c.rfind(pgt::catalog::kReservedColumnPrefix, 0) == 0) {
            outs.push_back(quote_ident(c));
        }
    }
    // With auxiliary columns (algebraic aggregates), they are filled too.
    std::string query = st.effective_query;
    if ((st.refresh_mode == RefreshMode::kDifferential ||
         st.refresh_mode == RefreshMode::kImmediate) &&
        st.delta_program) {
        diff::DeltaProgram p = diff::decode_program(*st.delta_program);
        if (!p.full_query.empty()) {
            query = p.full_query;
            outs.insert(outs.end(), p.full_aux.begin(), p.full_aux.end());
        }
        // Kept copies do not take this window's change: refilled by the
        // next DIFFERENTIAL refresh that reads them.
        if (!p.kept.empty()) {
            catalog::invalidate_kept_copies(spi, st.pgt_id);
        }
    }
    const ir::IdentityTarget target = identity_target(st);
    RefreshResult r{RefreshAction::kFull};
    RefreshWriteScope writing(st.relid);
    with_pinned_search_path([&] {
        // The session's work_mem, as REFRESH MATERIALIZED VIEW: a larger
        // one can make the planner pick a parallel plan whose aggregate,
        // not parallel itself, is built again in every worker.
        pin_query_settings(st.query_settings);
        // An empty stream table (its first population) takes the rows as
        // they come, in the query's order.
        const bool empty = spi.query_at(rs.snapshot, t_tag + "SELECT NOT EXISTS (SELECT FROM " +
                                                         target.table + ")")
                               .rows.at(0)
                               .at(0) == "t";
        const std::string row_id = row_id_expression(st, "q");
        SpiRows counts = full_difference(spi, rs, outs, target, query, row_id, alike, empty);
        r.rows_inserted =
            std::stoll(*counts.rows.at(0).at(0)) + std::stoll(*counts.rows.at(0).at(2));
        r.rows_deleted = std::stoll(*counts.rows.at(0).at(1));
    });
    return r;
}

// Change rows in w's window, at most `at_most` of them (-1: all; 0: only
// the marker check), and whether the window holds a TRUNCATE marker.
struct WindowCount {
    int64_t rows = 0;
    bool truncated = false;
};

WindowCount window_count(Spi& spi, const RefreshSnapshot& rs, const Window& w, int64_t at_most) {
    if (w.quiet && !rs.own_xid) {
        return {};  // no buffer read: its commit mark proved the window empty
    }
    std::vector<SpiParam> p = window_params(rs, w.frontier);
    p.push_back(at_most < 0 ? SpiParam{INT8OID, (Datum)0, true} : int8_param(at_most));
    SpiRows r = spi.query_at(rs.snapshot, t_tag + diff::window_count_sql(w.source.buffer), p);
    return {std::stoll(*r.rows.at(0).at(0)), *r.rows.at(0).at(1) == "t"};
}

// The sources' size and this stream table's last measured refreshes.
AutoInputs auto_inputs(Spi& spi, const catalog::StreamTableRow& st,
                       const std::vector<Window>& windows) {
    std::string relids = "{";
    for (const Window& w : windows) {
        relids += (relids.size() > 1 ? "," : "") + std::to_string(w.source.relid);
    }
    SpiRows r = spi.query(
        "SELECT (SELECT pg_catalog.sum(CASE WHEN c.reltuples > 0 THEN c.reltuples END) FROM "
        "pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) ANY ($2::pg_catalog.oid[])), "
        "f.best, (SELECT pg_catalog.count(*) FROM (SELECT 1 "
        "FROM pgtrickle.pgt_refresh_history h WHERE h.pgt_id OPERATOR(pg_catalog.=) $1 AND "
        "h.action OPERATOR(pg_catalog.=) 'FULL' AND h.refresh_id > COALESCE((SELECT "
        "pg_catalog.max(x.refresh_id) FROM pgtrickle.pgt_refresh_history x WHERE x.pgt_id "
        "OPERATOR(pg_catalog.=) $1 AND x.action OPERATOR(pg_catalog.=) 'DIFFERENTIAL'), 0) LIMIT "
        "$3) c), f.samples FROM (SELECT pg_catalog.min(s.ms) AS best, pg_catalog.count(*) AS "
        "samples FROM (SELECT 1000 * pg_catalog.date_part('epoch', h.end_time "
        "OPERATOR(pg_catalog.-) h.start_time) AS ms FROM pgtrickle.pgt_refresh_history h WHERE "
        "h.pgt_id OPERATOR(pg_catalog.=) $1 AND h.status OPERATOR(pg_catalog.=) 'SUCCESS' AND "
        "h.action OPERATOR(pg_catalog.=) 'FULL' ORDER BY h.refresh_id DESC LIMIT $4) s) f",
        {int8_param(st.pgt_id), text_param(relids + "}"), int8_param(kAutoReprobe),
         int8_param(kAutoFullSamples)});
    const auto& row = r.rows.at(0);
    AutoInputs in;
    in.source_rows = row[0] ? std::stod(*row[0]) : 0;
    in.full_ms = row[1] ? std::stod(*row[1]) : -1;  // the best of the last FULL ones
    in.since_diff = row[2] ? std::stoll(*row[2]) : 0;
    in.full_samples = row[3] ? std::stoll(*row[3]) : 0;  // how many that best is of
    // The last two measured DIFFERENTIAL refreshes (with changes), without
    // the time they spent refilling kept copies (a cost a FULL refresh
    // causes, not one of the change).
    SpiRows d = spi.query(
        "SELECT 1000 * pg_catalog.date_part('epoch', h.end_time OPERATOR(pg_catalog.-) "
        "h.start_time) OPERATOR(pg_catalog.-) COALESCE(h.kept_refill_ms, 0), h.source_changes "
        "FROM pgtrickle.pgt_refresh_history h WHERE h.pgt_id "
        "OPERATOR(pg_catalog.=) $1 AND h.status OPERATOR(pg_catalog.=) 'SUCCESS' AND h.action "
        "OPERATOR(pg_catalog.=) 'DIFFERENTIAL' AND h.source_changes > 0 ORDER BY h.refresh_id "
        "DESC LIMIT 2",
        {int8_param(st.pgt_id)});
    if (!d.rows.empty()) {
        in.diff_ms = std::stod(*d.rows[0].at(0));
        in.diff_changes = std::stoll(*d.rows[0].at(1));
    }
    if (d.rows.size() > 1) {
        in.prev_diff_ms = std::stod(*d.rows[1].at(0));
        in.prev_diff_changes = std::stoll(*d.rows[1].at(1));
    }
    return in;
}

// An error an expression raises on a value (class 22, data exception; 2F,
// 38, 39, P0: raised by a function): what a state that was never committed
// may cause. Cancels, lock and resource errors are not retried.
bool raised_on_a_value(const std::string& sqlstate) {
    for (const char* c : {"22", "2F", "38", "39", "P0"}) {
        if (sqlstate.compare(0, 2, c) == 0) {
            return true;
        }
    }
    return false;
}

// main in a subtransaction; when it raises on a value, fallback() (the
// same refresh over netted images, which computes on committed states
// only; nullopt when it finds nothing to apply).
template <typename F>
std::optional<SpiRows> with_fallback(Spi& spi, const RefreshSnapshot& rs, const std::string& main,
                                     const std::vector<SpiParam>& params, bool replan,
                                     F&& fallback) {
    try {
        return in_subtransaction(
            [&] { return run_statement(spi, rs, "apply", main, params, replan); });
    } catch (const pgt::Error& e) {
        if (!raised_on_a_value(e.sqlstate())) {
            throw;
        }
    }
    return fallback();
}

// Brings the kept copies (diff::KeptStep) to the refresh snapshot before
// the main statement reads them. A valid copy takes its source's change
// (when the source has one). An invalid one is rebuilt from its table
// only when this refresh may read it (another source changed): a copy of
// a table only its own changes reach is never built. A change that finds
// a copy to delete missing (never expected) rebuilds it too, so a copy
// is never trusted past an inconsistency.
// Returns the milliseconds spent refilling copies (none: nullopt).
std::optional<double> keep_copies(Spi& spi, const catalog::StreamTableRow& st,
                                  const RefreshSnapshot& rs,
                                  const std::vector<diff::KeptStep>& kept, uint64_t valid,
                                  uint64_t changed) {
    std::optional<double> refill_ms;
    for (const diff::KeptStep& k : kept) {
        const uint64_t bit = uint64_t{1} << k.source;
        const bool is_valid = (valid & bit) != 0;
        if (is_valid && (changed & bit) == 0) {
            continue;
        }
        if (is_valid) {
            SpiRows r = spi.query_at(rs.snapshot, t_tag + k.apply, {}, true);
            if (r.rows.at(0).at(0).value_or("f") == "t") {
                continue;
            }
        } else if ((changed & ~bit) == 0) {
            continue;  // not read by this refresh: stays invalid
        }
        auto started = std::chrono::steady_clock::now();
        spi.exec("TRUNCATE " + k.table);
        spi.query_at(rs.snapshot, t_tag + k.rebuild);
        spi.exec("ANALYZE " + k.table);
        refill_ms = refill_ms.value_or(0) + std::chrono::duration<double, std::milli>(
                                                std::chrono::steady_clock::now() - started)
                                                .count();
        if (!is_valid) {
            catalog::set_kept_copy_valid(spi, st.pgt_id, k.source);
        }
    }
    return refill_ms;
}

// The image steps, kept copies and main statement of the program (the
// fallbacks when main raises); nullopt when the changes cancel out.
std::optional<SpiRows> apply_program(Spi& spi, const catalog::StreamTableRow& st,
                                     const RefreshSnapshot& rs, const std::vector<Window>& windows,
                                     const diff::DeltaProgram& program,
                                     const std::vector<SpiParam>& params, RefreshResult& r) {
    // Only the relations some branch reads are kept.
    uint64_t reads_old = 0, reads_new = 0, reads_delta = 0;
    for (const diff::Branch& b : program.branches) {
        reads_old |= b.old_sources;
        reads_new |= b.new_sources;
        reads_delta |= b.delta_sources;
    }
    reads_old |= program.main_old;
    reads_new |= program.main_new;
    // A valid copy takes its source's change from the signed images.
    const uint64_t valid = program.kept.empty() ? 0 : catalog::valid_kept_copies(spi, st.pgt_id);
    reads_delta |= valid;
    uint64_t changed = 0;  // sources with images of either kind
    auto kept = [](uint64_t mask, std::size_t source, std::string name) {
        return (mask >> source) & 1 ? name : std::string();
    };
    // A step's window parameters (none without windows: IMMEDIATE).
    auto step_params = [&](const diff::ImageStep& step) {
        return windows.empty() ? std::vector<SpiParam>{}
                               : window_params(rs, windows.at(step.window).frontier);
    };
    // Registers the steps' relations; returns the main statement with
    // the branches that can find rows ("": none can).
    auto register_steps = [&](const std::vector<diff::ImageStep>& steps) {
        uint64_t has_old = 0, has_new = 0;
        for (const diff::ImageStep& step : steps) {
            if (t_explained != nullptr) {
                (void)run_statement(spi, rs,
                                    "change images of source " + std::to_string(step.source),
                                    step.sql, step_params(step));
            }
            auto [olds, news] = spi.register_images(
                rs.snapshot, t_tag + step.sql, step_params(step),
                kept(reads_old, step.source, diff::region_old_images(step.source)),
                kept(reads_new, step.source, diff::region_new_images(step.source)),
                kept(reads_delta, step.source, diff::region_delta_images(step.source)));
            has_old |= olds > 0 ? uint64_t{1} << step.source : 0;
            has_new |= news > 0 ? uint64_t{1} << step.source : 0;
        }
        changed = has_old | has_new;
        return diff::main_statement(program, has_old, has_new);
    };
    std::string main = register_steps(program.images);
    r.kept_refill_ms = keep_copies(spi, st, rs, program.kept, valid, changed);
    // With images, a plan made for their sizes (Spi::query_at, sized_plan).
    bool replan = !program.images.empty();
    std::optional<SpiRows> counts;
    if (main.empty()) {
        // the changes cancel out: nothing to apply
    } else if (!program.fallback_images.empty()) {
        counts = with_fallback(spi, rs, main, params, replan, [&]() -> std::optional<SpiRows> {
            spi.unregister_relations();  // the same statement over netted images
            std::string netted = register_steps(program.fallback_images);
            if (netted.empty()) {
                return std::nullopt;
            }
            return run_statement(spi, rs, "fallback apply (netted images)", netted, params, replan);
        });
    } else if (!program.fallback.empty()) {
        counts = with_fallback(spi, rs, main, params, replan, [&] {
            return std::optional(run_statement(spi, rs, "fallback apply (netted images)",
                                               program.fallback, params, replan));
        });
    } else {
        counts = run_statement(spi, rs, "apply", main, params, replan);
    }
    return counts;
}

// Window i's bit in a mask of windows (none past 64: never marked).
uint64_t window_bit(std::size_t i) {
    return i < 64 ? uint64_t{1} << i : 0;
}

// Whether the program's key table (DeltaProgram::key_rows) is the only
// source with changes in this refresh: every other window is empty (bit i
// of known_empty: window i is known to be, without counting it again).
bool only_key_table_changed(Spi& spi, const RefreshSnapshot& rs, const std::vector<Window>& windows,
                            const diff::DeltaProgram& program, uint64_t known_empty) {
    if (program.key_rows.empty() || windows.empty()) {
        return false;
    }
    auto step =
        std::find_if(program.images.begin(), program.images.end(),
                     [&](const diff::ImageStep& s) { return s.source == program.key_source; });
    if (step == program.images.end()) {
        return false;
    }
    for (std::size_t w = 0; w < windows.size(); w++) {
        if (static_cast<int>(w) != step->window && (known_empty & window_bit(w)) == 0 &&
            window_count(spi, rs, windows[w], 1).rows > 0) {
            return false;
        }
    }
    return true;
}

// The delta statement over every window: one block of five parameters per
// window, in captured_sources_of order (diff::window_predicate's base).
RefreshResult apply_delta(Spi& spi, const catalog::StreamTableRow& st, const RefreshSnapshot& rs,
                          const std::vector<Window>& windows, uint64_t known_empty = 0) {
    RefreshResult r{RefreshAction::kDifferential};
    std::vector<SpiParam> params;
    for (const Window& w : windows) {
        std::vector<SpiParam> p = window_params(rs, w.frontier);
        params.insert(params.end(), p.begin(), p.end());
    }
    RefreshWriteScope writing(st.relid);
    with_pinned_search_path([&] {
        pin_delta_settings();
        pin_query_settings(st.query_settings);
        diff::DeltaProgram program = diff::decode_program(st.delta_program.value());
        // An error leaves no registered image relation behind on spi.
        struct Forget {
            Spi& spi;
            bool done = false;
            ~Forget() {
                if (!done) {
                    try {
                        spi.forget_relations();
                    } catch (...) {  // NOLINT(bugprone-empty-catch): already failing
                    }
                }
            }
        } forget{spi};
        std::optional<SpiRows> counts;
        if (only_key_table_changed(spi, rs, windows, program, known_empty)) {
            counts = run_statement(spi, rs, "apply (the key table's last event per key)",
                                   program.key_rows, params);
        } else {
            counts = apply_program(spi, st, rs, windows, program, params, r);
        }
        spi.unregister_relations();
        forget.done = true;
        if (!counts) {
            return;
        }
        r.rows_inserted =
            std::stoll(*counts->rows.at(0).at(0)) + std::stoll(*counts->rows.at(0).at(2));
        r.rows_deleted = std::stoll(*counts->rows.at(0).at(1));
    });
    return r;
}

// consumed: false when every window was empty (NO_DATA). Then moving the
// frontiers makes no buffer row consumed by every consumer that was not
// before (a row is trimmed by the last consumer whose window held it), so
// the trim, a scan of each buffer, is skipped.
void finish(Spi& spi, const catalog::StreamTableRow& st, const RefreshSnapshot& rs,
            const std::vector<Window>& windows, bool consumed) {
    for (const Window& w : windows) {
        advance_frontier(spi, st.pgt_id, w.source, rs, w.mark_before);
    }
    if (consumed && !scheduler_trims_buffers()) {
        for (const Window& w : windows) {
            trim_buffer(spi, w.source, st.pgt_id, w.frontier);
        }
    }
    catalog::mark_refreshed(spi, st.pgt_id);
}

// pg_trickle.log_min_duration_refresh: a LOG line for a refresh that took
// at least that long (lock waits not counted).
void log_if_slow(const catalog::StreamTableRow& st, const RefreshResult& r,
                 const std::string& initiated_by, double ms) {
    if (g_log_min_duration_refresh_ms < 0 || ms < g_log_min_duration_refresh_ms) {
        return;
    }
    const std::string name = relation_display_name(st.relid);
    const std::string detail = std::string("Action ") + action_name(r.action) + ", started by " +
                               initiated_by + ", " + std::to_string(r.rows_inserted) +
                               " rows written, " + std::to_string(r.rows_deleted) + " deleted" +
                               (r.reason.empty() ? "" : ", reason: " + r.reason) + ".";
    pg_call([&] {
        ereport(LOG, (errmsg("pg_trickle: refresh of %s took %.3f ms", name.c_str(), ms),
                      errdetail_internal("%s", detail.c_str())));
    });
}

// Runs body under the refresh lock and snapshot, records history.
template <typename F>
RefreshResult run_refresh(Spi& spi, const catalog::StreamTableRow& st,
                          const std::string& initiated_by, std::string reason, F&& body) {
    check_identity_versions(st);
    ProgressScope progress(st.pgt_id, initiated_by);
    TagScope tag(st);
    progress_statement("waiting for the refresh lock");
    lock_stream_table_for_refresh(st.pgt_id);
    const auto began = std::chrono::steady_clock::now();
    std::string start = catalog::clock_now(spi);
    // Under READ COMMITTED the snapshot is taken fresh below, so marks read
    // now are read before it; under REPEATABLE READ it is the
    // transaction's, older than any read here: no mark.
    std::vector<Window> windows;
    const bool fresh = !IsolationUsesXactSnapshot();
    for (const CaptureSource& src : captured_sources_of(spi, st.pgt_id)) {
        windows.push_back({src, {}, fresh ? buffer_commit_mark(src.buffer_relid) : std::nullopt});
    }
    RefreshSnapshot rs = RefreshSnapshot::take(spi);
    for (Window& w : windows) {
        w.frontier = lock_frontier(spi, st.pgt_id, w.source.source_id);
        w.quiet = quiet(w.frontier, buffer_commit_mark(w.source.buffer_relid));
    }
    RefreshResult r = body(rs, windows, reason);
    r.reason = reason;
    finish(spi, st, rs, windows, r.action != RefreshAction::kNoData);
    rs.close();
    catalog::record_history(
        spi, {st.pgt_id, action_name(r.action), initiated_by, r.rows_inserted, r.rows_deleted,
              start, reason.empty() ? std::nullopt : std::optional(reason), r.source_changes,
              r.kept_refill_ms});
    log_if_slow(st, r, initiated_by,
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began)
                    .count());
    return r;
}

}  // namespace

namespace {

// A source's TRUNCATE in the window: this refresh recomputes.
RefreshResult recompute_truncated(Spi& spi, const catalog::StreamTableRow& st,
                                  const RefreshSnapshot& rs, const Window& w, std::string& why) {
    why = "source " + relation_display_name(w.source.relid) + " was truncated: recomputed";
    return recompute(spi, st, rs);
}

// AUTO's refresh of windows that may hold changes: FULL past its change
// limit (by the capture sequence alone, or counted), else the delta.
RefreshResult auto_differential(Spi& spi, const catalog::StreamTableRow& st,
                                const RefreshSnapshot& rs, const std::vector<Window>& windows,
                                std::string& why) {
    // Counting stops one past the limit: enough to decide.
    AutoInputs in = auto_inputs(spi, st, windows);
    int64_t limit = auto_change_limit(in);
    // Past the limit by the capture sequence alone (rows captured
    // since each frontier; rolled-back writes count there too):
    // FULL without counting, after the marker check.
    if (limit >= 0) {
        int64_t captured = 0;
        for (const Window& w : windows) {
            if (window_count(spi, rs, w, 0).truncated) {
                return recompute_truncated(spi, st, rs, w, why);
            }
            captured += captured_since(spi, w.source, w.frontier);
        }
        in.changes = captured;
        in.changes_estimated = true;
        AutoChoice choice = choose_auto(in);
        if (choice.full) {
            why = choice.reason;
            return recompute(spi, st, rs);
        }
        // Rows captured since the frontiers, at most `limit` (and
        // no TRUNCATE): counting the windows exactly would read
        // each once more for what is almost always the same
        // choice. (Not a bound: rows of a transaction that
        // commits after a refresh belong to the next window
        // whatever their sequence; they cost time, never a
        // result. None captured: counted, to tell NO_DATA.)
        if (captured > 0 && captured <= limit) {
            RefreshResult r = apply_delta(spi, st, rs, windows);
            r.source_changes = captured;
            return r;
        }
        in.changes_estimated = false;
    }
    int64_t changes = 0;
    uint64_t empty = 0;  // windows counted empty
    for (std::size_t i = 0; i < windows.size(); i++) {
        const Window& w = windows[i];
        const int64_t at_most = limit < 0 ? -1 : limit + 1 - changes;
        WindowCount c = window_count(spi, rs, w, at_most);
        if (c.truncated) {
            return recompute_truncated(spi, st, rs, w, why);
        }
        changes += c.rows;
        // At most 0 reads the marker only: not counted, not known empty.
        empty |= c.rows == 0 && at_most != 0 ? window_bit(i) : 0;
    }
    if (changes == 0) {
        return RefreshResult{RefreshAction::kNoData};
    }
    in.changes = changes;
    AutoChoice choice = choose_auto(in);
    if (choice.full) {
        why = choice.reason;
        return recompute(spi, st, rs);
    }
    RefreshResult r = apply_delta(spi, st, rs, windows, empty);
    r.source_changes = changes;
    return r;
}

RefreshResult differential_refresh(Spi& spi, const catalog::StreamTableRow& st, Oid owner,
                                   const std::string& initiated_by, const std::string& reason) {
    // The owner's rights now, not at creation: a DIFFERENTIAL refresh reads
    // change buffers, which PostgreSQL does not check against the sources
    // (a REVOKE stops the flow here; a FULL refresh is checked by the
    // executor itself). Row-level security turned on since creation cannot
    // be applied to buffer rows: AUTO recomputes, DIFFERENTIAL refuses.
    std::vector<ReadRight> reads = catalog::owner_reads(spi, st.pgt_id);
    check_read_rights(reads, owner);
    const std::string rls = row_security_blocker(reads, owner);
    if (!rls.empty() && st.requested_mode == RefreshMode::kAuto) {
        return full_refresh(spi, st, initiated_by,
                            "DIFFERENTIAL cannot maintain a query over " + rls + ": recomputed");
    }
    if (!rls.empty()) {
        throw pgt::Error(
            "0A000", "DIFFERENTIAL refresh cannot maintain a query over " + rls,
            "Row-level security was enabled on it after stream table " +
                relation_display_name(st.relid) +
                " was created; a change buffer row carries no policy.",
            "Use alter_stream_table(..., refresh_mode => 'FULL') or 'AUTO', which recomputes.");
    }
    // Capture someone disabled lost the changes made meanwhile: repaired,
    // and this refresh (like every other consumer's next one) recomputes.
    const std::string repaired = repair_disabled_capture(spi, st.pgt_id);
    if (!repaired.empty()) {
        return full_refresh(spi, st, initiated_by,
                            "change capture of " + repaired + " had been disabled: recomputed");
    }
    catalog::ensure_owner_rights(spi, st.pgt_id, owner);
    return run_refresh(
        spi, st, initiated_by, reason,
        [&](const RefreshSnapshot& rs, const std::vector<Window>& windows, std::string& why) {
            if (windows.empty()) {
                throw pgt::Error("XX000", "DIFFERENTIAL stream table without a captured source");
            }
            // Dropped from a buffer (pg_trickle.max_buffer_retention) after
            // this refresh read its catalog row: the rows it had not
            // consumed may be gone.
            for (const Window& w : windows) {
                if (w.frontier.released) {
                    why = "dropped from the change buffer of " +
                          relation_display_name(w.source.relid) + ": recomputed";
                    return recompute(spi, st, rs);
                }
            }
            if (!rs.own_xid && std::all_of(windows.begin(), windows.end(),
                                           [](const Window& w) { return w.quiet; })) {
                return RefreshResult{RefreshAction::kNoData};  // proven without reading a buffer
            }
            if (st.requested_mode == RefreshMode::kAuto) {
                return auto_differential(spi, st, rs, windows, why);
            }
            // Per window: a TRUNCATE marker, and whether it has a row at all
            // (the first one found ends that scan).
            bool any = false;
            uint64_t empty = 0;
            for (std::size_t i = 0; i < windows.size(); i++) {
                WindowCount c = window_count(spi, rs, windows[i], 1);
                if (c.truncated) {
                    return recompute_truncated(spi, st, rs, windows[i], why);
                }
                any = any || c.rows > 0;
                empty |= c.rows == 0 ? window_bit(i) : 0;
            }
            if (!any) {
                return RefreshResult{RefreshAction::kNoData};
            }
            return apply_delta(spi, st, rs, windows, empty);
        });
}

}  // namespace

RefreshResult full_refresh(Spi& spi, const catalog::StreamTableRow& st,
                           const std::string& initiated_by, const std::string& reason) {
    return as_role_restricted(relation_owner(st.relid), [&] {
        return run_refresh(spi, st, initiated_by, reason,
                           [&](const RefreshSnapshot& rs, const std::vector<Window>&,
                               std::string&) { return recompute(spi, st, rs); });
    });
}

RefreshResult refresh(Spi& spi, const catalog::StreamTableRow& st, const std::string& initiated_by,
                      const std::string& reason) {
    if (st.refresh_mode != RefreshMode::kDifferential || !st.is_populated) {
        return full_refresh(spi, st, initiated_by, reason);
    }
    // Whoever asked (the scheduler, the owner, a superuser), the refresh
    // runs with the owner's rights only, as REFRESH MATERIALIZED VIEW does.
    const Oid owner = relation_owner(st.relid);
    return as_role_restricted(
        owner, [&] { return differential_refresh(spi, st, owner, initiated_by, reason); });
}

RefreshResult apply_transition_program(Spi& spi, const catalog::StreamTableRow& st, bool newest) {
    RefreshSnapshot rs = RefreshSnapshot::take(spi, newest);
    TagScope tag(st);
    RefreshResult r = apply_delta(spi, st, rs, {});
    rs.close();
    return r;
}

ExplainedRefresh explain_refresh(Spi& spi, const catalog::StreamTableRow& st) {
    // Undoes everything the refresh did (history, frontiers, storage,
    // buffers) but the plans, which are copied out first.
    struct Undo {};
    ExplainedRefresh out;
    std::vector<ExplainedStatement> plans;
    try {
        in_subtransaction([&]() -> int {
            t_explained = &plans;
            try {
                RefreshResult r = refresh(spi, st, "MANUAL", "");
                out.action = action_name(r.action);
                out.reason = r.reason;
            } catch (...) {
                t_explained = nullptr;
                throw;
            }
            t_explained = nullptr;
            throw Undo{};
        });
    } catch (const Undo&) {
        // rolled back, as intended
    }
    out.statements = std::move(plans);
    return out;
}

}  // namespace pgt::pg
