// What explain_st shows beyond the catalog: pgtrickle._explain_program(text),
// a stored delta program section by section with each statement over
// several lines, and pgtrickle._explain_refresh(name), the plans of the
// next refresh's statements as they ran (explain_st(name, true)).
// Invariant: _explain_program reads only its argument (IMMUTABLE);
// _explain_refresh leaves nothing behind (its refresh is rolled back).
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/sql/format.hpp"
#include "pg/api/args.hpp"
#include "pg/api/names.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/spi.hpp"
#include "pg/catalog/catalog.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/refresh/full_refresh.hpp"

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(pgt_explain_program);
Datum pgt_explain_program(PG_FUNCTION_ARGS);
PG_FUNCTION_INFO_V1(pgt_explain_refresh);
Datum pgt_explain_refresh(PG_FUNCTION_ARGS);
}

namespace pgt::pg {
namespace {

using Rows = std::vector<std::pair<std::string, std::string>>;

// The (property, value) rows of the next refresh, explained: what it did
// and why, then each statement's plan.
Rows explain_next_refresh(const std::string& name) {
    Spi spi = Spi::connect();
    catalog::open_catalog(spi);
    catalog::StreamTableRow row = resolve_stream_table(spi, name, /*must_own=*/true);
    if (row.reinit_reason) {
        throw pgt::Error("55000",
                         "stream table " + relation_display_name(row.relid) +
                             " is reinitialised by its next refresh",
                         "Reason: " + *row.reinit_reason + ".",
                         "Refresh it (pgtrickle.refresh_stream_table), then explain the refresh "
                         "after that.");
    }
    ExplainedRefresh e = explain_refresh(spi, row);
    spi.close();
    Rows out;
    out.emplace_back("analyze: refresh", e.action + (e.reason ? " (" + *e.reason + ")" : ""));
    for (const ExplainedStatement& s : e.statements) {
        out.emplace_back("analyze: " + s.what, s.plan);
    }
    return out;
}

}  // namespace
}  // namespace pgt::pg

Datum pgt_explain_refresh(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&]() -> Datum {
        std::string name = pgt::pg::Args(fcinfo).required_text(0, "name");
        pgt::pg::Rows rows = pgt::pg::explain_next_refresh(name);
        pgt::pg::pg_call([&] {
            InitMaterializedSRF(fcinfo, 0);
            auto* rsi = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
            for (const auto& [property, value] : rows) {
                Datum values[2] = {CStringGetTextDatum(property.c_str()),
                                   CStringGetTextDatum(value.c_str())};
                bool nulls[2] = {false, false};
                tuplestore_putvalues(rsi->setResult, rsi->setDesc, values, nulls);
            }
        });
        return (Datum)0;
    });
}

Datum pgt_explain_program(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&]() -> Datum {
        const char* program =
            pgt::pg::pg_call([&] { return TextDatumGetCString(PG_GETARG_DATUM(0)); });
        std::string formatted = pgt::sql::format_program(program);
        return pgt::pg::pg_call([&] { return CStringGetTextDatum(formatted.c_str()); });
    });
}
