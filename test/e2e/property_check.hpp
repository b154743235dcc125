// The check step shared by the seeded property tests: refresh every stream
// table of a batch, compare each with the oracle, and check what its refresh
// history says. Invariant: a refresh is DIFFERENTIAL or NO_DATA (never FULL
// outside PGT_PROPERTY_MODE=FULL), NO_DATA when nothing changed, and writes
// nothing twice after a refresh inside the writing transaction.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "oracle.hpp"
#include "pg_conn.hpp"
#include "property_gen.hpp"

namespace pgt::e2e::property {

struct StreamTable {
    std::string name;
    std::string query;
    long history_rows = 0;         // refresh history rows expected so far
    bool pending = false;          // source changes since its last refresh
    bool refreshed_in_tx = false;  // last refreshed inside the writing transaction
};

// How a batch of statements is committed.
enum class Wrap { Commit, Rollback, Savepoint, RefreshInside, Empty };

inline Wrap pick_wrap(Rng& r) {
    int p = r.range(0, 99);
    return p < 68   ? Wrap::Commit
           : p < 80 ? Wrap::Rollback
           : p < 89 ? Wrap::Savepoint
           : p < 95 ? Wrap::RefreshInside
                    : Wrap::Empty;
}

// One transaction around stmts: committed, rolled back, with the middle
// ones rolled back to a savepoint, or left open (RefreshInside: committed
// after the refreshes).
inline std::string wrap_statements(const std::vector<std::string>& stmts, Wrap wrap) {
    std::string sql = "BEGIN; ";
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
            return sql + "ROLLBACK";
        case Wrap::RefreshInside:
            return sql;
        default:
            return sql + "COMMIT";
    }
}

// Creates a stream table of the mode under test (refresh_mode()); a refusal
// fails the test with the query; checks the catalog's mode and the oracle.
inline StreamTable create_checked(Conn& db, const std::string& name, const std::string& query) {
    StreamTable st;
    st.name = name;
    st.query = query;
    try {
        db.exec("SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => $3)",
                {st.name, st.query, refresh_mode()});
    } catch (const SqlError& e) {
        ADD_FAILURE() << "supported query rejected: " << st.query << "\n" << e.what();
        throw;
    }
    EXPECT_EQ(db.scalar("SELECT refresh_mode FROM pgtrickle.pgt_stream_tables "
                        "WHERE pgt_relid = $1::regclass",
                        {st.name}),
              refresh_mode())
        << st.query;
    EXPECT_TRUE(matches_query(db, st.name)) << "after create: " << st.query;
    st.history_rows = 1;  // the initial FULL at creation
    return st;
}

// Whether st's storage has the hidden column `column`.
inline bool hidden_column(Conn& db, const std::string& st, const std::string& column) {
    return db.scalar(
               "SELECT count(*) FROM pg_attribute WHERE attrelid = $1::regclass "
               "AND attname = $2 AND NOT attisdropped",
               {st, column}) == "1";
}

// Whether st's storage keeps its aggregates algebraically (a hidden
// __pgt_count column): what share of its stream tables a property test
// sends down that path.
inline bool algebraic_storage(Conn& db, const std::string& st) {
    return hidden_column(db, st, "__pgt_count");
}

// Whether st's rows are told apart by a grouping-set column (__pgt_gset).
inline bool grouping_set_storage(Conn& db, const std::string& st) {
    return hidden_column(db, st, "__pgt_gset");
}

inline void check_history(Conn& db, const StreamTable& st) {
    Result h = db.exec(
        "SELECT count(*), (array_agg(h.action || '/' || h.status ORDER BY h.refresh_id "
        "DESC))[1], (array_agg(h.rows_inserted || '/' || h.rows_deleted ORDER BY "
        "h.refresh_id DESC))[1] FROM pgtrickle.pgt_refresh_history h "
        "JOIN pgtrickle.pgt_stream_tables s USING (pgt_id) WHERE s.pgt_relid = $1::regclass",
        {st.name});
    EXPECT_EQ(std::stol(h.at(0, 0)), st.history_rows) << st.name << ": history rows";
    const std::string last = h.at(0, 1);
    if (refresh_mode() == "FULL") {
        EXPECT_EQ(last, "FULL/SUCCESS") << st.name;
    } else if (!st.pending && st.refreshed_in_tx) {
        EXPECT_TRUE(last == "DIFFERENTIAL/SUCCESS" || last == "NO_DATA/SUCCESS") << last;
        EXPECT_EQ(h.at(0, 2), "0/0") << st.name << ": writes applied twice";
    } else if (!st.pending) {
        EXPECT_EQ(last, "NO_DATA/SUCCESS") << st.name << ": nothing changed";
    } else {
        EXPECT_TRUE(last == "DIFFERENTIAL/SUCCESS" || last == "NO_DATA/SUCCESS")
            << st.name << ": last refresh was " << last << " (" << st.query << ")";
    }
}

// After a batch (`changes`: it left source changes; `in_tx`: the writing
// transaction is still open and the refreshes run inside it), refreshes
// every stream table but sts[skip] in one round trip, then checks each.
// Returns the cycles made; 0 (with a failure) when a refresh failed.
inline long refresh_and_check(Conn& db, std::vector<StreamTable>& sts, int skip, bool changes,
                              bool in_tx) {
    std::string refreshes;
    for (size_t i = 0; i < sts.size(); i++) {
        sts[i].pending = sts[i].pending || changes;
        if (static_cast<int>(i) != skip) {
            refreshes += "SELECT pgtrickle.refresh_stream_table('" + sts[i].name + "'); ";
        }
    }
    try {
        db.exec(refreshes);
    } catch (const SqlError& e) {
        ADD_FAILURE() << "refresh failed: " << e.what() << "\n" << e.detail;
        return 0;
    }
    long made = 0;
    for (size_t i = 0; i < sts.size(); i++) {
        if (static_cast<int>(i) == skip) {
            continue;
        }
        StreamTable& st = sts[i];
        EXPECT_TRUE(matches_query(db, st.name)) << st.name << ": " << st.query;
        st.history_rows++;
        check_history(db, st);
        st.pending = false;
        st.refreshed_in_tx = in_tx;
        made++;
    }
    return made;
}

// One batch: its SQL (made for `wrap`) run through exec, then the
// refreshes and the checks, one stream table left out now and then
// (before_refresh(skip) runs first, e.g. to trace). Returns the cycles made.
inline long run_batch(Conn& db, Rng& r, std::vector<StreamTable>& sts, uint64_t seed, int batch,
                      Wrap wrap, const std::string& sql,
                      const std::function<void(const std::string&)>& exec,
                      const std::function<void(int)>& before_refresh = {}) {
    const int n = static_cast<int>(sts.size());
    int skip = wrap != Wrap::RefreshInside && r.chance(10) ? r.range(0, n - 1) : -1;
    SCOPED_TRACE("PGT_PROPERTY_SEED=" + std::to_string(seed) + " batch " + std::to_string(batch) +
                 ": " + (sql.empty() ? "(no DML)" : sql));
    try {
        if (!sql.empty()) {
            exec(sql);
        }
    } catch (const SqlError& e) {
        ADD_FAILURE() << "the generated DML failed (a generator bug): " << e.what();
        return 0;
    }
    if (before_refresh) {
        before_refresh(skip);
    }
    const bool changes = wrap != Wrap::Rollback && wrap != Wrap::Empty;
    long made = refresh_and_check(db, sts, skip, changes, wrap == Wrap::RefreshInside);
    if (wrap == Wrap::RefreshInside) {
        exec("COMMIT");
    }
    return made;
}

}  // namespace pgt::e2e::property
