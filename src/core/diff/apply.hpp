// The apply half of every delta statement: given a CTE `e` of signed row
// events, write them to the stream table (keyed or counted), and the FULL
// refresh expressed as such a delta (new contents minus current contents).
// Invariant: a row whose values did not change is never written: no new row
// version, no WAL, no trigger or notification for it.
#pragma once
#include "core/core.hpp"

#include <string>
#include <vector>

#include "core/ir/scan.hpp"

namespace pgt::diff {

// The SQL operator every generated equality uses.
inline const std::string kEq = " OPERATOR(pg_catalog.=) ";

std::string join(const std::vector<std::string>& parts, const std::string& sep);

// Stored row `t` has the identity `src`.__pgt_id (through the probe index).
std::string id_match(const std::string& t, const std::string& src);

// Continues a WITH list that defines `e` (columns __pgt_seq, __pgt_sign,
// the quoted output columns `outs`, __pgt_id) and ends with one row
// (rows_inserted, rows_deleted, rows_updated).
//   keyed:   the last event per id decides: +1 upserts (only if the text
//            image differs), -1 deletes;
//   counted: Σ sign per (id, exact image) copies are inserted or deleted.
std::string apply_tail(const std::vector<std::string>& outs, const ir::IdentityTarget& target);

// Continues a WITH list that defines `f` (fresh rows: the quoted output
// columns `outs` and __pgt_id) and `g` (__pgt_id of every identity whose
// rows were recomputed): stored rows of g without a fresh row are deleted,
// stored rows whose values differ are updated, fresh rows not stored are
// inserted. Same result row as apply_tail.
std::string rescan_apply_tail(const std::vector<std::string>& outs, const ir::IdentityTarget& t);

// As rescan_apply_tail, where `touched` (a CTE of distinct __pgt_id) holds
// every identity of f that is stored and every stored identity the change
// removes; IMMEDIATE's keyed statements give exactly the stored identities
// they touched (a statement's before-images under a unique, immediately
// checked key, the stream table exact before the statement). Each touched
// identity is probed once, its stored row then deleted (f lacks it) or
// updated where its values differ by its address; f's rows not stored are
// inserted. The stream table is read only through the touched identities.
std::string stored_apply_tail(const std::vector<std::string>& outs, const ir::IdentityTarget& t,
                              const std::string& touched);

// The probe of one touched identity (over FROM item `src`, column
// __pgt_id): its stored row's address, NULL when none is stored. A scalar
// subquery, so the stream table is read by one index probe per identity
// whatever the planner estimates.
std::string stored_address(const ir::IdentityTarget& t, const std::string& src);

// Continues a WITH list whose CTE `ft` has one row per touched identity:
// the quoted output columns `outs` and __pgt_id of its fresh row (NULL
// when it has none) and __pgt_tid, its stored row's address (NULL when
// none is stored). Stored rows without a fresh row are deleted and those
// whose values differ updated, by address; fresh rows not stored are
// inserted. Same result row as apply_tail.
std::string addressed_apply_tail(const std::vector<std::string>& outs, const ir::IdentityTarget& t);

// rescan_apply_tail's CTEs del, upd and ins without the result row.
std::string rescan_apply_ctes(const std::vector<std::string>& outs, const ir::IdentityTarget& t);

// FULL refresh as a delta, in two statements so that the one computing
// it can run in parallel (PostgreSQL 15 plans no statement that writes in
// parallel): `rows`, a plain SELECT of what to write, and `apply`, which
// writes it reading `rows`' result from the relation named `relation`.
// Keyed: the query's rows full-joined with the stored rows on the
// identity, those to write (ft) applied by address (addressed_apply_tail).
// Counted: e = (+1, every row of `query`) ∪ (−1, every row of the stream
// table), netted per identity and image (n), then written as apply_tail
// does. Rows present with the same values on both sides are left
// untouched. `row_id` is the identity expression over alias q (the
// query's output row). alike: per output, whether equal values of its type
// always look alike (compared by equality then, not by text; missing: by
// text). stored_empty: the stream table holds no row, and the query's rows
// are inserted in its order. Same result row as apply_tail.
struct FullDiffSteps {
    std::string rows;
    std::string apply;
};
FullDiffSteps full_diff_steps(const std::vector<std::string>& outs,
                              const ir::IdentityTarget& target, const std::string& query,
                              const std::string& row_id, const std::vector<bool>& alike,
                              bool stored_empty, const std::string& relation);

}  // namespace pgt::diff
