// Capture triggers: every row change of a source becomes one buffer row
// (xid, action, old and new values); TRUNCATE becomes one marker row.
// Invariant: the per-row path builds no SQL: one prepared, kept plan per
// trigger, values straight from the tuples, written as the buffer's owner
// (the writing role needs no rights on pgtrickle_changes). An UPDATE that
// changes no column writes nothing.
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/catalog/catalog.hpp"

extern "C" {
#include "postgres.h"
#include "access/htup_details.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/xid8.h"

PG_FUNCTION_INFO_V1(pgt_capture_row);
PG_FUNCTION_INFO_V1(pgt_capture_truncate);
}

namespace pgt::pg {
namespace {

// Prepared insert of one trigger (keyed by the trigger's OID).
struct CapturePlan {
    SPIPlanPtr plan = nullptr;
    Oid owner = InvalidOid;
    std::vector<AttrNumber> attnums;  // live source columns, in buffer order
    std::vector<bool> byval;
    std::vector<int16> typlen;
    std::vector<Datum> values;  // scratch: xid, action, o..., n...
    std::vector<char> nulls;
};

std::unordered_map<Oid, CapturePlan> g_plans;

TriggerData* trigger_data(FunctionCallInfo fcinfo, bool row_level) {
    if (!CALLED_AS_TRIGGER(fcinfo)) {
        throw pgt::Error("39P01", "capture function called outside a trigger");
    }
    TriggerData* td = reinterpret_cast<TriggerData*>(fcinfo->context);
    if (!TRIGGER_FIRED_AFTER(td->tg_event) ||
        (TRIGGER_FIRED_FOR_ROW(td->tg_event) != 0) != row_level ||
        td->tg_trigger->tgnargs != (row_level ? 2 : 1)) {
        throw pgt::Error("39P01",
                         "capture trigger defined with the wrong timing, level or arguments", "",
                         "pg_trickle installs its capture triggers itself.");
    }
    return td;
}

std::string insert_sql(const char* buffer, const std::vector<AttrNumber>& attnums) {
    std::string cols = "xid, action", vals = "$1, $2";
    int p = 3;
    for (char side : {'o', 'n'}) {
        for (AttrNumber a : attnums) {
            cols += ", " + std::string(1, side) + std::to_string(a);
            vals += ", $" + std::to_string(p++);
        }
    }
    return std::string("INSERT INTO ") + buffer + " (" + cols + ") VALUES (" + vals + ")";
}

// Runs spi_work (SPI calls) connected and as the buffer owner; returns its
// result. PostgreSQL frames only: no C++ objects in here.
template <typename F>
auto as_owner(Oid owner, F&& spi_work) -> decltype(spi_work()) {
    return pg_call([&] {
        Oid saved_user;
        int saved_ctx;
        GetUserIdAndSecContext(&saved_user, &saved_ctx);
        if (SPI_connect() != SPI_OK_CONNECT) {
            elog(ERROR, "SPI_connect failed in capture trigger");
        }
        SetUserIdAndSecContext(owner, saved_ctx | SECURITY_LOCAL_USERID_CHANGE);
        auto result = spi_work();
        SetUserIdAndSecContext(saved_user, saved_ctx);
        SPI_finish();
        return result;
    });
}

// Executes one statement as the owner; anything but `expected` is an error.
template <typename F>
void exec_as_owner(Oid owner, int expected, F&& spi_work) {
    int rc = as_owner(owner, spi_work);
    if (rc != expected) {
        throw pgt::Error("XX000",
                         std::string("change capture failed: ") + SPI_result_code_string(rc));
    }
}

CapturePlan build_plan(TriggerData* td) {
    CapturePlan cp;
    const char* buffer = td->tg_trigger->tgargs[0];
    cp.owner = catalog::catalog_owner();  // owns every buffer (created through the catalog)
    TupleDesc desc = RelationGetDescr(td->tg_relation);
    std::vector<Oid> types{XID8OID, CHAROID};
    // Captured columns: the second trigger argument, "3,1,4" (attnums).
    std::string list = td->tg_trigger->tgargs[1];
    for (size_t pos = 0; pos < list.size();) {
        size_t comma = list.find(',', pos);
        int attnum = std::stoi(list.substr(pos, comma - pos));
        pos = comma == std::string::npos ? list.size() : comma + 1;
        if (attnum < 1 || attnum > desc->natts || TupleDescAttr(desc, attnum - 1)->attisdropped) {
            throw pgt::Error("55000", "change capture lists a column the source no longer has",
                             "Attribute number " + std::to_string(attnum) + ".",
                             "Recreate the stream tables that read this table.");
        }
        Form_pg_attribute att = TupleDescAttr(desc, attnum - 1);
        cp.attnums.push_back(att->attnum);
        cp.byval.push_back(att->attbyval);
        cp.typlen.push_back(att->attlen);
    }
    for (int side = 0; side < 2; side++) {
        for (size_t i = 0; i < cp.attnums.size(); i++) {
            Oid t = TupleDescAttr(desc, cp.attnums[i] - 1)->atttypid;
            types.push_back(pg_call([&] { return getBaseType(t); }));
        }
    }
    std::string sql = insert_sql(buffer, cp.attnums);
    // Prepared as the buffer owner: the writing role may not even see the schema.
    cp.plan = as_owner(cp.owner, [&] {
        SPIPlanPtr p = SPI_prepare(sql.c_str(), static_cast<int>(types.size()), types.data());
        return p != nullptr && SPI_keepplan(p) == 0 ? p : nullptr;
    });
    if (cp.plan == nullptr) {
        throw pgt::Error("XX000", "could not prepare the change capture statement");
    }
    cp.values.resize(types.size());
    cp.nulls.resize(types.size());
    return cp;
}

CapturePlan& plan_for(TriggerData* td) {
    auto it = g_plans.find(td->tg_trigger->tgoid);
    if (it == g_plans.end()) {
        it = g_plans.emplace(td->tg_trigger->tgoid, build_plan(td)).first;
    }
    return it->second;
}

// True when no captured column differs between the two versions.
bool unchanged(const CapturePlan& cp, HeapTuple a, HeapTuple b, TupleDesc desc) {
    for (size_t i = 0; i < cp.attnums.size(); i++) {
        bool na, nb;
        Datum va = heap_getattr(a, cp.attnums[i], desc, &na);
        Datum vb = heap_getattr(b, cp.attnums[i], desc, &nb);
        if (na != nb || (!na && !datumIsEqual(va, vb, cp.byval[i], cp.typlen[i]))) {
            return false;
        }
    }
    return true;
}

void fill_side(CapturePlan& cp, size_t offset, HeapTuple tup, TupleDesc desc) {
    for (size_t i = 0; i < cp.attnums.size(); i++) {
        bool isnull = true;
        Datum v = tup ? heap_getattr(tup, cp.attnums[i], desc, &isnull) : (Datum)0;
        cp.values[offset + i] = v;
        cp.nulls[offset + i] = isnull ? 'n' : ' ';
    }
}

Datum capture_row(FunctionCallInfo fcinfo) {
    TriggerData* td = trigger_data(fcinfo, true);
    CapturePlan& cp = plan_for(td);
    TupleDesc desc = RelationGetDescr(td->tg_relation);
    HeapTuple old_tup = nullptr, new_tup = nullptr;
    char action;
    if (TRIGGER_FIRED_BY_INSERT(td->tg_event)) {
        action = 'I';
        new_tup = td->tg_trigtuple;
    } else if (TRIGGER_FIRED_BY_DELETE(td->tg_event)) {
        action = 'D';
        old_tup = td->tg_trigtuple;
    } else {
        action = 'U';
        old_tup = td->tg_trigtuple;
        new_tup = td->tg_newtuple;
        if (unchanged(cp, old_tup, new_tup, desc)) {
            return PointerGetDatum(nullptr);
        }
    }
    cp.values[0] = FullTransactionIdGetDatum(GetTopFullTransactionId());
    cp.nulls[0] = ' ';
    cp.values[1] = CharGetDatum(action);
    cp.nulls[1] = ' ';
    fill_side(cp, 2, old_tup, desc);
    fill_side(cp, 2 + cp.attnums.size(), new_tup, desc);
    exec_as_owner(cp.owner, SPI_OK_INSERT, [&] {
        return SPI_execute_plan(cp.plan, cp.values.data(), cp.nulls.data(), false, 0);
    });
    return PointerGetDatum(nullptr);
}

Datum capture_truncate(FunctionCallInfo fcinfo) {
    TriggerData* td = trigger_data(fcinfo, false);
    std::string sql = std::string("INSERT INTO ") + td->tg_trigger->tgargs[0] +
                      " (xid, action) VALUES (pg_catalog.pg_current_xact_id(), 'T')";
    Oid owner = catalog::catalog_owner();
    exec_as_owner(owner, SPI_OK_INSERT, [&] { return SPI_execute(sql.c_str(), false, 0); });
    return PointerGetDatum(nullptr);
}

}  // namespace
}  // namespace pgt::pg

Datum pgt_capture_row(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::capture_row(fcinfo); });
}

Datum pgt_capture_truncate(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::capture_truncate(fcinfo); });
}
