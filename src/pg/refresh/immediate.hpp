// IMMEDIATE maintenance: a stream table kept equal to its query inside
// the writing transaction, by statement-level triggers on its source.
//
//   BEFORE INSERT|UPDATE|DELETE FOR EACH STATEMENT   a statement is pending
//   AFTER INSERT|UPDATE|DELETE REFERENCING OLD/NEW TABLE
//       the event's delta program over the transition tables, read in
//       place (diff::transition_rows), through a plan kept per trigger
//   AFTER TRUNCATE, a statement ending while another statement on a
//   source is still pending (a user trigger writing a table again, a
//   foreign key action on another table or event), or an UPDATE whose
//   transition tables another UPDATE of the same level added its rows to
//   (a foreign key action updating rows the statement updated: a row's
//   middle image would be in OLD and NEW TABLE; see Pending)
//       the stream table recomputed when the outermost statement ends
//   AFTER INSERT|UPDATE|DELETE FOR EACH ROW, ENABLE REPLICA
//       a logical replication worker's write fails (0A000): it fires no
//       statement trigger; a session's own replica-role writes pass
//
// Invariant: after every statement on a source the stream table equals
// its query as that statement's transaction sees it; its maintenance runs
// as the stream table's owner in a security-restricted operation with
// search_path pinned, and undoes with the statement (savepoints included).
#pragma once

#include <string>
#include <vector>

#include "core/diff/plan.hpp"
#include "pg/analyze/defining_query.hpp"
#include "pg/boundary/spi.hpp"
#include "pg/catalog/catalog.hpp"

namespace pgt::pg {

// What keeps IMMEDIATE from maintaining q ("" when it can), for the
// 0A000 of resolve_refresh_mode.
std::string immediate_blocker(const AnalyzedQuery& q);

// IMMEDIATE over a table a subscription of this database replicates into
// (pg_subscription_rel), or one with such a partition: 0A000 naming both.
// The apply worker fires row triggers only; a subscription made later is
// met by the row trigger of prepare_immediate (ENABLE REPLICA), which
// fails the worker's writes.
void refuse_subscribed(Spi& spi, const AnalyzedQuery& q);

// The tables IMMEDIATE maintenance of q puts its statement triggers on:
// the one scanned table, or every table of a join or subquery region.
std::vector<Oid> immediate_trigger_tables(const AnalyzedQuery& q);

// Installs st's IMMEDIATE maintenance of q: the programs (one per event,
// pgtrickle.pgt_immediate), the source's triggers (five statement triggers
// on every table a statement on the source names, ENABLE ALWAYS, and on
// each one that holds rows a row trigger, ENABLE REPLICA, that fails a
// logical replication worker's writes); st.delta_program gets the
// UPDATE program (what explain_st shows; a recompute reads its FULL
// query). Replaces what was there.
void prepare_immediate(Spi& spi, catalog::StreamTableRow& st, const AnalyzedQuery& q,
                       const diff::DeltaPlan& plan);

// What is wrong with stream table pgt_id's IMMEDIATE maintenance: its
// triggers missing or not enabled as installed (ENABLE ALWAYS, the
// replication row trigger ENABLE REPLICA), its programs missing ("" none).
std::string immediate_problems(Spi& spi, int64_t pgt_id);

// While one exists, IMMEDIATE maintenance is being installed: the DDL it
// runs (ALTER TABLE ... ENABLE ALWAYS TRIGGER) must not start another
// installation from pgtrickle._on_ddl_end.
class ImmediateInstallScope {
public:
    ImmediateInstallScope();
    ~ImmediateInstallScope();
    ImmediateInstallScope(const ImmediateInstallScope&) = delete;
    ImmediateInstallScope& operator=(const ImmediateInstallScope&) = delete;
};
bool immediate_being_installed();

// Partitions created under a partitioned source of an IMMEDIATE stream
// table since its triggers were made (CREATE TABLE ... PARTITION OF changes
// no row, so nothing is reinitialised) get them: a statement on a
// partition fires that partition's statement triggers only. A foreign
// partition cannot take them: 0A000. Called after DDL, as the catalog's
// owner.
void cover_new_partitions(Spi& spi);
// Removes st's IMMEDIATE triggers and programs (none: nothing happens).
void drop_immediate(Spi& spi, int64_t pgt_id);

// _PG_init: the executor hook that notes an UPDATE whose rows join the
// transition tables of a pending one (a foreign key action's).
void install_immediate_hooks();

}  // namespace pgt::pg
