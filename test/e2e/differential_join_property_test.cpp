// Property test for DIFFERENTIAL refresh of an inner join of two keyed
// tables: random join conditions (equi, equi plus a filter, non-equi, comma
// form), projections and predicates over both sides, random DML batches on
// both sides in one transaction (join-key and primary-key changes, delete and
// reinsert, a partner deleted while its match moves away — seed EC-01),
// rollbacks and savepoints; a refresh and the oracle after each batch.
// Invariant: the printed seed decides everything; PGT_PROPERTY_SEED replays it.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "fixture.hpp"
#include "property_check.hpp"
#include "property_gen.hpp"

namespace pgt::e2e {
namespace {

using namespace property;  // NOLINT(google-build-using-namespace)

// A cycle is one (DML batch, refresh, oracle) for one stream table.
// PGT_PROPERTY_CYCLES is the total of this file's test.
constexpr long kDefaultCycles = 600;
constexpr int kStreamTables = 4;
constexpr int kReplaceEvery = 30;  // batches between replacing one stream table
constexpr int kIds = 200;          // ids stay in [0, kIds - 1]
constexpr int kJoinKeys = 7;       // join keys k stay in [0, kJoinKeys - 1] or NULL

// --- the two sources --------------------------------------------------------
// No column is named s or q (the oracle aliases its subqueries so).

struct Side {
    std::string table, alias;  // jl l / jr r
    std::string value, text;   // the int and text payload columns
};

const Side kLeft{"jl", "l", "v", "t"};
const Side kRight{"jr", "r", "w", "u"};

const char* kSetup =
    "CREATE TABLE jl (id int PRIMARY KEY, k int, v int, t text);"
    "INSERT INTO jl SELECT g, CASE WHEN g % 9 = 0 THEN NULL ELSE g % 7 END,"
    " CASE WHEN g % 5 = 0 THEN NULL ELSE g % 13 END,"
    " (ARRAY['a', 'ab', 'Abc', NULL, 'b'])[g % 5 + 1] FROM generate_series(0, 59) g;"
    "CREATE TABLE jr (id int PRIMARY KEY, k int, w int, u text);"
    "INSERT INTO jr SELECT g, CASE WHEN g % 8 = 0 THEN NULL ELSE g * 3 % 7 END,"
    " CASE WHEN g % 6 = 0 THEN NULL ELSE g % 11 END,"
    " (ARRAY['x y', NULL, 'a', 'O''Brien', 'B'])[g % 5 + 1] FROM generate_series(0, 59) g";

std::vector<Column> join_columns() {
    std::vector<Column> cols;
    for (const Side* s : {&kLeft, &kRight}) {
        cols.push_back({s->alias + ".id", Kind::Int});
        cols.push_back({s->alias + ".k", Kind::Int});
        cols.push_back({s->alias + "." + s->value, Kind::Int});
        cols.push_back({s->alias + "." + s->text, Kind::Text});
    }
    return cols;
}

std::string key_lit(Rng& r) {
    return int_lit(r, 0, kJoinKeys - 1, 12);
}

std::string row_values(Rng& r, const std::string& id, const std::string& k) {
    return "(" + id + ", " + k + ", " + int_lit(r, -5, 60) + ", " + text_lit(r) + ")";
}

// One statement (possibly two, `;`-separated) on one side.
std::string side_statement(Rng& r, const Side& s) {
    const std::string& tb = s.table;
    const std::string n = std::to_string(kIds);
    switch (r.range(0, 13)) {
        case 0:
        case 1: {
            std::string rows;
            for (int id : distinct_keys(r, r.range(1, 3), kIds - 1)) {
                rows += (rows.empty() ? "" : ", ") + row_values(r, std::to_string(id), key_lit(r));
            }
            return "INSERT INTO " + tb + " VALUES " + rows +
                   (r.chance(50) ? " ON CONFLICT (id) DO NOTHING"
                                 : " ON CONFLICT (id) DO UPDATE SET k = EXCLUDED.k, " + s.value +
                                       " = EXCLUDED." + s.value);
        }
        case 2:
            return "UPDATE " + tb + " SET " + s.value + " = " + int_lit(r, -5, 60) +
                   " WHERE id % 10 = " + r.num(0, 9);
        case 3:
            return "UPDATE " + tb + " SET " + s.text + " = " + text_lit(r) + ", " + s.value +
                   " = " + s.value + " + 1 WHERE id BETWEEN " + r.num(0, kIds - 1) + " AND " +
                   r.num(0, kIds - 1);
        case 4:  // one row's join key
            return "UPDATE " + tb + " SET k = " + key_lit(r) + " WHERE id = " + r.num(0, 70);
        case 5:  // a whole join group moves
            return "UPDATE " + tb + " SET k = " + key_lit(r) + " WHERE k IS NOT DISTINCT FROM " +
                   key_lit(r) + " AND id % 3 = " + r.num(0, 2);
        case 6:
            return "UPDATE " + tb + " SET k = (k + " + r.num(1, kJoinKeys - 1) + ") % " +
                   std::to_string(kJoinKeys) + " WHERE id % 7 = " + r.num(0, 6);
        case 7: {  // primary key moves (a bijection; targets that exist are skipped)
            std::string d = r.num(1, kIds - 1);
            std::string lo = r.num(0, 70);
            std::string also_k = r.chance(40) ? ", k = " + key_lit(r) : "";
            return "UPDATE " + tb + " SET id = (id + " + d + ") % " + n + also_k +
                   " WHERE id BETWEEN " + lo + " AND " + lo + " + " + r.num(0, 10) + " AND (id + " +
                   d + ") % " + n + " NOT IN (SELECT id FROM " + tb + ")";
        }
        case 8:
            return "DELETE FROM " + tb + " WHERE id = " + r.num(0, 70);
        case 9:
            return "DELETE FROM " + tb + " WHERE id % " + r.num(5, 20) + " = " + r.num(0, 4) +
                   " AND coalesce(" + s.value + ", 0) > " + r.num(0, 30);
        case 10: {  // delete and reinsert the same id, usually with another join key
            std::string id = r.num(0, 70);
            return "DELETE FROM " + tb + " WHERE id = " + id + "; INSERT INTO " + tb + " VALUES " +
                   row_values(r, id, key_lit(r));
        }
        case 11:  // no-op
            return "UPDATE " + tb + " SET k = k, " + s.value + " = " + s.value + " WHERE id < " +
                   r.num(0, kIds);
        case 12:  // join key and payload of one row
            return "UPDATE " + tb + " SET k = " + key_lit(r) + ", " + s.text + " = " + text_lit(r) +
                   " WHERE id = " + r.num(0, 70);
        default:
            return "DELETE FROM " + tb + " WHERE k IS NOT DISTINCT FROM " + key_lit(r) +
                   " AND id % 4 = " + r.num(0, 3);
    }
}

// Statements that change both sides together.
std::string cross_statement(Rng& r) {
    bool left_moves = r.chance(50);
    const Side& a = left_moves ? kLeft : kRight;
    const Side& b = left_moves ? kRight : kLeft;
    std::string k1 = r.num(0, kJoinKeys - 1);
    switch (r.range(0, 3)) {
        case 0:  // EC-01: a row leaves k1 while k1's partners are deleted
            return "UPDATE " + a.table + " SET k = " + key_lit(r) + " WHERE k = " + k1 +
                   " AND id % 2 = " + r.num(0, 1) + "; DELETE FROM " + b.table +
                   " WHERE k = " + k1 + " AND id % 3 = " + r.num(0, 2);
        case 1:  // the partners of one row are deleted
            return "DELETE FROM " + b.table + " WHERE k IN (SELECT k FROM " + a.table +
                   " WHERE id = " + r.num(0, 70) + ")";
        case 2: {  // new partners on both sides
            std::string k = key_lit(r);
            return "INSERT INTO " + a.table + " VALUES " + row_values(r, r.num(0, kIds - 1), k) +
                   " ON CONFLICT (id) DO NOTHING; INSERT INTO " + b.table + " VALUES " +
                   row_values(r, r.num(0, kIds - 1), k) + " ON CONFLICT (id) DO NOTHING";
        }
        default:  // one row takes another side's row's key
            return "UPDATE " + a.table + " SET k = (SELECT k FROM " + b.table +
                   " ORDER BY id LIMIT 1 OFFSET " + r.num(0, 40) + ") WHERE id = " + r.num(0, 70);
    }
}

std::string random_statement(Rng& r) {
    int p = r.range(0, 99);
    return p < 42   ? side_statement(r, kLeft)
           : p < 84 ? side_statement(r, kRight)
                    : cross_statement(r);
}

// --- queries ----------------------------------------------------------------

// Atoms that compare the two sides or use the join key's small domain (the
// shared atoms' constants mostly miss it).
std::string join_atom(Rng& r) {
    const std::string k = r.num(0, kJoinKeys);
    const std::string side = r.chance(50) ? "l" : "r";
    return r.pick(std::vector<std::string>{
        side + ".k = " + k, side + ".k <> " + k, side + ".k IS NULL", side + ".k >= " + k,
        side + ".k IN (" + k + ", " + r.num(0, kJoinKeys) + ")", "l.v > r.w", "l.t = r.u",
        "l.t IS NOT DISTINCT FROM r.u", "coalesce(l.v, 0) + coalesce(r.w, 0) > " + r.num(0, 30),
        "l.id < r.id", "l.id % 3 = r.id % 3", "l.v IS NULL OR r.w IS NULL",
        "length(coalesce(l.t, r.u)) > " + r.num(0, 3)});
}

// A predicate over both sides: shared atoms, join atoms, or both.
std::string join_predicate(Rng& r, const std::vector<Column>& cols, int depth) {
    switch (r.range(0, 4)) {
        case 0:
        case 1:
            return join_atom(r);
        case 2:
            return "(" + join_atom(r) + (r.chance(50) ? " AND " : " OR ") +
                   predicate(r, cols, std::max(0, depth - 1)) + ")";
        case 3:
            return "NOT (" + join_atom(r) + ")";
        default:
            return predicate(r, cols, depth);
    }
}

std::string join_condition(Rng& r, const std::vector<Column>& cols) {
    int p = r.range(0, 99);
    if (p < 45) {
        return r.chance(50) ? "l.k = r.k" : "r.k = l.k";
    }
    if (p < 70) {
        return "l.k = r.k AND " + join_predicate(r, cols, r.range(0, 1));
    }
    if (p < 82) {
        return "l.k < r.k";
    }
    if (p < 90) {
        return "r.k = l.k + 1";
    }
    if (p < 95) {
        return "l.k IS NOT DISTINCT FROM r.k";
    }
    return "abs(l.k - r.k) <= 1 AND l.v IS DISTINCT FROM r.w";
}

// An expression over both sides.
std::string cross_projection(Rng& r) {
    return r.pick(std::vector<std::string>{
        "l.v + r.w", "coalesce(l.t, r.u)", "(l.k = r.k)", "l.t || r.u", "greatest(l.v, r.w)",
        "CASE WHEN l.v > r.w THEN l.t ELSE r.u END", "l.id * 1000 + r.id", "r.k - l.k"});
}

// SELECT <both keys and 1-3 expressions, in random order> FROM jl l JOIN jr r
// ON ... [WHERE ...], or the comma form.
std::string random_join_query(Rng& r) {
    const std::vector<Column> cols = join_columns();
    std::vector<std::string> items;
    bool plain_left_id = r.chance(20);
    items.push_back(plain_left_id ? "l.id" : "l.id AS lid");
    items.push_back("r.id AS rid");
    for (int i = 0, n = r.range(1, 3); i < n; i++) {
        std::string alias = " AS e" + std::to_string(i);
        int p = r.range(0, 99);
        if (p < 20) {
            items.push_back(r.pick(cols).name + alias);
        } else if (p < 40) {
            items.push_back(cross_projection(r) + alias);
        } else {
            items.push_back(projection(r, r.pick(cols), cols) + alias);
        }
    }
    for (size_t i = items.size() - 1; i > 0; i--) {  // the keys anywhere
        std::swap(items[i], items[static_cast<size_t>(r.range(0, static_cast<int>(i)))]);
    }
    std::string q = "SELECT ";
    for (size_t i = 0; i < items.size(); i++) {
        q += (i ? ", " : "") + items[i];
    }
    std::string cond = join_condition(r, cols);
    bool left_first = r.chance(70);
    std::string from = left_first ? "jl l" : "jr r";
    std::string other = left_first ? "jr r" : "jl l";
    bool filtered = r.chance(55);
    std::string where = filtered ? join_predicate(r, cols, r.range(0, 2)) : "";
    if (r.chance(30)) {  // LEFT or RIGHT JOIN; WHERE reads only the preserved side
        bool left = r.chance(50);
        std::string kept = (left ? from : other).substr(3);  // "l" or "r"
        std::vector<Column> kept_cols;
        for (const Column& c : cols) {
            if (c.name.rfind(kept + ".", 0) == 0) {
                kept_cols.push_back(c);
            }
        }
        q += " FROM " + from + (left ? " LEFT JOIN " : " RIGHT JOIN ") + other + " ON " + cond;
        return filtered ? q + " WHERE " + predicate(r, kept_cols, r.range(0, 2)) : q;
    }
    if (r.chance(25)) {
        q += " FROM " + from + ", " + other + " WHERE " + cond;
        return filtered ? q + " AND (" + where + ")" : q;
    }
    q += " FROM " + from + (r.chance(30) ? " INNER JOIN " : " JOIN ") + other + " ON " + cond;
    return filtered ? q + " WHERE " + where : q;
}

// --- the property -----------------------------------------------------------

class DifferentialJoinProperty : public DbTest {
protected:
    void run(uint64_t salt) {
        const uint64_t seed = property_seed();
        std::cout << "PGT_PROPERTY_SEED=" << seed << " (jl JOIN jr)" << std::endl;
        const long cycles =
            std::max(1L, static_cast<long>(env_u64("PGT_PROPERTY_CYCLES", kDefaultCycles)));
        Rng r(seed * 0x9E3779B97F4A7C15ULL + salt);
        db->exec(kSetup);

        std::vector<StreamTable> sts;
        for (int i = 0; i < kStreamTables; i++) {
            sts.push_back(create(r));
        }
        long done = 0;
        for (int batch = 0; done < cycles && !HasFailure(); batch++) {
            if (batch > 0 && batch % kReplaceEvery == 0) {
                auto& victim = sts[static_cast<size_t>(r.range(0, kStreamTables - 1))];
                db->exec("SELECT pgtrickle.drop_stream_table($1)", {victim.name});
                victim = create(r);
            }
            done += cycle(r, sts, seed, batch);
        }
        std::cout << "jl JOIN jr: " << done << " cycles" << std::endl;
    }

private:
    StreamTable create(Rng& r) {
        std::string name = "sj_" + std::to_string(next_id_++);
        return create_checked(*db, name, random_join_query(r));
    }

    // 1-6 statements on both tables in one transaction.
    static std::string batch_sql(Rng& r, Wrap wrap) {
        if (wrap == Wrap::Empty) {
            return "";
        }
        std::vector<std::string> stmts;
        for (int n = r.range(wrap == Wrap::Savepoint ? 3 : 1, 6); n > 0; n--) {
            stmts.push_back(random_statement(r));
        }
        return wrap_statements(stmts, wrap);
    }

    // One batch, the refreshes and the checks; returns the cycles it made.
    long cycle(Rng& r, std::vector<StreamTable>& sts, uint64_t seed, int batch) {
        Wrap wrap = pick_wrap(r);
        std::string sql = batch_sql(r, wrap);
        return run_batch(*db, r, sts, seed, batch, wrap, sql,
                         [&](const std::string& q) { db->exec(q); });
    }

    int next_id_ = 0;
};

TEST_F(DifferentialJoinProperty, inner_join_of_two_keyed_tables) {
    run(11);
}

}  // namespace
}  // namespace pgt::e2e
