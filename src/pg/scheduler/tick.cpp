// One scheduler tick (see tick.hpp).
//
//   read catalog (1 xact) ─► effective schedules ─► due set ─► plan units
//        └─ per unit: xact ─► subxact ─► refresh each member as its owner
//                                 ├─ ok: release, health reset
//                                 └─ error: roll back, FAILED history,
//                                           status machine, alert
// Invariant: refreshes run as the stream table's owner inside a
// security-restricted operation, never as the worker's superuser.
#include "pg/scheduler/tick.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/dag/calculated.hpp"
#include "core/dag/diamond.hpp"
#include "core/dag/due.hpp"
#include "core/dag/fair_order.hpp"
#include "core/dag/graph.hpp"
#include "core/error.hpp"
#include "core/sched/alert.hpp"
#include "core/sched/schedule.hpp"
#include "pg/api/lifecycle.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/spi.hpp"
#include "pg/boundary/subtransaction.hpp"
#include "pg/catalog/catalog.hpp"
#include "pg/catalog/catalog_schema.hpp"
#include "pg/cdc/frontier.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/refresh/full_refresh.hpp"
#include "pg/common/settings.hpp"
#include "pg/scheduler/refresh_limit.hpp"
#include "pg/scheduler/shared_state.hpp"

extern "C" {
#include "postgres.h"
#include "access/twophase.h"
#include "access/xact.h"
#include "commands/async.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/backend_status.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

namespace pgt::pg {

namespace {

struct TableInfo {
    int64_t pgt_id = 0;
    Oid relid = InvalidOid;
    Oid owner = InvalidOid;
    std::string display;  // schema-qualified, quoted as needed
    sched::Schedule schedule;
    sched::Status status = sched::Status::Active;
    std::string refresh_mode;
    int consecutive_errors = 0;
    std::optional<int64_t> last_refresh_us;
    std::optional<int64_t> data_us;  // data_timestamp: last known equal to its sources
    int64_t created_us = 0;
    bool pending = false;
    bool must_refresh = false;  // unpopulated, or a reinitialisation asked for
    bool noted = false;         // FULL with change notes (pg/cdc/change_notes)
    // Tables whose writes make it pending: the captured sources of a
    // DIFFERENTIAL table, the noted tables of a FULL one.
    std::vector<Oid> sources;
};

struct TickState {
    std::map<int64_t, TableInfo> tables;
    dag::Graph graph;
    SourceWriteCounts counts{};  // read before the tick's first snapshot
    int64_t counts_us = 0;       // when they were read
};

int64_t now_us() {
    // TimestampTz counts microseconds since 2000-01-01; shift to the Unix epoch.
    return GetCurrentTimestamp() +
           (int64_t(POSTGRES_EPOCH_JDATE) - UNIX_EPOCH_JDATE) * SECS_PER_DAY * USECS_PER_SEC;
}

std::optional<int64_t> micros(const std::optional<std::string>& v) {
    return v ? std::optional(std::stoll(*v)) : std::nullopt;
}

void load_tables(Spi& spi, TickState& ts) {
    SpiRows rows = spi.query(
        "SELECT pgt_id, pgt_relid::pg_catalog.oid, pg_catalog.quote_ident(pgt_schema) || '.' || "
        "pg_catalog.quote_ident(pgt_name), schedule, status, refresh_mode, consecutive_errors, "
        "(pg_catalog.date_part('epoch', last_refresh_at) * 1000000)::pg_catalog.int8, "
        "(pg_catalog.date_part('epoch', created_at) * 1000000)::pg_catalog.int8, is_populated, "
        "reinit_reason IS NOT NULL, (SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid "
        "OPERATOR(pg_catalog.=) pgt_relid), (pg_catalog.date_part('epoch', data_timestamp) * "
        "1000000)::pg_catalog.int8 FROM pgtrickle.pgt_stream_tables WHERE instance "
        "OPERATOR(pg_catalog.=) (SELECT i.id FROM pgtrickle.pgt_instance i)");
    for (const auto& r : rows.rows) {
        TableInfo t;
        t.pgt_id = std::stoll(*r[0]);
        t.relid = static_cast<Oid>(std::stoul(*r[1]));
        t.display = *r[2];
        t.schedule = sched::parse_schedule(*r[3]);
        t.status = sched::status_named(*r[4]);
        t.refresh_mode = *r[5];
        t.consecutive_errors = std::stoi(*r[6]);
        t.last_refresh_us = micros(r[7]);
        t.created_us = std::stoll(*r[8]);
        // FULL tables have no change buffer: every due time counts as pending
        // (unless load_notes finds their change notes); so does a
        // reinitialisation DDL asked for. IMMEDIATE tables are
        // kept by their sources' statements: refreshed only to reinitialise.
        t.must_refresh = *r[9] != "t" || *r[10] == "t";
        t.owner = r[11] ? static_cast<Oid>(std::stoul(*r[11])) : InvalidOid;
        t.data_us = micros(r[12]);
        t.pending =
            t.must_refresh || (t.refresh_mode != "DIFFERENTIAL" && t.refresh_mode != "IMMEDIATE");
        ts.graph.add_node(t.pgt_id);
        ts.tables[t.pgt_id] = t;
    }
    SpiRows edges = spi.query(
        "SELECT s.pgt_id, d.pgt_id FROM pgtrickle.pgt_dependencies d "
        "JOIN pgtrickle.pgt_stream_tables s ON s.pgt_relid OPERATOR(pg_catalog.=) d.source_relid");
    for (const auto& e : edges.rows) {
        ts.graph.add_edge(std::stoll(*e[0]), std::stoll(*e[1]));
    }
}

// DIFFERENTIAL tables: pending when a buffer holds a committed row past the
// table's frontier for that source. A (table, source) found with nothing
// pending is not looked at again until its source's write count (read
// before this transaction's snapshots) moves; a frontier only moves
// forward, so nothing can become pending without a write. Not while
// prepared transactions are possible: their commits are not counted.
void load_pending(Spi& spi, TickState& ts, SchedulerMemory& mem, const SourceWriteCounts& counts) {
    SpiRows fr = spi.query(
        "SELECT f.pgt_id, s.buffer_name, f.frontier::pg_catalog.text, s.source_id, "
        "s.source_relid::pg_catalog.oid "
        "FROM pgtrickle.pgt_frontiers f JOIN pgtrickle.pgt_sources s USING (source_id)");
    std::map<std::pair<int64_t, int64_t>, uint32_t> quiet;
    for (const auto& r : fr.rows) {
        auto it = ts.tables.find(std::stoll(*r[0]));
        if (it == ts.tables.end()) {
            continue;
        }
        const Oid relid = static_cast<Oid>(std::stoul(*r[4]));
        it->second.sources.push_back(relid);
        if (it->second.pending) {
            continue;
        }
        const std::pair<int64_t, int64_t> key{it->first, std::stoll(*r[3])};
        const uint32_t count = counts.at(static_cast<std::size_t>(source_write_bucket(relid)));
        auto q = mem.quiet.find(key);
        if (q != mem.quiet.end() && q->second == count) {
            quiet.insert(*q);
            continue;
        }
        it->second.pending =
            spi.scalar("SELECT EXISTS (SELECT 1 FROM " + *r[1] +
                           " b WHERE pg_catalog.pg_visible_in_snapshot(b.xid, "
                           "pg_catalog.pg_current_snapshot()) AND NOT "
                           "pg_catalog.pg_visible_in_snapshot(b.xid, $1::pg_catalog.pg_snapshot))",
                       {text_param(*r[2])}) == "t";
        if (!it->second.pending && max_prepared_xacts == 0) {
            quiet.emplace(key, count);
        }
    }
    mem.quiet = std::move(quiet);
}

// FULL tables whose every plain table carries their change notes (enabled
// ALWAYS, and not a subscription's target: the apply worker fires no
// statement triggers) are pending only when one of those tables was
// written since the worker's last refresh of it, or when it must be
// refreshed anyway. The others recompute at every due time.
void load_notes(Spi& spi, TickState& ts, SchedulerMemory& mem) {
    SpiRows rows = spi.query(
        "SELECT st.pgt_id, c.oid FROM pgtrickle.pgt_stream_tables st JOIN "
        "pgtrickle.pgt_dependencies d ON d.pgt_id OPERATOR(pg_catalog.=) st.pgt_id JOIN "
        "pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.source_relid WHERE "
        "st.refresh_mode OPERATOR(pg_catalog.=) 'FULL' AND c.relkind OPERATOR(pg_catalog.=) 'r' "
        "AND st.pgt_id IN (SELECT s.pgt_id FROM pgtrickle.pgt_stream_tables s JOIN "
        "pgtrickle.pgt_dependencies sd ON sd.pgt_id OPERATOR(pg_catalog.=) s.pgt_id JOIN "
        "pg_catalog.pg_class sc ON sc.oid OPERATOR(pg_catalog.=) sd.source_relid GROUP BY "
        "s.pgt_id HAVING pg_catalog.bool_and(sc.relkind OPERATOR(pg_catalog.=) 'v' OR "
        "(sc.relkind OPERATOR(pg_catalog.=) 'r' AND EXISTS (SELECT 1 FROM pg_catalog.pg_trigger "
        "t WHERE t.tgrelid OPERATOR(pg_catalog.=) sc.oid AND t.tgname OPERATOR(pg_catalog.=) "
        "('pgt_note_' OPERATOR(pg_catalog.||) s.pgt_id) AND t.tgenabled OPERATOR(pg_catalog.=) "
        "'A') AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_subscription_rel r WHERE r.srrelid "
        "OPERATOR(pg_catalog.=) sc.oid))))");
    std::map<std::pair<int64_t, Oid>, uint32_t> kept;
    for (const auto& r : rows.rows) {
        auto it = ts.tables.find(std::stoll(*r[0]));
        if (it == ts.tables.end()) {
            continue;
        }
        TableInfo& t = it->second;
        const Oid relid = static_cast<Oid>(std::stoul(*r[1]));
        if (!t.noted) {
            t.noted = true;
            t.pending = t.must_refresh;
        }
        t.sources.push_back(relid);
        auto seen = mem.noted.find({t.pgt_id, relid});
        const uint32_t count = ts.counts.at(static_cast<std::size_t>(source_write_bucket(relid)));
        if (seen == mem.noted.end() || seen->second != count || max_prepared_xacts > 0) {
            t.pending = true;
        }
        if (seen != mem.noted.end()) {
            kept.insert(*seen);
        }
    }
    mem.noted = std::move(kept);
}

// A worker transaction with a snapshot (each tick step runs in its own).
void begin_transaction() {
    pg_call([] {
        SetCurrentStatementStartTimestamp();
        StartTransactionCommand();
        PushActiveSnapshot(GetTransactionSnapshot());
    });
}

void commit_transaction() {
    pg_call([] {
        PopActiveSnapshot();
        CommitTransactionCommand();
    });
}

// How long a quiet noted table's data_timestamp may lag before
// confirm_quiet moves it: half its interval, at most a minute (10 s for
// the other timings), so its staleness stays well inside its schedule
// while costing one catalog write per that period, not a recompute.
int64_t confirm_every_us(const sched::EffectiveSchedule& e) {
    constexpr int64_t kMostUs = 60 * sched::kMicrosPerSecond;
    if (e.timing != sched::Timing::Interval) {
        return 10 * sched::kMicrosPerSecond;
    }
    const int64_t half =
        std::chrono::duration_cast<std::chrono::microseconds>(e.interval).count() / 2;
    return std::min(half, kMostUs);
}

// A FULL table with change notes that none of its tables' writes made
// pending (load_notes) equals its sources as of the moment the write
// counts were read: its data_timestamp, which its staleness is measured
// from, moves there (never back: a refresh may have moved it further).
// Without this an idle FULL table would age as if behind.
void confirm_quiet(const TickState& ts,
                   const std::map<dag::NodeId, sched::EffectiveSchedule>& eff) {
    std::string ids;
    for (const auto& [id, t] : ts.tables) {
        if (!t.noted || t.pending || !t.data_us ||
            ts.counts_us - *t.data_us < confirm_every_us(eff.at(id))) {
            continue;
        }
        ids += (ids.empty() ? "" : ",") + std::to_string(id);
    }
    if (ids.empty()) {
        return;
    }
    // counts_us (Unix microseconds) as a timestamptz.
    const std::string at =
        "('epoch'::pg_catalog.timestamptz OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs "
        "=> $2::pg_catalog.float8 OPERATOR(pg_catalog./) 1000000))";
    begin_transaction();
    Spi spi = Spi::connect();
    catalog::exec_as_owner(spi,
                           "UPDATE pgtrickle.pgt_stream_tables SET data_timestamp = " + at +
                               " WHERE pgt_id OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.int8[]) "
                               "AND is_populated AND refresh_mode OPERATOR(pg_catalog.=) 'FULL' "
                               "AND data_timestamp OPERATOR(pg_catalog.<) " +
                               at,
                           {text_param("{" + ids + "}"), int8_param(ts.counts_us)});
    spi.close();
    commit_transaction();
}

// Reads everything the decisions need, in one short transaction. Returns
// false when the extension is gone.
bool read_state(TickState& ts, SchedulerMemory& mem) {
    begin_transaction();
    bool present = pg_call([] { return OidIsValid(get_extension_oid("pg_trickle", true)); });
    if (present) {
        Spi spi = Spi::connect();
        // A catalog of another version waits for ALTER EXTENSION ... UPDATE
        // (said once per worker); a restore's rows are adopted once it is
        // complete (pgtrickle._restore_complete), its IMMEDIATE stream
        // tables rebuilt at once.
        const std::string v = catalog::catalog_version(spi);
        static bool said = false;
        if (v != catalog::library_version()) {
            if (!said) {
                said = true;
                pg_call([&] {
                    ereport(LOG, (errmsg("pg_trickle scheduler: this database's catalog is "
                                         "version %s, the library %s; nothing is refreshed until "
                                         "ALTER EXTENSION pg_trickle UPDATE",
                                         v.c_str(), catalog::library_version())));
                });
            }
        } else {
            said = false;
            (void)adopt_restored(spi, false, "SCHEDULER");
            load_tables(spi, ts);
            load_pending(spi, ts, mem, ts.counts);
            load_notes(spi, ts, mem);
        }
        spi.close();
    }
    commit_transaction();
    return present;
}

// What the due rule reads of each table now (dag::due_set, plan_wait).
dag::DueInputs due_inputs(const TickState& ts, const SchedulerMemory& mem) {
    dag::DueInputs out;
    const int64_t now = now_us();
    for (const auto& [id, t] : ts.tables) {
        sched::DueInput& in = out[id];
        in.status = t.status;
        in.now_us = now;
        in.last_refresh_us = t.last_refresh_us;
        in.created_us = t.created_us;
        in.has_pending_changes = t.pending;
        auto m = mem.tables.find(id);
        in.retry_not_before_us = m == mem.tables.end() ? 0 : m->second.retry_not_before_us;
    }
    return out;
}

double next_random(SchedulerMemory& mem) {
    mem.random_state ^= mem.random_state << 13;
    mem.random_state ^= mem.random_state >> 7;
    mem.random_state ^= mem.random_state << 17;
    return double(mem.random_state >> 11) / double(uint64_t(1) << 53);
}

void send_alert(const std::string& payload) {
    const std::string channel(sched::kAlertChannel);
    pg_call([&] { Async_Notify(channel.c_str(), payload.c_str()); });
}

struct Failure {
    int64_t pgt_id = 0;
    std::string sqlstate, message;
};

// Refreshes one table (refresh() runs it as its owner, in a
// security-restricted operation, as REFRESH MATERIALIZED VIEW does).
void refresh_one(Spi& spi, const TableInfo& t) {
    std::optional<catalog::StreamTableRow> row = catalog::find_by_relid(spi, t.relid);
    if (!row) {
        return;  // dropped since the state was read
    }
    // pg_stat_activity shows which stream table this worker refreshes (its
    // query column; the statements a refresh runs do not report there).
    const std::string activity = "pg_trickle: refresh " + t.display;
    pg_call([&] { pgstat_report_activity(STATE_RUNNING, activity.c_str()); });
    RefreshTimer timer(refresh_limit(spi, relation_owner(row->relid)));
    timer.arm();
    try {
        refresh_or_reinitialize(spi, *row, "SCHEDULER");
    } catch (const pgt::Error& e) {
        timer.disarm();
        if (e.sqlstate() != std::string("57014") || !timer.expired()) {
            throw;
        }
        const RefreshLimit& l = timer.limit();
        throw pgt::Error("57014",
                         "scheduled refresh of " + t.display + " canceled: statement timeout of " +
                             std::to_string(l.ms) + " ms (" + l.source + ")",
                         "", "Make the refresh faster, or raise " + l.source + ".");
    } catch (...) {
        timer.disarm();
        throw;
    }
    timer.disarm();
    pg_call([] { pgstat_report_activity(STATE_IDLE, nullptr); });
}

struct UnitRun {
    const dag::RefreshUnit& unit;
    TickState& ts;
    SchedulerMemory& mem;
    const std::map<dag::NodeId, sched::EffectiveSchedule>& eff;
};

void record_failure(Spi& spi, UnitRun& u, const Failure& f, const std::string& start) {
    TableInfo& t = u.ts.tables.at(f.pgt_id);
    TableMemory& m = u.mem.tables[f.pgt_id];
    sched::FailureOutcome out = sched::on_failure(
        {t.status, t.consecutive_errors, m.failed_attempts}, f.sqlstate, g_max_consecutive_errors);
    m.failed_attempts = out.health.failed_attempts;
    m.retry_not_before_us =
        now_us() + sched::retry_delay_us({}, m.failed_attempts, next_random(u.mem));
    catalog::record_failed_refresh(spi, f.pgt_id, t.refresh_mode, "SCHEDULER", start,
                                   f.sqlstate + ": " + f.message);
    catalog::set_health(spi, f.pgt_id, out.health.status, out.health.consecutive_errors);
    send_alert(sched::refresh_failed_alert(t.display, f.sqlstate, out.retryable,
                                           out.health.consecutive_errors, f.message));
    if (out.auto_suspended) {
        send_alert(sched::auto_suspended_alert(t.display, f.sqlstate, out.health.consecutive_errors,
                                               f.message));
    }
    if (u.unit.atomic) {
        std::vector<std::string> names;
        for (int64_t id : u.unit.members) {
            names.push_back(u.ts.tables.at(id).display);
        }
        send_alert(sched::diamond_partial_failure_alert(names, t.display, f.sqlstate, f.message));
    }
    pg_call([&] {
        ereport(LOG, (errmsg("pg_trickle: scheduled refresh of %s failed: %s", t.display.c_str(),
                             f.message.c_str())));
    });
}

// A unit whose locks were not granted within pg_trickle.lock_timeout: not
// a failure of the stream table (no back-off, no error count), recorded
// so an operator sees why it lags.
constexpr const char* kLockNotAvailable = "55P03";

void record_skip(Spi& spi, UnitRun& u, const Failure& f, const std::string& start) {
    const TableInfo& t = u.ts.tables.at(f.pgt_id);
    catalog::record_failed_refresh(spi, f.pgt_id, t.refresh_mode, "SCHEDULER", start,
                                   f.sqlstate + ": " + f.message, "SKIPPED");
    pg_call([&] {
        ereport(LOG, (errmsg("pg_trickle: scheduled refresh of %s skipped: %s", t.display.c_str(),
                             f.message.c_str())));
    });
}

void record_success(Spi& spi, UnitRun& u, const std::map<int64_t, int64_t>& durations) {
    for (const auto& [id, duration] : durations) {
        TableInfo& t = u.ts.tables.at(id);
        // As the catalog has it now (last_refresh_at is the refresh's end).
        t.last_refresh_us = now_us();
        t.pending = false;
        for (Oid relid : t.noted ? t.sources : std::vector<Oid>{}) {
            u.mem.noted[{id, relid}] =
                u.ts.counts.at(static_cast<std::size_t>(source_write_bucket(relid)));
        }
        TableMemory& m = u.mem.tables[id];
        sched::Health h = sched::on_success({t.status, t.consecutive_errors, m.failed_attempts});
        m.failed_attempts = 0;
        m.retry_not_before_us = 0;
        catalog::set_health(spi, id, h.status, h.consecutive_errors);
        const sched::EffectiveSchedule& e = u.eff.at(id);
        if (e.timing != sched::Timing::Interval) {
            continue;
        }
        int64_t interval_us =
            std::chrono::duration_cast<std::chrono::microseconds>(e.interval).count();
        sched::LagVerdict v = sched::observe_refresh(m.lag, duration, interval_us);
        if (v.alert) {
            send_alert(sched::falling_behind_alert(t.display, v.mean_duration_us / 1000,
                                                   interval_us / 1000, sched::LagParams{}.cycles));
        }
    }
}

// One unit in its own transaction; its members inside one subtransaction, so
// an atomic group applies all or none.
void run_unit(UnitRun& u) {
    begin_transaction();
    Spi spi = Spi::connect();
    // A lock someone holds on one stream table (or its sources) must not
    // stall every other schedule: past pg_trickle.lock_timeout the unit
    // is skipped and retried at the next tick.
    spi.exec("SELECT pg_catalog.set_config('lock_timeout', $1, true)",
             {text_param(std::to_string(g_lock_timeout_ms))});
    std::string start = catalog::clock_now(spi);
    pg_call([] { BeginInternalSubTransaction(nullptr); });
    std::optional<Failure> failure;
    std::map<int64_t, int64_t> durations;
    for (int64_t id : u.unit.members) {
        int64_t t0 = now_us();
        try {
            refresh_one(spi, u.ts.tables.at(id));
        } catch (const pgt::Error& e) {
            failure = Failure{id, e.sqlstate(), e.message()};
            break;
        }
        durations[id] = now_us() - t0;
    }
    if (failure && failure->sqlstate == kLockNotAvailable) {
        pg_call([] { RollbackAndReleaseCurrentSubTransaction(); });
        record_skip(spi, u, *failure, start);
    } else if (failure) {
        pg_call([] { RollbackAndReleaseCurrentSubTransaction(); });
        record_failure(spi, u, *failure, start);
    } else {
        pg_call([] { ReleaseCurrentSubTransaction(); });
        record_success(spi, u, durations);
    }
    spi.close();
    commit_transaction();
}

// Units of this tick. A table that is suspended, or waiting out the back-off
// after a failure, holds back its whole group: refreshing the rest would
// split the group, and running the group would retry the failed member early.
std::vector<dag::RefreshUnit> units_to_run(const TickState& ts, const SchedulerMemory& mem,
                                           const std::set<int64_t>& due) {
    std::set<int64_t> suspended;
    int64_t now = now_us();
    for (const auto& [id, t] : ts.tables) {
        auto m = mem.tables.find(id);
        bool backing_off = m != mem.tables.end() && m->second.retry_not_before_us > now;
        if (t.status == sched::Status::Suspended || backing_off) {
            suspended.insert(id);
        }
    }
    std::vector<dag::RefreshUnit> units =
        dag::select_due(dag::refresh_plan(ts.graph), due, suspended);
    if (g_diamond_atomic) {
        return units;
    }
    std::vector<dag::RefreshUnit> singles;  // diamond_consistency = 'none'
    for (const dag::RefreshUnit& u : units) {
        for (int64_t id : u.members) {
            if (due.count(id) != 0 && suspended.count(id) == 0) {
                singles.push_back({{id}, false});
            }
        }
    }
    return singles;
}

// A tick that has run this long runs no further unit: the next tick
// (at once) computes the due set and the order again (fair_units), so a
// slow refresh delays another owner's tables by at most its own duration,
// not by those of every slow table due with it.
constexpr int64_t kTickBudgetUs = sched::kMicrosPerSecond;

// Each unit ranked by when its owner (the least recently served of its
// members' owners) last had a refresh run here, then by when it became due
// or was last tried, whichever is later.
std::vector<dag::RefreshUnit> fair_units(const TickState& ts, const SchedulerMemory& mem,
                                         const std::set<int64_t>& due,
                                         const std::map<dag::NodeId, sched::EffectiveSchedule>& eff,
                                         const dag::DueInputs& inputs) {
    std::vector<dag::RefreshUnit> units = units_to_run(ts, mem, due);
    std::vector<dag::UnitRank> rank;
    for (const dag::RefreshUnit& u : units) {
        dag::UnitRank r{INT64_MAX, INT64_MAX};
        for (int64_t id : u.members) {
            auto served = mem.owner_served_us.find(ts.tables.at(id).owner);
            r.first = std::min(r.first, served == mem.owner_served_us.end() ? 0 : served->second);
            // Due since, or tried since (a skipped one goes after the others).
            const sched::DueInput& in = inputs.at(id);
            auto m = mem.tables.find(id);
            const int64_t tried = m == mem.tables.end() ? 0 : m->second.last_attempt_us;
            r.second = std::min(
                r.second, std::max(tried, sched::next_due_us(eff.at(id), in).value_or(in.now_us)));
        }
        rank.push_back(r);
    }
    return dag::order_units(ts.graph, units, rank);
}

// Deletes refresh history older than pg_trickle.history_retention, at most
// once per kPruneEveryUs, in its own transaction (0 keeps everything); what
// the deleted rows counted is added to their stream tables' pruned_*
// columns, so the totals of pg_stat_stream_tables only grow.
constexpr int64_t kPruneEveryUs = 10 * sched::kMicrosPerSecond;

void prune_history(SchedulerMemory& mem) {
    int64_t now = now_us();
    if (g_history_retention_seconds <= 0 || now - mem.last_prune_us < kPruneEveryUs) {
        return;
    }
    mem.last_prune_us = now;
    begin_transaction();
    Spi spi = Spi::connect();
    spi.exec(
        "WITH gone AS (DELETE FROM pgtrickle.pgt_refresh_history WHERE end_time "
        "OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) "
        "pg_catalog.make_interval(secs => $1)) RETURNING pgt_id, status, rows_inserted, "
        "rows_deleted), counted AS (SELECT g.pgt_id, pg_catalog.count(*) AS n, "
        "pg_catalog.count(*) FILTER (WHERE g.status OPERATOR(pg_catalog.=) 'SUCCESS') AS ok, "
        "pg_catalog.count(*) FILTER (WHERE g.status OPERATOR(pg_catalog.=) 'FAILED') AS failed, "
        "coalesce(pg_catalog.sum(g.rows_inserted), 0)::pg_catalog.int8 AS ins, "
        "coalesce(pg_catalog.sum(g.rows_deleted), 0)::pg_catalog.int8 AS del "
        "FROM gone g GROUP BY g.pgt_id) UPDATE pgtrickle.pgt_stream_tables st SET "
        "pruned_refreshes = st.pruned_refreshes OPERATOR(pg_catalog.+) c.n, "
        "pruned_successes = st.pruned_successes OPERATOR(pg_catalog.+) c.ok, "
        "pruned_failures = st.pruned_failures OPERATOR(pg_catalog.+) c.failed, "
        "pruned_rows_inserted = st.pruned_rows_inserted OPERATOR(pg_catalog.+) c.ins, "
        "pruned_rows_deleted = st.pruned_rows_deleted OPERATOR(pg_catalog.+) c.del "
        "FROM counted c WHERE st.pgt_id OPERATOR(pg_catalog.=) c.pgt_id",
        {int8_param(g_history_retention_seconds)});
    spi.close();
    commit_transaction();
}

// Removes the change-buffer rows every consumer has passed, for each source
// whose consumers' frontiers moved since its last trim (refreshes leave this
// to the worker while it runs: scheduler_trims_buffers()); a buffer left
// empty is truncated. One transaction per buffer (a TRUNCATE's lock is
// held only until its own commit), the trim in a subtransaction, so a
// source dropped meanwhile only skips its own trim.
void trim_buffers(SchedulerMemory& mem) {
    begin_transaction();
    Spi spi = Spi::connect();
    SpiRows r = catalog::query_as_owner(
        spi,
        std::string(
            "SELECT s.source_id, s.buffer_name, pg_catalog.string_agg(f.pgt_id::pg_catalog.text "
            "OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) f.frontier::pg_catalog.text "
            "OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) "
            "COALESCE(f.own_xid::pg_catalog.text, '') OPERATOR(pg_catalog.||) ':' "
            "OPERATOR(pg_catalog.||) f.own_seq::pg_catalog.text, ',' ORDER BY f.pgt_id) FROM ") +
            pgt::catalog::kSchema + "." + pgt::catalog::kSources + " s JOIN " +
            pgt::catalog::kSchema + "." + pgt::catalog::kFrontiers +
            " f USING (source_id) GROUP BY s.source_id, s.buffer_name");
    spi.close();
    commit_transaction();
    std::map<int64_t, std::string> seen;
    for (const auto& row : r.rows) {
        int64_t id = std::stoll(*row.at(0));
        const std::string& sig = *row.at(2);
        auto m = mem.trimmed_at.find(id);
        if (m != mem.trimmed_at.end() && m->second == sig) {
            seen[id] = sig;
            continue;
        }
        begin_transaction();
        Spi one = Spi::connect();
        try {
            in_subtransaction([&] {
                if (trim_consumed(one, id, *row.at(1)) > 0) {
                    truncate_if_empty(one, *row.at(1));
                }
                return true;
            });
            seen[id] = sig;
        } catch (
            const pgt::Error&) {  // NOLINT(bugprone-empty-catch): rolled back, retried next tick
        }
        one.close();
        commit_transaction();
    }
    mem.trimmed_at = std::move(seen);
}

// pg_trickle.max_buffer_retention: a consumer (suspended or lagging) more
// rows behind than that is dropped from the buffer, at most once per
// kRetentionEveryUs; one transaction per consumer, its buffer trimmed by
// trim_buffers next (its remembered frontiers no longer match).
constexpr int64_t kRetentionEveryUs = sched::kMicrosPerSecond;

void release_lagging(SchedulerMemory& mem) {
    const int64_t now = now_us();
    if (g_max_buffer_retention <= 0 || now - mem.last_retention_us < kRetentionEveryUs) {
        return;
    }
    mem.last_retention_us = now;
    begin_transaction();
    Spi spi = Spi::connect();
    std::vector<LaggingConsumer> lagging = lagging_consumers(spi, g_max_buffer_retention);
    spi.close();
    commit_transaction();
    for (const LaggingConsumer& c : lagging) {
        begin_transaction();
        Spi one = Spi::connect();
        const bool released = release_consumer(one, c, g_max_buffer_retention);
        one.close();
        commit_transaction();
        if (!released) {
            continue;
        }
        mem.trimmed_at.erase(c.source_id);
        pg_call([&] {
            ereport(LOG, (errmsg("pg_trickle: stream table %s dropped from the change buffer of %s",
                                 c.stream_table.c_str(), c.source.c_str()),
                          errdetail("%lld rows were captured since its last refresh, more than "
                                    "pg_trickle.max_buffer_retention (%d); its next refresh "
                                    "recomputes it.",
                                    static_cast<long long>(c.behind), g_max_buffer_retention)));
        });
    }
}

// After a tick: the sources whose writes wake the worker (those of tables
// that are due as soon as they have a change) and how long it sleeps
// otherwise (until the next table is due by time alone, at most
// pg_trickle.scheduler_interval_ms). A write to a wake source committed
// while the tick ran makes it look again at once.
void plan_sleep(const TickState& ts, SchedulerMemory& mem,
                const std::map<dag::NodeId, sched::EffectiveSchedule>& eff,
                const SourceWriteCounts& counts) {
    const dag::DueInputs inputs = due_inputs(ts, mem);
    const dag::Wait wait = dag::plan_wait(ts.graph, eff, inputs);
    std::vector<Oid> wake;
    for (dag::NodeId id : wait.due_on_change) {
        const std::vector<Oid>& sources = ts.tables.at(id).sources;
        wake.insert(wake.end(), sources.begin(), sources.end());
    }
    set_wake_sources(MyDatabaseId, wake);
    const int64_t now = inputs.empty() ? now_us() : inputs.begin()->second.now_us;
    const int64_t longest = int64_t(g_scheduler_interval_ms) * 1000;
    const int64_t until = wait.until_us ? std::min(*wait.until_us - now, longest) : longest;
    mem.sleep_ms = static_cast<int>(std::max<int64_t>(1, (until + 999) / 1000));
    const SourceWriteCounts after = source_write_counts(MyDatabaseId);
    for (Oid relid : wake) {
        const auto b = static_cast<std::size_t>(source_write_bucket(relid));
        if (after.at(b) != counts.at(b)) {
            mem.sleep_ms = 0;
        }
    }
}

}  // namespace

bool run_tick(SchedulerMemory& memory) {
    memory.sleep_ms = g_scheduler_interval_ms;
    TickState ts;
    // Before any snapshot of this tick (load_pending's rule).
    ts.counts_us = now_us();
    ts.counts = source_write_counts(MyDatabaseId);
    if (!read_state(ts, memory)) {
        return false;
    }
    prune_history(memory);
    if (ts.tables.empty()) {
        set_wake_sources(MyDatabaseId, {});
        return true;
    }
    std::map<int64_t, sched::Schedule> schedules;
    for (const auto& [id, t] : ts.tables) {
        schedules[id] = t.schedule;
    }
    auto eff = dag::effective_schedules(ts.graph, schedules,
                                        std::chrono::seconds(g_default_schedule_seconds),
                                        std::chrono::seconds(g_min_schedule_seconds));
    confirm_quiet(ts, eff);
    const dag::DueInputs inputs = due_inputs(ts, memory);
    std::set<int64_t> due = dag::due_set(ts.graph, eff, inputs);
    const int64_t began = now_us();
    bool cut_short = false;
    for (const dag::RefreshUnit& unit : fair_units(ts, memory, due, eff, inputs)) {
        if (now_us() - began > kTickBudgetUs) {
            cut_short = true;  // the rest waits for a new due set and order
            break;
        }
        UnitRun u{unit, ts, memory, eff};
        run_unit(u);
        for (int64_t id : unit.members) {
            memory.owner_served_us[ts.tables.at(id).owner] = now_us();
            memory.tables[id].last_attempt_us = now_us();
        }
    }
    release_lagging(memory);
    trim_buffers(memory);
    plan_sleep(ts, memory, eff, ts.counts);
    if (cut_short) {
        memory.sleep_ms = 0;
    }
    return true;
}

}  // namespace pgt::pg
