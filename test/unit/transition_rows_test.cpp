// Unit tests of IMMEDIATE's delta input (src/core/diff/scan_delta):
// transition tables shaped as change-buffer rows, and the identity locks.
// Invariant: every transition table named is read exactly once, old rows
// as deletes before new rows as inserts; nothing reads a frontier window.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/diff/join_region.hpp"
#include "core/diff/join_rescan.hpp"
#include "core/diff/scan_delta.hpp"
#include "core/error.hpp"

namespace {

using pgt::diff::TransitionTables;

pgt::ir::ScanFilterProject scan() {
    pgt::ir::ScanFilterProject s;
    s.alias = "__pgt_src";
    s.columns = {{2, "grp"}, {3, "val"}};
    s.outputs = {{"__pgt_src.grp", "grp"}, {"pg_catalog.sum(__pgt_src.val)", "s"}};
    s.predicate = "__pgt_src.val > 0";
    return s;
}

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
        n++;
    }
    return n;
}

const std::vector<std::string> kTypes{"integer", "text COLLATE pg_catalog.\"C\""};

TEST(TransitionRows, an_update_reads_its_old_rows_as_deletes_and_new_rows_as_inserts) {
    const std::string rows = pgt::diff::transition_rows(
        scan(), kTypes, {{pgt::diff::kTransitionOld}, {pgt::diff::kTransitionNew}});
    EXPECT_EQ(count(rows, "FROM __pgt_old t"), 1u) << rows;
    EXPECT_EQ(count(rows, "FROM __pgt_new t"), 1u) << rows;
    EXPECT_LT(rows.find("'D'"), rows.find("'I'")) << rows;
    EXPECT_NE(rows.find("t.grp::integer AS o2"), std::string::npos) << rows;
    EXPECT_NE(rows.find("NULL::integer AS n2"), std::string::npos) << rows;
    EXPECT_NE(rows.find("t.val::text COLLATE pg_catalog.\"C\" AS n3"), std::string::npos) << rows;
    EXPECT_EQ(rows.find('$'), std::string::npos) << "no window parameter: " << rows;
}

TEST(TransitionRows, one_statement_with_several_events_reads_all_four_tables) {
    const std::string rows =
        pgt::diff::transition_rows(scan(), kTypes,
                                   {{pgt::diff::kTransitionOld, pgt::diff::kTransitionDeleted},
                                    {pgt::diff::kTransitionNew, pgt::diff::kTransitionInserted}});
    for (const char* rel : {"__pgt_old t", "__pgt_old_del t", "__pgt_new t", "__pgt_new_ins t"}) {
        EXPECT_EQ(count(rows, std::string("FROM ") + rel), 1u) << rel << ": " << rows;
    }
    EXPECT_EQ(count(rows, "UNION ALL"), 3u);
}

TEST(TransitionRows, no_table_is_an_internal_error) {
    EXPECT_THROW(pgt::diff::transition_rows(scan(), kTypes, {}), pgt::Error);
    EXPECT_THROW(
        pgt::diff::identity_locks_sql(scan(), pgt::rowid::Domain::kGroupKey, {"__pgt_src.grp"}, {}),
        pgt::Error);
}

TEST(TransitionRows, a_windowed_scan_reads_the_frontier_window_and_an_unwindowed_one_does_not) {
    pgt::ir::ScanFilterProject s = scan();
    s.delta.relation = "pgtrickle_changes.changes_1";
    pgt::ir::IdentityTarget target{
        "public.st", pgt::rowid::Domain::kKeylessRow, {"grp", "s"}, false};
    EXPECT_NE(pgt::diff::apply_sql(s, target).find("pg_visible_in_snapshot"), std::string::npos);
    s.delta.kind = pgt::ir::DeltaInput::Kind::kTransitionTables;
    s.delta.relation = pgt::diff::transition_rows(s, kTypes, {{}, {pgt::diff::kTransitionNew}});
    const std::string sql = pgt::diff::apply_sql(s, target);
    EXPECT_EQ(sql.find("pg_visible_in_snapshot"), std::string::npos) << sql;
    EXPECT_EQ(sql.find('$'), std::string::npos) << sql;
}

// A join reads each source position's change from four relations of its
// own, named apart from the image relations its branches read.
TEST(TransitionRows, each_source_of_a_join_has_four_relations_of_its_own) {
    const TransitionTables t = pgt::diff::source_transition_tables(1);
    EXPECT_EQ(t.olds, (std::vector<std::string>{"__pgt_tr_old_1", "__pgt_tr_del_1"}));
    EXPECT_EQ(t.news, (std::vector<std::string>{"__pgt_tr_new_1", "__pgt_tr_ins_1"}));
    EXPECT_NE(pgt::diff::source_transition_name(0, pgt::diff::TransitionSlot::kUpdateOld),
              "__pgt_old_0");  // region_old_images(0)
}

TEST(TransitionRows, a_join_rescan_over_transition_relations_reads_no_window) {
    pgt::diff::JoinRescan j;
    j.query = "SELECT a.id, b.id AS bid FROM a JOIN b ON b.id = a.id";
    j.outputs = {"id", "bid"};
    for (std::size_t i = 0; i < 2; i++) {
        pgt::diff::JoinSide side{
            {pgt::ir::DeltaInput::Kind::kTransitionTables,
             pgt::diff::transition_rows(scan(), kTypes, pgt::diff::source_transition_tables(i))},
            {2},
            {i == 0 ? "id" : "bid"}};
        j.sides.push_back(side);
    }
    pgt::ir::IdentityTarget target{
        "public.st", pgt::rowid::Domain::kKeylessRow, {"id", "bid"}, false};
    const std::string sql = pgt::diff::join_rescan_sql(j, target);
    EXPECT_EQ(sql.find("pg_visible_in_snapshot"), std::string::npos) << sql;
    EXPECT_EQ(sql.find('$'), std::string::npos) << sql;
    EXPECT_NE(sql.find("__pgt_tr_ins_1"), std::string::npos) << sql;
}

// A join keyed by the table at source position 1: its rows from that
// table's new transition rows, the touched keys from its old ones, and
// nothing else read for the change.
TEST(KeyTableStatement, rows_from_the_new_transition_rows_keys_from_the_old) {
    pgt::ir::JoinRegion j;
    j.outputs = {"id", "name"};
    j.key_source = 1;
    j.key_rows =
        "SELECT t.\"Id\" AS __pgt_k1, u.name AS __pgt_k2 FROM __pgt_new_1 t JOIN "
        "public.u ON u.grp = t.grp";
    pgt::ir::IdentityTarget target{"public.st", pgt::rowid::Domain::kScanKey, {"id"}, true};
    const std::string sql = pgt::diff::key_table_statement(j, target);
    EXPECT_EQ(sql.rfind("WITH __pgt_new_1 AS (SELECT * FROM __pgt_tr_new_1 UNION ALL SELECT * "
                        "FROM __pgt_tr_ins_1), f AS (SELECT y.*, ",
                        0),
              0u)
        << sql;
    EXPECT_NE(
        sql.find("SELECT x.__pgt_k1 AS id, x.__pgt_k2 AS name FROM (" + j.key_rows + ") x) y"),
        std::string::npos)
        << sql;
    // s: the query over the old rows (the images' name shadowed), whose
    // identities say which of f's rows are stored; the stream table is
    // not probed to decide it.
    EXPECT_NE(sql.find("s AS (WITH __pgt_new_1 AS (SELECT * FROM __pgt_tr_old_1 UNION ALL SELECT "
                       "* FROM __pgt_tr_del_1) SELECT DISTINCT "
                       "pgtrickle.encode_row_id_v2('scan_key'::pg_catalog.text, "
                       "ROW(x.__pgt_k1)) AS __pgt_id FROM (" +
                       j.key_rows + ") x), ft AS MATERIALIZED (SELECT f.*, "),
              std::string::npos)
        << sql;
    // Every identity sorted once: stored and not fresh (deleted), stored
    // and fresh (updated), fresh only (inserted); the stored rows found by
    // one probe each and then read by address, never by a join with the
    // stream table.
    for (const std::string& piece : {
             std::string(" FROM f FULL JOIN s s ON f.__pgt_id OPERATOR(pg_catalog.=) s.__pgt_id)"),
             std::string("CASE WHEN s.__pgt_id IS NOT NULL THEN (SELECT t.ctid FROM public.st t "
                         "WHERE t.__pgt_row_probe OPERATOR(pg_catalog.=) "
                         "pgtrickle.row_probe_v1(s.__pgt_id) AND "),
             std::string("del AS (DELETE FROM public.st t WHERE t.ctid OPERATOR(pg_catalog.=) ANY "
                         "(ARRAY(SELECT ft.__pgt_tid FROM ft WHERE ft.__pgt_id IS NULL)) "
                         "RETURNING 1)"),
             std::string("FROM ft WHERE t.ctid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT "
                         "ft.__pgt_tid FROM ft WHERE ft.__pgt_id IS NOT NULL)) AND "
                         "t.ctid OPERATOR(pg_catalog.=) ft.__pgt_tid AND "),
             std::string(" FROM ft WHERE ft.__pgt_id IS NOT NULL AND ft.__pgt_tid IS NULL "
                         "RETURNING 1"),
         }) {
        EXPECT_NE(sql.find(piece), std::string::npos) << piece << "\n" << sql;
    }
    EXPECT_EQ(sql.find("USING "), std::string::npos) << sql;
    EXPECT_EQ(sql.find("__pgt_tr_new_0"), std::string::npos) << sql;
    j.key_source = -1;
    EXPECT_THROW((void)pgt::diff::key_table_statement(j, target), pgt::Error);
}

// DIFFERENTIAL, the same join when only the key table's window has rows:
// each key's last event read from that window alone (its parameter
// block), the query over the after-images of the keys that arrive, every
// key with an event probed; no image relation of a step is read.
TEST(KeyWindowStatement, the_key_tables_last_events_from_its_own_window) {
    pgt::ir::JoinRegion j;
    j.outputs = {"id", "name"};
    j.key_source = 1;
    j.key_columns = {"\"Id\""};
    j.key_rows =
        "SELECT t.\"Id\" AS __pgt_k1, u.name AS __pgt_k2 FROM __pgt_new_1 t JOIN "
        "public.u ON u.grp = t.grp";
    j.sources.resize(2);
    j.sources[1].delta = {pgt::ir::DeltaInput::Kind::kBufferWindow, "pgtrickle_changes.changes_7"};
    j.sources[1].window = 1;
    j.sources[1].columns = {{1, "\"Id\""}, {2, "grp"}};
    pgt::ir::IdentityTarget target{"public.st", pgt::rowid::Domain::kScanKey, {"id"}, true};
    const std::string sql = pgt::diff::key_window_statement(j, target);
    for (const std::string& piece : {
             std::string("pg_catalog.pg_visible_in_snapshot(b.xid, $6)"),
             std::string("FROM pgtrickle_changes.changes_7 b"),
             std::string("SELECT DISTINCT ON (v.__pgt_id) v.* FROM (SELECT e.*, "
                         "pgtrickle.encode_row_id_v2('scan_key'::pg_catalog.text, "
                         "ROW(e.\"Id\")) AS __pgt_id FROM ev e) v ORDER BY v.__pgt_id, "
                         "v.__pgt_seq DESC, v.__pgt_sign DESC)"),
             std::string("__pgt_new_1 AS (SELECT l.\"Id\", l.grp FROM l WHERE l.__pgt_sign > 0)"),
             std::string("SELECT x.__pgt_k1 AS id, x.__pgt_k2 AS name FROM (" + j.key_rows +
                         ") x) y), s AS (SELECT l.__pgt_id FROM l)"),
             std::string(" FROM f FULL JOIN s s ON f.__pgt_id OPERATOR(pg_catalog.=) s.__pgt_id)"),
         }) {
        EXPECT_NE(sql.find(piece), std::string::npos) << piece << "\n" << sql;
    }
    EXPECT_EQ(sql.find("$1)"), std::string::npos) << sql;  // not the first window's block
    EXPECT_EQ(sql.find("__pgt_old_"), std::string::npos) << sql;
    j.key_columns.clear();
    EXPECT_THROW((void)pgt::diff::key_window_statement(j, target), pgt::Error);
}

TEST(IdentityLocks, one_hash_per_touched_identity_sorted_after_the_where_clause) {
    const std::string sql =
        pgt::diff::identity_locks_sql(scan(), pgt::rowid::Domain::kGroupKey, {"__pgt_src.grp"},
                                      {{pgt::diff::kTransitionOld}, {pgt::diff::kTransitionNew}});
    EXPECT_EQ(sql.rfind("SELECT DISTINCT pg_catalog.hashtext(pg_catalog.encode(", 0), 0u) << sql;
    EXPECT_NE(sql.find("encode_row_id_v2('group_key'"), std::string::npos) << sql;
    EXPECT_NE(sql.find("WHERE __pgt_src.val > 0 ORDER BY 1"), std::string::npos) << sql;
    // The locks are taken by the caller, on tags no SQL function produces.
    EXPECT_EQ(sql.find("advisory"), std::string::npos) << sql;
}

TEST(KeyedApply, deletes_only_rows_showing_the_before_image_when_asked) {
    pgt::ir::ScanFilterProject s = scan();
    s.delta.kind = pgt::ir::DeltaInput::Kind::kTransitionTables;
    s.delta.relation = pgt::diff::transition_rows(s, kTypes, {{pgt::diff::kTransitionOld}, {}});
    pgt::ir::IdentityTarget target{"public.st", pgt::rowid::Domain::kScanKey, {"grp"}, true};
    const std::string plain = pgt::diff::apply_sql(s, target);
    target.delete_only_same = true;
    const std::string guarded = pgt::diff::apply_sql(s, target);
    const std::string guard = "AND NOT (ROW(t.grp, t.s)::pg_catalog.text IS DISTINCT FROM";
    EXPECT_EQ(plain.find(guard), std::string::npos) << plain;
    EXPECT_NE(guarded.find(guard), std::string::npos) << guarded;
}

}  // namespace
