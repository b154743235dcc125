// Refreshes of a grouped derived table joined on a key (TPC-H q15), whose
// recompute is narrowed inside to the touched keys, read the query as
// written, in one pass, when they touch more keys than
// ir::kWholeQueryKeys and than the stream table has rows: PostgreSQL plans
// the narrowed query for a few keys, an index probe each
// (ir::JoinRegion::whole_query). An IN subquery narrowed by a key column
// (TPC-H q18) keeps its narrowed query for any number of keys.
// Invariant: after every round, touching every key, a few or most, each
// stream table equals its query and the refresh ran DIFFERENTIAL.
#include <random>
#include <string>
#include <vector>

#include "construct_cases.hpp"

namespace pgt::e2e {
namespace {

const char* kSchema =
    "CREATE TABLE customers (customer_id int PRIMARY KEY, name text);"
    "CREATE TABLE orders (id int PRIMARY KEY, customer_id int, amount int);"
    "CREATE INDEX ON orders (customer_id);"
    "INSERT INTO customers SELECT g, 'c' || g FROM generate_series(1, 3000) g;"
    "INSERT INTO orders SELECT g, g % 3000 + 1, g % 97 FROM generate_series(1, 9000) g";

const std::vector<ConstructCase> kCases = {
    // TPC-H q15's shape: every total compared with the top one.
    {"top_customer",
     "WITH rev AS (SELECT customer_id, sum(amount) AS total FROM orders GROUP BY customer_id) "
     "SELECT c.customer_id, c.name, r.total FROM customers c, rev r WHERE c.customer_id = "
     "r.customer_id AND r.total = (SELECT max(total) FROM rev)"},
    {"every_customer",
     "SELECT c.customer_id, t.n FROM customers c LEFT JOIN (SELECT customer_id, count(*) AS n "
     "FROM orders GROUP BY customer_id) t ON t.customer_id = c.customer_id"},
    // TPC-H q18's shape: a few large groups, found through IN (narrowed).
    {"large_customers",
     "SELECT c.customer_id, c.name FROM customers c WHERE c.customer_id IN (SELECT "
     "o.customer_id FROM orders o GROUP BY o.customer_id HAVING sum(o.amount) > 200)"},
};

class DifferentialWholeQuery : public ConstructTest {
protected:
    const char* schema() const override { return kSchema; }
};

TEST_F(DifferentialWholeQuery, many_touched_keys_read_the_query_in_one_pass) {
    for (const char* mode : {"DIFFERENTIAL", "IMMEDIATE"}) {
        SCOPED_TRACE(mode);
        std::vector<ConstructCase> cases;
        std::vector<std::string> names;
        for (const ConstructCase& k : kCases) {
            names.push_back(std::string(k.name) + "_" + mode);
        }
        for (std::size_t i = 0; i < kCases.size(); i++) {
            cases.push_back({names[i].c_str(), kCases[i].query});
        }
        run_cases(
            cases, mode,
            [&](std::mt19937&, int round) {
                // Every customer's orders, then a few, then most.
                const char* which[] = {"true", "id % 500 = 7", "id % 3 <> 0"};
                db->exec(
                    std::string("UPDATE orders SET amount = (amount + 7 + id % 5) % 97 WHERE ") +
                    which[round % 3]);
            },
            3);
    }
}

}  // namespace
}  // namespace pgt::e2e
