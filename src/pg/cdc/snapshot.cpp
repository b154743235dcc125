// Taking and releasing the refresh snapshot.
// Invariant: RefreshSnapshot::text describes exactly `snapshot` (it is read
// by a statement executed under that snapshot), except that the refreshing
// transaction's own id is in progress in it (diff::frontier_text).
#include "pg/cdc/snapshot.hpp"

#include "core/diff/scan_delta.hpp"
#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "utils/snapmgr.h"
}

namespace pgt::pg {

namespace {

const char* const kSnapshotAndOwnXid =
    "SELECT pg_catalog.pg_current_snapshot()::pg_catalog.text, "
    "pg_catalog.pg_current_xact_id_if_assigned()::pg_catalog.text";

// The frontier text of a row of kSnapshotAndOwnXid.
std::string frontier_of(const SpiRows& r) {
    const std::optional<std::string>& own = r.rows.at(0).at(1);
    return own ? diff::frontier_text(*r.rows.at(0).at(0), *own) : *r.rows.at(0).at(0);
}

}  // namespace

RefreshSnapshot RefreshSnapshot::take(Spi& spi, bool latest) {
    RefreshSnapshot rs;
    rs.snapshot = pg_call(
        [&] { return RegisterSnapshot(latest ? GetLatestSnapshot() : GetTransactionSnapshot()); });
    SpiRows r = spi.query_at(rs.snapshot, kSnapshotAndOwnXid);
    rs.own_xid = r.rows.at(0).at(1);
    rs.text = frontier_of(r);
    return rs;
}

std::string current_frontier(Spi& spi) {
    return frontier_of(spi.query(kSnapshotAndOwnXid));
}

void RefreshSnapshot::close() {
    if (snapshot != nullptr) {
        Snapshot s = snapshot;
        snapshot = nullptr;
        pg_call([&] { UnregisterSnapshot(s); });
    }
}

}  // namespace pgt::pg
