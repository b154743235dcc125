// The time limit of a scheduled refresh: pg_trickle.refresh_timeout, or the
// statement_timeout the owner's own session in this database would have
// (role in database, role, database, server), whichever is smaller.
// PostgreSQL arms statement_timeout only for client statements, so the
// worker arms the same timer around each refresh itself.
// Invariant: the timer is disarmed after every refresh, failed or not,
// before anything else runs in the worker.
#pragma once

#include <string>
#include <utility>

#include "pg/boundary/spi.hpp"

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
}

namespace pgt::pg {

struct RefreshLimit {
    int ms = 0;          // 0: no bound
    std::string source;  // the setting it comes from, for a person
};

RefreshLimit refresh_limit(Spi& spi, Oid owner);

// Arms PostgreSQL's statement timeout for one refresh; disarm() must be
// called after it, on success and on failure.
class RefreshTimer {
public:
    explicit RefreshTimer(RefreshLimit limit) : limit_(std::move(limit)) {}
    void arm();
    void disarm();
    // Whether the refresh ran up to the limit (a 57014 then is the timeout).
    bool expired() const;
    const RefreshLimit& limit() const { return limit_; }

private:
    RefreshLimit limit_;
    TimestampTz armed_at_ = 0;
};

}  // namespace pgt::pg
