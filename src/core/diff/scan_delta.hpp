// Differentiation of scan → filter → project over a change buffer, and the
// apply of the resulting delta to the stream table, as one SQL statement.
//
//   buffer rows in the frontier window ($1..$5)
//     ├─ old images (U, D) ─► sign -1 ┐
//     └─ new images (I, U) ─► sign +1 ┴─► netted per exact source image (Σ sign ≠ 0 only)
//                                           └─► filter + project ─► d(seq, weight, outputs, id)
//   keyed:   last event per id decides: +1 → upsert (only if values differ), -1 → delete
//   counted: Σ weight per (id, image) → delete/insert that many copies
//
// Netting first means expressions run only on source states that existed
// at the previous frontier or exist now, never on a row inserted and
// deleted again in between (100 / d with a transient d = 0 must not fail).
// Invariant: the statement reads nothing but the buffer window and the
// stream table rows of the affected identities; its cost follows the change.
#pragma once
#include "core/core.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/scan.hpp"
#include "core/sql/names.hpp"

namespace pgt::diff {

// The frontier window over buffer alias `b`, with parameters
//   $1 pg_snapshot  this refresh's snapshot S
//   $2 pg_snapshot  the previous frontier
//   $3 xid8         this transaction's id, or NULL if it has none
//   $4 xid8         the previous refresh's own transaction, or NULL
//   $5 int8         last own sequence number applied by that refresh
// Rows committed after the previous frontier and visible in S, plus this
// transaction's own rows, minus own rows an earlier refresh already applied.
// With base > 0 the same five parameters are $(base+1)..$(base+5): a
// statement over several buffers passes one block of five per window.
std::string window_predicate(const std::string& b, int base = 0);

// The snapshot `snap` (pg_snapshot text, "xmin:xmax:xip,...") of a refresh
// run by transaction `own_xid` (xid8 text), as the frontier it records:
// with its own transaction in progress. PostgreSQL leaves a transaction's
// own id out of its snapshot's in-progress list, so once a later id has
// completed (one of its own subtransactions, or another session's
// transaction) the own id reads as committed before the snapshot, and the
// rows the transaction writes after the refresh would be in no later
// window. Throws on text that is not a snapshot.
std::string frontier_text(const std::string& snap, const std::string& own_xid);

// The names a statement-level trigger's transition tables are registered
// under (REFERENCING OLD TABLE AS ... NEW TABLE AS ...): IMMEDIATE reads a
// statement's change from them in place. A statement with several events
// on one table (ON CONFLICT DO UPDATE, MERGE, a writable CTE) has its
// DELETE's old rows and its INSERT's new rows under the other two names.
using sql::kTransitionDeleted;
using sql::kTransitionInserted;
using sql::kTransitionNew;
using sql::kTransitionOld;

// The transition tables a program reads: before-images, after-images.
struct TransitionTables {
    std::vector<std::string> olds, news;
};

// A query over several tables reads source position i's change from four
// relations, whichever statements wrote it: an UPDATE's old and new rows,
// a DELETE's old rows and an INSERT's new rows (empty when not written).
enum class TransitionSlot { kUpdateOld, kUpdateNew, kDeleted, kInserted };
std::string source_transition_name(std::size_t source, TransitionSlot slot);
TransitionTables source_transition_tables(std::size_t source);

// A FROM item of buffer-shaped rows over transition tables, for
// a DeltaInput of kind kTransitionTables: each row of an old
// table a delete ('D', seq 1), each of a new table an insert ('I', seq 2);
// an updated row is the pair, which netting matches up (a row updated on
// columns the query does not read nets to nothing). types: per scan
// column, the type (with COLLATE clause) its buffer column has. At least
// one table.
std::string transition_rows(const ir::ScanFilterProject& scan,
                            const std::vector<std::string>& types, const TransitionTables& tables);

// IMMEDIATE, a keyed projection (identity of key columns the outputs
// hold): the stream table's rows of the identities the transition tables'
// rows have, replaced by what their after-images give (those passing the
// WHERE clause), in one statement returning (inserted, deleted, updated).
// Order-free: all of a statement's tables are read at once, and each
// identity ends as its after-image says, so no netting or sequence is
// needed. Whether an identity is stored is read from the before-images
// (stored_apply_tail): the key is unique and checked at once, and a
// statement runs this only when the stream table equals its query as of
// the statement's start (a nested or TRUNCATE statement recomputes).
std::string transition_keyed_sql(const ir::ScanFilterProject& scan,
                                 const ir::IdentityTarget& target, const TransitionTables& tables);

// IMMEDIATE: one statement returning, in ascending order, the distinct
// hashes (int4) of the stream-table identities the statement's change
// touches: domain over key_exprs (expressions over the scan alias) for
// each row of the transition tables that passes the scan's WHERE clause.
// The caller takes one lock per hash in that order (pg/refresh/locks.hpp),
// so writers touching the same rows of the stream table wait for each
// other (and see each other's rows after), others proceed.
std::string identity_locks_sql(const ir::ScanFilterProject& scan, rowid::Domain domain,
                               const std::vector<std::string>& key_exprs,
                               const TransitionTables& tables);

// The SQL expression of a row's identity: domain (scan_key, group_key,
// keyless_row; synthetic = the scalar-aggregate singleton) over the given
// field expressions. The one place generated SQL computes __pgt_row_id.
std::string row_id_expression(rowid::Domain domain, const std::vector<std::string>& fields);

// "WITH ev AS (...), net AS (...), src AS (...)": the window's source images netted
// (columns __pgt_seq, __pgt_sign = weight, then every source column by
// name). Parameters as in window_predicate.
std::string window_source_ctes(const ir::ScanFilterProject& scan);

// The same with src = every captured image, not netted: an image inserted
// and deleted again in the window is there twice, once per sign. Only for
// consumers whose result is a signed sum of per-image terms (where such
// pairs cancel exactly) and that can fall back to window_source_ctes when
// an expression raises on a state that was never committed.
std::string window_source_ctes_unnetted(const ir::ScanFilterProject& scan);

// Every captured image of the window as window_source_ctes_unnetted has
// them, read in one pass over the buffer: a row per buffer row with
// __pgt_keep_old and __pgt_keep_new (bool: the row's before- / after-image
// is in), then its before-image's columns by name, then its after-image's
// (__pgt_n1, ...). The image receiver (Spi::register_images) splits it.
// Parameters $1..$5 as in window_predicate.
std::string paired_images(const ir::ScanFilterProject& scan);

// The same CTEs without the leading WITH, named ev<sfx> … src<sfx>, over
// the window parameters $(base+1)..$(base+5): one such list per source
// when a statement reads several buffers.
std::string window_source_cte_list(const ir::ScanFilterProject& scan, const std::string& sfx,
                                   int base);

// One statement applying the delta; returns one row (rows_inserted,
// rows_deleted, rows_updated). Parameters as in window_predicate.
//
// Keyed by the source's key (scan.key_columns, a buffer window): the
// source's unique index is checked at every write, so one identity is held
// by one source row at a time and the window's events on it form a chain
// (arrive, leave, arrive, ...) in sequence order. Its last event alone says
// what the stream table holds for it now: the after-image's row when it
// arrives and passes WHERE, nothing otherwise. So the window is reduced to
// one event per identity by sequence (no netting by image), expressions run
// on those after-images only (states that exist now), and each identity is
// probed once (stored_apply_tail). An event whose images both fail the
// prefilter is left out: the state it ends in is not stored, and the
// identity's next event, if any, is kept (it starts from a state that
// passes, or from none).
std::string apply_sql(const ir::ScanFilterProject& scan, const ir::IdentityTarget& target);

// The CTEs "ev AS (...), l AS (...)" of apply_sql's keyed form, over the
// window parameters $(base+1)..$(base+5): l holds each identity's last
// event, columns __pgt_seq, __pgt_sign (+1: it arrives with this
// after-image; -1: it leaves), the source columns by name, __pgt_id.
std::string last_event_ctes(const ir::ScanFilterProject& scan, const ir::IdentityTarget& target,
                            int base);

// The source columns of the scan (quoted) that the target's identity
// columns select as they are, in the identity's order; empty when one of
// them is not such a column. The caller decides whether they are a key.
std::vector<std::string> identity_source_columns(const ir::ScanFilterProject& scan,
                                                 const ir::IdentityTarget& target);

// How many change rows the window holds, at most $6 (int8; NULL: all),
// and whether it holds a TRUNCATE marker (found through the buffer's
// partial index over markers, not by reading the rows): one row (count,
// bool). Parameters $1..$5 as in window_predicate.
std::string window_count_sql(const std::string& buffer);

}  // namespace pgt::diff
