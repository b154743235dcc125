// The terms of Δ(join) as data (see join_terms.hpp for the algebra).
// Invariant: the order of the terms is stable (stored programs and tests
// name branches by position).
#include "core/diff/join_terms.hpp"

#include "core/error.hpp"

namespace pgt::diff {

bool pads_nullable(Padding p) {
    return p == Padding::kPadded || p == Padding::kPreserved || p == Padding::kLeftAlone ||
           p == Padding::kRightGone;
}

bool pads_other(Padding p) {
    return p == Padding::kRightAlone || p == Padding::kLeftGone;
}

bool join_on_false(Padding p) {
    return p == Padding::kPreserved || p == Padding::kLeftAlone || p == Padding::kRightAlone;
}

namespace {

bool changed(const std::vector<TableRead>& tables, std::size_t i) {
    return tables.at(i) != TableRead::kNow;
}

bool changed_except(const std::vector<TableRead>& tables, std::size_t a, std::size_t b) {
    for (std::size_t i = 0; i < tables.size(); i++) {
        if (i != a && i != b && changed(tables, i)) {
            return true;
        }
    }
    return false;
}

// A FULL JOIN of L and R: with L changed, inner (pairs), every changed L
// row padded, and R's padded keys of the R rows it joins (their padding
// may come or go); R the same way; with neither but another table
// changed, as written or either side padded alone.
std::vector<Padding> full_join_ways(const std::vector<TableRead>& tables,
                                    const OuterJoinTables& o) {
    bool l = changed(tables, o.other);
    bool r = changed(tables, o.nullable);
    if (l || r) {
        std::vector<Padding> ways{Padding::kInner};
        if (l) {
            ways.push_back(Padding::kLeftAlone);
            ways.push_back(Padding::kLeftGone);
        }
        if (r) {
            ways.push_back(Padding::kRightAlone);
            ways.push_back(Padding::kRightGone);
        }
        return ways;
    }
    if (changed_except(tables, o.other, o.nullable)) {
        return {Padding::kKeep, Padding::kLeftAlone, Padding::kRightAlone};
    }
    return {Padding::kKeep};
}

// LEFT/RIGHT: nullable table changed: inner (a pair with a changed
// partner) or padded keys (the partner that came or went, padding its
// preserved row); another table changed: as written (the partner now) or
// ON false (padded as it may have been then: the partners may have
// changed); nothing else changed: as written.
std::vector<Padding> one_sided_ways(const std::vector<TableRead>& tables,
                                    const OuterJoinTables& o) {
    if (changed(tables, o.nullable)) {
        return {Padding::kInner, Padding::kPadded};
    }
    if (changed_except(tables, o.nullable, o.nullable)) {
        return {Padding::kKeep, Padding::kPreserved};
    }
    return {Padding::kKeep};
}

// The table states of region_terms, with the subquery reads of each.
struct States {
    std::vector<std::vector<TableRead>> tables;
    std::vector<std::vector<SubqueryRead>> subqueries;
};

States region_states(const std::vector<int>& groups, const std::vector<int>& parents) {
    States out;
    const std::size_t n = groups.size();
    const std::size_t subqueries = parents.size();
    for (int group = -1; group < static_cast<int>(subqueries); group++) {
        std::vector<std::size_t> members;
        for (std::size_t i = 0; i < n; i++) {
            if (groups[i] == group) {
                members.push_back(i);
            }
        }
        if (members.size() >= 63) {
            throw Error(sqlstate::kInternalError, "too many tables in one join group");
        }
        std::vector<SubqueryRead> modes(subqueries, SubqueryRead::kTrue);
        // A nested subquery's images reach the query through each subquery
        // around it, read over its tables as they are now.
        for (int k = group; k >= 0; k = parents.at(static_cast<std::size_t>(k))) {
            if (k >= static_cast<int>(subqueries) || parents[static_cast<std::size_t>(k)] >= k) {
                throw Error(sqlstate::kInternalError, "a subquery nested in a later one");
            }
            modes[static_cast<std::size_t>(k)] = SubqueryRead::kImages;
        }
        // One table changed: its images of both kinds at once (a row of
        // either state with a changed row of it, the others as now); the
        // conditions only select, so reading both finds a superset.
        for (std::size_t i : members) {
            out.tables.emplace_back(n, TableRead::kNow);
            out.tables.back()[i] = TableRead::kBoth;
            out.subqueries.push_back(modes);
        }
        for (uint64_t mask = 1; mask < (uint64_t{1} << members.size()); mask++) {
            if ((mask & (mask - 1)) == 0) {
                continue;  // one table: its kBoth term above
            }
            std::vector<TableRead> t(n, TableRead::kNow);
            for (std::size_t m = 0; m < members.size(); m++) {
                if (mask & (uint64_t{1} << m)) {
                    t[members[m]] = TableRead::kOld;
                }
            }
            out.tables.push_back(t);
            out.subqueries.push_back(modes);
        }
    }
    return out;
}

}  // namespace

std::vector<std::vector<Padding>> padding_ways(const std::vector<TableRead>& tables,
                                               const std::vector<OuterJoinTables>& outer) {
    std::vector<std::vector<Padding>> ways;
    for (const OuterJoinTables& o : outer) {
        ways.push_back(o.full ? full_join_ways(tables, o) : one_sided_ways(tables, o));
    }
    return ways;
}

std::size_t count_region_terms(const std::vector<int>& groups, const std::vector<int>& parents,
                               const std::vector<OuterJoinTables>& outer) {
    std::size_t count = 0;
    for (const std::vector<TableRead>& t : region_states(groups, parents).tables) {
        std::size_t product = 1;
        for (const std::vector<Padding>& w : padding_ways(t, outer)) {
            product *= w.size();
        }
        count += product;
    }
    return count;
}

std::vector<RegionTerm> region_terms(const std::vector<int>& groups,
                                     const std::vector<int>& parents,
                                     const std::vector<OuterJoinTables>& outer) {
    std::vector<RegionTerm> terms;
    States s = region_states(groups, parents);
    for (std::size_t b = 0; b < s.tables.size(); b++) {
        // Every combination of the ways, the first outer join fastest:
        // one row can be padded by several joins.
        std::vector<std::vector<Padding>> ways = padding_ways(s.tables[b], outer);
        std::vector<std::size_t> pick(outer.size(), 0);
        for (;;) {
            RegionTerm t{s.tables[b], s.subqueries[b], {}};
            for (std::size_t o = 0; o < outer.size(); o++) {
                t.padding.push_back(ways[o][pick[o]]);
            }
            terms.push_back(std::move(t));
            std::size_t o = 0;
            while (o < outer.size() && ++pick[o] == ways[o].size()) {
                pick[o++] = 0;
            }
            if (o == outer.size()) {
                break;
            }
        }
    }
    return terms;
}

uint64_t count_signed_terms(std::size_t members, bool signs) {
    uint64_t count = 1;
    for (std::size_t i = 0; i < members; i++) {
        count *= signs ? 2 : 3;
        if (count > (uint64_t{1} << 40)) {
            return count;  // far beyond any branch budget
        }
    }
    return count - 1;
}

std::vector<SignedTerm> signed_terms(std::size_t tables, std::size_t semis) {
    std::vector<SignedTerm> terms;
    const uint64_t count = count_signed_terms(tables + semis, true);
    for (uint64_t code = 1; code <= count; code++) {
        SignedTerm t{std::vector<TableRead>(tables, TableRead::kNow),
                     std::vector<bool>(semis, false), 1};
        std::size_t size = 0;
        for (std::size_t i = 0; i < tables + semis; i++) {
            if ((code >> i) & 1) {
                size++;
                if (i < tables) {
                    t.tables[i] = TableRead::kBoth;
                } else {
                    t.semis[i - tables] = true;
                }
            }
        }
        t.sign = size % 2 == 1 ? 1 : -1;
        terms.push_back(std::move(t));
    }
    return terms;
}

std::vector<SignedTerm> image_terms(std::size_t tables) {
    std::vector<SignedTerm> terms;
    const uint64_t count = count_signed_terms(tables, false);
    for (uint64_t code = 1; code <= count; code++) {
        SignedTerm t{std::vector<TableRead>(tables, TableRead::kNow), {}, 1};
        int size = 0, olds = 0;
        uint64_t c = code;
        for (std::size_t i = 0; i < tables; i++, c /= 3) {
            static constexpr TableRead kDigit[] = {TableRead::kNow, TableRead::kOld,
                                                   TableRead::kNew};
            t.tables[i] = kDigit[c % 3];
            size += t.tables[i] != TableRead::kNow ? 1 : 0;
            olds += t.tables[i] == TableRead::kOld ? 1 : 0;
        }
        t.sign = (size + 1 + olds) % 2 == 0 ? 1 : -1;
        terms.push_back(std::move(t));
    }
    return terms;
}

}  // namespace pgt::diff
