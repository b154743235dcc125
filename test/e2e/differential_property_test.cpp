// Property test for DIFFERENTIAL refresh: random supported queries (projections,
// predicates with NULLs, COALESCE, CASE; GROUP BY and DISTINCT; a third
// aggregates kept algebraically; GROUPING SETS, ROLLUP and CUBE; UNION ALL
// of projections of the table, each arm its own WHERE) over four
// source shapes, random DML batches (key changes, upserts, duplicates,
// rollbacks, savepoints, refreshes inside the writing transaction), a
// refresh and the oracle after each batch.
// Invariant: the printed seed decides everything; PGT_PROPERTY_SEED replays it.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fixture.hpp"
#include "property_check.hpp"
#include "property_gen.hpp"

namespace pgt::e2e {
namespace {

using namespace property;  // NOLINT(google-build-using-namespace)

// --- sizes ------------------------------------------------------------------

// A cycle is one (DML batch, refresh, oracle) for one stream table: a batch
// followed by refreshes of three stream tables counts as three cycles.
// PGT_PROPERTY_CYCLES is the total over the four sources below.
constexpr int kSources = 4;
constexpr int kStreamTablesPerSource = 3;
constexpr int kReplaceEvery = 40;  // batches between replacing one stream table

// A grouping key whose value is deterministic per group: numerics are
// rounded to a fixed scale (GROUP BY treats 1.5 and 1.50 as one group and
// would show either).
std::string group_key(Rng& r, const Column& c, const std::vector<Column>& cols) {
    const std::string& x = c.name;
    switch (c.kind) {
        case Kind::Numeric:
            return r.pick(
                std::vector<std::string>{"round(" + x + ", 0)", x + "::text", "(" + x + " > 10)"});
        case Kind::Ts:
            return r.pick(std::vector<std::string>{x, "(" + x + " > '2026-03-01 00:00:00+00')"});
        default:
            return r.chance(50) ? x : projection(r, c, cols);
    }
}

// An aggregate whose result is deterministic (no float, no tie-dependent
// pick among equal-but-different numerics, ORDER BY inside order-sensitive
// aggregates).
std::string aggregate(Rng& r, const Column& c, const std::vector<Column>& cols) {
    const std::string& x = c.name;
    std::vector<std::string> any = {"count(*)", "count(" + x + ")", "count(DISTINCT " + x + ")",
                                    "bool_and(" + predicate(r, cols, 0) + ")",
                                    "count(*) FILTER (WHERE " + predicate(r, cols, 0) + ")"};
    switch (c.kind) {
        case Kind::Int:
            any.insert(any.end(),
                       {"sum(" + x + ")", "avg(" + x + ")", "min(" + x + ")", "max(" + x + ")",
                        "sum(DISTINCT " + x + ")", "array_agg(" + x + " ORDER BY " + x + ")"});
            break;
        case Kind::Text:
            any.insert(any.end(), {"min(" + x + ")", "max(" + x + ")",
                                   "string_agg(" + x + ", ',' ORDER BY " + x + ")"});
            break;
        case Kind::Numeric:
            any.insert(any.end(), {"sum(" + x + ")", "avg(" + x + ")", "max(round(" + x + ", 2))",
                                   "min(round(" + x + ", 2))"});
            break;
        case Kind::Ts:
            any.insert(any.end(), {"min(" + x + ")", "max(" + x + ")"});
            break;
    }
    return r.pick(any);
}

// SELECT keys, aggregates FROM t [WHERE p] GROUP BY keys [HAVING h].
std::string random_grouped_query(Rng& r, const std::string& table,
                                 const std::vector<Column>& cols) {
    std::vector<std::string> items, ordinals;
    int keys = r.range(1, 2);
    for (int i = 0; i < keys; i++) {
        items.push_back(group_key(r, r.pick(cols), cols) + " AS k" + std::to_string(i));
        ordinals.push_back(std::to_string(i + 1));
    }
    for (int i = r.range(1, 3); i > 0; i--) {
        items.push_back(aggregate(r, r.pick(cols), cols) + " AS a" + std::to_string(i));
    }
    std::string q = "SELECT ";
    for (size_t i = 0; i < items.size(); i++) {
        q += (i ? ", " : "") + items[i];
    }
    q += " FROM " + table;
    if (r.chance(60)) {
        q += " WHERE " + predicate(r, cols, r.range(0, 1));
    }
    q += " GROUP BY ";
    for (size_t i = 0; i < ordinals.size(); i++) {
        q += (i ? ", " : "") + ordinals[i];
    }
    if (r.chance(35)) {
        q += r.pick(std::vector<std::string>{
            " HAVING count(*) > 1", " HAVING count(*) < 3",
            " HAVING " + aggregate(r, r.pick(cols), cols) + " IS NOT NULL"});
    }
    return q;
}

// SELECT DISTINCT over deterministic keys (see group_key).
std::string random_distinct_query(Rng& r, const std::string& table,
                                  const std::vector<Column>& cols) {
    std::string q = "SELECT DISTINCT ";
    for (int i = 0, n = r.range(1, 3); i < n; i++) {
        q += (i ? ", " : "") + group_key(r, r.pick(cols), cols) + " AS d" + std::to_string(i);
    }
    q += " FROM " + table;
    if (r.chance(60)) {
        q += " WHERE " + predicate(r, cols, r.range(0, 1));
    }
    return q;
}

// An aggregate kept algebraically: count, sum or avg of an int (int2,
// int4, int8) or numeric, min or max of a type whose equal values print
// alike (the numeric columns have a fixed scale); FILTER now and then.
std::string algebraic_aggregate(Rng& r, const Column& c, const std::vector<Column>& cols) {
    const std::string& x = c.name;
    std::vector<std::string> any = {"count(*)", "count(" + x + ")"};
    switch (c.kind) {
        case Kind::Int:
            any.insert(any.end(),
                       {"sum(" + x + ")", "avg(" + x + ")", "min(" + x + ")", "max(" + x + ")",
                        "sum(" + x + "::int8)", "avg(" + x + "::int8)", "sum(" + x + "::int2)",
                        "sum(" + x + " * 2 - 7)", "max(" + x + " % 7)"});
            break;
        case Kind::Text:
            any.insert(any.end(), {"min(" + x + ")", "max(" + x + ")", "max(upper(" + x + "))"});
            break;
        case Kind::Numeric:
            any.insert(any.end(),
                       {"sum(" + x + ")", "avg(" + x + ")", "min(" + x + ")", "max(" + x + ")",
                        "sum(" + x + " * 1.5)", "sum(round(" + x + ", 1))",
                        // rows of two scales: the sum shows the larger while one is left
                        "sum(CASE WHEN " + x + " > 10 THEN round(" + x + ") ELSE " + x + " END)",
                        // NaN and infinities come and go with the rows
                        "sum(CASE WHEN " + x + " > 100 THEN 'Infinity'::numeric WHEN " + x +
                            " < -20 THEN '-Infinity'::numeric ELSE " + x + " END)",
                        "avg(CASE WHEN " + x + " > 120 THEN 'NaN'::numeric ELSE " + x + " END)"});
            break;
        case Kind::Ts:
            any.insert(any.end(), {"min(" + x + ")", "max(" + x + ")"});
            break;
    }
    std::string agg = r.pick(any);
    if (r.chance(25)) {
        agg += " FILTER (WHERE " + predicate(r, cols, r.range(0, 1)) + ")";
    }
    return agg;
}

// SELECT keys, aggregates FROM t [WHERE p] [GROUP BY keys]: every output a
// grouping key or an algebraic aggregate, no HAVING (kept algebraically).
std::string random_algebraic_query(Rng& r, const std::string& table,
                                   const std::vector<Column>& cols) {
    std::vector<std::string> keys, aggs, group_by;
    const int n = r.chance(20) ? 0 : r.range(1, 2);
    const bool by_ordinal = r.chance(60);
    for (int i = 0; i < n; i++) {
        std::string g = group_key(r, r.pick(cols), cols);
        keys.push_back(g + " AS k" + std::to_string(i));
        group_by.push_back(g);
    }
    for (int i = r.range(1, 4); i > 0; i--) {
        aggs.push_back(algebraic_aggregate(r, r.pick(cols), cols) + " AS a" + std::to_string(i));
    }
    const bool keys_last = r.chance(30);
    if (by_ordinal) {
        for (int i = 0; i < n; i++) {
            group_by[static_cast<size_t>(i)] =
                std::to_string(i + 1 + (keys_last ? static_cast<int>(aggs.size()) : 0));
        }
    }
    std::vector<std::string> items = keys_last ? aggs : keys;
    for (const std::string& e : keys_last ? keys : aggs) {
        items.push_back(e);
    }
    std::string q = "SELECT ";
    for (size_t i = 0; i < items.size(); i++) {
        q += (i ? ", " : "") + items[i];
    }
    q += " FROM " + table;
    if (r.chance(50)) {
        q += " WHERE " + predicate(r, cols, r.range(0, 1));
    }
    if (n > 0) {
        q += " GROUP BY ";
        for (size_t i = 0; i < group_by.size(); i++) {
            q += (i ? ", " : "") + group_by[i];
        }
    }
    return q;
}

// SELECT keys, aggregates [, GROUPING(...)] FROM t [WHERE p] GROUP BY
// <grouping sets> [HAVING h]: every key selected, no set twice.
std::string random_grouping_sets_query(Rng& r, const std::string& table,
                                       const std::vector<Column>& cols) {
    std::vector<std::string> keys, refs, items;
    const int n = r.range(1, 3);
    const bool by_ordinal = r.chance(25);
    for (int tries = 0; static_cast<int>(keys.size()) < n && tries < 20; tries++) {
        std::string k = grouping_sets_key(r, r.pick(cols));
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
            items.push_back(k + " AS k" + std::to_string(keys.size()));
            refs.push_back(by_ordinal ? std::to_string(keys.size() + 1) : k);
            keys.push_back(k);
        }
    }
    for (int i = r.range(1, 3); i > 0; i--) {
        std::string a = r.chance(70) ? aggregate(r, r.pick(cols), cols)
                                     : algebraic_aggregate(r, r.pick(cols), cols);
        items.push_back(a + " AS a" + std::to_string(i));
    }
    auto grouping = [&] { return grouping_call(r, keys); };
    if (r.chance(40)) {
        items.push_back(grouping() + " AS g");
    }
    std::string q = "SELECT ";
    for (size_t i = 0; i < items.size(); i++) {
        q += (i ? ", " : "") + items[i];
    }
    q += " FROM " + table;
    if (r.chance(50)) {
        q += " WHERE " + predicate(r, cols, r.range(0, 1));
    }
    q += " GROUP BY " + grouping_sets_clause(r, refs);
    if (r.chance(35)) {
        const std::string& k = r.pick(keys);
        q += r.pick(std::vector<std::string>{
            " HAVING count(*) > 1", " HAVING " + grouping() + " > 0 OR count(*) > 2",
            " HAVING " + k + " IS NULL OR count(*) < 3",
            " HAVING " + aggregate(r, r.pick(cols), cols) + " IS NOT NULL"});
    }
    return q;
}

// A plain projection, its WHERE in `where`% of the queries.
std::string random_projection(Rng& r, const std::string& table, const std::vector<Column>& cols,
                              const std::vector<std::string>& items, int where) {
    std::string q = "SELECT ";
    for (size_t i = 0; i < items.size(); i++) {
        q += (i ? ", " : "") + items[i];
    }
    q += " FROM " + table;
    if (r.chance(where)) {
        q += " WHERE " + predicate(r, cols, r.range(0, 2));
    }
    return q;
}

// Grouping sets (18%), an algebraic aggregate query (35% of the rest),
// else grouped with any aggregate (30%), SELECT DISTINCT (15% of the rest),
// a UNION ALL of two or three projections of the table (12% of the rest:
// the same select list, each arm its own WHERE; one arm's NULLs instead of
// a column sometimes; a third of them counted over), or a plain
// projection.
std::string random_query(Rng& r, const std::string& table, const std::vector<Column>& cols) {
    if (r.chance(18)) {
        return random_grouping_sets_query(r, table, cols);
    }
    if (r.chance(35)) {
        return random_algebraic_query(r, table, cols);
    }
    if (r.chance(30)) {
        return random_grouped_query(r, table, cols);
    }
    if (r.chance(15)) {
        return random_distinct_query(r, table, cols);
    }
    std::vector<std::string> items;
    std::set<std::string> plain;
    int n = r.range(1, 4);
    for (int i = 0; i < n; i++) {
        const Column& c = r.pick(cols);
        if (r.chance(35) && plain.insert(c.name).second) {
            items.push_back(c.name);
        } else {
            items.push_back(projection(r, c, cols) + " AS e" + std::to_string(i));
        }
    }
    if (!r.chance(12)) {
        return random_projection(r, table, cols, items, 80);
    }
    std::string q = random_projection(r, table, cols, items, 70);
    for (int arm = r.range(1, 2); arm > 0; arm--) {
        std::vector<std::string> other = items;
        if (r.chance(20)) {
            other[static_cast<size_t>(r.range(0, static_cast<int>(other.size()) - 1))] = "NULL";
        }
        q += " UNION ALL " + random_projection(r, table, cols, other, 85);
    }
    if (r.chance(65)) {
        return q;
    }
    // Counted over the union (one row, kept algebraically): its columns are
    // the first arm's names.
    const std::string& last = items.back();
    const std::size_t as = last.rfind(" AS ");
    const std::string col = as == std::string::npos ? last : last.substr(as + 4);
    return "SELECT count(*) AS n, count(" + col + ") AS c FROM (" + q + ") u" +
           (r.chance(50) ? " WHERE " + col + " IS NOT NULL" : "");
}

// --- sources and their DML --------------------------------------------------
// No column is named s or q: the oracle aliases its subqueries so, and
// `s::text` would then read the column instead of the whole row.

struct Source {
    std::string table;
    std::string setup;  // CREATE TABLE and the first rows
    std::vector<Column> columns;
    std::function<std::string(Rng&)> statement;  // one random DML statement
};

// Keyed by an int primary key; ids stay in [0, 299]. A key change maps ids
// through a bijection and skips rows whose target exists, so it never
// violates the key.
Source keyed_source() {
    Source s;
    s.table = "p_keyed";
    s.setup =
        "CREATE TABLE p_keyed (id int PRIMARY KEY, v int, w int, label text);"
        "INSERT INTO p_keyed SELECT g, g % 17, CASE WHEN g % 5 = 0 THEN NULL ELSE g % 11 END,"
        " (ARRAY['a', 'ab', 'Abc', NULL, 'b'])[g % 5 + 1] FROM generate_series(0, 99) g";
    s.columns = {{"id", Kind::Int}, {"v", Kind::Int}, {"w", Kind::Int}, {"label", Kind::Text}};
    s.statement = [](Rng& r) -> std::string {
        switch (r.range(0, 9)) {
            case 0:
            case 1: {
                std::string rows;
                for (int id : distinct_keys(r, r.range(1, 4), 299)) {
                    rows += (rows.empty() ? "(" : ", (") + std::to_string(id) + ", " +
                            int_lit(r, -5, 60) + ", " + int_lit(r, 0, 20) + ", " + text_lit(r) +
                            ")";
                }
                return "INSERT INTO p_keyed VALUES " + rows +
                       (r.chance(50) ? " ON CONFLICT (id) DO NOTHING"
                                     : " ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v, "
                                       "label = EXCLUDED.label");
            }
            case 2:
                return "UPDATE p_keyed SET v = " + int_lit(r, -5, 60) +
                       " WHERE id % 10 = " + r.num(0, 9);
            case 3:
                return "UPDATE p_keyed SET label = " + text_lit(r) +
                       ", w = w + 1 WHERE id BETWEEN " + r.num(0, 280) + " AND " + r.num(0, 299);
            case 4: {
                std::string k = r.num(1, 299);
                std::string lo = r.num(0, 299);
                return "UPDATE p_keyed SET id = (id + " + k + ") % 300 WHERE id BETWEEN " + lo +
                       " AND " + lo + " + " + r.num(0, 20) + " AND (id + " + k +
                       ") % 300 NOT IN (SELECT id FROM p_keyed)";
            }
            case 5:
                return "UPDATE p_keyed SET v = v, label = label WHERE id < " +
                       r.num(0, 300);  // no-op
            case 6:
                return "DELETE FROM p_keyed WHERE id % " + r.num(5, 20) + " = " + r.num(0, 4) +
                       " AND coalesce(v, 0) > " + r.num(0, 30);
            case 7:
                return "DELETE FROM p_keyed WHERE id = " + r.num(0, 299);
            case 8: {
                std::string id = r.num(0, 299);
                return "DELETE FROM p_keyed WHERE id = " + id + "; INSERT INTO p_keyed VALUES (" +
                       id + ", " + int_lit(r, -5, 60) + ", 1, " + text_lit(r) + ")";
            }
            default:
                return "UPDATE p_keyed SET w = NULL, v = v + 1 WHERE label IS NOT DISTINCT FROM " +
                       text_lit(r);
        }
    };
    return s;
}

// Composite key (a int, b text); a stays in [0, 39], b in five values.
Source composite_source() {
    Source s;
    s.table = "p_comp";
    s.setup =
        "CREATE TABLE p_comp (a int, b text, v int, n numeric(10,2), PRIMARY KEY (a, b));"
        "INSERT INTO p_comp SELECT g % 40, (ARRAY['x', 'y', 'z', 'w', 'q'])[g / 40 + 1],"
        " CASE WHEN g % 7 = 0 THEN NULL ELSE g % 23 END, g * 1.25 FROM generate_series(0, 119) g";
    s.columns = {{"a", Kind::Int}, {"b", Kind::Text}, {"v", Kind::Int}, {"n", Kind::Numeric}};
    static const std::vector<std::string> bs = {"'x'", "'y'", "'z'", "'w'", "'q'"};
    s.statement = [](Rng& r) -> std::string {
        switch (r.range(0, 8)) {
            case 0:
            case 1: {
                std::string rows;
                for (int key : distinct_keys(r, r.range(1, 4), 199)) {
                    rows += (rows.empty() ? "(" : ", (") + std::to_string(key % 40) + ", " +
                            bs[static_cast<size_t>(key / 40)] + ", " + int_lit(r, -5, 60) + ", " +
                            numeric_lit(r) + ")";
                }
                return "INSERT INTO p_comp VALUES " + rows +
                       (r.chance(50) ? " ON CONFLICT (a, b) DO NOTHING"
                                     : " ON CONFLICT (a, b) DO UPDATE SET v = EXCLUDED.v");
            }
            case 2: {
                std::string k = r.num(1, 39);
                std::string lo = r.num(0, 39);
                return "UPDATE p_comp c SET a = (a + " + k + ") % 40 WHERE a BETWEEN " + lo +
                       " AND " + lo + " + " + r.num(0, 5) +
                       " AND NOT EXISTS (SELECT 1 FROM p_comp d WHERE d.a = (c.a + " + k +
                       ") % 40 AND d.b = c.b)";
            }
            case 3: {
                const std::string rotate =
                    "CASE c.b WHEN 'x' THEN 'y' WHEN 'y' THEN 'z' WHEN 'z' THEN 'w' WHEN 'w' "
                    "THEN 'q' ELSE 'x' END";
                return "UPDATE p_comp c SET b = " + rotate + " WHERE a % 8 = " + r.num(0, 7) +
                       " AND NOT EXISTS (SELECT 1 FROM p_comp d WHERE d.a = c.a AND d.b = " +
                       rotate + ")";
            }
            case 4:
                return "UPDATE p_comp SET v = " + int_lit(r, -5, 60) + ", n = " + numeric_lit(r) +
                       " WHERE b = " + r.pick(bs) + " AND a < " + r.num(0, 40);
            case 5:
                return "UPDATE p_comp SET n = n + 1 WHERE v IS NULL OR v > " + r.num(0, 60);
            case 6:
                return "DELETE FROM p_comp WHERE a = " + r.num(0, 39) + " OR (b = " + r.pick(bs) +
                       " AND v < " + r.num(0, 20) + ")";
            case 7:
                return "UPDATE p_comp SET v = v WHERE a < 20";  // no-op
            default:
                return "DELETE FROM p_comp WHERE a = " + r.num(0, 39) + " AND b = " + r.pick(bs);
        }
    };
    return s;
}

// No key: exact duplicates and NULLs; single rows are addressed by ctid.
Source keyless_source() {
    Source s;
    s.table = "p_keyless";
    s.setup =
        "CREATE TABLE p_keyless (x int, y text, z numeric(8,2));"
        "INSERT INTO p_keyless SELECT CASE WHEN g % 9 = 0 THEN NULL ELSE g % 6 END,"
        " (ARRAY['a', 'b', NULL])[g % 3 + 1], CASE WHEN g % 4 = 0 THEN NULL ELSE g % 5 END"
        " FROM generate_series(0, 59) g";
    s.columns = {{"x", Kind::Int}, {"y", Kind::Text}, {"z", Kind::Numeric}};
    s.statement = [](Rng& r) -> std::string {
        auto x = [&] { return int_lit(r, 0, 9, 12); };
        auto y = [&] {
            return r.pick(std::vector<std::string>{"'a'", "'b'", "NULL", "'O''Brien'"});
        };
        auto z = [&] { return r.chance(15) ? std::string("NULL") : r.num(0, 5); };
        std::string one =
            "(SELECT ctid FROM p_keyless WHERE x IS NOT DISTINCT FROM " + x() + " LIMIT 1)";
        switch (r.range(0, 9)) {
            case 0:
            case 1: {
                std::string row = "(" + x() + ", " + y() + ", " + z() + ")";
                std::string rows = row;
                for (int i = r.range(0, 3); i > 0; i--) {
                    rows += ", " + (r.chance(60) ? row : "(" + x() + ", " + y() + ", " + z() + ")");
                }
                return "INSERT INTO p_keyless VALUES " + rows;
            }
            case 2:
                return "INSERT INTO p_keyless SELECT x, y, z FROM p_keyless WHERE x IS NOT "
                       "DISTINCT "
                       "FROM " +
                       x() + " AND (SELECT count(*) FROM p_keyless) < 300";
            case 3:
                return "DELETE FROM p_keyless WHERE ctid = " + one;
            case 4:
                return "DELETE FROM p_keyless WHERE x IS NOT DISTINCT FROM " + x();
            case 5:
                return "UPDATE p_keyless SET y = " + y() + " WHERE ctid = " + one;
            case 6:
                return "UPDATE p_keyless SET z = z + 1 WHERE y IS NOT DISTINCT FROM " + y();
            case 7:
                return "UPDATE p_keyless SET x = x WHERE x = " + r.num(0, 9);  // no-op
            case 8:
                return "UPDATE p_keyless SET x = " + x() + ", y = " + y() +
                       " WHERE x IS NOT DISTINCT FROM " + x();
            default:
                return "DELETE FROM p_keyless WHERE ctid IN (SELECT ctid FROM p_keyless WHERE y "
                       "IS NOT DISTINCT FROM " +
                       y() + " ORDER BY ctid LIMIT " + r.num(1, 5) + ")";
        }
    };
    return s;
}

// text / numeric / timestamptz columns, keyed by an int in [0, 199].
Source typed_source() {
    Source s;
    s.table = "p_typed";
    s.setup =
        "CREATE TABLE p_typed (id int PRIMARY KEY, t text, n numeric(12,3), ts timestamptz);"
        "INSERT INTO p_typed SELECT g, CASE WHEN g % 6 = 0 THEN NULL ELSE 'v' || g % 13 END,"
        " CASE WHEN g % 7 = 0 THEN NULL ELSE (g * 37 % 200 - 50) / 3.0 END,"
        " CASE WHEN g % 8 = 0 THEN NULL ELSE '2026-01-01 00:00:00+00'::timestamptz"
        " + g * interval '2 days 3 hours' END FROM generate_series(0, 79) g";
    s.columns = {{"id", Kind::Int}, {"t", Kind::Text}, {"n", Kind::Numeric}, {"ts", Kind::Ts}};
    s.statement = [](Rng& r) -> std::string {
        switch (r.range(0, 8)) {
            case 0:
            case 1: {
                std::string rows;
                for (int id : distinct_keys(r, r.range(1, 3), 199)) {
                    rows += (rows.empty() ? "(" : ", (") + std::to_string(id) + ", " +
                            lit(r, Kind::Text) + ", " + lit(r, Kind::Numeric) + ", " +
                            lit(r, Kind::Ts) + ")";
                }
                return "INSERT INTO p_typed VALUES " + rows +
                       " ON CONFLICT (id) DO UPDATE SET t = EXCLUDED.t, n = EXCLUDED.n, "
                       "ts = EXCLUDED.ts";
            }
            case 2:
                return "UPDATE p_typed SET n = -n, ts = ts + interval '1 day' WHERE id % 9 = " +
                       r.num(0, 8);
            case 3:
                return "UPDATE p_typed SET t = " + lit(r, Kind::Text) + " WHERE ts < " +
                       ts_lit(r, 0);
            case 4: {
                std::string k = r.num(1, 199);
                std::string lo = r.num(0, 199);
                return "UPDATE p_typed SET id = (id + " + k + ") % 200 WHERE id BETWEEN " + lo +
                       " AND " + lo + " + " + r.num(0, 10) + " AND (id + " + k +
                       ") % 200 NOT IN (SELECT id FROM p_typed)";
            }
            case 5:
                return "UPDATE p_typed SET n = " + lit(r, Kind::Numeric) +
                       ", ts = " + lit(r, Kind::Ts) + " WHERE id = " + r.num(0, 199);
            case 6:
                return "DELETE FROM p_typed WHERE n > " + numeric_lit(r, 0) +
                       " AND id % 4 = " + r.num(0, 3);
            case 7:
                return "UPDATE p_typed SET ts = ts WHERE id % 3 = 0";  // no-op
            default:
                return "DELETE FROM p_typed WHERE ts IS NULL AND id % 5 = " + r.num(0, 4);
        }
    };
    return s;
}

// --- the property -----------------------------------------------------------

// How a batch of statements is committed.
enum class Wrap { Plain, Rollback, Savepoint, RefreshInside, Empty };

class DifferentialProperty : public DbTest {
protected:
    void run(const Source& src, uint64_t salt) {
        const uint64_t seed = property_seed();
        std::cout << "PGT_PROPERTY_SEED=" << seed << " (" << src.table << ")" << std::endl;
        const long total = static_cast<long>(env_u64("PGT_PROPERTY_CYCLES", 2000));
        const long cycles = std::max(1L, total / kSources);
        Rng r(seed * 0x9E3779B97F4A7C15ULL + salt);
        db->exec(src.setup);

        std::vector<StreamTable> sts;
        for (int i = 0; i < kStreamTablesPerSource; i++) {
            sts.push_back(create(r, src));
        }
        long done = 0;
        for (int batch = 0; done < cycles; batch++) {
            if (batch > 0 && batch % kReplaceEvery == 0) {
                auto& victim = sts[static_cast<size_t>(r.range(0, kStreamTablesPerSource - 1))];
                db->exec("SELECT pgtrickle.drop_stream_table($1)", {victim.name});
                victim = create(r, src);
            }
            done += cycle(r, src, sts, seed, batch);
            if (HasFailure()) {
                return;
            }
        }
        std::cout << src.table << ": " << done << " cycles, " << next_id_ << " stream tables ("
                  << algebraic_ << " algebraic, " << grouping_sets_ << " grouping sets, " << unions_
                  << " UNION ALL)" << std::endl;
    }

private:
    StreamTable create(Rng& r, const Source& src) {
        StreamTable st;
        st.name = "st_" + std::to_string(next_id_++);
        st.query = random_query(r, src.table, src.columns);
        try {
            db->exec("SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => $3)",
                     {st.name, st.query, refresh_mode()});
        } catch (const SqlError& e) {
            ADD_FAILURE() << "supported query rejected: " << st.query << "\n" << e.what();
            throw;
        }
        st.history_rows = 1;  // the initial FULL at creation
        algebraic_ += algebraic_storage(*db, st.name) ? 1 : 0;
        grouping_sets_ += grouping_set_storage(*db, st.name) ? 1 : 0;
        unions_ += st.query.find(" UNION ALL ") != std::string::npos ? 1 : 0;
        return st;
    }

    std::string batch_sql(Rng& r, const Source& src, Wrap wrap) {
        if (wrap == Wrap::Empty) {
            return "";
        }
        std::vector<std::string> stmts;
        for (int n = r.range(wrap == Wrap::Savepoint ? 3 : 1, 5); n > 0; n--) {
            stmts.push_back(src.statement(r));
        }
        std::string sql;
        for (size_t i = 0; i < stmts.size(); i++) {
            if (wrap == Wrap::Savepoint && i == 1) {
                sql += "SAVEPOINT sp; ";
            }
            sql += stmts[i] + "; ";
            if (wrap == Wrap::Savepoint && i == stmts.size() - 2) {
                sql += "ROLLBACK TO SAVEPOINT sp; ";
            }
        }
        switch (wrap) {
            case Wrap::Rollback:
                return "BEGIN; " + sql + "ROLLBACK";
            case Wrap::Savepoint:
                return "BEGIN; " + sql + "COMMIT";
            case Wrap::RefreshInside:
                return "BEGIN; " + sql;  // committed after the refresh
            default:
                return sql;
        }
    }

    static Wrap pick_wrap(Rng& r) {
        int p = r.range(0, 99);
        return p < 70   ? Wrap::Plain
               : p < 80 ? Wrap::Rollback
               : p < 88 ? Wrap::Savepoint
               : p < 94 ? Wrap::RefreshInside
                        : Wrap::Empty;
    }

    // One batch, the refreshes and the checks; returns the cycles it made.
    long cycle(Rng& r, const Source& src, std::vector<StreamTable>& sts, uint64_t seed, int batch) {
        Wrap wrap = pick_wrap(r);
        std::string sql = batch_sql(r, src, wrap);
        // Now and then one stream table sits a batch out (consumers at
        // their own pace); never inside the writing transaction.
        int skip = wrap != Wrap::RefreshInside && r.chance(15)
                       ? r.range(0, kStreamTablesPerSource - 1)
                       : -1;
        SCOPED_TRACE("PGT_PROPERTY_SEED=" + std::to_string(seed) + " batch " +
                     std::to_string(batch) + ": " + (sql.empty() ? "(no DML)" : sql));
        try {
            if (!sql.empty()) {
                db->exec(sql);
            }
        } catch (const SqlError& e) {
            ADD_FAILURE() << "the generated DML failed (a generator bug): " << e.what();
            return 0;
        }
        const bool changes = wrap != Wrap::Rollback && wrap != Wrap::Empty;
        long made = refresh_and_check(*db, sts, skip, changes, wrap == Wrap::RefreshInside);
        if (wrap == Wrap::RefreshInside) {
            db->exec("COMMIT");
        }
        return made;
    }

    int next_id_ = 0;
    int algebraic_ = 0;      // stream tables whose aggregates are kept algebraically
    int grouping_sets_ = 0;  // stream tables over GROUPING SETS, ROLLUP or CUBE
    int unions_ = 0;         // stream tables over a UNION ALL
};

TEST_F(DifferentialProperty, keyed_int_primary_key) {
    run(keyed_source(), 1);
}

TEST_F(DifferentialProperty, composite_key_int_text) {
    run(composite_source(), 2);
}

TEST_F(DifferentialProperty, keyless_with_duplicates_and_nulls) {
    run(keyless_source(), 3);
}

TEST_F(DifferentialProperty, text_numeric_timestamptz_columns) {
    run(typed_source(), 4);
}

}  // namespace
}  // namespace pgt::e2e
