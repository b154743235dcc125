// Per-test database with pg_trickle installed: each TEST_F gets a fresh
// database named after it, so tests never see each other's objects.
// Invariant: the database is dropped at the end of the test unless it failed
// (then it is kept for inspection while the cluster runs).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "cluster.hpp"
#include "core/diff/program.hpp"
#include "oracle.hpp"
#include "pg_conn.hpp"

namespace pgt::e2e {

inline std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), ::tolower);
    return s;
}

class DbTest : public ::testing::Test {
protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dbname_ = std::string("t_") + info->test_suite_name() + "_" + info->name();
        std::transform(dbname_.begin(), dbname_.end(), dbname_.begin(), ::tolower);
        dbname_ = dbname_.substr(0, 63);
        Conn admin = connect();
        admin.exec("DROP DATABASE IF EXISTS \"" + dbname_ + "\"");
        if (as_owner()) {
            // The database (and so its public schema) belongs to a plain
            // role; a superuser installs the extension, as in production.
            admin.exec(
                "DO $$ BEGIN CREATE ROLE pgt_e2e_owner LOGIN; EXCEPTION WHEN duplicate_object "
                "THEN NULL; END $$");
            admin.exec("CREATE DATABASE \"" + dbname_ + "\" OWNER pgt_e2e_owner");
            Conn(cluster().conninfo(dbname_)).exec("CREATE EXTENSION pg_trickle");
        } else {
            admin.exec("CREATE DATABASE \"" + dbname_ + "\"");
        }
        db = std::make_unique<Conn>(conninfo());
        if (!as_owner()) {
            db->exec("CREATE EXTENSION pg_trickle");
        }
    }

    // PGT_E2E_AS_OWNER=1: every session of the test (db, connect_db(),
    // conninfo()) is the plain role pgt_e2e_owner, which owns the database
    // and not the extension (ctest e2e_as_owner).
    static bool as_owner() {
        const char* v = std::getenv("PGT_E2E_AS_OWNER");
        return v != nullptr && std::string(v) == "1";
    }

    void TearDown() override {
        db.reset();
        if (!HasFailure()) {
            Conn admin = connect();
            admin.exec("DROP DATABASE IF EXISTS \"" + dbname_ + "\" WITH (FORCE)");
        }
    }

    // Another session on this test's database.
    Conn connect_db() { return Conn(conninfo()); }
    std::string conninfo() {
        return cluster().conninfo(dbname_) + (as_owner() ? " user=pgt_e2e_owner" : "");
    }

    // Count of rows a query returns.
    long count(const std::string& sql) {
        return std::stol(db->scalar("SELECT count(*) FROM (" + sql + ") c"));
    }

    // "action/rows_inserted/rows_deleted" of st's latest refresh.
    std::string last(const std::string& st) {
        return db->scalar(
            "SELECT h.action || '/' || h.rows_inserted || '/' || h.rows_deleted "
            "FROM pgtrickle.pgt_refresh_history h JOIN pgtrickle.pgt_stream_tables s "
            "USING (pgt_id) WHERE s.pgt_relid = $1::regclass ORDER BY h.refresh_id DESC LIMIT 1",
            {st});
    }
    void refresh(const std::string& st) {
        db->exec("SELECT pgtrickle.refresh_stream_table($1)", {st});
    }
    void alter_mode(const std::string& st, const std::string& mode) {
        db->exec("SELECT pgtrickle.alter_stream_table($1, refresh_mode => $2)", {st, mode});
    }
    // "requested/effective" refresh mode of st.
    std::string modes(const std::string& st) {
        return db->scalar(
            "SELECT requested_mode || '/' || refresh_mode FROM pgtrickle.pgt_stream_tables "
            "WHERE pgt_relid = $1::regclass",
            {st});
    }

    // st's stored delta program (pgt_stream_tables.delta_program, jsonb).
    pgt::diff::DeltaProgram stored_program(const std::string& st) {
        return pgt::diff::decode_program(db->scalar(
            "SELECT delta_program::text FROM pgtrickle.pgt_stream_tables WHERE pgt_relid = "
            "$1::regclass",
            {st}));
    }

    // Every statement of st's delta program, one per line: image steps,
    // branches, the FULL query, the fallback, fallback image steps, each kept
    // copy's table, rebuild and apply, then the main statement. Which forms
    // of statement it was given.
    std::string delta_program(const std::string& st) {
        const pgt::diff::DeltaProgram p = stored_program(st);
        std::string out;
        auto add = [&](const std::string& sql) { out += sql + "\n"; };
        for (const auto& s : p.images) {
            add(s.sql);
        }
        for (const auto& b : p.branches) {
            add(b.sql);
        }
        add(p.full_query);
        add(p.fallback);
        for (const auto& s : p.fallback_images) {
            add(s.sql);
        }
        for (const auto& k : p.kept) {
            add(k.table);
            add(k.rebuild);
            add(k.apply);
        }
        return out + p.main;
    }

    // Writes a successful refresh of st into pgt_refresh_history as if it
    // had taken `ms` (AUTO reads its choices from there).
    void write_history(const std::string& st, const std::string& action, int ms, int changes,
                       const std::string& kept_refill_ms = "0") {
        db->exec(
            "INSERT INTO pgtrickle.pgt_refresh_history (pgt_id, action, status, initiated_by, "
            "start_time, end_time, source_changes, kept_refill_ms) SELECT pgt_id, $1, 'SUCCESS', "
            "'MANUAL', now(), now() + $2::int * interval '1 ms', $3::bigint, $4::float8 FROM "
            "pgtrickle.pgt_stream_tables WHERE pgt_relid = $5::regclass",
            {action, std::to_string(ms), std::to_string(changes), kept_refill_ms, st});
    }

    std::string last_action(const std::string& st) {
        std::string l = last(st);
        return l.substr(0, l.find('/'));
    }

    // Counts of everything a create could leave behind.
    std::string state() {
        return db->scalar(
            "SELECT (SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace)"
            " || '/' || (SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal)"
            " || '/' || (SELECT count(*) FROM pgtrickle.pgt_stream_tables)"
            " || '/' || (SELECT count(*) FROM pg_class "
            "            WHERE relnamespace = 'pgtrickle_changes'::regnamespace)"
            " || '/' || (SELECT count(*) FROM pgtrickle.pgt_sources)");
    }

    std::unique_ptr<Conn> db;
    std::string dbname_;
};

}  // namespace pgt::e2e
