// What the scheduler shares with the SQL-callable lifecycle API.
#pragma once

#include <string>

#include "pg/boundary/spi.hpp"
#include "pg/catalog/catalog.hpp"
#include "pg/refresh/full_refresh.hpp"

namespace pgt::pg {

// Refreshes row, or reinitialises it when DDL marked it (reinit_reason):
// the query analysed again, its maintenance rebuilt, a FULL refresh whose
// history gives the reason.
RefreshResult refresh_or_reinitialize(Spi& spi, catalog::StreamTableRow& row,
                                      const std::string& initiated_by);

}  // namespace pgt::pg
