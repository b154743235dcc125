// pgtrickle.repair_stream_table(name): finds what is wrong with a stream
// table's maintenance (capture, guard, IMMEDIATE triggers and programs,
// frontiers, status, contents) and puts it right with one reinitialisation.
// Invariant: a healthy stream table is left untouched (one row, healthy).
#include <string>
#include <vector>

#include "core/refresh_mode.hpp"
#include "pg/api/args.hpp"
#include "pg/api/lifecycle.hpp"
#include "pg/api/names.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/spi.hpp"
#include "pg/catalog/catalog.hpp"
#include "pg/cdc/change_buffer.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/guard/storage_guard.hpp"
#include "pg/refresh/full_refresh.hpp"
#include "pg/refresh/immediate.hpp"

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(pgt_repair_stream_table);
}

namespace pgt::pg {
namespace {

struct Finding {
    std::string item, found, action;
};

// The storage's guard (the trigger running pgtrickle._guard_storage):
// "missing", "disabled", or "" when it fires always; put right on the way.
std::string repair_guard(Spi& spi, Oid relid) {
    SpiRows g = spi.query(
        "SELECT pg_catalog.quote_ident(t.tgname), t.tgenabled OPERATOR(pg_catalog.=) 'A' FROM "
        "pg_catalog.pg_trigger t WHERE t.tgrelid OPERATOR(pg_catalog.=) $1 AND t.tgfoid "
        "OPERATOR(pg_catalog.=) 'pgtrickle._guard_storage()'::pg_catalog.regprocedure",
        {oid_param(relid)});
    const std::string table = quoted_relation_name(relid);
    if (g.rows.empty()) {
        catalog::exec_as_owner(spi, guard_trigger_sql(table));
        return "missing";
    }
    if (*g.rows[0][1] != "t") {
        catalog::exec_as_owner(spi,
                               "ALTER TABLE " + table + " ENABLE ALWAYS TRIGGER " + *g.rows[0][0]);
        return "disabled";
    }
    return "";
}

// repair_stream_table(name): what is wrong with row's maintenance, each
// thing found put right by one reinitialisation; nothing done when nothing
// is wrong.
std::vector<Finding> repair(Spi& spi, catalog::StreamTableRow& row) {
    std::vector<Finding> found;
    const std::string guard = repair_guard(spi, row.relid);
    if (!guard.empty()) {
        found.push_back({"storage_guard", "guard trigger " + guard,
                         "guard installed again; direct writes refused"});
    }
    for (const CaptureProblem& p : capture_problems(spi, row.pgt_id)) {
        const std::string table = relation_display_name(p.source.relid);
        std::string what;
        for (const std::string& x : p.problems) {
            what += (what.empty() ? "" : ", ") + x;
        }
        found.push_back(
            {"change_capture", table + ": " + what,
             "capture of " + table + " installed again; every stream table reading it recomputes"});
        discard_capture(spi, p.source.source_id, "change capture of " + table + " repaired");
    }
    if (row.refresh_mode == RefreshMode::kDifferential && found.empty() &&
        (captured_sources_of(spi, row.pgt_id).empty() || !row.delta_program)) {
        found.push_back({"maintenance", "no frontier or delta statement",
                         "frontiers and delta statement built again"});
    }
    if (row.refresh_mode == RefreshMode::kImmediate) {
        const std::string problems = immediate_problems(spi, row.pgt_id);
        if (!problems.empty()) {
            found.push_back({"immediate_maintenance", problems,
                             "triggers and programs installed again; recomputed"});
        }
    }
    if (row.reinit_reason) {
        found.push_back({"reinit_pending", *row.reinit_reason, "reinitialised"});
    }
    if (row.status == sched::Status::Error) {
        found.push_back({"status", "ERROR (see pgtrickle.pgt_refresh_history.error_message)",
                         "ACTIVE again after the rebuild"});
    }
    if (!row.is_populated) {
        found.push_back({"contents", "not populated", "recomputed"});
    }
    if (found.empty()) {
        return {{"stream_table", "healthy", "none"}};
    }
    catalog::exec_as_owner(spi,
                           "UPDATE pgtrickle.pgt_stream_tables SET reinit_reason = "
                           "COALESCE(reinit_reason, 'repair requested') WHERE pgt_id "
                           "OPERATOR(pg_catalog.=) $1",
                           {int8_param(row.pgt_id)});
    row.reinit_reason = "repair requested";  // reinitialize reads the row again
    RefreshResult r = reinitialize(spi, row, "MANUAL");
    if (row.status == sched::Status::Error) {
        catalog::set_health(spi, row.pgt_id, sched::Status::Active, 0);
    }
    found.push_back({"rebuild", "",
                     std::string(action_name(r.action)) +
                         " refresh: " + std::to_string(r.rows_inserted) + " rows inserted, " +
                         std::to_string(r.rows_deleted) + " deleted"});
    return found;
}

}  // namespace
}  // namespace pgt::pg

Datum pgt_repair_stream_table(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&]() -> Datum {
        std::string name = pgt::pg::Args(fcinfo).required_text(0, "name");
        pgt::pg::Spi spi = pgt::pg::Spi::connect();
        pgt::pg::open_stream_tables(spi);
        pgt::pg::catalog::StreamTableRow row =
            pgt::pg::resolve_stream_table(spi, name, /*must_own=*/true);
        std::vector<pgt::pg::Finding> found = pgt::pg::repair(spi, row);
        spi.close();
        pgt::pg::pg_call([&] {
            InitMaterializedSRF(fcinfo, 0);
            auto* rsi = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
            for (const pgt::pg::Finding& f : found) {
                Datum values[3] = {CStringGetTextDatum(f.item.c_str()),
                                   CStringGetTextDatum(f.found.c_str()),
                                   CStringGetTextDatum(f.action.c_str())};
                bool nulls[3] = {false, false, false};
                tuplestore_putvalues(rsi->setResult, rsi->setDesc, values, nulls);
            }
        });
        return (Datum)0;
    });
}
