// Change notifications of a stream table: the notify_changes() trigger on
// its storage, keyed by the stream table's logical key.
// Invariant: the trigger exists exactly when the catalog row names a channel.
#pragma once

#include <optional>
#include <string>

#include "pg/boundary/spi.hpp"
#include "pg/catalog/catalog.hpp"

namespace pgt::pg {

// Refuses a channel NOTIFY cannot use (empty, or 64 bytes or more): 22023.
void check_notify_channel(const std::string& channel);

// (Re)creates or removes the trigger so that it matches row.notify_channel.
void sync_notify_trigger(Spi& spi, const catalog::StreamTableRow& row);

}  // namespace pgt::pg
