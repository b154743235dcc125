// Unit tests of the DIFFERENTIAL program of a projection keyed by its
// source's key (src/core/diff/scan_delta: apply_sql with key_columns):
// each identity's last event of the window decides; expressions run on
// arrivals WHERE keeps; the stream table is probed once per identity.
// Invariant: nothing is netted by image, nothing joins the stream table.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/diff/apply.hpp"
#include "core/diff/scan_delta.hpp"

namespace {

pgt::ir::ScanFilterProject keyed_scan() {
    pgt::ir::ScanFilterProject s;
    s.delta.relation = "pgtrickle_changes.changes_1";
    s.alias = "__pgt_src";
    s.columns = {{1, "id"}, {2, "grp"}, {3, "val"}};
    s.outputs = {{"__pgt_src.id", "id"}, {"(100 / __pgt_src.val)", "q"}};
    s.predicate = "(__pgt_src.grp < 5) AND ((100 / __pgt_src.val) > 1)";
    s.prefilter = "((__pgt_src.grp < 5))";
    return s;
}

pgt::ir::IdentityTarget target() {
    pgt::ir::IdentityTarget t;
    t.table = "public.st";
    t.domain = pgt::rowid::Domain::kScanKey;
    t.columns = {"id"};
    t.keyed = true;
    return t;
}

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
        n++;
    }
    return n;
}

TEST(KeyedWindow, the_identity_columns_are_found_among_the_source_columns) {
    EXPECT_EQ(pgt::diff::identity_source_columns(keyed_scan(), target()),
              std::vector<std::string>{"id"});
    pgt::ir::IdentityTarget by_expression = target();
    by_expression.columns = {"q"};
    EXPECT_TRUE(pgt::diff::identity_source_columns(keyed_scan(), by_expression).empty());
}

TEST(KeyedWindow, the_last_event_of_each_identity_decides_and_each_is_probed_once) {
    pgt::ir::ScanFilterProject s = keyed_scan();
    s.key_columns = {"id"};
    const std::string sql = pgt::diff::apply_sql(s, target());
    EXPECT_EQ(sql.find("__pgt_src_img"), std::string::npos) << "no netting by image: " << sql;
    EXPECT_NE(sql.find("DISTINCT ON (v.__pgt_id)"), std::string::npos) << sql;
    EXPECT_NE(sql.find("ORDER BY v.__pgt_id, v.__pgt_seq DESC, v.__pgt_sign DESC"),
              std::string::npos)
        << sql;
    // A departure where a key changes, compared by image.
    EXPECT_NE(sql.find("ROW(b.o1)::pg_catalog.record OPERATOR(pg_catalog.*=) "
                       "ROW(b.n1)::pg_catalog.record"),
              std::string::npos)
        << sql;
    // The division runs only where an arrival passes the prefilter.
    EXPECT_NE(sql.find("CASE WHEN __pgt_src.__pgt_sign > 0 AND COALESCE((((__pgt_src.grp < "
                       "5))), false) THEN COALESCE(((__pgt_src.grp < 5) AND ((100 / "
                       "__pgt_src.val) > 1)), false) ELSE false END AS __pgt_keep"),
              std::string::npos)
        << sql;
    EXPECT_NE(sql.find("CASE WHEN __pgt_src.__pgt_keep THEN (100 / __pgt_src.val) END AS q"),
              std::string::npos)
        << sql;
    EXPECT_EQ(count(sql, "FROM public.st t WHERE t.__pgt_row_probe"), 1u) << "one probe: " << sql;
    EXPECT_EQ(sql.find("USING"), std::string::npos) << sql;
    EXPECT_EQ(sql.find("NOT EXISTS"), std::string::npos) << sql;
    EXPECT_EQ(count(sql, "t.ctid OPERATOR(pg_catalog.=) ANY (ARRAY("), 2u) << sql;
    EXPECT_EQ(count(sql, "FROM pgtrickle_changes.changes_1 b"), 2u) << "arrivals, departures";
}

TEST(KeyedWindow, both_images_are_read_in_one_scan_when_the_prefilter_keeps_few) {
    pgt::ir::ScanFilterProject s = keyed_scan();
    s.key_columns = {"id"};
    s.one_pass = true;
    const std::string sql = pgt::diff::apply_sql(s, target());
    EXPECT_EQ(count(sql, "FROM pgtrickle_changes.changes_1 b"), 1u) << sql;
    EXPECT_NE(sql.find("LATERAL (VALUES (-1, b.o1, b.o2, b.o3"), std::string::npos) << sql;
    EXPECT_EQ(sql.find("UNION ALL"), std::string::npos) << sql;
}

TEST(KeyedWindow, without_key_columns_images_are_netted) {
    const std::string sql = pgt::diff::apply_sql(keyed_scan(), target());
    EXPECT_NE(sql.find("__pgt_src_img"), std::string::npos) << sql;
}

// FULL: a source key of columns whose equal values look alike matches the
// stored rows by value, and the identity is computed only for the rows to
// write; a key of another type (numeric: 1.0 and 1.00 are two identities)
// or of another domain matches by identity.
TEST(KeyedFull, a_key_whose_values_look_alike_matches_by_value) {
    const std::string q = "SELECT id, val FROM public.t";
    const std::string id = "pgtrickle.encode_row_id_v2('scan_key'::pg_catalog.text, ROW(q.id))";
    auto rows = [&](const pgt::ir::IdentityTarget& t, const std::vector<bool>& alike,
                    bool empty = false) {
        return pgt::diff::full_diff_steps({"id", "val"}, t, q, id, alike, empty, "r");
    };
    std::string sql = rows(target(), {true, false}).rows;
    EXPECT_NE(sql.find("FULL JOIN public.st t ON t.id OPERATOR(pg_catalog.=) n.id)"),
              std::string::npos)
        << sql;
    EXPECT_NE(sql.find("CASE WHEN q.__pgt_fresh THEN " + id + " END AS __pgt_id"),
              std::string::npos)
        << sql;
    EXPECT_EQ(sql.find("__pgt_row_id OPERATOR(pg_catalog.=)"), std::string::npos) << sql;
    for (const auto& alike : {std::vector<bool>{false, true}, std::vector<bool>{}}) {
        sql = rows(target(), alike).rows;
        EXPECT_NE(sql.find("t.__pgt_row_id OPERATOR(pg_catalog.=) n.__pgt_id"), std::string::npos)
            << sql;
    }
    const pgt::diff::FullDiffSteps first = rows(target(), {true, false}, true);
    EXPECT_EQ(first.rows, "SELECT q.id, q.val, " + id + " AS __pgt_id FROM (" + q + ") q");
    EXPECT_EQ(first.apply.rfind("WITH ins AS (INSERT INTO public.st (id, val, __pgt_row_id) "
                                "SELECT n.id, n.val, n.__pgt_id FROM r n RETURNING 1)",
                                0),
              0u)
        << first.apply;
    EXPECT_EQ(first.rows.find("JOIN"), std::string::npos) << first.rows;
    pgt::ir::IdentityTarget grouped = target();
    grouped.domain = pgt::rowid::Domain::kGroupKey;  // grouping keys may be NULL
    sql = rows(grouped, {true, true}).rows;
    EXPECT_NE(sql.find("t.__pgt_row_id OPERATOR(pg_catalog.=) n.__pgt_id"), std::string::npos)
        << sql;
}

// FULL in two steps: the rows to write are computed by a plain SELECT
// (which PostgreSQL may run in parallel), then written by a statement
// reading them from the registered relation. A counted stream table's
// rows are net counts per identity and image.
TEST(KeyedFull, two_steps_compute_the_rows_in_a_plain_select) {
    const std::string q = "SELECT id, val FROM public.t";
    const std::string id = "pgtrickle.encode_row_id_v2('scan_key'::pg_catalog.text, ROW(q.id))";
    pgt::ir::IdentityTarget counted = target();
    counted.keyed = false;
    for (const pgt::ir::IdentityTarget& t : {target(), counted}) {
        for (bool empty : {false, true}) {
            const pgt::diff::FullDiffSteps steps = pgt::diff::full_diff_steps(
                {"id", "val"}, t, q, id, {true, false}, empty, "__pgt_full_rows");
            const std::string& rows = steps.rows;
            EXPECT_TRUE(rows.rfind("SELECT ", 0) == 0 || rows.rfind("WITH e AS (SELECT ", 0) == 0)
                << rows;
            for (const char* write : {"INSERT ", "UPDATE ", "DELETE ", "__pgt_full_rows"}) {
                EXPECT_EQ(rows.find(write), std::string::npos) << write << ": " << rows;
            }
            EXPECT_NE(rows.find(q), std::string::npos) << rows;
            EXPECT_NE(steps.apply.find("FROM __pgt_full_rows"), std::string::npos) << steps.apply;
            EXPECT_EQ(steps.apply.find(q), std::string::npos) << steps.apply;
        }
    }
}

}  // namespace
