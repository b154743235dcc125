// Attacks through names (/work/shared/notes/security.md): a role names its
// own objects like pg_trickle's (triggers, indexes) to make the extension
// act on another role's stream table, fail its creation, or drop what it
// did not create; and the SQL API's handling of odd names and arguments.
// Roles as in security_test.cpp: alice owns data, bob is a plain user,
// mallory attacks with CREATE on public.
// Invariant: every data-changing test checks the oracle as the stream
// table's owner and the refresh mode that ran.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cluster.hpp"
#include "fixture.hpp"
#include "planted.hpp"

namespace pgt::e2e {
namespace {

// A trigger function any role can write for its own table.
constexpr const char* kNoopTrigger =
    "CREATE FUNCTION public.noop_trigger() RETURNS trigger LANGUAGE plpgsql AS "
    "$f$ BEGIN RETURN NULL; END $f$";

class SecurityNames : public DbTest {
protected:
    void SetUp() override {
        DbTest::SetUp();
        planted::reset_roles(*db);
        db->exec(
            "GRANT CREATE, USAGE ON SCHEMA public TO alice, bob, mallory;"
            "CREATE SCHEMA alice AUTHORIZATION alice;"
            "CREATE TABLE alice.src (id int PRIMARY KEY, v int);"
            "INSERT INTO alice.src SELECT g, g % 7 FROM generate_series(1, 20) g;"
            "ALTER TABLE alice.src OWNER TO alice");
    }

    void TearDown() override {
        if (db) {
            try {
                db->exec("ROLLBACK");
                db->exec("RESET ROLE; RESET ALL");
                db->exec("DROP OWNED BY alice, bob, mallory CASCADE");
            } catch (const std::exception& e) {
                ADD_FAILURE() << "cleaning up the roles failed: " << e.what();
            }
        }
        DbTest::TearDown();
    }

    std::unique_ptr<Conn> session(const std::string& role) {
        auto c = std::make_unique<Conn>(conninfo());
        if (role != "postgres") {
            c->exec("SET ROLE " + role);
        }
        return c;
    }

    ::testing::AssertionResult matches_as(const std::string& owner, const std::string& st) {
        db->exec("SET ROLE " + owner);
        ::testing::AssertionResult r = matches_query(*db, st);
        db->exec("RESET ROLE");
        return r;
    }

    std::string pgt_id(const std::string& st) {
        return db->scalar(
            "SELECT pgt_id FROM pgtrickle.pgt_stream_tables WHERE pgt_relid = $1::regclass", {st});
    }
    std::string reinit_reason(const std::string& st) {
        return db->scalar(
            "SELECT coalesce(reinit_reason, '') FROM pgtrickle.pgt_stream_tables WHERE "
            "pgt_relid = $1::regclass",
            {st});
    }
    bool trigger_exists(const std::string& table, const std::string& name) {
        return db->scalar(
                   "SELECT count(*) FROM pg_catalog.pg_trigger WHERE tgrelid = "
                   "$1::pg_catalog.regclass AND tgname = $2",
                   {table, name}) == "1";
    }
    // The id the next stream table will get (an attacker can guess it).
    std::string next_pgt_id() {
        return db->scalar(
            "SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM "
            "pgtrickle.pgt_stream_tables_pgt_id_seq");
    }
};

// Finding 4: bob names a trigger on his own table after alice's capture
// trigger and drops it (and the table): alice's stream table is neither
// marked for reinitialisation nor recomputed.
TEST_F(SecurityNames, spoofed_capture_trigger_drop_changes_nothing) {
    auto alice = session("alice");
    alice->exec(
        "SELECT pgtrickle.create_stream_table('alice.st', 'SELECT id, v FROM alice.src', "
        "refresh_mode => 'DIFFERENTIAL')");
    const std::string source_id = db->scalar(
        "SELECT source_id FROM pgtrickle.pgt_sources WHERE source_relid = 'alice.src'::regclass");
    auto bob = session("bob");
    bob->exec(kNoopTrigger);
    const std::vector<std::string> names{"pgt_capture_" + source_id,
                                         "pgt_capture_" + source_id + "_truncate"};
    for (const bool drop_table : {false, true}) {
        bob->exec("CREATE TABLE public.bob_t (x int)");
        for (const std::string& name : names) {
            bob->exec("CREATE TRIGGER " + name +
                      " AFTER INSERT ON public.bob_t FOR EACH ROW EXECUTE FUNCTION "
                      "public.noop_trigger()");
            if (!drop_table) {
                bob->exec("DROP TRIGGER " + name + " ON public.bob_t");
            }
        }
        bob->exec("DROP TABLE public.bob_t");
        EXPECT_EQ(reinit_reason("alice.st"), "") << (drop_table ? "DROP TABLE" : "DROP TRIGGER");
    }
    alice->exec("INSERT INTO alice.src VALUES (100, 1)");
    alice->exec("SELECT pgtrickle.refresh_stream_table('alice.st')");
    EXPECT_EQ(last_action("alice.st"), "DIFFERENTIAL");
    EXPECT_EQ(modes("alice.st"), "DIFFERENTIAL/DIFFERENTIAL");
    EXPECT_TRUE(matches_as("alice", "alice.st"));
}

// Finding 4, IMMEDIATE: inside an open transaction bob creates and drops
// triggers named after alice's IMMEDIATE ones on his own table. His DROP
// neither fails (naming alice's stream table) nor rebuilds alice's stream
// table, and alice's writes do not wait for bob's transaction.
TEST_F(SecurityNames, spoofed_immediate_trigger_drop_neither_rebuilds_nor_blocks) {
    auto alice = session("alice");
    alice->exec(
        "SELECT pgtrickle.create_stream_table('alice.st', 'SELECT id, v FROM alice.src', "
        "refresh_mode => 'IMMEDIATE')");
    const std::string id = pgt_id("alice.st");
    auto bob = session("bob");
    bob->exec(kNoopTrigger);
    bob->exec("BEGIN; CREATE TABLE public.bob_t (x int)");
    for (const std::string suffix : {"ins", "x"}) {
        const std::string name = "pgt_immediate_" + id + "_" + suffix;
        bob->exec("CREATE TRIGGER " + name +
                  " AFTER INSERT ON public.bob_t FOR EACH STATEMENT EXECUTE FUNCTION "
                  "public.noop_trigger()");
        std::optional<SqlError> e = error_in(*bob, "DROP TRIGGER " + name + " ON public.bob_t");
        EXPECT_FALSE(e) << "bob's drop of his own trigger failed: " << e->sqlstate << " "
                        << e->message << " " << e->detail;
        if (e) {
            bob->exec("ROLLBACK; BEGIN; CREATE TABLE public.bob_t (x int)");
        }
    }
    EXPECT_EQ(reinit_reason("alice.st"), "");
    // bob's transaction is still open: alice's write must not wait for it.
    alice->exec("SET lock_timeout = '2s'");
    std::optional<SqlError> e = error_in(*alice, "INSERT INTO alice.src VALUES (100, 1)");
    EXPECT_FALSE(e) << "alice's insert waited for bob: " << e->sqlstate << " " << e->message;
    bob->exec("COMMIT");
    EXPECT_EQ(modes("alice.st"), "IMMEDIATE/IMMEDIATE");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM alice.st WHERE id = 100"), e ? "0" : "1");
    EXPECT_TRUE(matches_as("alice", "alice.st"));
}

// The other side of finding 4: our own triggers, recognised by function,
// still act when a partition of a source is dropped (the clone of the
// capture row trigger, the IMMEDIATE triggers on the partition).
TEST_F(SecurityNames, dropping_a_partition_still_reaches_its_stream_tables) {
    db->exec(
        "CREATE TABLE p (id int, v int) PARTITION BY RANGE (id);"
        "CREATE TABLE p1 PARTITION OF p FOR VALUES FROM (0) TO (100);"
        "CREATE TABLE p2 PARTITION OF p FOR VALUES FROM (100) TO (200);"
        "INSERT INTO p SELECT g, g FROM generate_series(1, 150) g");
    db->exec(
        "SELECT pgtrickle.create_stream_table('d', 'SELECT id, v FROM p', refresh_mode => "
        "'DIFFERENTIAL')");
    db->exec(
        "SELECT pgtrickle.create_stream_table('i', 'SELECT v, count(*) AS n FROM p GROUP BY v', "
        "refresh_mode => 'IMMEDIATE')");
    db->exec("DROP TABLE p2");
    EXPECT_NE(reinit_reason("d").find("partition public.p2 of public.p dropped"), std::string::npos)
        << reinit_reason("d");
    EXPECT_EQ(modes("i"), "IMMEDIATE/IMMEDIATE");
    EXPECT_TRUE(matches_query(*db, "i"));  // rebuilt by the drop itself
    db->exec("SELECT pgtrickle.refresh_stream_table('d')");
    EXPECT_EQ(last_action("d"), "FULL");
    EXPECT_TRUE(matches_query(*db, "d"));
}

// Finding 4/5: bob's triggers named like alice's IMMEDIATE and change-note
// triggers, on bob's own table, survive everything alice's stream table
// goes through (pg_trickle drops only triggers it made).
TEST_F(SecurityNames, triggers_named_like_ours_are_never_dropped) {
    auto alice = session("alice");
    alice->exec(
        "SELECT pgtrickle.create_stream_table('alice.st', 'SELECT id, v FROM alice.src', "
        "refresh_mode => 'IMMEDIATE')");
    const std::string id = pgt_id("alice.st");
    auto bob = session("bob");
    bob->exec(kNoopTrigger);
    bob->exec("CREATE TABLE public.bob_t (x int)");
    const std::vector<std::string> names{"pgt_immediate_" + id + "_before", "pgt_note_" + id};
    for (const std::string& name : names) {
        bob->exec("CREATE TRIGGER " + name +
                  " AFTER INSERT ON public.bob_t FOR EACH STATEMENT EXECUTE FUNCTION "
                  "public.noop_trigger()");
    }
    for (const std::string mode : {"FULL", "IMMEDIATE", "FULL"}) {
        alice->exec("SELECT pgtrickle.alter_stream_table('alice.st', refresh_mode => $1)", {mode});
        for (const std::string& name : names) {
            EXPECT_TRUE(trigger_exists("public.bob_t", name)) << name << " after " << mode;
        }
    }
    alice->exec("INSERT INTO alice.src VALUES (100, 1)");
    alice->exec("SELECT pgtrickle.refresh_stream_table('alice.st')");
    EXPECT_EQ(last_action("alice.st"), "FULL");
    EXPECT_TRUE(matches_as("alice", "alice.st"));
    alice->exec("SELECT pgtrickle.drop_stream_table('alice.st')");
    for (const std::string& name : names) {
        EXPECT_TRUE(trigger_exists("public.bob_t", name)) << name << " after the drop";
    }
}

// Finding 5: mallory takes the names alice's keyed join would give its key
// indexes (a table and an index of her own in public). alice's creation
// succeeds, mallory's objects stay, and a superuser's alter (which rebuilds
// the key indexes) drops only what pg_trickle made.
TEST_F(SecurityNames, squatted_key_index_names_neither_block_nor_get_dropped) {
    db->exec(
        "CREATE TABLE alice.a (id int PRIMARY KEY, k int, x int);"
        "CREATE TABLE alice.b (id int PRIMARY KEY, k int, y int);"
        "INSERT INTO alice.a SELECT g, g % 5, g FROM generate_series(1, 30) g;"
        "INSERT INTO alice.b SELECT g, g % 5, -g FROM generate_series(1, 10) g;"
        "ALTER TABLE alice.a OWNER TO alice; ALTER TABLE alice.b OWNER TO alice");
    // The extension's own schemas cannot be squatted at all.
    for (const char* schema : {"pgtrickle", "pgtrickle_changes"}) {
        EXPECT_EQ(db->scalar("SELECT has_schema_privilege('mallory', $1, 'CREATE')", {schema}), "f")
            << schema;
    }
    const std::string id = next_pgt_id();
    auto mallory = session("mallory");
    mallory->exec("CREATE TABLE public.pgt_" + id + "_key0 (x int)");
    mallory->exec("CREATE TABLE public.m (x int); CREATE INDEX pgt_" + id +
                  "_key1 ON public.m (x)");
    auto alice = session("alice");
    const std::string query =
        "SELECT a.id AS aid, b.id AS bid, a.x, b.y FROM alice.a JOIN alice.b ON a.k = b.k";
    std::optional<SqlError> e =
        error_in(*alice,
                 "SELECT pgtrickle.create_stream_table('public.j', $1, refresh_mode => "
                 "'DIFFERENTIAL')",
                 {query});
    ASSERT_FALSE(e) << "alice's create failed: " << e->sqlstate << " " << e->message;
    ASSERT_EQ(pgt_id("public.j"), id);
    auto key_indexes = [&] {
        return db->scalar(
            "SELECT count(*) FROM pg_catalog.pg_index WHERE indrelid = 'public.j'::regclass "
            "AND NOT indisprimary AND indexrelid::regclass::text LIKE '%key%'");
    };
    EXPECT_EQ(key_indexes(), "2");
    // A superuser's alter sets maintenance up again (and the key indexes).
    db->exec("SELECT pgtrickle.alter_stream_table('public.j', refresh_mode => 'FULL')");
    db->exec("SELECT pgtrickle.alter_stream_table('public.j', refresh_mode => 'DIFFERENTIAL')");
    EXPECT_EQ(key_indexes(), "2");
    EXPECT_EQ(db->scalar("SELECT to_regclass('public.pgt_" + id + "_key0') IS NOT NULL"), "t");
    EXPECT_EQ(db->scalar("SELECT to_regclass('public.pgt_" + id + "_key1') IS NOT NULL"), "t");
    EXPECT_EQ(db->scalar("SELECT indrelid::regclass::text FROM pg_index WHERE indexrelid = "
                         "'public.pgt_" +
                         id + "_key1'::regclass"),
              "m");
    alice->exec("UPDATE alice.a SET k = k + 1 WHERE id < 5; DELETE FROM alice.b WHERE id = 3");
    alice->exec("SELECT pgtrickle.refresh_stream_table('public.j')");
    EXPECT_EQ(last_action("public.j"), "DIFFERENTIAL");
    EXPECT_TRUE(matches_as("alice", "public.j"));
}

// Finding 12: _explain_program is not for PUBLIC, and malformed input is
// an input error, not an internal one; explain_st still shows the plan to
// a stream table's owner.
TEST_F(SecurityNames, explain_program_is_private_and_refuses_malformed_input) {
    auto bob = session("bob");
    EXPECT_EQ(sqlstate_of(*bob, "SELECT pgtrickle._explain_program('{')"), "42501");
    const std::vector<std::string> bad{
        "{",
        "[",
        "",
        "\"x\"",
        "{\"main\": 1}",
        "{\"main\": \"x\", \"images\": [{}]}",
        "{\"main\": \"x\", \"branches\": [{\"old\": 1e999}]}",
        "{\"main\": \"x\", \"branches\": [{\"old\": 99999999999999999999999}]}",
        "{\"main\": \"x\", \"full_query\": \"q\", \"full_aux\": [\"A b\"]}",
        std::string(100, '[') + std::string(100, ']'),
        "{\"main\": \"\\ud800\"}",
        "{\"main\": \"x\"} trailing",
    };
    for (const std::string& text : bad) {
        std::optional<SqlError> e = error_in(*db, "SELECT pgtrickle._explain_program($1)", {text});
        ASSERT_TRUE(e) << "accepted: " << text;
        EXPECT_EQ(e->sqlstate, "22P02") << text << ": " << e->message;
    }
    auto alice = session("alice");
    alice->exec(
        "SELECT pgtrickle.create_stream_table('alice.st', 'SELECT id, v FROM alice.src', "
        "refresh_mode => 'DIFFERENTIAL')");
    EXPECT_NE(alice->scalar("SELECT value FROM pgtrickle.explain_st('alice.st') WHERE property = "
                            "'delta_plan'"),
              "");
}

// Finding 12: the display-scale state's combine function fails on
// overflow instead of wrapping.
TEST_F(SecurityNames, numeric_scale_state_overflow_is_an_error) {
    const std::string max = "9223372036854775807";
    EXPECT_EQ(sqlstate_of(*db, "SELECT pgtrickle.numeric_scale_combine(" + max + ", " + max + ")"),
              "22003");
    EXPECT_EQ(sqlstate_of(*db, "SELECT pgtrickle.numeric_scale_acc(0, 1.5, " + max + ")"), "22003");
    // Counts past the 40 bits the state keeps them in.
    const std::string big = std::to_string((int64_t{1} << 40) - 1);
    EXPECT_EQ(sqlstate_of(*db, "SELECT pgtrickle.numeric_scale_combine(" + big + ", " + big + ")"),
              "22003");
    // In range: scale 2 with 3 and with 4 inputs is scale 2 with 7.
    const int64_t unit = int64_t{1} << 40;
    EXPECT_EQ(db->scalar("SELECT pgtrickle.numeric_scale_combine(" + std::to_string(2 * unit + 3) +
                         ", " + std::to_string(2 * unit + 4) + ")"),
              std::to_string(2 * unit + 7));
}

// Finding 12: names are read as parse_ident reads them. A name that is not
// an identifier unquoted ('123', a control character) is refused with
// 42602 and a hint to quote it, by every function taking a stream table
// name; a keyword is a name ('select' is the relation "select"), and a
// quoted name is taken as written.
TEST_F(SecurityNames, stream_table_names_are_identifiers_or_quoted) {
    const std::vector<std::string> uses{
        "SELECT pgtrickle.refresh_stream_table($1)",
        "SELECT pgtrickle.alter_stream_table($1, schedule => '5m')",
        "SELECT * FROM pgtrickle.explain_st($1)",
        "SELECT pgtrickle.get_staleness($1)",
        "SELECT * FROM pgtrickle.get_refresh_history($1)",
        "SELECT * FROM pgtrickle.list_sources($1)",
        "SELECT pgtrickle.export_definition($1)",
        "SELECT * FROM pgtrickle.explain_refresh_mode($1)",
        "SELECT pgtrickle.refresh_if_stale($1, '0s')",
        "SELECT * FROM pgtrickle.repair_stream_table($1)",
        "SELECT pgtrickle.resume_stream_table($1)",
        "SELECT pgtrickle.create_stream_table_if_not_exists($1, 'SELECT id, v FROM alice.src')",
        "SELECT pgtrickle.create_or_replace_stream_table($1, 'SELECT id, v FROM alice.src')",
        "SELECT pgtrickle.drop_stream_table($1)",
    };
    const std::string create =
        "SELECT pgtrickle.create_stream_table($1, 'SELECT id, v FROM alice.src', "
        "refresh_mode => 'DIFFERENTIAL')";
    for (const std::string name : {"123", "\x01", "a\x01", "1st.t"}) {
        std::optional<SqlError> e = error_in(*db, create, {name});
        ASSERT_TRUE(e) << "created a stream table named " << name;
        EXPECT_EQ(e->sqlstate, "42602") << e->message;
        EXPECT_NE(e->hint.find("quote"), std::string::npos) << e->hint;
        for (const std::string& use : uses) {
            EXPECT_EQ(sqlstate_of(*db, use, {name}), "42602") << use << " with " << name;
        }
    }
    for (const auto& [name, relation] :
         std::vector<std::pair<std::string, std::string>>{{"select", "public.\"select\""},
                                                          {"\"123\"", "public.\"123\""},
                                                          {"\"a\x01\"", "public.\"a\x01\""}}) {
        ASSERT_FALSE(error_in(*db, create, {name})) << name;
        ASSERT_EQ(pgt_id(relation).empty(), false) << relation;
        db->exec("INSERT INTO alice.src VALUES (100, 1) ON CONFLICT (id) DO UPDATE SET v = 2");
        for (const std::string& use : uses) {
            std::optional<SqlError> e = error_in(*db, use, {name});
            EXPECT_FALSE(e) << use << " with " << name << ": " << e->sqlstate << " " << e->message;
        }
        // The drop came last: the name is free again, and nothing is left.
        EXPECT_EQ(db->scalar("SELECT to_regclass($1) IS NULL", {relation}), "t") << relation;
    }
    db->exec(create, {"select"});
    db->exec("INSERT INTO alice.src VALUES (200, 3)");
    db->exec("SELECT pgtrickle.refresh_stream_table('select')");
    EXPECT_EQ(last_action("public.\"select\""), "DIFFERENTIAL");
    EXPECT_TRUE(matches_query(*db, "public.\"select\""));
}

}  // namespace
}  // namespace pgt::e2e
