// Unit tests of the terms of Δ(join) (src/core/diff/join_terms): the
// branches of a join region for each join kind, the outer-join paddings,
// and the signed sums, checked as algebra over numbers (a join of one-row
// relations is a product, so the terms must sum to A'B'C' − ABC).
#include "core/diff/join_terms.hpp"
#include "core/error.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace {

using pgt::diff::OuterJoinTables;
using pgt::diff::Padding;
using pgt::diff::RegionTerm;
using pgt::diff::SignedTerm;
using pgt::diff::SubqueryRead;
using pgt::diff::TableRead;

constexpr TableRead N = TableRead::kNow;
constexpr TableRead O = TableRead::kOld;
constexpr TableRead B = TableRead::kBoth;

std::vector<std::vector<TableRead>> reads_of(const std::vector<RegionTerm>& terms) {
    std::vector<std::vector<TableRead>> out;
    for (const RegionTerm& t : terms) {
        out.push_back(t.tables);
    }
    return out;
}

TEST(JoinTerms, inner_join_of_two_tables_reads_each_change_and_both_old) {
    std::vector<RegionTerm> terms = pgt::diff::region_terms({-1, -1}, {}, {});
    EXPECT_EQ(reads_of(terms), (std::vector<std::vector<TableRead>>{{B, N}, {N, B}, {O, O}}));
    for (const RegionTerm& t : terms) {
        EXPECT_TRUE(t.padding.empty());
        EXPECT_TRUE(t.subqueries.empty());
    }
}

TEST(JoinTerms, inner_join_of_three_tables_reads_every_set_of_before_images) {
    EXPECT_EQ(reads_of(pgt::diff::region_terms({-1, -1, -1}, {}, {})),
              (std::vector<std::vector<TableRead>>{
                  {B, N, N}, {N, B, N}, {N, N, B}, {O, O, N}, {O, N, O}, {N, O, O}, {O, O, O}}));
}

// Every row of either state whose source rows changed is found: for each
// non-empty set S of changed tables, the old row (S read as before-images,
// the others now) and the new row (S's after-images are now, so one of
// them read as images with the others now finds it).
TEST(JoinTerms, every_changed_row_is_found_by_some_term) {
    rc::check([](void) {
        const std::size_t n = *rc::gen::inRange<std::size_t>(1, 7);
        std::vector<RegionTerm> terms = pgt::diff::region_terms(std::vector<int>(n, -1), {}, {});
        RC_ASSERT(terms.size() == pgt::diff::count_region_terms(std::vector<int>(n, -1), {}, {}));
        const std::size_t s = *rc::gen::inRange<std::size_t>(1, std::size_t{1} << n);
        auto in = [&](std::size_t i) { return ((s >> i) & 1) != 0; };
        bool old_found = false, new_found = false;
        for (const RegionTerm& t : terms) {
            bool old_match = true, single = false;
            std::size_t read = 0;
            for (std::size_t i = 0; i < n; i++) {
                read += t.tables[i] != N ? 1 : 0;
                single = single || (t.tables[i] == B && in(i));
                old_match = old_match && (in(i) ? t.tables[i] != N : t.tables[i] == N);
            }
            old_found = old_found || old_match;
            new_found = new_found || (single && read == 1);
        }
        RC_ASSERT(old_found);
        RC_ASSERT(new_found);
    });
}

TEST(JoinTerms, left_join_pads_when_the_nullable_table_changes) {
    // a LEFT JOIN b: b (table 1) is nullable.
    std::vector<OuterJoinTables> outer{{1, false, 0}};
    std::vector<RegionTerm> terms = pgt::diff::region_terms({-1, -1}, {}, outer);
    ASSERT_EQ(terms.size(), 6u);
    EXPECT_EQ(terms.size(), pgt::diff::count_region_terms({-1, -1}, {}, outer));
    // a changed: its partner is now, or it was padded before (ON false).
    EXPECT_EQ(terms[0].tables, (std::vector<TableRead>{B, N}));
    EXPECT_EQ(terms[0].padding, std::vector<Padding>{Padding::kKeep});
    EXPECT_EQ(terms[1].padding, std::vector<Padding>{Padding::kPreserved});
    // b changed: pairs with the changed rows, or the padded row they end.
    EXPECT_EQ(terms[2].tables, (std::vector<TableRead>{N, B}));
    EXPECT_EQ(terms[2].padding, std::vector<Padding>{Padding::kInner});
    EXPECT_EQ(terms[3].padding, std::vector<Padding>{Padding::kPadded});
    EXPECT_EQ(terms[4].tables, (std::vector<TableRead>{O, O}));
    EXPECT_EQ(terms[4].padding, std::vector<Padding>{Padding::kInner});
    EXPECT_EQ(terms[5].padding, std::vector<Padding>{Padding::kPadded});
}

TEST(JoinTerms, full_join_pads_either_side_that_changes) {
    // a FULL JOIN b: larg a (other, 0), rarg b (nullable, 1).
    std::vector<OuterJoinTables> outer{{1, true, 0}};
    using W = std::vector<Padding>;
    const std::vector<W> l{{Padding::kInner, Padding::kLeftAlone, Padding::kLeftGone}};
    const std::vector<W> r{{Padding::kInner, Padding::kRightAlone, Padding::kRightGone}};
    const std::vector<W> both{{Padding::kInner, Padding::kLeftAlone, Padding::kLeftGone,
                               Padding::kRightAlone, Padding::kRightGone}};
    const std::vector<W> third{{Padding::kKeep, Padding::kLeftAlone, Padding::kRightAlone}};
    EXPECT_EQ(pgt::diff::padding_ways({B, N}, outer), l);
    EXPECT_EQ(pgt::diff::padding_ways({N, B}, outer), r);
    EXPECT_EQ(pgt::diff::padding_ways({O, O}, outer), both);
    EXPECT_EQ(pgt::diff::count_region_terms({-1, -1}, {}, outer), 11u);
    // A third table changed alone: as written, or either side alone padded.
    EXPECT_EQ(pgt::diff::padding_ways({N, N, B}, outer), third);
}

TEST(JoinTerms, several_outer_joins_give_every_combination) {
    // a LEFT JOIN b LEFT JOIN c: b and c nullable.
    std::vector<OuterJoinTables> outer{{1, false, 0}, {2, false, 0}};
    std::vector<RegionTerm> terms = pgt::diff::region_terms({-1, -1, -1}, {}, outer);
    EXPECT_EQ(terms.size(), pgt::diff::count_region_terms({-1, -1, -1}, {}, outer));
    // a changed alone: each join kept or preserved, both ways: 4 terms.
    std::size_t first = 0;
    for (const RegionTerm& t : terms) {
        first += t.tables == std::vector<TableRead>{B, N, N} ? 1 : 0;
    }
    EXPECT_EQ(first, 4u);
    EXPECT_EQ(terms[1].padding, (std::vector<Padding>{Padding::kPreserved, Padding::kKeep}));
}

// A lookup chain, o LEFT JOIN c ON .. LEFT JOIN r ON r.x = c.y (r's ON
// strict in c): one row per table, o unchanged, c and r present or not
// before and after. The output row is o's, with c where c is there and r
// where both are. Whenever that row changes, the terms that can run (each
// table they read from images changed, with a row of the kind they read)
// find its key before and after, as the branches compute them: a padding
// of c's join pads r's too only through ON false (kPreserved), and
// kPadded hides c in the key while r's ON still reads c's row.
TEST(JoinTerms, a_lookup_chain_finds_every_row_it_changes) {
    std::vector<OuterJoinTables> outer{{1, false, 0}, {2, false, 0}};
    const std::vector<RegionTerm> terms = pgt::diff::region_terms({-1, -1, -1}, {}, outer);
    struct Key {
        bool c, r;
        bool operator<(const Key& k) const { return c != k.c ? c < k.c : r < k.r; }
        bool operator==(const Key& k) const = default;
    };
    for (int bits = 0; bits < 16; bits++) {
        const bool c_old = bits & 1, c_new = bits & 2, r_old = bits & 4, r_new = bits & 8;
        const Key before{c_old, c_old && r_old}, after{c_new, c_new && r_new};
        if (before == after) {
            continue;
        }
        const bool c_changed = c_old != c_new, r_changed = r_old != r_new;
        std::vector<Key> found;
        for (const RegionTerm& t : terms) {
            // The states a branch reads a table in: now; one kind of image;
            // both kinds (each image a row of its own).
            auto states = [&](TableRead read, bool changed, bool old_row, bool new_row) {
                std::vector<bool> out;
                if (read == N) {
                    out.push_back(new_row);
                } else if (changed) {
                    if ((read == O || read == B) && old_row) {
                        out.push_back(true);
                    }
                    if ((read == TableRead::kNew || read == B) && new_row) {
                        out.push_back(true);
                    }
                }
                return out;  // empty: the images are empty, the branch does not run
            };
            if (t.tables[0] != N) {
                continue;  // o did not change
            }
            for (bool c : states(t.tables[1], c_changed, c_old, c_new)) {
                for (bool r : states(t.tables[2], r_changed, r_old, r_new)) {
                    // c's join, then r's (its ON reads c's row as the branch has it).
                    const Padding pc = t.padding[0], pr = t.padding[1];
                    const bool inner_c = pc == Padding::kInner || pc == Padding::kPadded;
                    if (inner_c && !c) {
                        continue;
                    }
                    const bool c_joined = c && pc != Padding::kPreserved;
                    const bool inner_r = pr == Padding::kInner || pr == Padding::kPadded;
                    if (inner_r && !(c_joined && r)) {
                        continue;
                    }
                    const bool r_joined = c_joined && r && pr != Padding::kPreserved;
                    found.push_back(
                        {c_joined && pc != Padding::kPadded, r_joined && pr != Padding::kPadded});
                }
            }
        }
        auto has = [&](const Key& k) {
            return std::find(found.begin(), found.end(), k) != found.end();
        };
        EXPECT_TRUE(has(before)) << "state " << bits << ": the row before is not found";
        EXPECT_TRUE(has(after)) << "state " << bits << ": the row after is not found";
    }
}

TEST(JoinTerms, padding_predicates_name_the_null_side) {
    EXPECT_TRUE(pgt::diff::pads_nullable(Padding::kPadded));
    EXPECT_TRUE(pgt::diff::pads_nullable(Padding::kRightGone));
    EXPECT_FALSE(pgt::diff::pads_nullable(Padding::kInner));
    EXPECT_TRUE(pgt::diff::pads_other(Padding::kLeftGone));
    EXPECT_FALSE(pgt::diff::pads_other(Padding::kKeep));
    EXPECT_TRUE(pgt::diff::join_on_false(Padding::kPreserved));
    EXPECT_FALSE(pgt::diff::join_on_false(Padding::kLeftGone));
}

TEST(JoinTerms, subquery_terms_read_images_only_in_their_own_group) {
    // FROM a, b WHERE EXISTS (SELECT FROM c ...): c is subquery 0.
    std::vector<RegionTerm> terms = pgt::diff::region_terms({-1, -1, 0}, {-1}, {});
    ASSERT_EQ(terms.size(), 4u);
    for (std::size_t i = 0; i < 3; i++) {
        EXPECT_EQ(terms[i].subqueries, std::vector<SubqueryRead>{SubqueryRead::kTrue});
        EXPECT_EQ(terms[i].tables[2], N);
    }
    EXPECT_EQ(terms[3].tables, (std::vector<TableRead>{N, N, B}));
    EXPECT_EQ(terms[3].subqueries, std::vector<SubqueryRead>{SubqueryRead::kImages});
}

TEST(JoinTerms, a_nested_subquery_reads_images_through_each_subquery_around_it) {
    // FROM a WHERE x IN (SELECT FROM b WHERE EXISTS (SELECT FROM c ...)
    //                                   AND y IN (SELECT FROM d, e ...)):
    // subquery 0 holds subqueries 1 (over c) and 2 (over d and e).
    using R = SubqueryRead;
    std::vector<RegionTerm> terms = pgt::diff::region_terms({-1, 0, 1, 2, 2}, {-1, 0, 0}, {});
    ASSERT_EQ(terms.size(), 6u);
    EXPECT_EQ(terms[0].tables, (std::vector<TableRead>{B, N, N, N, N}));
    EXPECT_EQ(terms[0].subqueries, (std::vector<R>{R::kTrue, R::kTrue, R::kTrue}));
    // b's changes: subquery 0 over b's images, the conjuncts nested in it dropped.
    EXPECT_EQ(terms[1].tables, (std::vector<TableRead>{N, B, N, N, N}));
    EXPECT_EQ(terms[1].subqueries, (std::vector<R>{R::kImages, R::kTrue, R::kTrue}));
    // c's changes: subquery 0 over b as it is now, with subquery 1's condition.
    EXPECT_EQ(terms[2].tables, (std::vector<TableRead>{N, N, B, N, N}));
    EXPECT_EQ(terms[2].subqueries, (std::vector<R>{R::kImages, R::kImages, R::kTrue}));
    EXPECT_EQ(terms[3].tables, (std::vector<TableRead>{N, N, N, B, N}));
    EXPECT_EQ(terms[4].tables, (std::vector<TableRead>{N, N, N, N, B}));
    EXPECT_EQ(terms[5].tables, (std::vector<TableRead>{N, N, N, O, O}));
    for (std::size_t i = 3; i < 6; i++) {
        EXPECT_EQ(terms[i].subqueries, (std::vector<R>{R::kImages, R::kTrue, R::kImages}));
    }
    EXPECT_EQ(pgt::diff::count_region_terms({-1, 0, 1, 2, 2}, {-1, 0, 0}, {}), 6u);
}

TEST(JoinTerms, a_subquery_nested_in_a_later_one_is_an_internal_error) {
    EXPECT_THROW((void)pgt::diff::region_terms({-1, 0, 1}, {1, -1}, {}), pgt::Error);
}

// A one-row relation per table is a number; a join of them is a product.
struct Values {
    double now, old_image, new_image;  // before = now − new + old
};

double value(const Values& v, TableRead r) {
    switch (r) {
        case TableRead::kNow:
            return v.now;
        case TableRead::kOld:
            return v.old_image;
        case TableRead::kNew:
            return v.new_image;
        case TableRead::kBoth:
            return v.new_image - v.old_image;  // signed images
    }
    return 0;
}

double sum_of(const std::vector<SignedTerm>& terms, const std::vector<Values>& vs) {
    double sum = 0;
    for (const SignedTerm& t : terms) {
        double product = t.sign;
        for (std::size_t i = 0; i < vs.size(); i++) {
            product *= value(vs[i], t.tables[i]);
        }
        sum += product;
    }
    return sum;
}

double change_of(const std::vector<Values>& vs) {
    double now = 1, before = 1;
    for (const Values& v : vs) {
        now *= v.now;
        before *= v.now - v.new_image + v.old_image;
    }
    return now - before;
}

TEST(JoinTerms, signed_and_image_terms_sum_to_the_change_of_the_join) {
    rc::check([](void) {
        const std::size_t n = *rc::gen::inRange<std::size_t>(1, 6);
        std::vector<Values> vs;
        for (std::size_t i = 0; i < n; i++) {
            vs.push_back({static_cast<double>(*rc::gen::inRange(-5, 6)),
                          static_cast<double>(*rc::gen::inRange(0, 4)),
                          static_cast<double>(*rc::gen::inRange(0, 4))});
        }
        std::vector<SignedTerm> s = pgt::diff::signed_terms(n, 0);
        std::vector<SignedTerm> i = pgt::diff::image_terms(n);
        RC_ASSERT(s.size() == pgt::diff::count_signed_terms(n, true));
        RC_ASSERT(i.size() == pgt::diff::count_signed_terms(n, false));
        RC_ASSERT(sum_of(s, vs) == change_of(vs));
        RC_ASSERT(sum_of(i, vs) == change_of(vs));
    });
}

TEST(JoinTerms, signed_terms_count_semi_joins_as_members) {
    std::vector<SignedTerm> terms = pgt::diff::signed_terms(1, 1);
    ASSERT_EQ(terms.size(), 3u);
    EXPECT_EQ(terms[0].tables, std::vector<TableRead>{B});
    EXPECT_EQ(terms[0].semis, std::vector<bool>{false});
    EXPECT_EQ(terms[1].tables, std::vector<TableRead>{N});
    EXPECT_EQ(terms[1].semis, std::vector<bool>{true});
    EXPECT_EQ(terms[2].sign, -1);
}

}  // namespace
