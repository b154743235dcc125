// The C++/PostgreSQL error bridges, exercised through test-only functions
// of the loaded module (declared here, never by the extension script).
// Invariant: a PostgreSQL error that crossed C++ frames reaches the client
// exactly as PostgreSQL raised it, and C++ destructors ran on the way.
#include <fstream>
#include <iostream>
#include <string>

#include "fixture.hpp"

namespace pgt::e2e {
namespace {

class Boundary : public DbTest {
protected:
    void SetUp() override {
        DbTest::SetUp();
        db->exec(
            "CREATE FUNCTION pgt_test_pg_error_roundtrip(int) RETURNS int "
            "AS 'pg_trickle', 'pgt_test_pg_error_roundtrip' LANGUAGE C STRICT;"
            "CREATE FUNCTION pgt_test_cxx_error(text, text, text, text) RETURNS void "
            "AS 'pg_trickle', 'pgt_test_cxx_error' LANGUAGE C;"
            "CREATE FUNCTION pgt_test_destructor_runs() RETURNS bigint "
            "AS 'pg_trickle', 'pgt_test_destructor_runs' LANGUAGE C;");
    }
    long destructor_runs() { return std::stol(db->scalar("SELECT pgt_test_destructor_runs()")); }

    long backend_rss_kb() {
        std::ifstream status("/proc/" + std::to_string(db->backend_pid()) + "/status");
        std::string line;
        while (std::getline(status, line)) {
            if (line.rfind("VmRSS:", 0) == 0) {
                return std::stol(line.substr(6));
            }
        }
        ADD_FAILURE() << "no VmRSS for backend " << db->backend_pid();
        return 0;
    }

    void round_trips(int n) {
        db->exec("DO $$ BEGIN FOR i IN 1.." + std::to_string(n) +
                 " LOOP BEGIN PERFORM pgt_test_pg_error_roundtrip(0); "
                 "EXCEPTION WHEN division_by_zero THEN NULL; END; "
                 "BEGIN PERFORM pgt_test_cxx_error('22023', 'bad', 'd', 'h'); "
                 "EXCEPTION WHEN invalid_parameter_value THEN NULL; END; END LOOP; END $$");
    }
};

TEST_F(Boundary, pg_error_through_cxx_keeps_sqlstate_and_text) {
    long before = destructor_runs();
    SqlError e = db->error_of("SELECT pgt_test_pg_error_roundtrip(0)");
    EXPECT_EQ(e.sqlstate, "22012");
    EXPECT_EQ(e.message, "division by zero");
    EXPECT_EQ(destructor_runs(), before + 1) << "the C++ object's destructor did not run";
}

TEST_F(Boundary, success_path_returns_value_and_runs_destructor) {
    long before = destructor_runs();
    EXPECT_EQ(db->scalar("SELECT pgt_test_pg_error_roundtrip(1)"), "1");
    EXPECT_EQ(destructor_runs(), before + 1);
}

TEST_F(Boundary, cxx_error_keeps_sqlstate_detail_and_hint) {
    long before = destructor_runs();
    SqlError e = db->error_of(
        "SELECT pgt_test_cxx_error('42P07', 'thing \"x\" already exists', 'The detail.', "
        "'The hint.')");
    EXPECT_EQ(e.sqlstate, "42P07");
    EXPECT_EQ(e.message, "thing \"x\" already exists");
    EXPECT_EQ(e.detail, "The detail.");
    EXPECT_EQ(e.hint, "The hint.");
    EXPECT_EQ(destructor_runs(), before + 1);
}

TEST_F(Boundary, session_stays_usable_after_errors) {
    (void)db->error_of("SELECT pgt_test_pg_error_roundtrip(0)");
    EXPECT_EQ(db->scalar("SELECT 40 + 2"), "42");
}

// 10,000 round trips of each kind in one backend: resident memory after
// them stays within 2 MB of what it was after a warm-up of 2,000.
TEST_F(Boundary, ten_thousand_round_trips_do_not_leak) {
    round_trips(2000);
    long warm = backend_rss_kb();
    long before = destructor_runs();
    round_trips(10000);
    long after = backend_rss_kb();
    EXPECT_EQ(destructor_runs(), before + 20000);
    EXPECT_LT(after - warm, 2048) << "backend RSS grew from " << warm << " kB to " << after
                                  << " kB";
    RecordProperty("rss_growth_kb", std::to_string(after - warm));
    std::cout << "[ rss ] after warm-up " << warm << " kB, after 10,000 round trips " << after
              << " kB\n";
}

}  // namespace
}  // namespace pgt::e2e
