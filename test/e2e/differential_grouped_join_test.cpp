// Grouped derived tables joined on their whole GROUP BY key — a dbt model's
// WITH query with GROUP BY joined back to its parent — maintained as the
// correlated subqueries of one group each (src/pg/analyze/grouped_join.cpp).
// Invariant: after every round of random changes each stream table equals
// its query, and the refresh that ran was the one asserted.
#include <random>
#include <string>
#include <vector>

#include "construct_cases.hpp"

namespace pgt::e2e {
namespace {

const char* kSchema =
    "CREATE TABLE customers (customer_id int PRIMARY KEY, name text, region text);"
    "CREATE TABLE orders (id int PRIMARY KEY, customer_id int, amount int, status text);"
    "CREATE TABLE payments (id int PRIMARY KEY, order_id int, customer_id int, amount int);"
    "CREATE INDEX ON orders (customer_id); CREATE INDEX ON payments (customer_id);"
    "CREATE INDEX ON payments (order_id);"
    "INSERT INTO customers SELECT g, 'c' || g, (ARRAY['eu', 'us', NULL])[g % 3 + 1] "
    "FROM generate_series(1, 60) g;"
    "INSERT INTO orders SELECT g, g % 70, g % 23, (ARRAY['new', 'paid', 'sent'])[g % 3 + 1] "
    "FROM generate_series(1, 240) g;"
    "INSERT INTO payments SELECT g, g % 250, g % 65, g % 13 FROM generate_series(1, 200) g";

const std::vector<ConstructCase> kCases = {
    // jaffle_shop's customers model: two grouped WITH queries, LEFT JOIN USING.
    {"jaffle",
     "WITH customer_orders AS (SELECT customer_id, min(id) AS first_order, max(id) AS "
     "last_order, count(*) AS number_of_orders FROM orders GROUP BY customer_id), "
     "customer_payments AS (SELECT customer_id, sum(amount) AS total_amount FROM payments "
     "GROUP BY customer_id) SELECT customers.customer_id, customers.name, "
     "customer_orders.first_order, customer_orders.last_order, "
     "coalesce(customer_orders.number_of_orders, 0) AS number_of_orders, "
     "customer_payments.total_amount AS customer_lifetime_value FROM customers LEFT JOIN "
     "customer_orders USING (customer_id) LEFT JOIN customer_payments USING (customer_id)"},
    {"inner_where_on_aggregate",
     "SELECT c.customer_id, c.region, t.total FROM customers c JOIN (SELECT customer_id, "
     "sum(amount) AS total FROM orders WHERE status <> 'new' GROUP BY customer_id) t ON "
     "t.customer_id = c.customer_id WHERE t.total > 20"},
    {"two_keys_self",
     "SELECT o.id, o.amount, s.cnt, s.top FROM orders o JOIN (SELECT customer_id, status, "
     "count(*) AS cnt, max(amount) AS top FROM orders GROUP BY customer_id, status) s ON "
     "s.customer_id = o.customer_id AND s.status = o.status"},
    {"expression_key",
     "SELECT c.customer_id, b.n, b.bucket FROM customers c LEFT JOIN (SELECT customer_id % 10 "
     "AS bucket, count(DISTINCT status) AS n FROM orders GROUP BY customer_id % 10) b ON "
     "b.bucket = c.customer_id % 10"},
    {"key_read_and_grouped_outer",
     "SELECT c.region, count(co.customer_id) AS with_orders, sum(co.n) AS orders FROM "
     "customers c LEFT JOIN (SELECT customer_id, count(*) AS n FROM orders GROUP BY "
     "customer_id) co ON co.customer_id = c.customer_id GROUP BY c.region"},
    // (A WITH query's column list survives the lowerings' deparse: the
    // derived table left in the subquery keeps the names it is read by.)
    {"anti_join_and_scalar_over_groups",
     "WITH t (k, n) AS (SELECT customer_id, count(*) FROM orders GROUP BY customer_id) SELECT "
     "c.customer_id FROM customers c LEFT JOIN payments p ON p.customer_id = c.customer_id "
     "WHERE p.customer_id IS NULL AND c.customer_id > (SELECT min(t.n) FROM t)"},
    {"join_inside",
     "SELECT c.customer_id, p.paid FROM customers c JOIN (SELECT o.customer_id, sum(p.amount) "
     "AS paid FROM orders o JOIN payments p ON p.order_id = o.id GROUP BY o.customer_id) p "
     "ON p.customer_id = c.customer_id"},
};

class DifferentialGroupedJoin : public ConstructTest {
protected:
    const char* schema() const override { return kSchema; }

    void change(std::mt19937& rng, int round) {
        std::uniform_int_distribution<int> id(1, 240), cust(1, 75), small(0, 30);
        const std::string r = std::to_string(round);
        db->exec("INSERT INTO orders VALUES (1000 + $1, $2, $3, 'new')",
                 {r, std::to_string(cust(rng)), std::to_string(small(rng))});
        db->exec("UPDATE orders SET amount = $2, customer_id = $3, status = 'sent' WHERE id = $1",
                 {std::to_string(id(rng)), std::to_string(small(rng)), std::to_string(cust(rng))});
        db->exec("DELETE FROM orders WHERE customer_id = $1", {std::to_string(cust(rng))});
        db->exec(
            "INSERT INTO payments VALUES (1000 + $1, $2, $3, $4)",
            {r, std::to_string(id(rng)), std::to_string(cust(rng)), std::to_string(small(rng))});
        db->exec("DELETE FROM payments WHERE id = $1 OR order_id = $2",
                 {std::to_string(id(rng)), std::to_string(id(rng))});
        db->exec("UPDATE customers SET region = 'us', name = name || '+' WHERE customer_id = $1",
                 {std::to_string(cust(rng))});
        db->exec("INSERT INTO customers VALUES (200 + $1, 'n', 'eu')", {r});
        db->exec("DELETE FROM customers WHERE customer_id = $1", {std::to_string(cust(rng))});
    }
};

TEST_F(DifferentialGroupedJoin, grouped_derived_tables_joined_on_their_key_differentially) {
    run_cases(kCases, "DIFFERENTIAL", [&](std::mt19937& rng, int round) { change(rng, round); });
}

TEST_F(DifferentialGroupedJoin, grouped_derived_tables_joined_on_their_key_immediately) {
    run_cases(kCases, "IMMEDIATE", [&](std::mt19937& rng, int round) { change(rng, round); });
}

// Joins that do not name one group per row keep their derived table (AUTO
// recomputes them): part of the key, another ON condition, HAVING, a
// cross-type equality (not the grouping one).
TEST_F(DifferentialGroupedJoin, joins_that_do_not_name_one_group_stay) {
    const std::vector<std::string> kept = {
        "SELECT o.id, s.cnt FROM orders o JOIN (SELECT customer_id, status, count(*) AS cnt "
        "FROM orders GROUP BY customer_id, status) s ON s.customer_id = o.customer_id",
        "SELECT c.customer_id, t.n FROM customers c LEFT JOIN (SELECT customer_id, count(*) AS "
        "n FROM orders GROUP BY customer_id) t ON t.customer_id = c.customer_id AND t.n > 3",
        "SELECT c.customer_id, t.n FROM customers c LEFT JOIN (SELECT customer_id, count(*) AS "
        "n FROM orders GROUP BY customer_id HAVING count(*) > 3) t ON t.customer_id = "
        "c.customer_id",
        "SELECT c.customer_id, t.n FROM customers c JOIN (SELECT customer_id::int8 AS k, "
        "count(*) AS n FROM orders GROUP BY 1) t ON t.k = c.customer_id",
    };
    expect_recomputed(kept, "UPDATE orders SET customer_id = 5 WHERE id < 30");
}

}  // namespace
}  // namespace pgt::e2e
