// The exact frontier of each (stream table, source) pair: which buffer rows
// a refresh consumes (core/diff/scan_delta.hpp window_predicate), and the
// removal of buffer rows every consumer has passed.
// Invariant: a frontier only moves forward, inside the refreshing
// transaction, to the snapshot that refresh ran under.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pg/boundary/spi.hpp"
#include "pg/cdc/change_buffer.hpp"
#include "pg/cdc/snapshot.hpp"

namespace pgt::pg {

struct Frontier {
    std::string snapshot;
    std::optional<std::string> own_xid;
    int64_t own_seq = 0;
    int64_t seq_seen = 0;  // the buffer's capture sequence when it was taken
    // The buffer's commit mark read just before the frontier's snapshot
    // was taken (commit_marks.hpp); nullopt when not known.
    std::optional<std::string> write_mark;
    // The scheduler dropped this consumer from the buffer
    // (pg_trickle.max_buffer_retention): rows past the frontier may be gone.
    bool released = false;
};

// The buffer's capture sequence now, as SQL taking the buffer's name as $1
// (0 before its first row): its distance from a frontier's seq_seen bounds
// the rows captured since.
extern const char* const kCaptureSequenceNow;

// Rows captured into src's buffer since the frontier was taken (an upper
// bound of the window's rows, inflated by rolled-back writes; no scan).
int64_t captured_since(Spi& spi, const CaptureSource& src, const Frontier& f);

// The frontier, locked FOR UPDATE (a concurrent refresh that already moved
// it is then seen, or is a serialization error under REPEATABLE READ).
Frontier lock_frontier(Spi& spi, int64_t pgt_id, int64_t source_id);

// Whether f's window for a refresh snapshot is empty but for the refreshing
// transaction's own rows, known without reading the buffer: f's write mark
// is the buffer's mark `now`, read after that snapshot was taken
// (commit_marks.hpp says why).
bool quiet(const Frontier& f, const std::optional<std::string>& now);

// Moves (or creates) the frontier to rs, recording this transaction's own
// buffer rows up to the highest sequence number visible now, and the
// buffer's commit mark read just before rs was taken (nullopt: none, or rs
// is older than that read, as under REPEATABLE READ).
void advance_frontier(Spi& spi, int64_t pgt_id, const CaptureSource& src, const RefreshSnapshot& rs,
                      const std::optional<std::string>& write_mark);

// The window parameters $1..$5 of diff::window_predicate.
std::vector<SpiParam> window_params(const RefreshSnapshot& rs, const Frontier& f);

// Deletes buffer rows consumed by every consumer of src, after stream
// table pgt_id moved its frontier on from `before`. Skipped (no buffer
// scan) when another consumer's frontier is older than `before`: what this
// refresh consumed is not consumed by that one yet, and whatever it had
// consumed was trimmed when it was consumed last.
void trim_buffer(Spi& spi, const CaptureSource& src, int64_t pgt_id, const Frontier& before);

// Deletes the buffer rows every consumer of source_id has passed (one scan
// of the buffer).
// Returns the number of rows deleted.
uint64_t trim_consumed(Spi& spi, int64_t source_id, const std::string& buffer);

// After trim_consumed removed rows: when the buffer can be locked at once
// (no writer or reader holds it) and holds no row any more, TRUNCATE it, so
// its pages go now instead of at the next VACUUM (scans of a buffer full of
// dead rows cost a refresh tens of ms). The lock is held until commit: only
// for a transaction that commits right after (the scheduler worker's).
void truncate_if_empty(Spi& spi, const std::string& buffer);

// A consumer whose frontier is more than `limit` captured rows behind
// (rows captured since it was taken, by the buffer's sequence: no scan).
struct LaggingConsumer {
    int64_t pgt_id = 0;
    int64_t source_id = 0;
    int64_t behind = 0;
    std::string stream_table, source;  // names, for a person
};
std::vector<LaggingConsumer> lagging_consumers(Spi& spi, int64_t limit);

// Drops the consumer from its buffer: its frontier stops holding rows
// (trim_consumed passes over it) and its stream table is marked for
// reinitialisation. False when its frontier is locked by a refresh now
// (which moves it) or was released already.
bool release_consumer(Spi& spi, const LaggingConsumer& c, int64_t limit);

// Removes the stream table's frontiers and the captures nobody uses then.
void detach_frontiers(Spi& spi, int64_t pgt_id);

}  // namespace pgt::pg
