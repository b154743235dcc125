// The check step shared by the seeded property tests: refresh every stream
// table of a batch, compare each with the oracle, and check what its refresh
// history says. Invariant: a refresh is DIFFERENTIAL or NO_DATA (never FULL
// outside PGT_PROPERTY_MODE=FULL), NO_DATA when nothing changed, and writes
// nothing twice after a refresh inside the writing transaction.
#pragma once

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

}  // namespace pgt::e2e::property
