// What creating a stream table would check, decide and advise, without
// saying it: the checks of the query, the refresh mode, the WARNINGs about
// SELECT * and STABLE functions, the indexes a DIFFERENTIAL refresh wants. create/alter say them as
// NOTICEs and WARNINGs; validate_query returns them as rows. Invariant: these only read the
// catalogs; they create nothing.
#pragma once

#include <string>
#include <vector>

#include "core/refresh_mode.hpp"
#include "pg/analyze/defining_query.hpp"
#include "pg/boundary/spi.hpp"

extern "C" {
#include "postgres.h"
}

namespace pgt::pg {

// An index a DIFFERENTIAL refresh wants: the message, why, and the
// statement that creates it.
struct IndexAdvice {
    std::string message, detail, create;
};

// The output columns q's row identity encodes.
std::vector<OutputColumn> identity_columns_of(const AnalyzedQuery& q);

// What creating or redefining a stream table of q for `owner` checks of
// the query itself: the owner may read what it reads (42501), and its
// identity columns can be encoded (0A000/54000).
void check_maintainable(const AnalyzedQuery& q, Oid owner);

// The WARNING a query selecting * gets (seed EC-15; "" none).
std::string star_warning(const AnalyzedQuery& q);

// The mode q would be maintained in for `owner`, as create_stream_table
// resolves it (0A000 when DIFFERENTIAL was asked for and cannot maintain
// q; 42501 when its capture needs a right the caller lacks); mode.notice
// says why AUTO chose FULL.
ResolvedMode resolve_mode_quietly(Spi& spi, const std::string& text, const AnalyzedQuery& q,
                                  Oid owner);

// The indexes a refresh of q in `mode` wants and its sources lack.
std::vector<IndexAdvice> index_advice(Spi& spi, const AnalyzedQuery& q, RefreshMode mode);

}  // namespace pgt::pg
