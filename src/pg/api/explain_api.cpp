// What explain_st shows beyond the catalog: pgtrickle._explain_program(text),
// a stored delta program section by section with each statement over
// several lines, and pgtrickle._explain_refresh(name), the plans of the
// next refresh's statements as they ran (explain_st(name, with_analyze => true)); and
// pgtrickle.validate_query(query, refresh_mode), what creating a stream
// table of the query would decide, as a dry run.
// Invariant: _explain_program reads only its argument (IMMUTABLE);
// _explain_refresh leaves nothing behind (its refresh is rolled back);
// validate_query creates nothing and fails as create_stream_table would.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/sql/format.hpp"
#include "core/ir/tree.hpp"
#include "core/refresh_mode.hpp"
#include "pg/api/advice.hpp"
#include "pg/api/args.hpp"
#include "pg/api/lifecycle.hpp"
#include "pg/api/names.hpp"
#include "pg/boundary/as_role.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/spi.hpp"
#include "pg/catalog/catalog.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/common/quote.hpp"
#include "pg/refresh/full_refresh.hpp"

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(pgt_explain_program);
Datum pgt_explain_program(PG_FUNCTION_ARGS);
PG_FUNCTION_INFO_V1(pgt_format_statement);
Datum pgt_format_statement(PG_FUNCTION_ARGS);
PG_FUNCTION_INFO_V1(pgt_explain_refresh);
Datum pgt_explain_refresh(PG_FUNCTION_ARGS);
PG_FUNCTION_INFO_V1(pgt_validate_query);
Datum pgt_validate_query(PG_FUNCTION_ARGS);
PG_FUNCTION_INFO_V1(pgt_mode_reason);
Datum pgt_mode_reason(PG_FUNCTION_ARGS);
}

namespace pgt::pg {
namespace {

using Rows = std::vector<std::pair<std::string, std::optional<std::string>>>;

// The (property, value) rows of the next refresh, explained: what it did
// and why, then each statement's plan.
Rows explain_next_refresh(const std::string& name) {
    Spi spi = Spi::connect();
    open_stream_tables(spi);
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
    out.emplace_back("analyze: refresh",
                     e.action + (e.reason.empty() ? "" : " (" + e.reason + ")"));
    for (const ExplainedStatement& s : e.statements) {
        out.emplace_back("analyze: " + s.what, s.plan);
    }
    return out;
}

std::string identity_text(const AnalyzedQuery& q) {
    std::string cols;
    for (const OutputColumn& c : identity_columns_of(q)) {
        cols += (cols.empty() ? "" : ", ") + c.name;
    }
    return std::string(rowid::domain_spelling(q.identity.domain)) + "(" + cols + ")";
}

// What create_stream_table(name, query, refresh_mode => mode_text) would
// decide, with the same checks (and errors) before anything is created.
Rows validate(const std::string& query, const std::string& mode_text) {
    AnalyzedQuery q = analyze_defining_query(query);
    check_maintainable(q, GetUserId());
    Spi spi = Spi::connect();
    open_stream_tables(spi);
    ResolvedMode mode = resolve_mode_quietly(spi, mode_text, q, GetUserId());
    std::vector<IndexAdvice> advice = index_advice(spi, q, mode.effective);
    spi.close();
    const bool differential = mode.effective == RefreshMode::kDifferential;
    std::optional<diff::DeltaPlan> plan;
    if (differential) {
        plan = delta_plan(q);
    }
    Rows out;
    out.emplace_back("refresh_mode", mode_name(mode.effective));
    out.emplace_back("requested_mode", mode_name(mode.requested));
    out.emplace_back("reason", mode.notice.empty() ? std::nullopt : std::optional(mode.notice));
    out.emplace_back("differential_blocker", q.differential_blocker.empty()
                                                 ? std::nullopt
                                                 : std::optional(q.differential_blocker));
    out.emplace_back("row_identity", identity_text(q));
    out.emplace_back(
        "strategy",
        plan ? std::optional<std::string>(diff::strategy_name(plan->strategy)) : std::nullopt);
    // The buffers are not there yet: each captured scan reads "its" one.
    std::map<Oid, std::string> deltas;
    for (const auto& need : plan ? capture_needs(q) : CaptureNeeds{}) {
        deltas[need.first] = "its change buffer";
    }
    out.emplace_back("operator_tree", operator_tree_text(q, plan, deltas));
    const std::string star = star_warning(q);
    if (!star.empty()) {
        out.emplace_back("warning", star);
    }
    for (const IndexAdvice& a : advice) {
        out.emplace_back("index", a.create + " -- " + a.message);
    }
    out.emplace_back("recompute_query", q.effective);
    return out;
}

// Why stream table id is maintained in a mode other than the one asked
// for: its stored query resolved again as its owner, restricted (never
// with the caller's rights: the query calls the owner's functions).
std::optional<std::string> mode_reason(int64_t id) {
    Spi spi = Spi::connect();
    std::optional<catalog::StreamTableRow> row = catalog::find_by_id(spi, id);
    std::optional<std::string> reason;
    if (row) {
        const Oid owner = relation_owner(row->relid);
        reason = as_role_restricted(owner, [&]() -> std::optional<std::string> {
            const std::string text =
                row->query_tree ? deparse_stored_query(*row->query_tree) : row->effective_query;
            AnalyzedQuery q = analyze_defining_query(text, true);
            ResolvedMode m = resolve_mode_quietly(spi, mode_name(row->requested_mode), q, owner);
            return m.notice.empty() ? std::nullopt : std::optional(m.notice);
        });
    }
    spi.close();
    return reason;
}

void return_rows(FunctionCallInfo fcinfo, const Rows& rows) {
    pg_call([&] {
        InitMaterializedSRF(fcinfo, 0);
        auto* rsi = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
        for (const auto& [property, value] : rows) {
            Datum values[2] = {CStringGetTextDatum(property.c_str()),
                               value ? CStringGetTextDatum(value->c_str()) : (Datum)0};
            bool nulls[2] = {false, !value.has_value()};
            tuplestore_putvalues(rsi->setResult, rsi->setDesc, values, nulls);
        }
    });
}

}  // namespace
}  // namespace pgt::pg

Datum pgt_explain_refresh(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&]() -> Datum {
        std::string name = pgt::pg::Args(fcinfo).required_text(0, "name");
        pgt::pg::return_rows(fcinfo, pgt::pg::explain_next_refresh(name));
        return (Datum)0;
    });
}

Datum pgt_validate_query(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&]() -> Datum {
        pgt::pg::Args a(fcinfo);
        std::string query = a.required_text(0, "query");
        std::string mode = a.text_or(1, "AUTO");
        pgt::pg::return_rows(fcinfo, pgt::pg::validate(query, mode));
        return (Datum)0;
    });
}

Datum pgt_explain_program(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&]() -> Datum {
        const char* program =
            pgt::pg::pg_call([&] { return TextDatumGetCString(PG_GETARG_DATUM(0)); });
        std::string formatted;
        try {
            formatted = pgt::sql::format_program(program);
        } catch (const std::exception& e) {
            throw pgt::Error(
                "22P02", "invalid input syntax for a delta program",
                std::string("The text is not a delta program pg_trickle wrote: ") + e.what() + ".");
        }
        return pgt::pg::pg_call([&] { return CStringGetTextDatum(formatted.c_str()); });
    });
}

// One generated statement over lines of at most sql::kPlanWidth
// characters, broken before its clauses (only whitespace changes).
Datum pgt_format_statement(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&]() -> Datum {
        const char* sql = pgt::pg::pg_call([&] { return TextDatumGetCString(PG_GETARG_DATUM(0)); });
        const std::string formatted =
            pgt::sql::wrap_lines(pgt::sql::format_statement(sql), pgt::sql::kPlanWidth);
        return pgt::pg::pg_call([&] { return CStringGetTextDatum(formatted.c_str()); });
    });
}

Datum pgt_mode_reason(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&]() -> Datum {
        const int64_t id = PG_GETARG_INT64(0);
        std::optional<std::string> reason = pgt::pg::mode_reason(id);
        if (!reason) {
            PG_RETURN_NULL();
        }
        return pgt::pg::pg_call([&] { return CStringGetTextDatum(reason->c_str()); });
    });
}
