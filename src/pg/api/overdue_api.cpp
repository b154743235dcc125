// pgtrickle._schedule_overdue(schedule, staleness): whether a stream table
// that has not been equal to its sources for `staleness` is behind its
// schedule, for pg_stat_stream_tables.stale.
// Invariant: NULL when it cannot be told: never populated (staleness
// NULL), or a 'calculated' schedule (due when what reads it is).
#include <cstdint>
#include <string>

#include "core/sched/schedule.hpp"
#include "pg/api/args.hpp"
#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "datatype/timestamp.h"
#include "access/xact.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(pgt_schedule_overdue);
Datum pgt_schedule_overdue(PG_FUNCTION_ARGS);
}

namespace {

int64_t interval_microseconds(const Interval* i) {
    return i->time +
           (static_cast<int64_t>(i->day) + static_cast<int64_t>(i->month) * DAYS_PER_MONTH) *
               USECS_PER_DAY;
}

}  // namespace

Datum pgt_schedule_overdue(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&]() -> Datum {
        if (PG_ARGISNULL(0) || PG_ARGISNULL(1)) {
            PG_RETURN_NULL();
        }
        const std::string spelled = pgt::pg::Args(fcinfo).required_text(0, "schedule");
        const int64_t stale_us = interval_microseconds(PG_GETARG_INTERVAL_P(1));
        const pgt::sched::Schedule s = pgt::sched::parse_schedule(spelled);
        if (s.kind == pgt::sched::Kind::Calculated) {
            PG_RETURN_NULL();
        }
        if (s.kind == pgt::sched::Kind::Duration) {
            PG_RETURN_BOOL(stale_us > static_cast<int64_t>(s.interval.count()) * 1000);
        }
        // Cron: behind when the first fire time after it was last equal has passed.
        const TimestampTz now =
            pgt::pg::pg_call([] { return GetCurrentTransactionStartTimestamp(); });
        constexpr int64_t kUnixEpochOffset =
            static_cast<int64_t>(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY;
        const int64_t now_s = now / USECS_PER_SEC + kUnixEpochOffset;
        const int64_t since_s = (now - stale_us) / USECS_PER_SEC + kUnixEpochOffset;
        PG_RETURN_BOOL(pgt::sched::next_fire_after(s.cron, since_s) < now_s);
    });
}
