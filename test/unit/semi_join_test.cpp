// Unit tests of the branches of an algebraic join region
// (src/core/diff/semi_join): each term's weight and the counted semi-join's
// flips, as the text the main statement sums.
#include "core/diff/semi_join.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using pgt::diff::CountedSemiJoin;
using pgt::diff::SignedTerm;
using pgt::diff::TableRead;

constexpr TableRead N = TableRead::kNow;
constexpr TableRead B = TableRead::kBoth;

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

TEST(DiffSemiJoin, weight_multiplies_the_sign_of_each_member_read_as_images) {
    SignedTerm one{{N, B, N}, {}, 1};
    EXPECT_EQ(pgt::diff::term_weight(one, "b"),
              "1::pg_catalog.int8 OPERATOR(pg_catalog.*) b.__pgt_sg1");
    SignedTerm two{{B, N, B}, {}, -1};
    EXPECT_EQ(pgt::diff::term_weight(two, "y"),
              "-1::pg_catalog.int8 OPERATOR(pg_catalog.*) y.__pgt_sg1 OPERATOR(pg_catalog.*) "
              "y.__pgt_sg2");
}

TEST(DiffSemiJoin, signed_branch_selects_weight_then_every_entry) {
    SignedTerm t{{B, N}, {}, 1};
    EXPECT_EQ(pgt::diff::signed_branch_sql(t, 2, "SELECT x"),
              "SELECT 1::pg_catalog.int8 OPERATOR(pg_catalog.*) b.__pgt_sg1 AS __pgt_w, "
              "b.__pgt_k1, b.__pgt_k2 FROM (SELECT x) b");
    SignedTerm img{{TableRead::kOld, N}, {}, -1};
    EXPECT_EQ(pgt::diff::image_branch_sql(img, "SELECT x"),
              "SELECT -1::pg_catalog.int8 AS __pgt_w, b.* FROM (SELECT x) b");
}

CountedSemiJoin exists_on(bool anti) {
    CountedSemiJoin j;
    j.anti = anti;
    j.inner = {"grp"};
    j.equal = {"OPERATOR(pg_catalog.=)"};
    j.s_filter = {"(s.name <> 'x'::text)"};
    j.i_filter = {"(__pgt_src.name <> 'x'::text)"};
    j.from = "ONLY public.d";
    return j;
}

TEST(DiffSemiJoin, semi_join_weights_rows_by_the_flip_of_their_value) {
    SignedTerm t{{N}, {true}, 1};
    CountedSemiJoin j = exists_on(false);
    std::string sql = pgt::diff::semi_join_branch_sql(t, 1, "SELECT k", {&j}, {"__pgt_delta_1"});
    // The y value is the key column after the entries.
    EXPECT_TRUE(contains(sql, "__pgt_d1.__pgt_e1 OPERATOR(pg_catalog.=) b.__pgt_k2")) << sql;
    // Net changes of s per x, filtered by s's own conditions over the images.
    EXPECT_TRUE(contains(sql,
                         "FROM __pgt_delta_1 __pgt_src WHERE (__pgt_src.name <> 'x'::text) "
                         "GROUP BY 1 HAVING"))
        << sql;
    // EXISTS: a row flips when s has rows now (> 0) but had none, or back.
    EXPECT_TRUE(contains(sql,
                         "(z.__pgt_c OPERATOR(pg_catalog.>) 0)::pg_catalog.int4 "
                         "OPERATOR(pg_catalog.-) (z.__pgt_c OPERATOR(pg_catalog.-) "
                         "__pgt_d1.__pgt_net OPERATOR(pg_catalog.>) 0)"))
        << sql;
    // Counting stops one past the net change.
    EXPECT_TRUE(contains(sql, "LIMIT GREATEST(__pgt_d1.__pgt_net, 0) OPERATOR(pg_catalog.+) 1"))
        << sql;
    EXPECT_TRUE(contains(sql,
                         "SELECT 1::pg_catalog.int8 OPERATOR(pg_catalog.*) y.__pgt_f1 AS "
                         "__pgt_w, y.__pgt_k1 FROM"))
        << sql;
    EXPECT_TRUE(contains(sql, "WHERE y.__pgt_f1 OPERATOR(pg_catalog.<>) 0")) << sql;
}

TEST(DiffSemiJoin, anti_join_flips_on_no_rows_and_two_semi_joins_multiply) {
    SignedTerm t{{B}, {true, true}, -1};
    CountedSemiJoin a = exists_on(true), s = exists_on(false);
    std::string sql = pgt::diff::semi_join_branch_sql(t, 1, "SELECT k", {&a, &s},
                                                      {"__pgt_delta_1", "__pgt_delta_2"});
    EXPECT_TRUE(contains(sql, "(z.__pgt_c OPERATOR(pg_catalog.=) 0)::pg_catalog.int4")) << sql;
    // The second semi-join's y follows the first's.
    EXPECT_TRUE(contains(sql, "__pgt_d2.__pgt_e1 OPERATOR(pg_catalog.=) b.__pgt_k3")) << sql;
    EXPECT_TRUE(contains(sql,
                         "SELECT -1::pg_catalog.int8 OPERATOR(pg_catalog.*) y.__pgt_sg1 "
                         "OPERATOR(pg_catalog.*) y.__pgt_f1 OPERATOR(pg_catalog.*) "
                         "y.__pgt_f2 AS __pgt_w"))
        << sql;
    EXPECT_TRUE(contains(sql,
                         "y.__pgt_f1 OPERATOR(pg_catalog.<>) 0 AND y.__pgt_f2 "
                         "OPERATOR(pg_catalog.<>) 0"))
        << sql;
}

}  // namespace
