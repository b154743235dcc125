// Change notifications of a stream table: the notify_changes() trigger on
// its storage, keyed by the stream table's logical key.
// Invariant: the trigger exists exactly when the catalog row names a channel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pg/boundary/spi.hpp"
#include "pg/catalog/catalog.hpp"

namespace pgt::pg {

// Refuses a channel NOTIFY cannot use (empty, or 64 bytes or more): 22023.
void check_notify_channel(const std::string& channel);

// (Re)creates or removes the trigger so that it matches row.notify_channel.
void sync_notify_trigger(Spi& spi, const catalog::StreamTableRow& row);

// Sends {"op":"RESYNC","reason":...} on row's channel (none: nothing), at
// this transaction's commit: every row of it may have changed (its query
// replaced, a reinitialisation, a drop), so listeners read it all again.
void notify_resync(const catalog::StreamTableRow& row, const std::string& reason);
// The same for the stream table schema.name (raw names) on channel.
void notify_resync(const std::string& channel, const std::string& schema, const std::string& name,
                   const std::string& reason);

// The next value of this backend's notification counter ("seq"), shared by
// the row trigger and notify_resync.
uint64_t next_notify_seq();

}  // namespace pgt::pg
