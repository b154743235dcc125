// Shared pieces of the seeded property tests: settings read from the
// environment, the random generator, literals, predicates, projections and
// grouping-set clauses.
// Invariant: a generator's sequence of draws is part of every printed seed;
// changing one changes what each seed replays, in every property test.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace pgt::e2e::property {

// --- settings ---------------------------------------------------------------

inline uint64_t env_u64(const char* name, uint64_t fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

// One seed per process, so one printed value replays every test of the file.
inline uint64_t property_seed() {
    static const uint64_t seed = env_u64("PGT_PROPERTY_SEED", std::random_device{}());
    return seed;
}

// PGT_PROPERTY_MODE=FULL runs the same cycles with FULL refresh: a failure
// there is a bug of this generator or of the oracle, not of the delta.
inline std::string refresh_mode() {
    const char* v = std::getenv("PGT_PROPERTY_MODE");
    return v && *v ? v : "DIFFERENTIAL";
}

// --- randomness -------------------------------------------------------------

class Rng {
public:
    explicit Rng(uint64_t seed) : gen_(seed) {}
    int range(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen_); }
    bool chance(int percent) { return range(0, 99) < percent; }
    template <class T>
    const T& pick(const std::vector<T>& v) {
        return v[static_cast<size_t>(range(0, static_cast<int>(v.size()) - 1))];
    }
    std::string num(int lo, int hi) { return std::to_string(range(lo, hi)); }

private:
    std::mt19937_64 gen_;
};

enum class Kind { Int, Text, Numeric, Ts };

struct Column {
    std::string name;
    Kind kind;
};

inline std::string int_lit(Rng& r, int lo, int hi, int null_percent = 10) {
    return r.chance(null_percent) ? "NULL" : r.num(lo, hi);
}

inline std::string text_lit(Rng& r, int null_percent = 10) {
    static const std::vector<std::string> texts = {"'a'",   "'ab'",       "'Abc'", "'b'",  "''",
                                                   "'x y'", "'O''Brien'", "'é'",   "'zz'", "'B'"};
    if (r.chance(null_percent)) {
        return "NULL";
    }
    return r.chance(3) ? "repeat('ab', 200)" : r.pick(texts);  // identities above 256 bytes
}

inline std::string numeric_lit(Rng& r, int null_percent = 10) {
    if (r.chance(null_percent)) {
        return "NULL";
    }
    int milli = r.range(-50000, 150000);
    std::string sign = milli < 0 ? "-" : "";
    milli = std::abs(milli);
    std::string frac = std::to_string(milli % 1000);
    return sign + std::to_string(milli / 1000) + "." + std::string(3 - frac.size(), '0') + frac;
}

inline std::string two(int v) {
    return (v < 10 ? "0" : "") + std::to_string(v);
}

inline std::string ts_lit(Rng& r, int null_percent = 10) {
    if (r.chance(null_percent)) {
        return "NULL";
    }
    return "'2026-" + two(r.range(1, 12)) + "-" + two(r.range(1, 28)) + " " + two(r.range(0, 23)) +
           ":" + two(r.range(0, 59)) + ":00+00'::timestamptz";
}

inline std::string lit(Rng& r, Kind k) {
    switch (k) {
        case Kind::Int:
            return int_lit(r, -5, 60);
        case Kind::Text:
            return text_lit(r);
        case Kind::Numeric:
            return numeric_lit(r);
        case Kind::Ts:
            return ts_lit(r);
    }
    return "NULL";
}

// --- queries: projections and predicates ------------------------------------
// Only IMMUTABLE functions and operators (no concat(), no timestamptz casts
// to text or date), and nothing that can raise at run time.

inline std::string atom_predicate(Rng& r, const Column& c) {
    const std::string& x = c.name;
    switch (c.kind) {
        case Kind::Int: {
            std::string k = r.num(-5, 60);
            return r.pick(std::vector<std::string>{
                x + " > " + k, x + " <= " + k, x + " = " + k, x + " IS NULL", x + " IS NOT NULL",
                x + " BETWEEN " + k + " AND " + std::to_string(std::stoi(k) + r.range(0, 30)),
                x + " IN (" + k + ", " + r.num(-5, 60) + ", NULL)",
                "coalesce(" + x + ", 0) % 2 = 0", x + " <> " + k, x + " IS DISTINCT FROM " + k,
                x + " NOT IN (" + k + ", 7)"});
        }
        case Kind::Text:
            return r.pick(std::vector<std::string>{
                x + " LIKE 'a%'", x + " IS NULL", "upper(" + x + ") = 'AB'",
                "length(" + x + ") > 2", x + " IN ('a', 'ab', 'O''Brien')",
                "coalesce(" + x + ", '') = ''", x + " > 'b'", x + " ~ '^[A-Z]'", x + " ILIKE '%B%'",
                x + " IS NOT DISTINCT FROM 'x y'"});
        case Kind::Numeric: {
            std::string k = numeric_lit(r, 0);
            return r.pick(std::vector<std::string>{
                x + " > " + k, x + " IS NULL", "round(" + x + ") = " + r.num(-5, 60),
                x + " BETWEEN " + k + " AND " + k + " + 40", "coalesce(" + x + ", 0) < " + k,
                x + " * 2 >= " + k});
        }
        case Kind::Ts: {
            std::string k = ts_lit(r, 0);
            return r.pick(std::vector<std::string>{
                x + " > " + k, x + " IS NULL", x + " <= " + k,
                x + " BETWEEN " + k + " AND " + ts_lit(r, 0),
                "coalesce(" + x + ", '2000-01-01 00:00:00+00'::timestamptz) < " + k});
        }
    }
    return "true";
}

inline std::string predicate(Rng& r, const std::vector<Column>& cols, int depth) {
    int choice = depth > 0 ? r.range(0, 9) : 9;
    switch (choice) {
        case 0:
        case 1:
            return "(" + predicate(r, cols, depth - 1) + " AND " + predicate(r, cols, depth - 1) +
                   ")";
        case 2:
            return "(" + predicate(r, cols, depth - 1) + " OR " + predicate(r, cols, depth - 1) +
                   ")";
        case 3:
            return "NOT (" + predicate(r, cols, depth - 1) + ")";
        case 4:
            return "(" + predicate(r, cols, depth - 1) + ") IS NOT TRUE";
        case 5:
            return "CASE WHEN " + predicate(r, cols, depth - 1) + " THEN " +
                   predicate(r, cols, depth - 1) + " ELSE " + predicate(r, cols, depth - 1) +
                   " END";
        case 6:
            return "coalesce(" + predicate(r, cols, depth - 1) + ", " +
                   (r.chance(50) ? "true" : "false") + ")";
        default:
            return atom_predicate(r, r.pick(cols));
    }
}

inline std::string projection(Rng& r, const Column& c, const std::vector<Column>& cols) {
    const std::string& x = c.name;
    if (r.chance(15)) {
        return "CASE WHEN " + predicate(r, cols, 1) + " THEN 'yes' WHEN " + predicate(r, cols, 0) +
               " THEN NULL ELSE 'no' END";
    }
    switch (c.kind) {
        case Kind::Int:
            return r.pick(std::vector<std::string>{x, x + " + 3", x + " * 2", "abs(" + x + ")",
                                                   "coalesce(" + x + ", -1)", "(" + x + " % 5)",
                                                   "CASE WHEN " + x + " > 40 THEN 'big' WHEN " + x +
                                                       " IS NULL THEN 'none' ELSE "
                                                       "'small' END",
                                                   x + "::text", "nullif(" + x + ", 3)",
                                                   "greatest(" + x + ", 20)", "(" + x + " IS NULL)",
                                                   "-" + x, x + "::numeric / 4"});
        case Kind::Text:
            return r.pick(std::vector<std::string>{
                x, "upper(" + x + ")", "lower(" + x + ")", "coalesce(" + x + ", '?')",
                "length(" + x + ")", x + " || '!'", "left(" + x + ", 1)",
                "replace(" + x + ", 'a', 'A')", "nullif(" + x + ", '')", "md5(" + x + ")",
                "CASE " + x + " WHEN 'a' THEN 1 WHEN 'ab' THEN 2 ELSE 0 END"});
        case Kind::Numeric:
            return r.pick(std::vector<std::string>{
                x, x + " * 2", "round(" + x + ", 1)", "coalesce(" + x + ", 0)", "abs(" + x + ")",
                x + " + 0.5", "floor(" + x + ")", x + "::int", x + "::text",
                "CASE WHEN " + x + " > 0 THEN 'pos' WHEN " + x + " < 0 THEN 'neg' END"});
        case Kind::Ts:
            return r.pick(std::vector<std::string>{
                x, "(" + x + " IS NULL)",
                "coalesce(" + x + ", '2000-01-01 00:00:00+00'::timestamptz)",
                x + " - '2026-01-01 00:00:00+00'::timestamptz",
                "CASE WHEN " + x + " < '2026-06-01 00:00:00+00' THEN 'h1' ELSE 'h2' END",
                "(" + x + " > '2026-03-01 00:00:00+00')"});
    }
    return x;
}

// --- grouping sets ---------------------------------------------------------

// A grouping-sets key: few values, NULL where its column is NULL (a real
// NULL group next to the NULL of a rolled-up key); a bare column now and
// then, so one key can be part of another (v and v % 3, t and left(t, 1)).
inline std::string grouping_sets_key(Rng& r, const Column& c) {
    const std::string& x = c.name;
    switch (c.kind) {
        case Kind::Int:
            return r.pick(std::vector<std::string>{"(" + x + " % 3)", "(" + x + " % 4)",
                                                   "(" + x + " > 20)", "(" + x + " / 20)",
                                                   "nullif(" + x + " % 3, 0)", x});
        case Kind::Text:
            return r.pick(std::vector<std::string>{x, "left(" + x + ", 1)", "length(" + x + ")",
                                                   "upper(" + x + ")"});
        case Kind::Numeric:
            return r.pick(std::vector<std::string>{"(" + x + " > 10)", "round(" + x + " / 50)"});
        case Kind::Ts:
            return r.pick(std::vector<std::string>{"(" + x + " > '2026-03-01 00:00:00+00')",
                                                   "(" + x + " < '2026-06-01 00:00:00+00')"});
    }
    return x;
}

// GROUPING() over one grouping key, or over the first and last of them.
inline std::string grouping_call(Rng& r, const std::vector<std::string>& keys) {
    std::string args = r.pick(keys);
    if (keys.size() > 1 && r.chance(50)) {
        args = keys.front() + ", " + keys.back();
    }
    return "GROUPING(" + args + ")";
}

// The GROUP BY of a grouping-sets query over keys g (referred to by
// ordinal now and then): ROLLUP, CUBE, an explicit list of distinct sets
// covering every key (with or without ()), a key before a ROLLUP or CUBE,
// or GROUP BY DISTINCT over sets that repeat.
inline std::string grouping_sets_clause(Rng& r, const std::vector<std::string>& g) {
    const int n = static_cast<int>(g.size());
    auto list = [&](int from, int to) {
        std::string s;
        for (int i = from; i < to; i++) {
            s += (i > from ? ", " : "") + g[static_cast<size_t>(i)];
        }
        return s;
    };
    switch (n == 1 ? r.range(0, 2) : r.range(0, 5)) {
        case 0:
            return "ROLLUP (" + list(0, n) + ")";
        case 1:
            return "CUBE (" + list(0, n) + ")";
        case 2:
        case 3: {
            std::vector<std::string> sets;
            int covered = 0;
            auto add = [&](const std::string& set) {
                sets.insert(sets.begin() + r.range(0, static_cast<int>(sets.size())), set);
            };
            for (int mask = (1 << n) - 2; mask > 0; mask--) {
                if (r.chance(50)) {
                    std::string set;
                    for (int i = 0; i < n; i++) {
                        if ((mask >> i) & 1) {
                            set += (set.empty() ? "" : ", ") + g[static_cast<size_t>(i)];
                        }
                    }
                    add("(" + set + ")");
                    covered |= mask;
                }
            }
            if (covered != (1 << n) - 1 || r.chance(50)) {
                add("(" + list(0, n) + ")");  // every key in some set
            }
            if (sets.size() == 1 || r.chance(40)) {
                add("()");  // one set alone would be a plain GROUP BY
            }
            std::string s;
            for (size_t i = 0; i < sets.size(); i++) {
                s += (i ? ", " : "") + sets[i];
            }
            return "GROUPING SETS (" + s + ")";
        }
        case 4:
            return g[0] + ", " + (r.chance(50) ? "ROLLUP (" : "CUBE (") + list(1, n) + ")";
        default:
            return n == 2 ? "DISTINCT " + g[0] + ", ROLLUP (" + list(0, n) + ")"
                          : "DISTINCT ROLLUP (" + g[0] + ", " + g[1] + "), ROLLUP (" + g[0] + ", " +
                                g[2] + ")";
    }
}

// Distinct integer keys in [0, hi].
inline std::vector<int> distinct_keys(Rng& r, int n, int hi) {
    std::set<int> keys;
    while (static_cast<int>(keys.size()) < n) {
        keys.insert(r.range(0, hi));
    }
    return {keys.begin(), keys.end()};
}

}  // namespace pgt::e2e::property
