// pgtrickle.notify_changes() end to end: what a LISTENing session receives
// for every firing rule, seq, transactions and savepoints, partitions,
// truncation, argument errors, odd identifiers, schema changes after the
// trigger was first used, search_path, and the listener protocol of
// docs/notifications.md played by two sessions.
// Invariant: "nothing was sent" is only ever concluded after a later sync
// marker arrived (NOTIFY delivers in commit order), never from a timeout.
#include <algorithm>
#include <chrono>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "fixture.hpp"

namespace pgt::e2e {
namespace {

using namespace std::chrono_literals;

constexpr const char* kSync = "pgt_test_sync";
constexpr const char* kHint =
    "Create it as: CREATE TRIGGER t_notify AFTER INSERT OR UPDATE OR DELETE ON public.t FOR EACH "
    "ROW EXECUTE FUNCTION pgtrickle.notify_changes('channel', 'key_column');";

// "seq":123 becomes "seq":#, so expected payloads can be written out whole.
std::string masked(const std::string& payload) {
    static const std::regex seq(R"("seq":[0-9]+)");
    return std::regex_replace(payload, seq, R"("seq":#)");
}

long long seq_of(const std::string& payload) {
    static const std::regex seq(R"("seq":([0-9]+))");
    std::smatch m;
    if (!std::regex_search(payload, m, seq)) {
        ADD_FAILURE() << "no seq in " << payload;
        return -1;
    }
    return std::stoll(m[1]);
}

class Notify : public DbTest {
protected:
    void SetUp() override {
        DbTest::SetUp();
        db->exec("CREATE TABLE t (id int PRIMARY KEY, name text, qty int)");
        listener = std::make_unique<Conn>(conninfo());
        listener->exec("LISTEN changes");
        listener->exec(std::string("LISTEN ") + kSync);
    }
    void TearDown() override {
        listener.reset();
        DbTest::TearDown();
    }

    void notify_on(const std::string& table, const std::string& args = "'changes', 'id'",
                   const std::string& name = "t_notify") {
        db->exec("CREATE TRIGGER " + name + " AFTER INSERT OR UPDATE OR DELETE ON " + table +
                 " FOR EACH ROW EXECUTE FUNCTION pgtrickle.notify_changes(" + args + ")");
    }

    // Every notification committed before this call, in arrival order: db
    // sends a sync marker and the listener reads until the marker arrives.
    std::vector<Notification> received() {
        const std::string marker = std::to_string(++syncs_);
        db->exec("SELECT pg_catalog.pg_notify($1, $2)", {kSync, marker});
        std::vector<Notification> out;
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (std::chrono::steady_clock::now() < deadline) {
            for (Notification& n : listener->notifications(100)) {
                if (n.channel != kSync) {
                    out.push_back(std::move(n));
                } else if (n.payload == marker) {
                    return out;
                }
            }
        }
        ADD_FAILURE() << "sync marker " << marker << " never arrived";
        return out;
    }
    // Payloads received (see received()), seq masked.
    std::vector<std::string> payloads() {
        std::vector<std::string> out;
        for (const Notification& n : received()) {
            out.push_back(masked(n.payload));
        }
        return out;
    }
    std::vector<std::string> raw_payloads() {
        std::vector<std::string> out;
        for (const Notification& n : received()) {
            out.push_back(n.payload);
        }
        return out;
    }
    // A JSON path of a payload, read by the server (also proves it is JSON).
    std::string field(const std::string& payload, const std::string& path) {
        return db->scalar("SELECT $1::jsonb #>> $2::text[]", {payload, path});
    }

    std::unique_ptr<Conn> listener;
    int syncs_ = 0;
};

using Payloads = std::vector<std::string>;

// --- Firing rules and payload fields ----------------------------------------

TEST_F(Notify, insert_sends_key_without_columns) {
    notify_on("t");
    db->exec("INSERT INTO t VALUES (1, 'ada', 5)");
    EXPECT_EQ(payloads(), Payloads{R"({"table":"public.t","op":"INSERT","seq":#,"key":{"id":1}})"});
}

TEST_F(Notify, delete_sends_key_of_old_row) {
    db->exec("INSERT INTO t VALUES (1, 'ada', 5)");
    notify_on("t");
    db->exec("DELETE FROM t WHERE id = 1");
    EXPECT_EQ(payloads(), Payloads{R"({"table":"public.t","op":"DELETE","seq":#,"key":{"id":1}})"});
}

TEST_F(Notify, update_lists_changed_columns_in_table_order) {
    db->exec("INSERT INTO t VALUES (1, 'ada', 5)");
    notify_on("t");
    db->exec("UPDATE t SET qty = 6, name = 'bo' WHERE id = 1");
    db->exec("UPDATE t SET qty = 7 WHERE id = 1");
    EXPECT_EQ(
        payloads(),
        (Payloads{
            R"({"table":"public.t","op":"UPDATE","seq":#,"key":{"id":1},"columns":["name","qty"]})",
            R"({"table":"public.t","op":"UPDATE","seq":#,"key":{"id":1},"columns":["qty"]})"}));
}

// Any role may LISTEN on any channel (PostgreSQL has no privilege for
// it): with pg_trickle.notify_payload = 'minimal' a listener learns the
// table and the operation, never a key value or a changed column's name.
// Only a superuser chooses (per database or role), not the writer.
TEST_F(Notify, minimal_payload_carries_no_key_value_or_column_name) {
    notify_on("t");
    db->exec("SET pg_trickle.notify_payload = 'minimal'");
    db->exec(
        "INSERT INTO t VALUES (1, 'ada', 5); UPDATE t SET name = 'bo' WHERE id = 1;"
        "UPDATE t SET id = 2 WHERE id = 1; DELETE FROM t WHERE id = 2");
    EXPECT_EQ(payloads(), (Payloads{R"({"table":"public.t","op":"INSERT","seq":#})",
                                    R"({"table":"public.t","op":"UPDATE","seq":#})",
                                    R"({"table":"public.t","op":"UPDATE","seq":#})",
                                    R"({"table":"public.t","op":"DELETE","seq":#})"}));
    db->exec("RESET pg_trickle.notify_payload; INSERT INTO t VALUES (3, 'cy', 1)");
    EXPECT_EQ(payloads(), Payloads{R"({"table":"public.t","op":"INSERT","seq":#,"key":{"id":3}})"});
    db->exec(
        "DO $$ BEGIN CREATE ROLE notify_writer; EXCEPTION WHEN duplicate_object THEN NULL; END "
        "$$; SET ROLE notify_writer");
    EXPECT_EQ(sqlstate_of(*db, "SET pg_trickle.notify_payload = 'keys'"), "42501");
    db->exec("RESET ROLE; DROP ROLE notify_writer");
}

TEST_F(Notify, update_that_changes_nothing_sends_nothing) {
    db->exec("INSERT INTO t VALUES (1, 'ada', 5), (2, NULL, 6)");
    notify_on("t");
    db->exec("UPDATE t SET qty = qty, name = name");
    db->exec("UPDATE t SET qty = 5 WHERE id = 1");
    db->exec("UPDATE t SET name = 'ada' WHERE id = 1");
    db->exec("UPDATE t SET name = NULL WHERE id = 2");
    db->exec("UPDATE t SET id = id");
    EXPECT_EQ(payloads(), Payloads{});
}

TEST_F(Notify, multi_row_update_notifies_only_rows_that_changed) {
    db->exec("INSERT INTO t VALUES (1, 'a', 5), (2, 'b', 6), (3, 'c', 5)");
    notify_on("t");
    db->exec("UPDATE t SET qty = 5");
    EXPECT_EQ(
        payloads(),
        Payloads{R"({"table":"public.t","op":"UPDATE","seq":#,"key":{"id":2},"columns":["qty"]})"});
}

TEST_F(Notify, update_of_key_sends_old_key_and_lists_key_column) {
    db->exec("INSERT INTO t VALUES (1, 'ada', 5)");
    notify_on("t");
    db->exec("UPDATE t SET id = 10 WHERE id = 1");
    db->exec("UPDATE t SET id = 11, qty = 0 WHERE id = 10");
    EXPECT_EQ(
        payloads(),
        (Payloads{
            R"({"table":"public.t","op":"UPDATE","seq":#,"key":{"id":10},"old_key":{"id":1},"columns":["id"]})",
            R"({"table":"public.t","op":"UPDATE","seq":#,"key":{"id":11},"old_key":{"id":10},"columns":["id","qty"]})"}));
}

TEST_F(Notify, composite_key_follows_argument_order_and_to_json_types) {
    db->exec(
        "CREATE TABLE k (a int, b text, c uuid, d numeric, e timestamp, f bool, g jsonb, "
        "h int[], v int)");
    notify_on("k", "'changes', 'h', 'g', 'f', 'e', 'd', 'c', 'b', 'a'");
    db->exec(
        "INSERT INTO k VALUES (7, 'x\"y', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 1.50, "
        "'2024-01-02 03:04:05', true, '{\"z\": [1, null]}', '{1,2}', 0)");
    db->exec("INSERT INTO k VALUES (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0)");
    EXPECT_EQ(
        payloads(),
        (Payloads{
            R"({"table":"public.k","op":"INSERT","seq":#,"key":{"h":[1,2],"g":{"z": [1, null]},"f":true,"e":"2024-01-02T03:04:05","d":1.50,"c":"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11","b":"x\"y","a":7}})",
            R"({"table":"public.k","op":"INSERT","seq":#,"key":{"h":null,"g":null,"f":null,"e":null,"d":null,"c":null,"b":null,"a":null}})"}));
}

TEST_F(Notify, unchanged_toasted_column_is_not_listed_and_not_a_change) {
    db->exec("CREATE TABLE docs (id int PRIMARY KEY, body text, qty int)");
    db->exec("ALTER TABLE docs ALTER body SET STORAGE EXTERNAL");
    db->exec("INSERT INTO docs VALUES (1, repeat('x', 100000), 0)");
    notify_on("docs");
    db->exec("UPDATE docs SET qty = 1");
    db->exec("UPDATE docs SET body = body");
    db->exec("UPDATE docs SET body = body || 'y'");
    EXPECT_EQ(
        payloads(),
        (Payloads{
            R"({"table":"public.docs","op":"UPDATE","seq":#,"key":{"id":1},"columns":["qty"]})",
            R"({"table":"public.docs","op":"UPDATE","seq":#,"key":{"id":1},"columns":["body"]})"}));
}

TEST_F(Notify, equal_value_stored_differently_counts_as_changed) {
    db->exec("CREATE TABLE m (id int PRIMARY KEY, amount numeric)");
    db->exec("INSERT INTO m VALUES (1, 1.0)");
    notify_on("m");
    db->exec("UPDATE m SET amount = 1.00");  // = 1.0, but a different stored datum
    EXPECT_EQ(
        payloads(),
        Payloads{
            R"({"table":"public.m","op":"UPDATE","seq":#,"key":{"id":1},"columns":["amount"]})"});
}

TEST_F(Notify, dropped_columns_are_never_listed) {
    db->exec("INSERT INTO t VALUES (1, 'ada', 5)");
    db->exec("ALTER TABLE t DROP COLUMN name");
    notify_on("t");
    db->exec("UPDATE t SET qty = 6");
    EXPECT_EQ(
        payloads(),
        Payloads{R"({"table":"public.t","op":"UPDATE","seq":#,"key":{"id":1},"columns":["qty"]})"});
}

TEST_F(Notify, truncate_sends_nothing) {
    db->exec("INSERT INTO t VALUES (1, 'ada', 5)");
    notify_on("t");
    db->exec("TRUNCATE t");
    EXPECT_EQ(payloads(), Payloads{});
}

// Known bug (reported to the lead): a row written before ADD COLUMN ...
// DEFAULT holds the default as attmissingval, a varlena with a 4-byte header,
// while the rewritten row stores it with a 1-byte header, so datumIsEqual sees
// a change. Enable once the trigger compares unpacked varlena contents.
TEST_F(Notify, no_op_update_of_row_predating_add_column_default_sends_nothing) {
    db->exec("CREATE TABLE am (id int PRIMARY KEY)");
    db->exec("INSERT INTO am VALUES (1)");
    db->exec("ALTER TABLE am ADD COLUMN note text DEFAULT 'x', ADD COLUMN num numeric DEFAULT 1.5");
    notify_on("am");
    db->exec("UPDATE am SET id = id");  // sends "columns":["note","num"] today
    EXPECT_EQ(payloads(), Payloads{});
}

// --- seq and transactions ----------------------------------------------------

TEST_F(Notify, insert_delete_insert_of_one_key_in_one_transaction_arrives_as_three_events) {
    notify_on("t");
    db->exec(
        "BEGIN; INSERT INTO t VALUES (1, 'a', 1); DELETE FROM t WHERE id = 1;"
        " INSERT INTO t VALUES (1, 'a', 1); COMMIT");
    const std::vector<std::string> raw = raw_payloads();
    ASSERT_EQ(raw.size(), 3u);
    EXPECT_EQ(masked(raw[0]), R"({"table":"public.t","op":"INSERT","seq":#,"key":{"id":1}})");
    EXPECT_EQ(masked(raw[1]), R"({"table":"public.t","op":"DELETE","seq":#,"key":{"id":1}})");
    EXPECT_EQ(masked(raw[2]), masked(raw[0]));
    EXPECT_LT(seq_of(raw[0]), seq_of(raw[1]));
    EXPECT_LT(seq_of(raw[1]), seq_of(raw[2]));
}

TEST_F(Notify, key_changing_1_2_1_2_in_one_transaction_sends_every_update) {
    db->exec("INSERT INTO t VALUES (1, 'a', 1)");
    notify_on("t");
    db->exec(
        "BEGIN; UPDATE t SET id = 2; UPDATE t SET id = 1; UPDATE t SET id = 2;"
        " UPDATE t SET qty = 2; UPDATE t SET qty = 1; UPDATE t SET qty = 2; COMMIT");
    const std::string to2 =
        R"({"table":"public.t","op":"UPDATE","seq":#,"key":{"id":2},"old_key":{"id":1},"columns":["id"]})";
    const std::string to1 =
        R"({"table":"public.t","op":"UPDATE","seq":#,"key":{"id":1},"old_key":{"id":2},"columns":["id"]})";
    const std::string qty =
        R"({"table":"public.t","op":"UPDATE","seq":#,"key":{"id":2},"columns":["qty"]})";
    const std::vector<std::string> raw = raw_payloads();
    std::vector<std::string> got;
    for (std::size_t i = 0; i < raw.size(); i++) {
        got.push_back(masked(raw[i]));
        if (i > 0) {
            EXPECT_LT(seq_of(raw[i - 1]), seq_of(raw[i]));
        }
    }
    EXPECT_EQ(got, (Payloads{to2, to1, to2, qty, qty, qty}));
}

TEST_F(Notify, seq_is_shared_by_all_triggers_and_channels_of_a_session) {
    listener->exec("LISTEN other");
    db->exec("CREATE TABLE u (id int PRIMARY KEY)");
    notify_on("t");
    notify_on("u", "'other', 'id'");
    db->exec(
        "BEGIN; INSERT INTO t VALUES (1); INSERT INTO u VALUES (1); INSERT INTO t VALUES (2);"
        " COMMIT");
    db->exec("INSERT INTO u VALUES (2)");
    const std::vector<Notification> got = received();
    ASSERT_EQ(got.size(), 4u);
    const std::vector<std::string> channels = {"changes", "other", "changes", "other"};
    for (std::size_t i = 0; i < got.size(); i++) {
        EXPECT_EQ(got[i].channel, channels[i]);
        EXPECT_EQ(got[i].sender_pid, db->backend_pid());
        if (i > 0) {
            EXPECT_LT(seq_of(got[i - 1].payload), seq_of(got[i].payload));
        }
    }
}

TEST_F(Notify, rollback_sends_nothing) {
    db->exec("INSERT INTO t VALUES (1, 'a', 1)");
    notify_on("t");
    db->exec(
        "BEGIN; INSERT INTO t VALUES (2); UPDATE t SET qty = 9; DELETE FROM t WHERE id = 1;"
        " ROLLBACK");
    // A failing statement sends nothing for the rows it wrote before failing.
    SqlError e = db->error_of("INSERT INTO t VALUES (3), (1)");
    EXPECT_EQ(e.sqlstate, "23505");
    EXPECT_EQ(payloads(), Payloads{});
}

TEST_F(Notify, savepoint_rollback_sends_nothing_for_the_rolled_back_part) {
    db->exec("INSERT INTO t VALUES (1, 'a', 1)");
    notify_on("t");
    db->exec(
        "BEGIN; INSERT INTO t VALUES (2); SAVEPOINT s; INSERT INTO t VALUES (3);"
        " UPDATE t SET qty = 5 WHERE id = 1; ROLLBACK TO s; DELETE FROM t WHERE id = 1;"
        " SAVEPOINT s2; INSERT INTO t VALUES (4); RELEASE s2; COMMIT");
    const std::vector<std::string> raw = raw_payloads();
    std::vector<std::string> got;
    for (const std::string& p : raw) {
        got.push_back(masked(p));
    }
    EXPECT_EQ(got, (Payloads{R"({"table":"public.t","op":"INSERT","seq":#,"key":{"id":2}})",
                             R"({"table":"public.t","op":"DELETE","seq":#,"key":{"id":1}})",
                             R"({"table":"public.t","op":"INSERT","seq":#,"key":{"id":4}})"}));
    ASSERT_EQ(raw.size(), 3u);
    EXPECT_LT(seq_of(raw[0]) + 1, seq_of(raw[1]));  // the rolled-back numbers are gaps
    EXPECT_LT(seq_of(raw[1]), seq_of(raw[2]));
}

TEST_F(Notify, notifications_arrive_in_commit_order) {
    notify_on("t");
    Conn a = connect_db();
    a.exec("BEGIN");
    a.exec("INSERT INTO t VALUES (1)");
    db->exec("INSERT INTO t VALUES (2)");
    a.exec("COMMIT");
    const std::vector<Notification> got = received();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(masked(got[0].payload),
              R"({"table":"public.t","op":"INSERT","seq":#,"key":{"id":2}})");
    EXPECT_EQ(got[0].sender_pid, db->backend_pid());
    EXPECT_EQ(masked(got[1].payload),
              R"({"table":"public.t","op":"INSERT","seq":#,"key":{"id":1}})");
    EXPECT_EQ(got[1].sender_pid, a.backend_pid());
}

// --- Partitions --------------------------------------------------------------

TEST_F(Notify, partitioned_table_reports_the_partition_holding_the_row) {
    db->exec(
        "CREATE TABLE p (id int, region text, v int) PARTITION BY LIST (region);"
        "CREATE TABLE p_eu PARTITION OF p FOR VALUES IN ('eu');"
        "CREATE SCHEMA \"Far\";"
        "CREATE TABLE \"Far\".\"P us\" PARTITION OF p FOR VALUES IN ('us')");
    notify_on("p");
    db->exec("CREATE TABLE p_asia (id int, region text, v int)");
    db->exec("ALTER TABLE p ATTACH PARTITION p_asia FOR VALUES IN ('asia')");
    db->exec("INSERT INTO p VALUES (1, 'eu', 0), (2, 'us', 0), (3, 'asia', 0)");
    db->exec("UPDATE p SET v = 1 WHERE id = 2");
    db->exec("UPDATE p SET region = 'us' WHERE id = 1");  // moves the row: DELETE, then INSERT
    EXPECT_EQ(
        payloads(),
        (Payloads{
            R"({"table":"public.p_eu","op":"INSERT","seq":#,"key":{"id":1}})",
            R"({"table":"\"Far\".\"P us\"","op":"INSERT","seq":#,"key":{"id":2}})",
            R"({"table":"public.p_asia","op":"INSERT","seq":#,"key":{"id":3}})",
            R"({"table":"\"Far\".\"P us\"","op":"UPDATE","seq":#,"key":{"id":2},"columns":["v"]})",
            R"({"table":"public.p_eu","op":"DELETE","seq":#,"key":{"id":1}})",
            R"({"table":"\"Far\".\"P us\"","op":"INSERT","seq":#,"key":{"id":1}})"}));
}

// --- Size limit --------------------------------------------------------------

TEST_F(Notify, many_changed_columns_are_dropped_and_key_kept_when_too_long) {
    auto create = [&](const std::string& table, int columns) {
        std::string ddl = "CREATE TABLE " + table + " (id int PRIMARY KEY";
        std::string set;
        for (int i = 0; i < columns; i++) {
            std::string name = "c" + std::to_string(1000 + i) + std::string(58, 'x');  // 63 bytes
            ddl += ", " + name + " int";
            set += std::string(set.empty() ? "" : ", ") + name + " = 1";
        }
        db->exec(ddl + ")");
        db->exec("INSERT INTO " + table + " (id) VALUES (1)");
        notify_on(table, "'changes', 'id'", table + "_notify");
        return "UPDATE " + table + " SET " + set;
    };
    db->exec(create("narrow", 100));  // 100 names of 63 bytes: about 6.7 kB, fits
    db->exec(create("wide", 150));    // about 10 kB: columns are dropped
    const std::vector<std::string> got = raw_payloads();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(field(got[0], "{columns,99}"), "c1099" + std::string(58, 'x'));
    EXPECT_EQ(field(got[0], "{truncated}"), "<NULL>");
    EXPECT_EQ(masked(got[1]),
              R"({"table":"public.wide","op":"UPDATE","seq":#,"key":{"id":1},"truncated":true})");
    for (const std::string& p : got) {
        EXPECT_LT(p.size(), 8000u);
    }
}

TEST_F(Notify, key_of_several_kilobytes_is_dropped_only_when_it_cannot_fit) {
    db->exec("CREATE TABLE big (k text, v int)");
    notify_on("big", "'changes', 'k'");
    db->exec("INSERT INTO big VALUES (repeat('a', 5000), 0)");  // fits whole
    db->exec("UPDATE big SET v = 1");                           // fits: key + columns
    db->exec("UPDATE big SET k = repeat('b', 5000)");           // key + old_key: too long
    db->exec("INSERT INTO big VALUES (repeat('c', 9000), 0)");  // key alone too long
    db->exec("DELETE FROM big WHERE v = 0");
    const std::vector<std::string> got = raw_payloads();
    ASSERT_EQ(got.size(), 5u);
    EXPECT_EQ(field(got[0], "{key,k}"), std::string(5000, 'a'));
    EXPECT_EQ(field(got[1], "{columns}"), R"(["v"])");
    EXPECT_EQ(field(got[1], "{key,k}"), std::string(5000, 'a'));
    EXPECT_EQ(masked(got[2]), R"({"table":"public.big","op":"UPDATE","seq":#,"truncated":true})");
    EXPECT_EQ(masked(got[3]), R"({"table":"public.big","op":"INSERT","seq":#,"truncated":true})");
    EXPECT_EQ(masked(got[4]), R"({"table":"public.big","op":"DELETE","seq":#,"truncated":true})");
    for (const std::string& p : got) {
        EXPECT_LT(p.size(), 8000u);
        EXPECT_GT(seq_of(p), 0);
    }
}

// --- Argument errors ---------------------------------------------------------

struct BadTrigger {
    const char* what;
    const char* ddl;  // creates trigger t_notify
    const char* write;
    const char* sqlstate;
    const char* message;
};

TEST_F(Notify, every_argument_error_fails_the_write_with_its_sqlstate_and_hint) {
    db->exec("CREATE VIEW v AS SELECT * FROM t");
    const std::string chan64 = "'" + std::string(64, 'c') + "'";
    const std::vector<BadTrigger> cases = {
        {"BEFORE",
         "BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION pgtrickle.notify_changes('c', 'id')",
         "INSERT INTO t VALUES (1)", "39P01",
         "notify_changes() must be fired AFTER a row change, FOR EACH ROW"},
        {"FOR EACH STATEMENT",
         "AFTER INSERT ON t FOR EACH STATEMENT EXECUTE FUNCTION pgtrickle.notify_changes('c', "
         "'id')",
         "INSERT INTO t VALUES (1)", "39P01",
         "notify_changes() must be fired AFTER a row change, FOR EACH ROW"},
        {"no arguments",
         "AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION pgtrickle.notify_changes()",
         "INSERT INTO t VALUES (1)", "22023",
         "notify_changes() needs a channel and at least one key column"},
        {"channel only",
         "AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION pgtrickle.notify_changes('c')",
         "INSERT INTO t VALUES (1)", "22023",
         "notify_changes() needs a channel and at least one key column"},
        {"empty channel",
         "AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION pgtrickle.notify_changes('', 'id')",
         "INSERT INTO t VALUES (1)", "22023", "notify_changes() channel must have 1 to 63 bytes"},
        {"duplicate key column",
         "AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION pgtrickle.notify_changes('c', 'id', "
         "'qty', 'id')",
         "INSERT INTO t VALUES (1)", "22023",
         "key column \"id\" is listed twice in notify_changes()"},
        {"unknown key column",
         "AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION pgtrickle.notify_changes('c', 'ID')",
         "INSERT INTO t VALUES (1)", "42703",
         "key column \"ID\" of notify_changes() does not exist in table public.t"},
    };
    for (const BadTrigger& c : cases) {
        SCOPED_TRACE(c.what);
        db->exec("DROP TRIGGER IF EXISTS t_notify ON t");
        db->exec(std::string("CREATE TRIGGER t_notify ") + c.ddl);
        SqlError e = db->error_of(c.write);
        EXPECT_EQ(e.sqlstate, c.sqlstate);
        EXPECT_EQ(e.message, c.message);
        EXPECT_EQ(e.hint, kHint);
        EXPECT_EQ(count("SELECT * FROM t"), 0);
    }
    db->exec("DROP TRIGGER t_notify ON t");
    db->exec("CREATE TRIGGER t_notify AFTER UPDATE ON t FOR EACH ROW EXECUTE FUNCTION " +
             std::string("pgtrickle.notify_changes(") + chan64 + ", 'id')");
    db->exec("INSERT INTO t VALUES (1)");  // an UPDATE trigger: fires only on UPDATE
    SqlError e = db->error_of("UPDATE t SET qty = 1");
    EXPECT_EQ(e.sqlstate, "22023");
    EXPECT_EQ(e.detail, "The channel of trigger \"t_notify\" has 64 bytes.");
    EXPECT_EQ(e.hint, kHint);
    // INSTEAD OF on a view is not AFTER either.
    db->exec("CREATE TRIGGER v_notify INSTEAD OF INSERT ON v FOR EACH ROW EXECUTE FUNCTION " +
             std::string("pgtrickle.notify_changes('c', 'id')"));
    e = db->error_of("INSERT INTO v VALUES (2)");
    EXPECT_EQ(e.sqlstate, "39P01");
    EXPECT_NE(e.hint.find("AFTER INSERT OR UPDATE OR DELETE ON public.v FOR EACH ROW"),
              std::string::npos);
    EXPECT_EQ(payloads(), Payloads{});
}

TEST_F(Notify, channel_of_63_bytes_is_accepted) {
    const std::string chan(63, 'c');
    listener->exec("LISTEN " + chan);
    notify_on("t", "'" + chan + "', 'id'");
    db->exec("INSERT INTO t VALUES (1)");
    const std::vector<Notification> got = received();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].channel, chan);
}

TEST_F(Notify, called_outside_a_trigger_is_39P01) {
    SqlError e = db->error_of("SELECT pgtrickle.notify_changes()");
    EXPECT_EQ(e.sqlstate, "39P01");
    EXPECT_EQ(e.message, "notify_changes() was called outside a trigger");
    EXPECT_EQ(
        e.hint,
        "Create it as: CREATE TRIGGER my_trigger AFTER INSERT OR UPDATE OR DELETE ON my_table "
        "FOR EACH ROW EXECUTE FUNCTION pgtrickle.notify_changes('channel', 'key_column');");
}

TEST_F(Notify, function_is_volatile_and_parallel_unsafe) {
    EXPECT_EQ(db->scalar(
                  "SELECT provolatile::text || proparallel::text || prorettype::regtype::text FROM "
                  "pg_proc WHERE oid = 'pgtrickle.notify_changes()'::regprocedure"),
              "vutrigger");
}

// --- Channel and identifiers -------------------------------------------------

TEST_F(Notify, channel_is_used_verbatim_so_listen_needs_quotes_for_upper_case) {
    listener->exec("LISTEN Mixed_Case");  // folded: listens on mixed_case
    notify_on("t", "'Mixed_Case', 'id'");
    db->exec("INSERT INTO t VALUES (1)");
    EXPECT_EQ(received().size(), 0u);
    listener->exec("LISTEN \"Mixed_Case\"");
    db->exec("INSERT INTO t VALUES (2)");
    const std::vector<Notification> got = received();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].channel, "Mixed_Case");
    EXPECT_EQ(masked(got[0].payload),
              R"({"table":"public.t","op":"INSERT","seq":#,"key":{"id":2}})");
}

TEST_F(Notify, non_ascii_and_quotes_in_identifiers_and_key_values_are_escaped) {
    db->exec(
        "CREATE SCHEMA \"Sché \"\"q\"\"\";"
        "CREATE TABLE \"Sché \"\"q\"\"\".\"Tâble\\x\" (\"ключ \"\"k\"\"\" text, \"ñ\" int,"
        " \"user\" int)");
    notify_on("\"Sché \"\"q\"\"\".\"Tâble\\x\"", "'changes', 'ключ \"k\"', 'user'");
    db->exec("INSERT INTO \"Sché \"\"q\"\"\".\"Tâble\\x\" VALUES (E'é \"v\" \\\\ it''s\\n', 1, 2)");
    db->exec("UPDATE \"Sché \"\"q\"\"\".\"Tâble\\x\" SET \"ñ\" = 3");
    db->exec("CREATE TABLE \"user\" (id int)");
    notify_on("\"user\"");
    db->exec("INSERT INTO \"user\" VALUES (1)");
    EXPECT_EQ(
        payloads(),
        (Payloads{
            R"j({"table":"\"Sché \"\"q\"\"\".\"Tâble\\x\"","op":"INSERT","seq":#,"key":{"ключ \"k\"":"é \"v\" \\ it's\n","user":2}})j",
            R"j({"table":"\"Sché \"\"q\"\"\".\"Tâble\\x\"","op":"UPDATE","seq":#,"key":{"ключ \"k\"":"é \"v\" \\ it's\n","user":2},"columns":["ñ"]})j",
            R"({"table":"public.\"user\"","op":"INSERT","seq":#,"key":{"id":1}})"}));
}

// --- Schema changes after the trigger was first used (plan cache) -----------

TEST_F(Notify, key_column_renamed_by_another_session_reports_42703_for_the_old_name) {
    notify_on("t");
    db->exec("INSERT INTO t VALUES (1)");  // the plan is cached now
    Conn other = connect_db();
    other.exec("ALTER TABLE t RENAME COLUMN id TO ident");
    SqlError e = db->error_of("INSERT INTO t VALUES (2)");
    EXPECT_EQ(e.sqlstate, "42703");
    EXPECT_EQ(e.message, "key column \"id\" of notify_changes() does not exist in table public.t");
    EXPECT_EQ(count("SELECT * FROM t"), 1);
    other.exec("ALTER TABLE t RENAME COLUMN ident TO id");
    db->exec("INSERT INTO t VALUES (3)");
    EXPECT_EQ(payloads(),
              (Payloads{R"({"table":"public.t","op":"INSERT","seq":#,"key":{"id":1}})",
                        R"({"table":"public.t","op":"INSERT","seq":#,"key":{"id":3}})"}));
}

TEST_F(Notify, key_column_renamed_in_the_same_session_reports_42703_for_the_old_name) {
    notify_on("t");
    db->exec("INSERT INTO t VALUES (1)");
    db->exec("ALTER TABLE t RENAME COLUMN id TO ident");
    SqlError e = db->error_of("UPDATE t SET qty = 1");
    EXPECT_EQ(e.sqlstate, "42703");
    e = db->error_of("DELETE FROM t");
    EXPECT_EQ(e.sqlstate, "42703");
    EXPECT_EQ(count("SELECT * FROM t WHERE qty IS NULL"), 1);
    EXPECT_EQ(payloads().size(), 1u);
}

TEST_F(Notify, key_column_retyped_or_moved_after_first_use_is_read_anew) {
    db->exec("CREATE TABLE r (a int, k int, v int)");
    notify_on("r", "'changes', 'k'");
    db->exec("INSERT INTO r VALUES (0, 1, 0)");
    db->exec("ALTER TABLE r ALTER COLUMN k TYPE text");
    db->exec("INSERT INTO r VALUES (0, 'two', 0)");
    Conn other = connect_db();  // another session moves k to a new attribute number
    other.exec("ALTER TABLE r DROP COLUMN k; ALTER TABLE r ADD COLUMN k bigint");
    db->exec("INSERT INTO r (a, k, v) VALUES (0, 3, 0)");
    EXPECT_EQ(payloads(),
              (Payloads{R"({"table":"public.r","op":"INSERT","seq":#,"key":{"k":1}})",
                        R"({"table":"public.r","op":"INSERT","seq":#,"key":{"k":"two"}})",
                        R"({"table":"public.r","op":"INSERT","seq":#,"key":{"k":3}})"}));
}

TEST_F(Notify, renamed_table_and_schema_are_reported_with_their_new_names) {
    db->exec("CREATE SCHEMA s1");
    db->exec("CREATE TABLE s1.x (id int)");
    notify_on("s1.x");
    db->exec("INSERT INTO s1.x VALUES (1)");
    db->exec("ALTER TABLE s1.x RENAME TO y");
    db->exec("INSERT INTO s1.y VALUES (2)");
    Conn other = connect_db();
    other.exec("ALTER SCHEMA s1 RENAME TO \"S2\"");
    db->exec("INSERT INTO \"S2\".y VALUES (3)");
    EXPECT_EQ(payloads(),
              (Payloads{R"({"table":"s1.x","op":"INSERT","seq":#,"key":{"id":1}})",
                        R"({"table":"s1.y","op":"INSERT","seq":#,"key":{"id":2}})",
                        R"({"table":"\"S2\".y","op":"INSERT","seq":#,"key":{"id":3}})"}));
}

TEST_F(Notify, replaced_trigger_sends_to_its_new_channel) {
    listener->exec("LISTEN other");
    notify_on("t");
    db->exec("INSERT INTO t VALUES (1)");
    db->exec(
        "CREATE OR REPLACE TRIGGER t_notify AFTER INSERT OR UPDATE OR DELETE ON t FOR EACH ROW "
        "EXECUTE FUNCTION pgtrickle.notify_changes('other', 'id', 'qty')");
    db->exec("INSERT INTO t VALUES (2, 'b', 7)");
    const std::vector<Notification> got = received();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].channel, "changes");
    EXPECT_EQ(got[1].channel, "other");
    EXPECT_EQ(masked(got[1].payload),
              R"({"table":"public.t","op":"INSERT","seq":#,"key":{"id":2,"qty":7}})");
}

// --- search_path ---------------------------------------------------------------

TEST_F(Notify, odd_search_path_does_not_change_behaviour) {
    db->exec(
        "CREATE SCHEMA odd;"
        "CREATE FUNCTION odd.to_json(anyelement) RETURNS json LANGUAGE sql"
        " AS $$SELECT '\"hijacked\"'::pg_catalog.json$$;"
        "CREATE FUNCTION odd.quote_ident(text) RETURNS text LANGUAGE sql AS $$SELECT 'x'$$;"
        "CREATE TABLE odd.t (id int)");
    notify_on("public.t");
    const std::string work =
        "INSERT INTO public.t VALUES (1, 'a', 1); UPDATE public.t SET qty = 2;"
        " DELETE FROM public.t";
    db->exec(work);
    const Payloads expected = payloads();
    ASSERT_EQ(expected.size(), 3u);
    for (const char* path : {"odd, pg_catalog", "''", "pg_temp, odd", "\"$user\""}) {
        SCOPED_TRACE(path);
        db->exec(std::string("SET search_path = ") + path);
        db->exec(work);
        EXPECT_EQ(payloads(), expected);
        Conn fresh = connect_db();  // first use (plan built) under the odd path
        fresh.exec(std::string("SET search_path = ") + path);
        fresh.exec(work);
        EXPECT_EQ(payloads(), expected);
    }
}

// --- Listener protocol (docs/notifications.md), two sessions -----------------

// A replica of docs(id text key, body text) kept by a listener session as
// docs/notifications.md describes.
class Replica {
public:
    explicit Replica(Conn& conn) : c_(conn) {}

    void resync() {
        rows_.clear();
        for (const Row& r : c_.exec("SELECT id, body FROM public.docs").rows) {
            rows_[*r[0]] = r[1].value_or("<NULL>");
        }
        resyncs++;
    }
    // Applies one notification; its own writes were applied when made.
    void apply(const Notification& n) {
        const Row f = c_.exec(
                            "SELECT p->>'op', p #>> '{key,id}', p #>> '{old_key,id}',"
                            " p ? 'truncated' FROM (SELECT $1::jsonb AS p) s",
                            {n.payload})
                          .rows.at(0);
        if (n.sender_pid == c_.backend_pid()) {
            skipped++;
            return;
        }
        if (!f[1]) {
            resync();  // truncated without a key
            return;
        }
        if (f[2]) {
            rows_.erase(*f[2]);  // re-keyed: the fetch below fills the new key
        }
        if (*f[0] == "DELETE") {
            rows_.erase(*f[1]);
            return;
        }
        fetch(*f[1]);
    }
    void write_own(const std::string& id, const std::string& body) {
        c_.exec("UPDATE public.docs SET body = $2 WHERE id = $1", {id, body});
        rows_[id] = body;
    }
    const std::map<std::string, std::string>& rows() const { return rows_; }
    int resyncs = 0, skipped = 0, unchanged = 0;

private:
    void fetch(const std::string& id) {
        const Result r = c_.exec("SELECT body FROM public.docs WHERE id = $1", {id});
        if (r.size() == 0) {
            rows_.erase(id);  // moved on: deleted since
        } else if (rows_.count(id) != 0 && rows_[id] == r.at(0, 0)) {
            unchanged++;  // already applied (e.g. seen by the resync)
        } else {
            rows_[id] = r.at(0, 0);
        }
    }
    Conn& c_;
    std::map<std::string, std::string> rows_;
};

TEST_F(Notify, listener_protocol_keeps_a_replica_in_sync_across_two_sessions) {
    db->exec("CREATE TABLE docs (id text PRIMARY KEY, body text)");
    db->exec("INSERT INTO docs VALUES ('a', 'A'), ('b', 'B'), ('c', 'C')");
    notify_on("docs", "'docs_changed', 'id'");
    Conn lc = connect_db();
    lc.exec("LISTEN docs_changed");                      // 1. LISTEN first,
    db->exec("INSERT INTO docs VALUES ('early', 'E')");  // (a write in between)
    Replica replica(lc);
    replica.resync();  // then resync
    EXPECT_EQ(replica.rows().count("early"), 1u);

    const std::string long_key = std::string(9000, 'L');
    db->exec("UPDATE docs SET body = 'B2' WHERE id = 'b'");
    db->exec("UPDATE docs SET id = 'c2' WHERE id = 'c'");  // old_key: re-key
    db->exec("DELETE FROM docs WHERE id = 'a'");
    db->exec(
        "BEGIN; INSERT INTO docs VALUES ('d', 'D1'); DELETE FROM docs WHERE id = 'd';"
        " INSERT INTO docs VALUES ('d', 'D2'); COMMIT");
    db->exec("INSERT INTO docs VALUES ($1, 'long')", {long_key});  // truncated, no key
    replica.write_own("early", "mine");                            // the listener's own write
    db->exec("INSERT INTO docs VALUES ('gone', 'G'); DELETE FROM docs WHERE id = 'gone'");
    db->exec("UPDATE docs SET body = 'B3' WHERE id = 'b'");

    // Treat them as hints: read whatever arrived until the writer's marker.
    const std::string marker = "done";
    lc.exec("LISTEN " + std::string(kSync));
    db->exec("SELECT pg_notify($1, $2)", {kSync, marker});
    bool done = false;
    int events = 0;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!done && std::chrono::steady_clock::now() < deadline) {
        for (const Notification& n : lc.notifications(100)) {
            if (n.channel == kSync) {
                done = done || n.payload == marker;
                continue;
            }
            events++;
            replica.apply(n);
        }
    }
    ASSERT_TRUE(done);
    EXPECT_EQ(events, 12);
    EXPECT_EQ(replica.skipped, 1);    // its own UPDATE of 'early'
    EXPECT_EQ(replica.resyncs, 2);    // the initial one and the truncated INSERT
    EXPECT_GE(replica.unchanged, 1);  // 'early' came with the first resync
    std::map<std::string, std::string> truth;
    for (const Row& r : db->exec("SELECT id, body FROM docs").rows) {
        truth[*r[0]] = *r[1];
    }
    EXPECT_EQ(replica.rows(), truth);
    EXPECT_EQ(truth.count(long_key), 1u);
    EXPECT_EQ(truth.at("d"), "D2");
    EXPECT_EQ(truth.count("c2"), 1u);
}

// --- Stream tables: create/alter_stream_table(notify => ...) ----------------

std::vector<std::string> sorted(std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
}

TEST_F(Notify, stream_table_refresh_sends_one_event_per_row_it_changes) {
    db->exec(
        "CREATE TABLE src (id int PRIMARY KEY, v int);"
        "INSERT INTO src VALUES (1, 1), (2, 2), (3, 3)");
    db->exec(
        "SELECT pgtrickle.create_stream_table('st', 'SELECT id, v * 2 AS v2 FROM src "
        "WHERE v > 0', refresh_mode => 'DIFFERENTIAL', notify => 'changes')");
    EXPECT_EQ(payloads(), Payloads{}) << "creation sends no per-row events";
    db->exec(
        "UPDATE src SET v = 5 WHERE id = 1; DELETE FROM src WHERE id = 2;"
        " INSERT INTO src VALUES (4, 1), (5, -1); UPDATE src SET v = v WHERE id = 3");
    db->exec("SELECT pgtrickle.refresh_stream_table('st')");
    EXPECT_MATCHES_QUERY(*db, "st");
    EXPECT_EQ(
        sorted(payloads()),
        sorted({R"({"table":"public.st","op":"UPDATE","seq":#,"key":{"id":1},"columns":["v2"]})",
                R"({"table":"public.st","op":"DELETE","seq":#,"key":{"id":2}})",
                R"({"table":"public.st","op":"INSERT","seq":#,"key":{"id":4}})"}));
    db->exec("SELECT pgtrickle.refresh_stream_table('st')");
    EXPECT_EQ(payloads(), Payloads{}) << "a refresh with nothing to apply sends nothing";

    db->exec("SELECT pgtrickle.alter_stream_table('st', refresh_mode => 'FULL')");
    EXPECT_EQ(payloads(), Payloads{}) << "a FULL refresh that changes nothing sends nothing";
    db->exec("UPDATE src SET v = 7 WHERE id = 3");
    db->exec("SELECT pgtrickle.refresh_stream_table('st')");
    EXPECT_MATCHES_QUERY(*db, "st");
    EXPECT_EQ(
        payloads(),
        Payloads{R"({"table":"public.st","op":"UPDATE","seq":#,"key":{"id":3},"columns":["v2"]})"});

    db->exec("SELECT pgtrickle.alter_stream_table('st', notify => NULL)");
    EXPECT_EQ(count("SELECT 1 FROM pg_trigger WHERE tgrelid = 'st'::regclass AND tgname = "
                    "'pgt_notify'"),
              0);
    db->exec("UPDATE src SET v = 8 WHERE id = 3");
    db->exec("SELECT pgtrickle.refresh_stream_table('st')");
    EXPECT_MATCHES_QUERY(*db, "st");
    EXPECT_EQ(payloads(), Payloads{});
}

TEST_F(Notify, keyless_stream_table_is_keyed_by_row_id_and_alter_keeps_the_channel) {
    db->exec("CREATE TABLE bag (v int); INSERT INTO bag VALUES (1), (1)");
    db->exec(
        "SELECT pgtrickle.create_stream_table('bag_st', 'SELECT v FROM bag', "
        "notify => 'changes')");
    db->exec("SELECT pgtrickle.alter_stream_table('bag_st', schedule => '1m')");
    db->exec("INSERT INTO bag VALUES (1)");
    db->exec("SELECT pgtrickle.refresh_stream_table('bag_st')");
    EXPECT_MATCHES_QUERY(*db, "bag_st");
    std::vector<std::string> got = raw_payloads();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_NE(got[0].find(R"("op":"INSERT")"), std::string::npos) << got[0];
    EXPECT_NE(got[0].find(R"("key":{"__pgt_row_id":"\\x)"), std::string::npos) << got[0];
}

// Hidden algebraic state is never listed: an UPDATE lists only output
// columns, and one that changes only hidden columns sends nothing.
TEST_F(Notify, stream_table_updates_list_no_hidden_columns) {
    db->exec(
        "CREATE TABLE src (id int PRIMARY KEY, g int, v int);"
        "INSERT INTO src VALUES (1, 1, 5), (2, 1, 5), (3, 2, 7)");
    db->exec(
        "SELECT pgtrickle.create_stream_table('st', 'SELECT g, avg(v) AS mean FROM src GROUP BY "
        "g', refresh_mode => 'DIFFERENTIAL', notify => 'changes')");
    ASSERT_NE(db->scalar("SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute "
                         "WHERE attrelid = 'st'::regclass AND starts_with(attname, '__pgt_') AND "
                         "attnum > 0"),
              "__pgt_row_id,__pgt_row_probe")
        << "the stream table keeps hidden state";
    db->exec("UPDATE src SET v = 7 WHERE id = 1");
    db->exec("SELECT pgtrickle.refresh_stream_table('st')");
    EXPECT_EQ(last_action("st"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "st");
    EXPECT_EQ(payloads(), Payloads{R"({"table":"public.st","op":"UPDATE","seq":#,"key":{"g":1},)"
                                   R"("columns":["mean"]})"});
    // A row that leaves the mean as it was (7, 5 and 6): only the hidden
    // sum and count change.
    db->exec("INSERT INTO src VALUES (4, 1, 6)");
    db->exec("SELECT pgtrickle.refresh_stream_table('st')");
    EXPECT_EQ(last_action("st"), "DIFFERENTIAL");
    EXPECT_MATCHES_QUERY(*db, "st");
    EXPECT_EQ(payloads(), Payloads{});
}

// Whenever every row may have changed, listeners are told to read the
// stream table again, with a reason: a new query, a reinitialisation, a
// drop (by drop_stream_table or DROP TABLE).
TEST_F(Notify, stream_table_sends_resync_on_new_query_reinitialisation_and_drop) {
    db->exec(
        "CREATE FUNCTION f(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 + 1';"
        "CREATE TABLE src (id int PRIMARY KEY, v int); INSERT INTO src VALUES (1, 1), (2, 2)");
    db->exec(
        "SELECT pgtrickle.create_stream_table('st', 'SELECT id, f(v) AS w FROM src', "
        "refresh_mode => 'DIFFERENTIAL', notify => 'changes');"
        "SELECT pgtrickle.create_stream_table('st2', 'SELECT id FROM src', notify => 'changes')");
    db->exec(
        "SELECT pgtrickle.alter_stream_table('st', query => 'SELECT id, f(v) AS w, v FROM src')");
    EXPECT_EQ(payloads(), Payloads{R"({"table":"public.st","op":"RESYNC","seq":#,)"
                                   R"("reason":"defining query replaced"})"});
    db->exec(
        "CREATE OR REPLACE FUNCTION f(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 + 2'");
    db->exec("SELECT pgtrickle.refresh_stream_table('st')");
    EXPECT_EQ(last_action("st"), "FULL");  // the reinitialisation
    EXPECT_MATCHES_QUERY(*db, "st");
    std::vector<std::string> got = raw_payloads();
    ASSERT_FALSE(got.empty());
    EXPECT_EQ(field(got.back(), "{op}"), "RESYNC");
    EXPECT_NE(field(got.back(), "{reason}").find("reinitialised"), std::string::npos) << got.back();
    db->exec("SELECT pgtrickle.drop_stream_table('st'); DROP TABLE st2");
    EXPECT_EQ(sorted(payloads()),
              sorted({R"({"table":"public.st","op":"RESYNC","seq":#,"reason":"dropped"})",
                      R"({"table":"public.st2","op":"RESYNC","seq":#,"reason":"dropped"})"}));
}

TEST_F(Notify, stream_table_channel_is_checked_before_anything_is_created) {
    db->exec("CREATE TABLE src (id int PRIMARY KEY)");
    for (const std::string& channel : {std::string(), std::string(64, 'c')}) {
        SqlError e = db->error_of(
            "SELECT pgtrickle.create_stream_table('st', 'SELECT id FROM "
            "src', notify => '" +
            channel + "')");
        EXPECT_EQ(e.sqlstate, "22023");
        EXPECT_EQ(count("SELECT 1 FROM pg_class WHERE relname = 'st'"), 0);
        EXPECT_EQ(count("SELECT 1 FROM pgtrickle.pgt_stream_tables"), 0);
    }
    db->exec("SELECT pgtrickle.create_stream_table('st', 'SELECT id FROM src')");
    SqlError e = db->error_of("SELECT pgtrickle.alter_stream_table('st', notify => '" +
                              std::string(64, 'c') + "')");
    EXPECT_EQ(e.sqlstate, "22023");
}

}  // namespace
}  // namespace pgt::e2e
