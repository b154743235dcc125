// IMMEDIATE stream tables installed and removed: the statement triggers
// on every table a statement on a source can name, the programs each
// event runs (pgtrickle.pgt_immediate), and what makes a query unfit.
// Invariant: programs go before triggers (drop_immediate): the sql_drop
// trigger refuses to drop the trigger of a stream table that has programs.
#include "pg/refresh/immediate.hpp"
#include "pg/refresh/immediate_parts.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/diff/aggregate.hpp"
#include "core/diff/program.hpp"
#include "core/diff/scan_delta.hpp"
#include "core/ir/tree.hpp"
#include "pg/boundary/as_role.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"
#include "pg/catalog/catalog_schema.hpp"
#include "pg/cdc/change_buffer.hpp"
#include "pg/common/quote.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/guard/storage_guard.hpp"
#include "pg/refresh/full_refresh.hpp"
#include "pg/refresh/programs.hpp"
#include "pg/refresh/storage.hpp"
#include "pg/common/settings.hpp"
#include "pg/security/rights.hpp"

extern "C" {
#include "postgres.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/rel.h"
#include "utils/tuplestore.h"
#include "utils/datum.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
}

namespace pgt::pg {

using immediate::event_tables;
using immediate::kEvents;
using immediate::kPrograms;
using immediate::trigger_prefix;

namespace {

// How concurrent writers of q's source are kept apart (pgt_immediate.locking).
struct Locking {
    char code = 't';
    std::vector<std::string> keys;  // 'i': the identity's expressions over the scan alias
};

Locking locking_of(const AnalyzedQuery& q, diff::Strategy strategy,
                   const ir::ScanFilterProject& scan) {
    const rowid::Domain d = q.identity.domain;
    const bool grouped = strategy != diff::Strategy::kScan;
    if (!grouped && d == rowid::Domain::kScanKey) {
        return {'r', {}};  // its rows are the source's rows, locked by the writer
    }
    if (!grouped && d == rowid::Domain::kKeylessRow) {
        Locking l{'i', {}};
        for (const ir::OutputColumn& o : scan.outputs) {
            l.keys.push_back(o.expr);
        }
        return l;
    }
    // Algebraic groups read and write only their own rows; when equal keys
    // may look different (1.0, 1.00), one group could take two locks.
    const std::vector<bool> key_alike = diff::keys_alike(q.operators);
    const bool alike = std::all_of(key_alike.begin(), key_alike.end(), [](bool b) { return b; });
    if (strategy == diff::Strategy::kAlgebraicGroup && alike) {
        Locking l{'i', {}};
        for (int k : q.identity.key_columns) {
            l.keys.push_back(scan.outputs.at(static_cast<std::size_t>(k)).expr);
        }
        return l;
    }
    return {'t', {}};
}

// The tables a statement on which changes what a query over relid reads:
// relid and, when it is partitioned, every partitioned table and partition
// below it. A statement fires the statement-level triggers of the table it
// names only, whichever partitions its rows go to.
std::vector<Oid> statement_targets(Oid relid) {
    List* all = pg_call([&] {
        return get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE
                   ? find_all_inheritors(relid, NoLock, nullptr)
                   : list_make1_oid(relid);
    });
    std::vector<Oid> out;
    ListCell* lc;
    foreach (lc, all) {
        out.push_back(lfirst_oid(lc));
    }
    return out;
}

// What a foreign partition under a source makes IMMEDIATE refuse: it takes
// no trigger with transition tables.
std::string foreign_partition(Oid part) {
    return "a query over a table with a foreign partition (" + relation_display_name(part) + ")";
}

// The IMMEDIATE triggers of stream table pgt_id on one table.
void create_triggers_on(Spi& spi, int64_t pgt_id, Oid target) {
    const std::string src = quoted_relation_name(target);
    const std::string args = "(" + sql_literal(std::to_string(pgt_id)) + ", " +
                             sql_literal(catalog::instance(spi)) + ")";
    const std::string prefix = trigger_prefix(pgt_id);
    const std::string old_t = std::string("OLD TABLE AS ") + diff::kTransitionOld;
    const std::string new_t = std::string("NEW TABLE AS ") + diff::kTransitionNew;
    struct T {
        std::string suffix, timing, level, function, enable;
    };
    // The statement triggers fire ALWAYS: also under a session's
    // session_replication_role = replica. A logical replication apply
    // worker fires row triggers only: the row trigger (ENABLE REPLICA, so
    // that no ordinary write pays for it) fails its writes instead of the
    // stream table going stale; a partitioned table's rows are written to
    // its leaves, where it goes.
    std::vector<T> triggers{
        {"before", "BEFORE INSERT OR UPDATE OR DELETE", "STATEMENT", "_immediate_before", "ALWAYS"},
        {"ins", "AFTER INSERT ON " + src + " REFERENCING " + new_t, "STATEMENT", "_immediate_after",
         "ALWAYS"},
        {"upd", "AFTER UPDATE ON " + src + " REFERENCING " + old_t + " " + new_t, "STATEMENT",
         "_immediate_after", "ALWAYS"},
        {"del", "AFTER DELETE ON " + src + " REFERENCING " + old_t, "STATEMENT", "_immediate_after",
         "ALWAYS"},
        {"trunc", "AFTER TRUNCATE", "STATEMENT", "_immediate_after", "ALWAYS"},
    };
    if (get_rel_relkind(target) != RELKIND_PARTITIONED_TABLE) {
        triggers.push_back({std::string(immediate::kReplicatedSuffix),
                            "AFTER INSERT OR UPDATE OR DELETE", "ROW", "_immediate_replicated",
                            "REPLICA"});
    }
    for (const T& t : triggers) {
        const bool has_on = t.timing.find(" ON ") != std::string::npos;
        catalog::exec_as_owner(spi, "CREATE TRIGGER " + quote_ident(prefix + t.suffix) + " " +
                                        t.timing + (has_on ? "" : " ON " + src) + " FOR EACH " +
                                        t.level + " EXECUTE FUNCTION pgtrickle." + t.function +
                                        args);
        catalog::exec_as_owner(spi, "ALTER TABLE " + src + " ENABLE " + t.enable + " TRIGGER " +
                                        quote_ident(prefix + t.suffix));
    }
}

void create_triggers(Spi& spi, int64_t pgt_id, Oid source_relid) {
    for (Oid target : statement_targets(source_relid)) {
        create_triggers_on(spi, pgt_id, target);
    }
}

}  // namespace

std::vector<Oid> immediate_trigger_tables(const AnalyzedQuery& q) {
    const diff::DeltaPlan plan = delta_plan(q);
    return diff::reads_several_tables(plan.strategy) ? multi_table_sources(q, plan)
                                                     : std::vector<Oid>{q.scan.source_relid};
}

std::string immediate_blocker(const AnalyzedQuery& q) {
    if (!q.differential_blocker.empty()) {
        return q.differential_blocker;
    }
    for (Oid relid : immediate_trigger_tables(q)) {
        if (get_rel_relispartition(relid)) {
            return "a query over a partition (" + relation_display_name(relid) +
                   "): statements on its partitioned table would not reach it";
        }
        if (get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE && has_subclass(relid)) {
            return "a query over a table with inheritance children (" +
                   relation_display_name(relid) + "): their own statements would not reach it";
        }
        for (Oid part : statement_targets(relid)) {
            if (get_rel_relkind(part) == RELKIND_FOREIGN_TABLE) {
                return foreign_partition(part);
            }
        }
    }
    return "";
}

void refuse_subscribed(Spi& spi, const AnalyzedQuery& q) {
    for (Oid relid : immediate_trigger_tables(q)) {
        for (Oid target : statement_targets(relid)) {
            const std::optional<std::string> sub = spi.scalar(
                "SELECT s.subname::pg_catalog.text FROM pg_catalog.pg_subscription_rel r JOIN "
                "pg_catalog.pg_subscription s ON s.oid OPERATOR(pg_catalog.=) r.srsubid WHERE "
                "r.srrelid OPERATOR(pg_catalog.=) $1 ORDER BY 1 LIMIT 1",
                {oid_param(target)});
            if (!sub) {
                continue;
            }
            const std::string what =
                target == relid ? "table " + relation_display_name(relid) + ", a"
                                : "table " + relation_display_name(relid) + ", whose partition " +
                                      relation_display_name(target) + " is a";
            throw pgt::Error(
                "0A000",
                "IMMEDIATE refresh cannot maintain a query over " + what +
                    " target of subscription \"" + *sub + "\"",
                "The logical replication apply worker writes the rows it replicates firing row "
                "triggers only, never the statement triggers IMMEDIATE maintenance runs on: the "
                "stream table would not follow them.",
                "Use refresh_mode => 'DIFFERENTIAL' (its change capture sees replicated rows), or "
                "'AUTO'.");
        }
    }
}

void drop_immediate(Spi& spi, int64_t pgt_id) {
    SpiRows triggers = spi.query(
        "SELECT pg_catalog.quote_ident(t.tgname), t.tgrelid, t.tgname::pg_catalog.text "
        "FROM pg_catalog.pg_trigger t WHERE pg_catalog.starts_with(t.tgname::pg_catalog.text, "
        "$1) AND t.tgfoid OPERATOR(pg_catalog.=) ANY (ARRAY["
        "'pgtrickle._immediate_before'::pg_catalog.regproc, "
        "'pgtrickle._immediate_after'::pg_catalog.regproc, "
        "'pgtrickle._immediate_replicated'::pg_catalog.regproc]::pg_catalog.oid[])",
        {text_param(trigger_prefix(pgt_id))});
    // Programs first: the sql_drop trigger refuses to drop the trigger of
    // a stream table that still has them, and drops the others of one
    // that has none (so each is looked for first).
    catalog::exec_as_owner(spi,
                           "DELETE FROM " + kPrograms + " WHERE pgt_id OPERATOR(pg_catalog.=) $1",
                           {int8_param(pgt_id)});
    for (const auto& row : triggers.rows) {
        const bool there =
            spi.scalar(
                   "SELECT 1 FROM pg_catalog.pg_trigger t WHERE t.tgname "
                   "OPERATOR(pg_catalog.=) $1 AND t.tgrelid OPERATOR(pg_catalog.=) $2",
                   {text_param(*row.at(2)), oid_param(std::stoul(*row.at(1)))})
                .has_value();
        if (there) {
            catalog::exec_as_owner(
                spi, "DROP TRIGGER " + *row.at(0) + " ON " +
                         quoted_relation_name(static_cast<Oid>(std::stoul(*row.at(1)))));
        }
    }
}

namespace {
int g_installing = 0;
}  // namespace

ImmediateInstallScope::ImmediateInstallScope() {
    g_installing++;
}
ImmediateInstallScope::~ImmediateInstallScope() {
    g_installing--;
}
bool immediate_being_installed() {
    return g_installing > 0;
}

std::string immediate_problems(Spi& spi, int64_t pgt_id) {
    // A query over one table has a program per event; a join one row
    // (source_relid 0) for all.
    SpiRows r = spi.query(
        "SELECT tr.present, tr.expected, (SELECT pg_catalog.count(*) FROM " + kPrograms +
            " p WHERE p.pgt_id OPERATOR(pg_catalog.=) $1), (SELECT CASE WHEN pg_catalog.bool_or("
            "p.source_relid OPERATOR(pg_catalog.=) 0) THEN 1 ELSE " +
            std::to_string(std::strlen(kEvents)) + " END FROM " + kPrograms +
            " p WHERE p.pgt_id OPERATOR(pg_catalog.=) $1) FROM pgtrickle._immediate_triggers($1) "
            "tr",
        {int8_param(pgt_id)});
    std::string problems;
    if (*r.rows.at(0).at(0) != *r.rows.at(0).at(1)) {
        problems = *r.rows.at(0).at(0) + " of its " + *r.rows.at(0).at(1) +
                   " triggers there and enabled as installed";
    }
    const std::string expected = r.rows.at(0).at(3).value_or(std::to_string(std::strlen(kEvents)));
    if (*r.rows.at(0).at(2) != expected) {
        problems += std::string(problems.empty() ? "" : ", ") + *r.rows.at(0).at(2) + " of its " +
                    expected + " programs";
    }
    return problems;
}

// A join: one program for every event, the same DIFFERENTIAL program over
// each source position's transition relations. One writer at a time ('t'),
// except when the stream table's key is one table's key read once ('k'):
// every row then derives from one row of that table, so writers of that
// table touch disjoint rows (their own rows are row-locked by their
// statements) and recompute them against the other tables, which no one
// else writes meanwhile: under READ COMMITTED they share the lock, and
// writers of the other tables take it alone.
void prepare_multi(Spi& spi, catalog::StreamTableRow& st, const AnalyzedQuery& q,
                   const diff::DeltaPlan& plan) {
    // The operator tree does not hold subqueries in expressions (EXISTS,
    // IN, scalar): the key's table must be referenced once in the whole
    // query, as its reads count references.
    Oid shared = ir::identity_relation(q.operators);
    if (std::count_if(q.reads.begin(), q.reads.end(),
                      [&](const ReadRight& r) { return r.relid == shared; }) != 1) {
        shared = InvalidOid;
    }
    const std::string program = diff::encode_program(multi_table_program(spi, st, q, plan, true));
    const std::vector<Oid> sources = multi_table_sources(q, plan);
    std::string array = "{";
    for (Oid relid : sources) {
        array += (array.size() > 1 ? "," : "") + std::to_string(relid);
    }
    array += "}";
    // One row (event M) serves every event: the program reads all four
    // relations of each source position, empty or not.
    catalog::exec_as_owner(
        spi,
        "INSERT INTO " + kPrograms +
            " (pgt_id, source_relid, event, program, locking, sources, shared_relid) VALUES "
            "($1, 0, 'M', $2::pg_catalog.jsonb, $4, $3::pg_catalog.oid[], $5)",
        {int8_param(st.pgt_id), text_param(program), text_param(array),
         text_param(std::string(1, OidIsValid(shared) ? 'k' : 't')),
         OidIsValid(shared) ? oid_param(shared) : SpiParam{OIDOID, (Datum)0, true}});
    st.delta_program = program;
    std::vector<Oid> distinct;
    for (Oid relid : sources) {
        if (std::find(distinct.begin(), distinct.end(), relid) == distinct.end()) {
            distinct.push_back(relid);
            create_triggers(spi, st.pgt_id, relid);
        }
    }
}

void cover_new_partitions(Spi& spi) {
    // Programs of this database's stream tables only: restored ones, not
    // adopted yet, name the old database's OIDs.
    SpiRows sources = spi.query(
        "SELECT DISTINCT i.pgt_id, x.relid FROM " + kPrograms +
        " i JOIN pgtrickle.pgt_stream_tables st ON st.pgt_id OPERATOR(pg_catalog.=) i.pgt_id AND "
        "st.instance OPERATOR(pg_catalog.=) pgtrickle._instance(), LATERAL "
        "pg_catalog.unnest(CASE WHEN i.source_relid OPERATOR(pg_catalog.<>) 0::pg_catalog.oid "
        "THEN ARRAY[i.source_relid] ELSE i.sources END) x(relid) JOIN pg_catalog.pg_class c ON "
        "c.oid OPERATOR(pg_catalog.=) x.relid WHERE c.relkind OPERATOR(pg_catalog.=) 'p'");
    for (const auto& row : sources.rows) {
        const int64_t pgt_id = std::stoll(*row.at(0));
        const Oid relid = static_cast<Oid>(std::stoul(*row.at(1)));
        SpiRows covered = spi.query(
            "SELECT t.tgrelid FROM pg_catalog.pg_trigger t WHERE t.tgname OPERATOR(pg_catalog.=) "
            "$1",
            {text_param(trigger_prefix(pgt_id) + "ins")});
        std::vector<Oid> have;
        for (const auto& c : covered.rows) {
            have.push_back(static_cast<Oid>(std::stoul(*c.at(0))));
        }
        for (Oid target : statement_targets(relid)) {
            if (std::find(have.begin(), have.end(), target) != have.end()) {
                continue;
            }
            if (get_rel_relkind(target) == RELKIND_FOREIGN_TABLE) {
                throw pgt::Error(
                    "0A000", "IMMEDIATE refresh cannot maintain " + foreign_partition(target),
                    "An IMMEDIATE stream table reads " + relation_display_name(relid) +
                        "; a foreign table takes no trigger with transition tables.",
                    "Alter the stream tables that read it to refresh_mode => 'DIFFERENTIAL' "
                    "first.");
            }
            create_triggers_on(spi, pgt_id, target);
        }
    }
}

void prepare_immediate(Spi& spi, catalog::StreamTableRow& st, const AnalyzedQuery& q,
                       const diff::DeltaPlan& plan) {
    ImmediateInstallScope installing;
    drop_immediate(spi, st.pgt_id);
    if (diff::reads_several_tables(plan.strategy)) {
        prepare_multi(spi, st, q, plan);
        return;
    }
    const Oid relid = q.scan.source_relid;
    ir::ScanFilterProject scan = scan_ir(spi, relation_owner(st.relid), q, relid,
                                         {ir::DeltaInput::Kind::kTransitionTables, ""});
    const std::vector<std::string> types = buffer_column_types(relid, q.scan.referenced_attnums);
    const Locking locking = locking_of(q, plan.strategy, scan);
    for (const char* e = kEvents; *e != 0; e++) {
        const diff::TransitionTables tables = event_tables(*e);
        scan.delta.relation = diff::transition_rows(scan, types, tables);
        // A keyed projection replaces its touched rows from the after-images
        // (diff::transition_keyed_sql: no netting, no sort); every other
        // shape runs DIFFERENTIAL's program over the transition rows.
        const std::string program = diff::encode_program(
            locking.code == 'r'
                ? diff::one_statement(diff::transition_keyed_sql(scan, identity_target(st), tables))
                : one_table_program(spi, st, q, plan, scan));
        std::optional<std::string> lock_sql;
        if (locking.code == 'i') {
            lock_sql = diff::identity_locks_sql(scan, q.identity.domain, locking.keys, tables);
        }
        catalog::exec_as_owner(
            spi,
            "INSERT INTO " + kPrograms +
                " (pgt_id, source_relid, event, program, locking, lock_sql) VALUES ($1, $2, $3, "
                "$4::pg_catalog.jsonb, $5, $6)",
            {int8_param(st.pgt_id), oid_param(relid), text_param(std::string(1, *e)),
             text_param(program), text_param(std::string(1, locking.code)), text_param(lock_sql)});
        if (*e == 'U') {
            st.delta_program = program;
        }
    }
    create_triggers(spi, st.pgt_id, relid);
}

}  // namespace pgt::pg
