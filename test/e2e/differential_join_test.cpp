// DIFFERENTIAL refresh of an inner join of two keyed tables, end to end:
// the seed's EC-01 cases (a join partner deleted while its match moves away,
// update-then-delete, both sides changed in one cycle), primary-key moves,
// what is rejected, and that unchanged output rows are not rewritten.
// Invariant: every refresh after a change is checked against the oracle and
// must have run DIFFERENTIAL (never a silent FULL).
#include <algorithm>
#include <cctype>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "fixture.hpp"

namespace pgt::e2e {
namespace {

// The stream table of most tests: orders with their customer.
const char* kOrdersWithCustomer =
    "SELECT o.id AS order_id, c.id AS cust_id, c.name, o.amount "
    "FROM orders o JOIN customers c ON c.id = o.cust";

// Many-to-many on a non-key column; NULL keys never match.
const char* kPairs = "SELECT a.id AS aid, b.id AS bid, a.x, b.y FROM a JOIN b ON a.k = b.k";

class DifferentialJoin : public DbTest {
protected:
    void SetUp() override {
        DbTest::SetUp();
        db->exec(
            "CREATE TABLE customers (id int PRIMARY KEY, name text, region text);"
            "INSERT INTO customers VALUES (10, 'ann', 'north'), (20, 'bob', 'south'),"
            " (30, 'cy', 'north');"
            "CREATE TABLE orders (id int PRIMARY KEY, cust int, amount int, note text);"
            "INSERT INTO orders VALUES (1, 10, 5, 'n1'), (2, 10, 7, NULL), (3, 20, 9, 'n3'),"
            " (4, NULL, 1, NULL), (5, 99, 2, NULL);"
            "CREATE TABLE a (id int PRIMARY KEY, k int, x text);"
            "INSERT INTO a VALUES (1, 1, 'a1'), (2, 1, 'a2'), (3, 2, 'a3'), (4, NULL, 'a4'),"
            " (5, 3, NULL);"
            "CREATE TABLE b (id int PRIMARY KEY, k int, y text);"
            "INSERT INTO b VALUES (1, 1, 'b1'), (2, 1, 'b2'), (3, 2, 'b3'), (4, NULL, 'b4'),"
            " (5, 4, 'b5')");
    }

    void create(const std::string& name, const std::string& query) {
        db->exec("SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => 'DIFFERENTIAL')",
                 {name, query});
        EXPECT_MATCHES_QUERY(*db, name);
    }
    // Refreshes st after a change: the oracle holds and the refresh was
    // DIFFERENTIAL.
    void refresh_and_check(const std::string& st) {
        refresh(st);
        EXPECT_MATCHES_QUERY(*db, st);
        EXPECT_EQ(last_action(st), "DIFFERENTIAL") << st;
    }
    // Creates prefix0.. for queries, then applies each change and refreshes
    // and checks every one (the oracle; DIFFERENTIAL, or NO_DATA when none
    // of its sources changed). Returns how often each refresh was
    // DIFFERENTIAL.
    std::vector<int> create_change_and_check(const std::string& prefix,
                                             const std::vector<std::string>& queries,
                                             const std::vector<std::string>& changes) {
        for (size_t i = 0; i < queries.size(); i++) {
            create(prefix + std::to_string(i), queries[i]);
        }
        std::vector<int> differential(queries.size(), 0);
        for (const std::string& change : changes) {
            SCOPED_TRACE(change);
            db->exec(change);
            for (size_t i = 0; i < queries.size(); i++) {
                SCOPED_TRACE(queries[i]);
                std::string st = prefix + std::to_string(i);
                refresh(st);
                EXPECT_MATCHES_QUERY(*db, st);
                std::string action = last_action(st);
                EXPECT_TRUE(action == "DIFFERENTIAL" || action == "NO_DATA") << action;
                differential[i] += action == "DIFFERENTIAL";
            }
        }
        return differential;
    }
    // The rows of st as "k1|k2|...", sorted, one per element.
    std::vector<std::string> rows(const std::string& st, const std::string& cols) {
        Result res = db->exec("SELECT concat_ws('|', " + cols + ") FROM " + st + " ORDER BY 1");
        std::vector<std::string> out;
        for (size_t i = 0; i < res.size(); i++) {
            out.push_back(res.at(i, 0));
        }
        return out;
    }
    // Physical version (ctid and xmin) of each row, by its two keys.
    std::map<std::string, std::string> versions(const std::string& st, const std::string& k1,
                                                const std::string& k2) {
        Result res =
            db->exec("SELECT " + k1 + " || ':' || " + k2 + ", ctid::text || xmin::text FROM " + st);
        std::map<std::string, std::string> out;
        for (size_t i = 0; i < res.size(); i++) {
            out[res.at(i, 0)] = res.at(i, 1);
        }
        return out;
    }
    // No output row appears twice (each (left, right) pair once).
    void expect_pairs_once(const std::string& st, const std::string& k1, const std::string& k2) {
        EXPECT_EQ(
            db->scalar("SELECT count(*) - count(DISTINCT (" + k1 + ", " + k2 + ")) FROM " + st),
            "0")
            << st << " holds a (left, right) pair more than once";
    }
};

// --- EC-01 ------------------------------------------------------------------

// Order 1 moves from customer 10 to 20 while customer 10 is deleted: the
// old (1, 10) row must go even though its partner no longer exists.
TEST_F(DifferentialJoin, ec01_join_key_change_while_old_partner_is_deleted) {
    create("s", kOrdersWithCustomer);
    db->exec(
        "BEGIN; UPDATE orders SET cust = 20 WHERE id = 1; DELETE FROM customers WHERE id = 10;"
        " COMMIT");
    refresh_and_check("s");
    EXPECT_EQ(rows("s", "order_id, cust_id, name, amount"),
              (std::vector<std::string>{"1|20|bob|5", "3|20|bob|9"}));

    // The mirror on the many-to-many pair, both directions in one cycle: a
    // moves off k = 1 while b's k = 1 rows are deleted, and b moves off k = 2
    // while a's k = 2 row is deleted.
    create("p", kPairs);
    db->exec(
        "BEGIN; UPDATE a SET k = 3 WHERE id = 1; DELETE FROM b WHERE k = 1;"
        " UPDATE b SET k = 4 WHERE id = 3; DELETE FROM a WHERE k = 2; COMMIT");
    refresh_and_check("p");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM p WHERE aid IN (1, 2, 3) OR bid IN (1, 2, 3)"), "0");
    refresh("s");  // s reads neither a nor b
    EXPECT_EQ(last("s"), "NO_DATA/0/0");
    EXPECT_MATCHES_QUERY(*db, "s");
}

TEST_F(DifferentialJoin, ec01_update_then_delete_in_one_cycle) {
    create("s", kOrdersWithCustomer);
    create("p", kPairs);
    // Separate transactions in one refresh window, then the same within one
    // transaction on the other side.
    db->exec("UPDATE orders SET amount = 50, cust = 30 WHERE id = 1");
    db->exec("DELETE FROM orders WHERE id = 1");
    db->exec(
        "BEGIN; UPDATE customers SET name = 'BOB', id = 21 WHERE id = 20;"
        " DELETE FROM customers WHERE id = 21; COMMIT");
    refresh_and_check("s");
    EXPECT_EQ(rows("s", "order_id, cust_id, name, amount"),
              (std::vector<std::string>{"2|10|ann|7"}));

    db->exec(
        "BEGIN; UPDATE a SET k = 2, x = 'moved' WHERE id = 1; DELETE FROM a WHERE id = 1;"
        " UPDATE b SET k = 3 WHERE id = 5; UPDATE b SET y = 'again' WHERE id = 5;"
        " DELETE FROM b WHERE id = 5; COMMIT");
    refresh_and_check("p");
    EXPECT_EQ(rows("p", "aid, bid"), (std::vector<std::string>{"2|1", "2|2", "3|3"}));
}

// New partners on both sides in one transaction: the pair is seen from the
// left delta and from the right delta, but appears once.
TEST_F(DifferentialJoin, ec01_both_sides_change_in_the_same_cycle_counted_once) {
    create("s", kOrdersWithCustomer);
    create("p", kPairs);
    db->exec(
        "BEGIN; INSERT INTO customers VALUES (40, 'dan', 'east');"
        " INSERT INTO orders VALUES (6, 40, 3, NULL), (7, 40, 4, NULL); COMMIT");
    refresh_and_check("s");
    EXPECT_EQ(rows("s", "order_id, cust_id"),
              (std::vector<std::string>{"1|10", "2|10", "3|20", "6|40", "7|40"}));
    expect_pairs_once("s", "order_id", "cust_id");

    // Many-to-many: two new rows on each side with a new key (2 x 2 pairs),
    // and a changed row on each side of an existing group.
    db->exec(
        "BEGIN; INSERT INTO a VALUES (10, 7, 'n1'), (11, 7, 'n2');"
        " INSERT INTO b VALUES (10, 7, 'm1'), (11, 7, 'm2');"
        " UPDATE a SET x = 'A1' WHERE id = 1; UPDATE b SET y = 'B1' WHERE id = 1; COMMIT");
    refresh_and_check("p");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM p WHERE aid IN (10, 11)"), "4");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM p WHERE aid = 1 AND bid = 1 AND x = 'A1' AND "
                         "y = 'B1'"),
              "1");
    expect_pairs_once("p", "aid", "bid");
}

TEST_F(DifferentialJoin, ec01_multi_cycle) {
    create("s", kOrdersWithCustomer);
    create("p", kPairs);
    create("f",
           "SELECT b.id AS bid, a.id AS aid, a.k, coalesce(a.x, b.y) AS xy FROM b, a "
           "WHERE a.k = b.k AND b.y IS NOT NULL");
    struct Cycle {
        std::string sql;
        bool pairs, orders;  // whether it changes a/b, orders/customers
    };
    const std::vector<Cycle> cycles = {
        {"INSERT INTO a VALUES (6, 4, 'a6'); UPDATE b SET k = 2 WHERE id = 2", true, false},
        {"BEGIN; UPDATE a SET k = NULL WHERE id = 3; DELETE FROM b WHERE id = 3;"
         " INSERT INTO b VALUES (3, 2, NULL); COMMIT",
         true, false},
        {"UPDATE a SET k = 4 WHERE k = 1; UPDATE b SET y = NULL WHERE id = 5", true, false},
        {"BEGIN; DELETE FROM a WHERE id = 6; INSERT INTO a VALUES (6, 1, 'again');"
         " UPDATE b SET k = 1 WHERE k IS NULL; COMMIT",
         true, false},
        {"UPDATE a SET id = id + 100 WHERE id < 3; UPDATE b SET id = id + 100 WHERE k = 1", true,
         false},
        {"BEGIN; UPDATE orders SET cust = 30 WHERE cust = 10; DELETE FROM customers WHERE id = 10;"
         " INSERT INTO customers VALUES (10, 'new ann', NULL); UPDATE orders SET cust = 10"
         " WHERE id = 4; COMMIT",
         false, true},
        {"BEGIN; SAVEPOINT sp; DELETE FROM a; ROLLBACK TO SAVEPOINT sp; UPDATE a SET x = 'sp'"
         " WHERE id = 5; UPDATE b SET k = 3 WHERE id = 4; COMMIT",
         true, false},
        {"DELETE FROM b; INSERT INTO b SELECT g, g % 5, 'g' || g FROM generate_series(1, 12) g;"
         " UPDATE customers SET name = upper(name); DELETE FROM orders WHERE id = 3",
         true, true},
    };
    for (size_t i = 0; i < cycles.size(); i++) {
        const Cycle& c = cycles[i];
        SCOPED_TRACE("cycle " + std::to_string(i) + ": " + c.sql);
        db->exec(c.sql);
        for (const char* st : {"s", "p", "f"}) {
            bool changed = std::string(st) == "s" ? c.orders : c.pairs;
            refresh(st);
            EXPECT_MATCHES_QUERY(*db, st);
            EXPECT_EQ(last_action(st), changed ? "DIFFERENTIAL" : "NO_DATA") << st;
        }
        expect_pairs_once("p", "aid", "bid");
        expect_pairs_once("f", "aid", "bid");
        expect_pairs_once("s", "order_id", "cust_id");
    }
    // A rolled-back cycle changes nothing.
    db->exec("BEGIN; DELETE FROM a; DELETE FROM b; DELETE FROM orders; ROLLBACK");
    for (const char* st : {"s", "p", "f"}) {
        refresh(st);
        EXPECT_MATCHES_QUERY(*db, st);
        EXPECT_EQ(last(st), "NO_DATA/0/0") << st;
    }
}

// --- primary keys -----------------------------------------------------------

TEST_F(DifferentialJoin, join_primary_key_update_on_either_side) {
    create("s", kOrdersWithCustomer);
    create("p", kPairs);
    db->exec("UPDATE orders SET id = 100 WHERE id = 1");
    refresh_and_check("s");
    EXPECT_EQ(rows("s", "order_id, cust_id"), (std::vector<std::string>{"100|10", "2|10", "3|20"}));

    // The right key is the join key: its orders lose their partner, and a
    // customer whose id becomes 99 gains order 5.
    db->exec(
        "UPDATE customers SET id = 50 WHERE id = 20; UPDATE customers SET id = 99 WHERE id = 30");
    refresh_and_check("s");
    EXPECT_EQ(rows("s", "order_id, cust_id, name"),
              (std::vector<std::string>{"100|10|ann", "2|10|ann", "5|99|cy"}));

    // Both sides in one transaction, with a swap of two ids on each side.
    db->exec(
        "BEGIN; UPDATE a SET id = 1000 WHERE id = 1; UPDATE a SET id = 1 WHERE id = 2;"
        " UPDATE a SET id = 2 WHERE id = 1000;"
        " UPDATE b SET id = 1000 WHERE id = 2; UPDATE b SET id = 2 WHERE id = 3;"
        " UPDATE b SET id = 3 WHERE id = 1000; UPDATE b SET id = 42, k = 2 WHERE id = 1; COMMIT");
    refresh_and_check("p");
    EXPECT_EQ(rows("p", "aid, bid, x, y"),
              (std::vector<std::string>{"1|3|a2|b2", "2|3|a1|b2", "3|2|a3|b3", "3|42|a3|b1"}));
    expect_pairs_once("p", "aid", "bid");

    // A key moved back and forth within the window nets to a content change.
    db->exec(
        "BEGIN; UPDATE a SET id = 7 WHERE id = 3; UPDATE a SET id = 3, x = 'back' WHERE id = 7;"
        " COMMIT");
    refresh_and_check("p");
}

// --- what is rejected -------------------------------------------------------

// Column alias lists (FROM t AS x(a, b)) on joined tables, one with a
// dropped column, and a USING on renamed columns: the branches read change
// images, which carry the tables' own column names, and the keyed join
// follows its key table by the table's column name. Each query once failed:
// the keyed join at creation (XX000), the others at their first refresh
// ("table x has 3 columns available but 4 columns specified").
TEST_F(DifferentialJoin, column_aliases_and_dropped_columns_on_joined_tables) {
    db->exec(
        "ALTER TABLE orders ADD COLUMN junk int; ALTER TABLE orders DROP COLUMN note;"
        "ALTER TABLE orders DROP COLUMN junk; ALTER TABLE orders ADD COLUMN note text;"
        "CREATE INDEX ON orders (cust)");
    const std::string oc = "orders AS o(oid, cid, amt) JOIN customers AS c(cid2, nm, reg)";
    std::vector<int> differential = create_change_and_check(
        "al",
        {"SELECT o.oid, c.nm, o.amt FROM " + oc + " ON c.cid2 = o.cid",
         "SELECT c.reg, count(*), sum(o.amt) FROM " + oc + " ON c.cid2 = o.cid GROUP BY c.reg",
         "SELECT o.oid, c.nm FROM " + oc +
             " ON c.cid2 = o.cid WHERE EXISTS (SELECT FROM a AS z(zi, zk) WHERE zk = o.amt)",
         "SELECT o.oid, c.nm, o.amt FROM orders AS o(oid, cid, amt) JOIN customers AS c(cid, nm) "
         "USING (cid)",
         "SELECT c.nm, sum(o.amt) FROM orders AS o(oid, cid, amt) JOIN customers AS c(cid, nm) "
         "USING (cid) GROUP BY c.nm",
         // A whole row tested for NULL is read from the images' row alike.
         "SELECT o.oid, c.nm FROM " + oc +
             " ON c.cid2 = o.cid WHERE o IS NOT NULL AND c IS NOT NULL"},
        {"UPDATE orders SET amount = amount + 1 WHERE id <= 2",
         "UPDATE orders SET cust = 30 WHERE id = 3; UPDATE customers SET name = 'bo' WHERE id = 20",
         "DELETE FROM orders WHERE id = 1; INSERT INTO orders VALUES (6, 20, 1, 'n6')",
         "UPDATE a SET k = 9 WHERE id = 3; INSERT INTO a VALUES (6, 7, 'a6')",
         "DELETE FROM customers WHERE id = 10; INSERT INTO customers VALUES (40, 'di', 'east')"});
    for (int d : differential) {
        EXPECT_GE(d, 3);
    }
}

TEST_F(DifferentialJoin, join_rejects_what_it_cannot_maintain) {
    struct Case {
        std::string query;
        std::string names;  // a word the message must contain ("" for any)
    };
    const std::vector<Case> cases = {
        {"SELECT a.id AS aid, b.id AS bid FROM a LEFT JOIN b ON a.k = b.k WHERE b.id IS NULL",
         "nullable side"},
        // (A lookup chain, ON o.cust = b.k, is maintained: a padded b pads o.)
        {"SELECT a.id AS aid, b.id AS bid, o.id AS oid FROM a LEFT JOIN b ON a.k = b.k "
         "LEFT JOIN orders o ON o.cust = coalesce(b.k, 0)",
         "nullable side"},
        {"SELECT a.id AS aid, o.id AS oid FROM a LEFT JOIN (b JOIN orders o ON o.cust = b.k) "
         "ON a.k = b.k",
         "not a single table"},
        {"SELECT a1.id AS i1 FROM a a1 JOIN a a2 ON a1.k = a2.k JOIN a a3 ON a2.k = a3.k "
         "JOIN b ON b.k = a3.k JOIN b b2 ON b2.k = b.k, (SELECT a.id FROM a, b, b b3, a a4) d",
         "more than 8 tables"},
        // (Joined on a grouping column it is maintained: region_grouped.cpp.)
        {"SELECT d.k, count(*) AS n FROM (SELECT k, count(*) AS c FROM a GROUP BY k) d JOIN b "
         "ON b.k = d.c GROUP BY d.k",
         "subquery in from"},
        {"SELECT a.id, d.y FROM a, LATERAL (SELECT y FROM b WHERE b.k = a.k) d", "lateral"},
        {"SELECT count(*) AS n FROM a JOIN b ON a.k = b.k GROUP BY a.id", "not in the select"},
        {"SELECT a.id, b.id AS bid FROM a JOIN b ON a.k = b.k WHERE random() > 0.5", "random"},
        {"SELECT a.id, (SELECT max(y) FROM b) AS m FROM a JOIN b ON a.k = b.k", "subquer"},
        // A table's whole row as a value: its change images are rows of its
        // columns, not of its row type (the refresh failed casting them).
        {"SELECT a, b.y FROM a JOIN b ON a.k = b.k", "whole row of \"public.a\""},
        {"SELECT row_to_json(b)::text AS j, a.id FROM a JOIN b ON a.k = b.k", "whole row"},
        {"SELECT a FROM a WHERE a.k > 1", "whole row"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.query);
        std::string before = state();
        SqlError e = db->error_of("SELECT pgtrickle.create_stream_table('x', $q$" + c.query +
                                  "$q$, refresh_mode => 'DIFFERENTIAL')");
        EXPECT_EQ(e.sqlstate, "0A000") << e.message;
        if (!c.names.empty()) {
            EXPECT_NE(lower(e.message).find(c.names), std::string::npos) << e.message;
        }
        EXPECT_EQ(state(), before) << "a rejected create left objects behind";
        EXPECT_EQ(db->scalar("SELECT count(*) FROM pg_class WHERE relname = 'x'"), "0");
        EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_stream_tables"), "0");
    }
}

// --- row versions -----------------------------------------------------------

TEST_F(DifferentialJoin, join_unchanged_rows_keep_their_row_version) {
    create("s", kOrdersWithCustomer);
    auto before = versions("s", "order_id", "cust_id");
    ASSERT_EQ(before.size(), 3u);

    // Columns that are not in the output: nothing is written.
    db->exec("UPDATE customers SET region = 'west'; UPDATE orders SET note = 'changed'");
    refresh("s");
    EXPECT_MATCHES_QUERY(*db, "s");
    std::string l = last("s");
    EXPECT_TRUE(l == "DIFFERENTIAL/0/0" || l == "NO_DATA/0/0") << l;
    EXPECT_EQ(versions("s", "order_id", "cust_id"), before);

    // One output column of one row: only that row gets a new version.
    db->exec("UPDATE orders SET amount = amount + 1 WHERE id = 2");
    refresh_and_check("s");
    auto after = versions("s", "order_id", "cust_id");
    ASSERT_EQ(after.size(), 3u);
    for (const auto& [key, version] : before) {
        if (key == "2:10") {
            EXPECT_NE(after[key], version) << key << " was not rewritten";
        } else {
            EXPECT_EQ(after[key], version) << key << " was rewritten";
        }
    }

    // A right-side output column: only the rows of that customer.
    before = after;
    db->exec("UPDATE customers SET name = 'BOB' WHERE id = 20");
    refresh_and_check("s");
    after = versions("s", "order_id", "cust_id");
    for (const auto& [key, version] : before) {
        if (key == "3:20") {
            EXPECT_NE(after[key], version) << key << " was not rewritten";
        } else {
            EXPECT_EQ(after[key], version) << key << " was rewritten";
        }
    }
}

// Equal values with another text form (numeric scale, float -0) are new
// values: the rows carrying them are rewritten, as the defining query shows.
TEST_F(DifferentialJoin, join_equal_values_with_another_text_form_are_rewritten) {
    db->exec(
        "CREATE TABLE m (id int PRIMARY KEY, k int, n numeric);"
        "INSERT INTO m VALUES (1, 1, 1.0), (2, 1, 2);"
        "CREATE TABLE f (id int PRIMARY KEY, k int, g float8);"
        "INSERT INTO f VALUES (1, 1, 0.0), (2, 1, 5)");
    create("e",
           "SELECT m.id AS mid, f.id AS fid, m.n, f.g, m.n * 1 AS n1 FROM m JOIN f ON m.k = f.k");
    db->exec("UPDATE m SET n = 1.00 WHERE id = 1");
    refresh_and_check("e");
    db->exec("UPDATE f SET g = '-0' WHERE id = 1");
    refresh_and_check("e");
    EXPECT_EQ(rows("e", "mid, fid, n, g"),
              (std::vector<std::string>{"1|1|1.00|-0", "1|2|1.00|5", "2|1|2|-0", "2|2|2|5"}));
}

// EC-01 for outer joins: a NULL-padded row appears exactly when a preserved
// row loses its last partner and disappears when it gains the first one,
// also when the partner moves in or out through its join key.
TEST_F(DifferentialJoin, left_join_null_padding_follows_the_last_and_first_partner) {
    create("lj",
           "SELECT c.id AS cust_id, c.name, o.id AS order_id, o.amount FROM customers c "
           "LEFT JOIN orders o ON o.cust = c.id");
    EXPECT_EQ(rows("lj", "cust_id, order_id"),
              (std::vector<std::string>{"10|1", "10|2", "20|3", "30"}));
    db->exec("DELETE FROM orders WHERE id = 3");  // 20 loses its only partner
    refresh_and_check("lj");
    EXPECT_EQ(count("SELECT 1 FROM lj WHERE cust_id = 20 AND order_id IS NULL"), 1);
    db->exec("UPDATE orders SET cust = 30 WHERE id = 2");  // 30 gains its first partner
    refresh_and_check("lj");
    EXPECT_EQ(count("SELECT 1 FROM lj WHERE cust_id = 30 AND order_id IS NULL"), 0);
    db->exec(
        "UPDATE orders SET cust = 20 WHERE id = 1; UPDATE orders SET cust = 20 WHERE id = 2;"
        " DELETE FROM customers WHERE id = 30; INSERT INTO customers VALUES (40, 'di', 'x')");
    refresh_and_check("lj");  // 10 padded, 20 two partners, 30 gone, 40 padded
    EXPECT_EQ(rows("lj", "cust_id, order_id"),
              (std::vector<std::string>{"10", "20|1", "20|2", "40"}));
    db->exec("UPDATE orders SET cust = 40 WHERE id = 5");  // an unmatched order finds a partner
    refresh_and_check("lj");
    EXPECT_EQ(count("SELECT 1 FROM lj WHERE cust_id = 40 AND order_id = 5"), 1);
}

TEST_F(DifferentialJoin, right_join_with_where_on_the_preserved_side) {
    create("rj",
           "SELECT o.id AS order_id, c.id AS cust_id, c.region FROM orders o RIGHT JOIN "
           "customers c ON o.cust = c.id WHERE c.region <> 'south'");
    db->exec(
        "UPDATE customers SET region = 'south' WHERE id = 30;"
        " UPDATE customers SET region = 'west' WHERE id = 20; DELETE FROM orders WHERE id = 1");
    refresh_and_check("rj");
    db->exec("INSERT INTO orders VALUES (6, 30, 1, NULL), (7, 20, 1, NULL)");
    refresh_and_check("rj");
}

// --- join regions: more tables, no keys, GROUP BY, DISTINCT ----------------

// Sales by region over orders and customers: EC-01 with the grouping key on
// the side whose row is deleted. Order 1 moves from customer 10 (north) to
// 20 (south) while 10 is deleted, in one transaction: north must lose the
// order although no current row leads from it to north any more.
TEST_F(DifferentialJoin, region_ec01_group_key_from_the_deleted_partner) {
    create("g",
           "SELECT c.region, count(*) AS n, sum(o.amount) AS total, min(o.amount) AS lo "
           "FROM orders o JOIN customers c ON c.id = o.cust GROUP BY c.region");
    db->exec(
        "BEGIN; UPDATE orders SET cust = 20 WHERE id = 1; DELETE FROM customers WHERE id = 10;"
        "COMMIT");
    refresh_and_check("g");
    EXPECT_EQ(rows("g", "region, n, total, lo"), (std::vector<std::string>{"south|2|14|5"}));
    // Update then delete in one cycle; a group comes back in the next.
    db->exec("UPDATE customers SET region = 'east' WHERE id = 20; DELETE FROM orders WHERE id = 3");
    refresh_and_check("g");
    db->exec("INSERT INTO customers VALUES (10, 'ann', 'north'); UPDATE orders SET cust = 10");
    refresh_and_check("g");
    EXPECT_EQ(rows("g", "region, n"), (std::vector<std::string>{"north|4"}));
}

// Three tables, both the middle row and its partners deleted in one
// transaction, and every shape that has no two selected keys.
TEST_F(DifferentialJoin, region_three_tables_self_join_distinct_and_plain_rows) {
    const std::vector<std::string> queries = {
        // three tables, grouped by a column of the last one
        "SELECT b.y, count(*) AS n, string_agg(a.x, ',' ORDER BY a.x) AS xs FROM customers c "
        "JOIN orders o ON o.cust = c.id JOIN a ON a.k = o.amount % 3 JOIN b ON b.k = a.k "
        "GROUP BY b.y",
        // a self-join (comma form), no keys selected: rows are a multiset
        "SELECT a1.x AS x1, a2.x AS x2 FROM a a1, a a2 WHERE a1.k = a2.k",
        // DISTINCT over a join
        "SELECT DISTINCT a.k, b.y FROM a JOIN b ON a.k = b.k",
        // keys missing on one side, duplicates in the output
        "SELECT a.k, b.y FROM a JOIN b ON a.k = b.k",
        // HAVING over a join
        "SELECT a.k, count(*) AS n FROM a JOIN b ON a.k = b.k GROUP BY a.k HAVING count(*) > 1",
        // derived tables that are plain joins, nested
        "SELECT d.x, count(*) AS n, max(d.y) AS top FROM (SELECT a.x, b.y FROM a JOIN b ON a.k "
        "= b.k) d GROUP BY d.x",
        "SELECT e.y, e.cname FROM (SELECT b.y, d.cname FROM b, (SELECT c.name AS cname, o.amount "
        "FROM customers c JOIN orders o ON o.cust = c.id) d WHERE d.amount % 3 = b.k) e",
        // a derived table's conditions on one table filter its images
        "SELECT d.x, count(*) AS n, sum(d.id) AS s FROM (SELECT a.x, a.id, b.y FROM a JOIN b ON "
        "a.k = b.k WHERE a.id > 2 AND b.y IS NOT NULL) d GROUP BY d.x",
        "SELECT d.x, max(d.y) AS top FROM (SELECT a.x, b.y FROM a JOIN b ON a.k = b.k AND b.id "
        "BETWEEN 2 AND 5 WHERE a.x <> 'a2') d GROUP BY d.x",
        // aggregates without GROUP BY: exactly one row, also over no rows
        "SELECT count(*) AS n, sum(a.id) AS total, max(b.y) AS top FROM a JOIN b ON a.k = b.k",
        "SELECT count(*) AS n, string_agg(x, ',' ORDER BY x) AS xs FROM a",
        "SELECT count(*) AS n FROM a HAVING count(*) > 3",
    };
    const std::vector<std::string> changes = {
        "BEGIN; DELETE FROM orders WHERE cust = 10; DELETE FROM customers WHERE id = 10;"
        " UPDATE a SET k = 2 WHERE id = 1; DELETE FROM b WHERE k = 1 AND id = 1; COMMIT",
        "INSERT INTO a VALUES (6, 1, 'a6'), (7, 2, 'a2'); INSERT INTO b VALUES (6, 2, 'b3')",
        "UPDATE a SET k = NULL WHERE id = 3; UPDATE b SET y = NULL WHERE id = 2",
        "BEGIN; DELETE FROM a; INSERT INTO a VALUES (1, 1, 'z'); COMMIT",
        "BEGIN; INSERT INTO orders VALUES (9, 30, 1, NULL); UPDATE b SET k = 1;"
        " UPDATE a SET x = x || '!'; COMMIT",
        "DELETE FROM a",  // the aggregates without GROUP BY keep their one row
        "BEGIN; INSERT INTO a VALUES (8, 1, 'a8'), (9, 2, NULL); UPDATE orders SET amount = 3;"
        " UPDATE b SET y = 'b' WHERE id = 5; COMMIT",
    };
    std::vector<int> differential = create_change_and_check("r", queries, changes);
    for (size_t i = 0; i < queries.size(); i++) {
        EXPECT_GE(differential[i], 3) << queries[i];
    }
}

// Outer joins in a region: NULL-padded rows appear when the last partner
// goes and disappear with the first one, also when the partner moves in
// the same transaction as the preserved row changes.
TEST_F(DifferentialJoin, region_outer_joins_pad_with_the_last_and_first_partner) {
    const std::vector<std::string> queries = {
        "SELECT a.x, b.y FROM a LEFT JOIN b ON a.k = b.k",
        "SELECT b.y, a.x FROM a RIGHT JOIN b ON a.k = b.k WHERE b.id < 9",
        "SELECT c.region, count(o.id) AS n, sum(o.amount) AS total FROM customers c "
        "LEFT JOIN orders o ON o.cust = c.id GROUP BY c.region",
        "SELECT DISTINCT a.k, b.y, o.note FROM a JOIN orders o ON o.id = a.id LEFT JOIN b ON "
        "b.k = a.k LEFT JOIN customers c ON c.id = o.cust",
        "SELECT a.k, count(*) AS n, count(b.id) AS partners FROM a LEFT JOIN b ON a.k = b.k AND "
        "b.y <> 'b2' GROUP BY a.k",
    };
    const std::vector<std::string> changes = {
        "DELETE FROM b WHERE k = 1",            // last partners of k = 1 go
        "INSERT INTO b VALUES (11, 1, 'b11')",  // a first one comes back
        "BEGIN; UPDATE b SET k = 2 WHERE id = 11; UPDATE a SET k = 5 WHERE id = 3; COMMIT",
        "BEGIN; DELETE FROM customers WHERE id = 10; UPDATE orders SET cust = 30 WHERE id = 2;"
        " INSERT INTO customers VALUES (40, 'dee', 'west'); COMMIT",
        "BEGIN; UPDATE a SET k = NULL WHERE id = 1; DELETE FROM b WHERE k = 2; COMMIT",
        "BEGIN; INSERT INTO b VALUES (12, 5, 'b2'), (13, NULL, 'x'); UPDATE orders SET cust = 40;"
        " UPDATE a SET x = 'n' WHERE id = 2; COMMIT",
        "DELETE FROM orders",
    };
    (void)create_change_and_check("oj", queries, changes);
}

// The padded row of the old state is found although its partner exists
// now: the outer join is also read padded (ON false) in the branch over the
// other table's before-images. Found by the region property test (a stale
// (old, NULL) row stayed).
TEST_F(DifferentialJoin, region_outer_join_padding_from_before_a_first_partner) {
    db->exec(
        "CREATE TABLE pa (id int PRIMARY KEY, k int); CREATE TABLE pb (id int PRIMARY KEY, k int, "
        "j int); CREATE TABLE pd (id int PRIMARY KEY, m int, td text);"
        "INSERT INTO pa VALUES (1, 3); INSERT INTO pd VALUES (1, 3, 'old')");
    create("pj", "SELECT d.td, b.j FROM pa a LEFT JOIN pb b ON b.k = a.k JOIN pd d ON d.m = a.k");
    db->exec("BEGIN; UPDATE pd SET td = 'new'; INSERT INTO pb VALUES (1, 3, 7); COMMIT");
    refresh_and_check("pj");
    EXPECT_EQ(rows("pj", "td, j"), (std::vector<std::string>{"new|7"}));
    db->exec("BEGIN; UPDATE pd SET td = 'newer'; DELETE FROM pb; COMMIT");
    refresh_and_check("pj");
    EXPECT_EQ(rows("pj", "td, j"), (std::vector<std::string>{"newer"}));
}

// A region refresh that fails (division by zero in a recomputed group)
// changes nothing and leaves nothing behind: after the data is fixed the
// next refresh, in the same session and after a savepoint rollback,
// applies everything.
// A join region reads each buffer row once and splits it into its before-
// and after-image (diff::paired_images): rows that cross the pushed-down
// filter either way, come and go in one window, or change their join key,
// with and without a filter, as algebraic sums and plain rows, and from a
// table none of whose columns is read.
TEST_F(DifferentialJoin, region_images_come_from_one_pass_over_the_buffer) {
    db->exec(
        "CREATE TABLE ev (id int PRIMARY KEY, k int, d date, v numeric(8,2));"
        "CREATE TABLE kd (k int PRIMARY KEY, name text);"
        "INSERT INTO kd VALUES (1, 'one'), (2, 'two'), (3, 'three');"
        "INSERT INTO ev SELECT g, 1 + g % 3, date '2020-01-01' + g * 3, g * 1.25 "
        "FROM generate_series(1, 30) g");
    const std::string in_jan = "ev.d >= date '2020-01-15' AND ev.d < date '2020-02-15'";
    std::vector<std::string> queries{
        "SELECT kd.name, sum(ev.v) AS s, count(*) AS c FROM ev JOIN kd ON kd.k = ev.k WHERE " +
            in_jan + " GROUP BY kd.name",
        "SELECT ev.v, kd.name FROM ev, kd WHERE kd.k = ev.k AND " + in_jan,
        "SELECT kd.name, sum(ev.v) AS s FROM ev JOIN kd ON kd.k = ev.k GROUP BY kd.name",
        // no column of kd is read: its images have none
        "SELECT count(*) AS n, sum(ev.v) AS s FROM ev CROSS JOIN kd"};
    std::vector<std::string> changes{
        "INSERT INTO ev VALUES (31, 1, '2020-01-20', 1), (32, 2, '2020-03-01', 2)",
        // out -> in, in -> out, in -> in with a new value, out -> out
        "UPDATE ev SET d = '2020-01-16' WHERE id = 3;"
        " UPDATE ev SET d = '2020-05-01' WHERE id = 6;"
        " UPDATE ev SET v = v + 10 WHERE id = 7;"
        " UPDATE ev SET v = 0 WHERE id = 20",
        "BEGIN; INSERT INTO ev VALUES (33, 3, '2020-01-25', 5);"
        " UPDATE ev SET d = '2020-06-01' WHERE id = 33; UPDATE ev SET d = '2020-01-26' WHERE id = "
        "33; DELETE FROM ev WHERE id = 33; COMMIT",
        // a join key moves while its old partner goes (EC-01)
        "BEGIN; UPDATE ev SET k = 3 WHERE id = 8; DELETE FROM kd WHERE k = 2; COMMIT",
        "UPDATE kd SET name = 'uno' WHERE k = 1", "DELETE FROM ev WHERE id % 4 = 0",
        "INSERT INTO kd VALUES (2, 'deux')"};
    std::vector<int> differential = create_change_and_check("ip", queries, changes);
    for (std::size_t i = 0; i < queries.size(); i++) {
        EXPECT_EQ(differential[i], static_cast<int>(changes.size())) << queries[i];
        EXPECT_NE(
            db->scalar(
                  "SELECT delta_program::text FROM pgtrickle.pgt_stream_tables WHERE pgt_name = "
                  "$1",
                  {"ip" + std::to_string(i)})
                .find("__pgt_keep_old"),
            std::string::npos)
            << queries[i];
    }
}

TEST_F(DifferentialJoin, region_refresh_error_leaves_nothing_behind) {
    create("e",
           "SELECT a.k, sum(100 / b.id) AS q, count(*) AS n FROM a JOIN b ON a.k = b.k "
           "GROUP BY a.k");
    db->exec("INSERT INTO b VALUES (0, 1, 'zero')");
    SqlError err = db->error_of("SELECT pgtrickle.refresh_stream_table('e')");
    EXPECT_EQ(err.sqlstate, "22012") << err.message;
    db->exec("BEGIN; SAVEPOINT s");
    SqlError again = db->error_of("SELECT pgtrickle.refresh_stream_table('e')");
    EXPECT_EQ(again.sqlstate, "22012") << again.message;
    db->exec(
        "ROLLBACK TO SAVEPOINT s; UPDATE b SET id = 9 WHERE id = 0;"
        " SELECT pgtrickle.refresh_stream_table('e'); COMMIT");
    EXPECT_MATCHES_QUERY(*db, "e");
    EXPECT_EQ(last_action("e"), "DIFFERENTIAL");
}

// DISTINCT ON (k) keeps the first row per k in ORDER BY order: a change to
// any row of k can change which row that is, so k is the identity and the
// whole k is recomputed (here with a total ORDER BY, so the query itself is
// deterministic).
TEST_F(DifferentialJoin, region_distinct_on_follows_the_first_row_per_key) {
    const std::vector<std::string> queries = {
        "SELECT DISTINCT ON (a.k) a.k, a.id, a.x FROM a ORDER BY a.k, a.x DESC NULLS LAST, a.id",
        "SELECT DISTINCT ON (a.k, b.y) a.k, b.y, a.id AS aid, b.id AS bid FROM a JOIN b ON b.k = "
        "a.k ORDER BY a.k, b.y, b.id DESC, a.id",
        "SELECT DISTINCT ON (c.region) c.region, o.amount, o.id FROM customers c LEFT JOIN orders "
        "o ON o.cust = c.id ORDER BY c.region, o.amount DESC NULLS LAST, o.id",
    };
    const std::vector<std::string> changes = {
        "UPDATE a SET x = 'zz' WHERE id = 2",  // another row comes first for k = 1
        "DELETE FROM a WHERE id = 2",          // the first row goes
        "INSERT INTO a VALUES (7, 1, NULL), (8, 2, 'a3')",
        "BEGIN; UPDATE b SET id = 20 WHERE id = 2; UPDATE a SET k = 2 WHERE id = 1; COMMIT",
        "BEGIN; UPDATE orders SET amount = 99 WHERE id = 2; DELETE FROM orders WHERE id = 3; "
        "COMMIT",
        "DELETE FROM orders",
    };
    (void)create_change_and_check("don", queries, changes);
}

// Only the groups a change touches are written: the other rows keep their
// row version.
TEST_F(DifferentialJoin, region_untouched_groups_keep_their_row_version) {
    create("g",
           "SELECT c.region, c.name, sum(o.amount) AS total FROM orders o "
           "JOIN customers c ON c.id = o.cust GROUP BY c.region, c.name");
    auto before = versions("g", "region", "name");
    ASSERT_EQ(before.size(), 2u);
    db->exec("UPDATE orders SET amount = amount + 1 WHERE id = 3");
    refresh_and_check("g");
    auto after = versions("g", "region", "name");
    EXPECT_EQ(after["north:ann"], before["north:ann"]) << "an untouched group was rewritten";
    EXPECT_NE(after["south:bob"], before["south:bob"]);
}

// A table joined to only one other (a leaf of the join graph) has its
// images joined to that table first, in a derived table of their own
// (`__pgt_drive`), also inside a derived table of the query; the partner's
// own filter goes in with them. The fact table, joined to both others, is
// left to the planner. Every table changes, alone and together, with join
// keys and filtered values moving. With pg_trickle.drive_joins_from_changes
// off the statement has no such derived table.
TEST_F(DifferentialJoin, region_branch_starts_from_the_images_of_a_leaf_table) {
    db->exec(
        "CREATE TABLE dims (id int PRIMARY KEY, g text);"
        "INSERT INTO dims VALUES (1, 'g1'), (2, 'g2'), (3, NULL);"
        "CREATE TABLE parts (id int PRIMARY KEY, name text, w int);"
        "INSERT INTO parts VALUES (1, 'apple', 2), (2, 'avocado', 3), (3, 'banana', 5);"
        "CREATE TABLE facts (id int PRIMARY KEY, d int, p int, v int);"
        "INSERT INTO facts SELECT i, 1 + i % 3, 1 + i % 4, i FROM generate_series(1, 40) i");
    const std::string query =
        "SELECT x.g, x.yr, sum(x.amount) AS total, count(*) AS n "
        "FROM (SELECT dims.g, facts.v % 2 AS yr, facts.v * parts.w AS amount "
        "      FROM dims, facts, parts "
        "      WHERE facts.d = dims.id AND facts.p = parts.id AND parts.name LIKE 'a%') AS x "
        "GROUP BY x.g, x.yr";
    create("leaf", query);
    db->exec("SET pg_trickle.drive_joins_from_changes = off");
    create("leaf_off", query);
    db->exec("RESET pg_trickle.drive_joins_from_changes");
    EXPECT_EQ(
        db->scalar(
            "SELECT string_agg(pgt_name || ':' || (delta_program::text LIKE '%__pgt_drive%'), "
            "',' ORDER BY pgt_name) FROM pgtrickle.pgt_stream_tables"),
        "leaf:true,leaf_off:false");
    const std::vector<std::string> changes = {
        "UPDATE dims SET g = 'g9' WHERE id = 2",
        "UPDATE parts SET name = 'berry' WHERE id = 1",
        "UPDATE parts SET name = 'apricot', w = 7 WHERE id = 3",
        "UPDATE facts SET d = 3, p = 2 WHERE id % 5 = 0",
        "DELETE FROM dims WHERE id = 1; INSERT INTO dims VALUES (1, 'g1b'), (4, 'g4');"
        " UPDATE facts SET d = 4 WHERE id % 7 = 0",
        "DELETE FROM parts WHERE id = 2; UPDATE facts SET p = 2 WHERE id % 3 = 0;"
        " INSERT INTO parts VALUES (2, 'acorn', 11)",
        "DELETE FROM facts WHERE id % 4 = 1; UPDATE dims SET id = 5 WHERE id = 4",
    };
    for (const std::string& change : changes) {
        SCOPED_TRACE(change);
        db->exec(change);
        refresh_and_check("leaf");
        refresh_and_check("leaf_off");
    }
}

// A join whose every row derives from one row of one table, by that
// table's key (orders here; lines, by a two-column key): a refresh whose
// only changes are that table's takes each key's last event in its window
// and joins the after-images to the other tables as they are, so it never
// reads the key table (the general program reads the touched keys' rows
// from it). Keys that change, rows leaving and joining the join, a key
// deleted and inserted again, or inserted and deleted, in one window, rows
// a WHERE drops, outer joins and a change of another table (the general
// program) all stay exact.
TEST_F(DifferentialJoin, keyed_by_one_table_a_change_of_it_alone_reads_its_last_events) {
    db->exec(
        "CREATE TABLE lines (oid int, ln int, qty int, PRIMARY KEY (oid, ln));"
        "INSERT INTO lines VALUES (1, 1, 3), (1, 2, 4), (3, 1, 9), (4, 1, 1)");
    const std::vector<std::string> names = {"k_inner", "k_left", "k_north", "k_lines"};
    create(names[0],
           "SELECT o.id, c.name, o.amount FROM orders o JOIN customers c ON c.id = o.cust");
    create(names[1],
           "SELECT o.id, o.amount * 2 AS a2, c.name FROM orders o LEFT JOIN customers c ON c.id = "
           "o.cust WHERE o.note IS DISTINCT FROM 'x'");
    create(names[2],
           "SELECT o.id, o.note, c.name FROM orders o JOIN customers c ON c.id = o.cust WHERE "
           "c.region = 'north' AND o.amount > 1");
    create(names[3],
           "SELECT l.oid, l.ln, l.qty, o.amount FROM lines l JOIN orders o ON o.id = l.oid");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_stream_tables WHERE pgt_name LIKE "
                         "'k\\_%' AND delta_program ? 'key_rows'"),
              "4");
    EXPECT_NE(db->scalar("SELECT value FROM pgtrickle.explain_st('k_inner') WHERE property = "
                         "'delta_plan'")
                  .find("instead of the above, for a change of source 0 alone"),
              std::string::npos);
    auto reads = [&](const std::string& table) {
        return std::stol(db->scalar(
            "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_xact_user_tables "
            "WHERE relid = '" +
            table + "'::regclass"));
    };
    // Refreshes every stream table (the oracle; DIFFERENTIAL or NO_DATA);
    // `alone`: the tables whose stream tables must not read them.
    auto refresh_all = [&](const std::vector<std::pair<std::string, std::string>>& alone) {
        for (const std::string& st : names) {
            SCOPED_TRACE(st);
            db->exec("BEGIN");
            std::string table;
            for (const auto& [name, t] : alone) {
                table = name == st ? t : table;
            }
            const long before = table.empty() ? 0 : reads(table);
            refresh(st);
            if (!table.empty()) {
                EXPECT_EQ(reads(table), before) << "the refresh read " << table;
            }
            db->exec("COMMIT");
            EXPECT_MATCHES_QUERY(*db, st);
            const std::string action = last_action(st);
            EXPECT_TRUE(action == "DIFFERENTIAL" || action == "NO_DATA") << action;
        }
    };
    const std::vector<std::pair<std::string, std::string>> orders_alone = {
        {"k_inner", "orders"}, {"k_left", "orders"}, {"k_north", "orders"}};
    for (const char* change : {
             "UPDATE orders SET amount = amount + 1 WHERE id IN (1, 3)",
             "UPDATE orders SET id = id + 100 WHERE id = 2",
             "UPDATE orders SET cust = 30 WHERE id = 1",
             "UPDATE orders SET cust = 99 WHERE id = 3",
             "UPDATE orders SET cust = 10, note = 'x' WHERE id = 5",
             "INSERT INTO orders VALUES (6, 20, 4, 'x'), (7, NULL, 3, NULL), (8, 30, 1, 'y')",
             "DELETE FROM orders WHERE id = 6; INSERT INTO orders VALUES (6, 30, 8, NULL)",
             "INSERT INTO orders VALUES (9, 10, 1, NULL); DELETE FROM orders WHERE id = 9",
             "UPDATE orders SET note = 'x' WHERE id = 1; UPDATE orders SET note = NULL WHERE id "
             "= 5",
             "BEGIN; UPDATE orders SET amount = 0; SAVEPOINT s; DELETE FROM orders; ROLLBACK TO "
             "s; UPDATE orders SET id = 200 WHERE id = 4; COMMIT",
             "UPDATE orders SET id = 9 WHERE id = 7; UPDATE orders SET id = 7 WHERE id = 102; "
             "UPDATE orders SET amount = 5 WHERE id IN (7, 9)",
         }) {
        SCOPED_TRACE(change);
        db->exec(change);
        refresh_all(orders_alone);
    }
    for (const char* change : {
             "UPDATE customers SET name = 'zed' WHERE id = 10",
             "UPDATE customers SET region = 'south' WHERE id = 30; UPDATE orders SET amount = 50 "
             "WHERE id = 8",
             "INSERT INTO lines VALUES (200, 1, 2), (6, 1, 5); UPDATE lines SET ln = ln + 10 WHERE "
             "oid = 1",
             "UPDATE orders SET amount = 77 WHERE id = 1",
         }) {
        SCOPED_TRACE(change);
        db->exec(change);
        refresh_all({});
    }
    db->exec("DELETE FROM lines WHERE qty > 4; UPDATE lines SET oid = 9 WHERE oid = 3");
    refresh_all({{"k_lines", "lines"}});
}

// The same join under random batches, mostly of the key table alone (a
// fixed seed): each batch is one to four statements in one transaction,
// sometimes with a savepoint rolled back; value, join-key and key
// updates, inserts, deletes, a key deleted and inserted again; every
// fifth batch also writes the other table. Oracle after every refresh.
TEST_F(DifferentialJoin, keyed_by_one_table_random_batches_of_it_alone) {
    db->exec(
        "INSERT INTO orders SELECT g, 10 * (1 + g % 4), g % 9, CASE WHEN g % 3 = 0 THEN 'x' END "
        "FROM generate_series(6, 60) g");
    const std::vector<std::string> names = {"r_inner", "r_left", "r_three"};
    create(names[0],
           "SELECT o.id, c.name, o.amount FROM orders o JOIN customers c ON c.id = o.cust");
    create(names[1],
           "SELECT o.id, o.amount, c.region FROM orders o LEFT JOIN customers c ON c.id = o.cust "
           "WHERE o.note IS NULL OR o.amount > 4");
    create(names[2],
           "SELECT o.id, c.name, o2.y AS twin FROM orders o JOIN customers c ON c.id = "
           "o.cust LEFT JOIN b o2 ON o2.id = o.amount");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pgtrickle.pgt_stream_tables WHERE pgt_name LIKE "
                         "'r\\_%' AND delta_program ? 'key_rows'"),
              "3");
    std::mt19937 rng(20261204);
    auto num = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    auto id = [&] { return std::to_string(num(1, 80)); };
    auto cust = [&] {
        const int c = num(0, 5);
        return c == 0 ? std::string("NULL") : std::to_string(c * 10);
    };
    auto statement = [&]() -> std::string {
        switch (num(0, 6)) {
            case 0:
                return "UPDATE orders SET amount = " + std::to_string(num(0, 9)) + " WHERE id % " +
                       std::to_string(num(2, 9)) + " = " + std::to_string(num(0, 1));
            case 1:
                return "UPDATE orders SET cust = " + cust() + " WHERE id = " + id();
            case 2: {  // a key moves away, or back
                const bool away = num(0, 1) == 0;
                const std::string from = away ? id() : std::to_string(1000 + num(1, 80));
                const std::string to = away ? "o.id + 1000" : "o.id - 1000";
                return "UPDATE orders o SET id = " + to + " WHERE o.id = " + from +
                       " AND NOT EXISTS (SELECT FROM orders p WHERE p.id = " + to + ")";
            }
            case 3:
                return "INSERT INTO orders VALUES (" + id() + ", " + cust() + ", " +
                       std::to_string(num(0, 9)) +
                       ", NULL) ON CONFLICT (id) DO UPDATE SET cust = "
                       "excluded.cust";
            case 4:
                return "DELETE FROM orders WHERE id = " + id();
            case 5: {
                const std::string k = id();
                return "DELETE FROM orders WHERE id = " + k + "; INSERT INTO orders VALUES (" + k +
                       ", " + cust() + ", 7, 'x') ON CONFLICT DO NOTHING";
            }
            default:
                return "UPDATE orders SET note = CASE WHEN note IS NULL THEN 'x' END WHERE id = " +
                       id();
        }
    };
    for (int batch = 0; batch < 60 && !HasFailure(); batch++) {
        std::string sql = "BEGIN; ";
        for (int n = num(1, 4); n > 0; n--) {
            sql += statement() + "; ";
        }
        if (num(0, 3) == 0) {
            sql += "SAVEPOINT s; " + statement() + "; ROLLBACK TO s; ";
        }
        if (batch % 5 == 4) {
            sql += "UPDATE customers SET name = name || '.' WHERE id = " + cust() + "; ";
        }
        sql += "COMMIT";
        SCOPED_TRACE(sql);
        db->exec(sql);
        for (const std::string& st : names) {
            SCOPED_TRACE(st);
            refresh(st);
            EXPECT_MATCHES_QUERY(*db, st);
            const std::string action = last_action(st);
            EXPECT_TRUE(action == "DIFFERENTIAL" || action == "NO_DATA") << action;
        }
    }
}

// One backend refreshes twice: after 1 changed row per table, then after
// 1,500. The second refresh's statement must be planned for its own
// image counts (PostgreSQL reads a registered relation's row count when
// it analyzes a statement, so a statement kept from the first refresh
// would plan 3,000 images as 2: nested loops over both, 62 s instead of
// 0.15 s at TPC-H SF 1). auto_explain shows the plan's estimate.
TEST_F(DifferentialJoin, each_refresh_is_planned_for_its_own_change_counts) {
    db->exec(
        "CREATE TABLE ja (id int PRIMARY KEY, k int, v int);"
        "CREATE TABLE jb (id int PRIMARY KEY, k int, w int);"
        "INSERT INTO ja SELECT g, g % 50, g % 7 FROM generate_series(1, 2000) g;"
        "INSERT INTO jb SELECT g, g % 50, g % 11 FROM generate_series(1, 2000) g;"
        "ANALYZE ja, jb");
    create("jsum",
           "SELECT a.k, count(*) AS n, sum(b.w) AS s FROM ja a JOIN jb b ON a.k = b.k "
           "GROUP BY a.k");
    db->exec("UPDATE ja SET v = v + 1 WHERE id = 1; UPDATE jb SET w = w + 1 WHERE id = 1");
    refresh_and_check("jsum");
    db->exec("UPDATE ja SET v = v + 1 WHERE id <= 1500; UPDATE jb SET w = w + 1 WHERE id <= 1500");
    db->exec(
        "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0;"
        "SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = notice");
    db->notices.clear();
    refresh("jsum");
    db->exec("SET auto_explain.log_min_duration = -1");
    long most = -1;  // the largest row estimate of an image relation's scan
    for (const std::string& n : db->notices) {
        for (std::size_t at = n.find("Named Tuplestore Scan"); at != std::string::npos;
             at = n.find("Named Tuplestore Scan", at + 1)) {
            std::size_t rows = n.find("rows=", at);
            if (rows != std::string::npos) {
                most = std::max(most, std::stol(n.substr(rows + 5)));
            }
        }
    }
    EXPECT_GE(most, 1000) << "the images of 1,500 changed rows per table were planned as at most "
                          << most << " rows";
    EXPECT_MATCHES_QUERY(*db, "jsum");
    EXPECT_EQ(last_action("jsum"), "DIFFERENTIAL");
}

}  // namespace
}  // namespace pgt::e2e
