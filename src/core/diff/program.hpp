// A delta "program": the statements one DIFFERENTIAL refresh runs, stored
// as one JSON document in the catalog (pgt_stream_tables.delta_program).
//
//   image steps: one per source; each statement reads that source's window
//                (parameters $1..$5) and returns (is_old bool, columns...);
//                its rows become the relations the branches read:
//                region_old_images(source), region_new_images(source), and
//                region_delta_images(source) (both kinds, then __pgt_sign:
//                -1 for a before-image, +1 for an after-image)
//   branches:    SELECTs over those relations and the tables; a branch is
//                run only when every image relation it reads has rows (a
//                branch over an empty relation finds nothing), so a refresh
//                plans only the branches of the sources that changed
//   main:        the apply statement over every window (one block of five
//                parameters per window), returning (inserted, deleted,
//                updated); with branches, the first kBranchesMarker in it
//                stands for the UNION ALL of the branches that run
//
// Stored as a JSON object in the jsonb column
// pgt_stream_tables.delta_program (and pgt_immediate.program), readable
// with jsonb operators (delta_program->'branches'):
//   {"main": "...",
//    "images": [{"source": 0, "window": 0, "sql": "..."}, ...],
//    "branches": [{"old": 1, "new": 0, "delta": 0, "sql": "..."}, ...],
//    "full_query": "...", "full_aux": ["__pgt_c1", ...],
//    "fallback": "...",
//    "fallback_images": [{"source": ..., "window": ..., "sql": ...}, ...],
//    "kept": [{"source": 0, "table": "...", "rebuild": "...", "apply": "..."}, ...],
//    "main_reads": {"old": 3, "new": 3},
//    "key_rows": {"source": 0, "sql": "..."}}
// Only "main" is always there; the masks are bit i for source i.
#pragma once
#include "core/core.hpp"
#include "core/sql/names.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pgt::diff {

// The format of the delta programs this version writes (stored with each
// in pgt_stream_tables.delta_version): a program of another format is never
// run; the stream table is reinitialised instead. Bump it whenever the
// encoding, or the SQL a program relies on, changes.
inline constexpr int kProgramVersion = 2;

inline const std::string kBranchesMarker = sql::kBranchesMarker;

struct ImageStep {
    std::size_t source = 0;  // names the relations: region_old_images(source), ...
    int window = 0;          // which window's parameters the statement takes
    std::string sql;
};

struct Branch {
    uint64_t old_sources = 0;  // bit i: reads region_old_images(i)
    uint64_t new_sources = 0;  // bit i: reads region_new_images(i)
    std::string sql;
    uint64_t delta_sources = 0;  // bit i: reads region_delta_images(i)
};

// A kept copy of a source (ir::KeptCopy) and how a refresh keeps it:
// `rebuild` fills the emptied copy from the table at the refresh snapshot
// (when the copy is not valid); `apply` adds the source's change, read
// from region_delta_images(source), which the refresh then registers
// whatever the branches read. Both run after the image steps and before
// the main statement, which sees their writes.
struct KeptStep {
    std::size_t source = 0;
    std::string table;  // quoted, schema-qualified
    std::string rebuild;
    std::string apply;
};

struct DeltaProgram {
    std::vector<ImageStep> images;
    std::vector<KeptStep> kept;
    std::vector<Branch> branches;
    // Recomputation with auxiliary columns: full_query returns the user
    // columns, then full_aux in that order ("" and none without them).
    std::string full_query;
    std::vector<std::string> full_aux;  // plain lower-case identifiers
    // Non-empty: main computes on every captured image, also on states that
    // were never committed or that a later change replaced (their terms
    // cancel), and this statement (same parameters and result) computes on
    // netted images only: the refresh runs it when main raises on such a state.
    std::string fallback;
    // Non-empty: images computes every captured image (unnetted: also the
    // states a later change in the window replaced, whose terms cancel),
    // and these steps compute the same relations from netted images; when
    // main raises, the refresh registers these instead and runs main again.
    std::vector<ImageStep> fallback_images;
    std::string main;
    // Bit i: main reads region_old_images(i) (main_old), region_new_images(i)
    // (main_new) itself, whatever branches run.
    uint64_t main_old = 0;
    uint64_t main_new = 0;
    // A join whose identity is the key of its table at source position
    // key_source (ir::JoinRegion::key_source): the statement for a change
    // of only that table, recomputing the rows of the keys it touched with
    // the other tables as they are; "" none. IMMEDIATE: from that table's
    // transition relations (diff::key_table_statement); DIFFERENTIAL: from
    // the last event of each key in its window, run instead of the image
    // steps and main when every other window is empty
    // (diff::key_window_statement).
    std::string key_rows;
    std::size_t key_source = 0;
};

// A program of one statement (no images, branches or fallbacks).
inline DeltaProgram one_statement(std::string main) {
    DeltaProgram p;
    p.main = std::move(main);
    return p;
}

// The JSON form above.
std::string encode_program(const DeltaProgram& p);

// Reads the JSON form (members in any order, as jsonb gives them back).
// Throws kInternalError when it is malformed.
DeltaProgram decode_program(const std::string& text);

// The main statement with the branches that can find rows, given which
// sources have before-images (has_old) and after-images (has_new); a
// source's signed images are there when either is. "" when no branch can
// (nothing changed in effect: the refresh applies nothing).
std::string main_statement(const DeltaProgram& p, uint64_t has_old, uint64_t has_new);

}  // namespace pgt::diff
