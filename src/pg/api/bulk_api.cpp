// pgtrickle.bulk_create(definitions jsonb): create_stream_table once per
// element of a JSON array (name, query and its other arguments by name),
// all or none, as the Rust pg_trickle's API has it.
// Invariant: create_stream_table runs as a function call in the caller's
// context, so only what it resolves there (the stream table's name and
// query) meets the caller's search_path; reading the JSON runs under the
// pinned one. An element's error keeps its SQLSTATE, detail and hint and
// names the element; nothing of any element stays after one fails.
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/sql/json.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/catalog/catalog.hpp"
#include "pg/api/names.hpp"
#include "pg/boundary/spi.hpp"
#include "pg/boundary/subtransaction.hpp"

extern "C" {
#include "postgres.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"

PG_FUNCTION_INFO_V1(pgt_bulk_create);
}

namespace pgt::pg {
namespace {

// create_stream_table's arguments in its order, read from each element by
// these keys (a key not given: NULL, the argument's default).
struct CreateArg {
    const char* name;
    Oid type;
};
constexpr CreateArg kArgs[] = {
    {"name", TEXTOID},
    {"query", TEXTOID},
    {"schedule", TEXTOID},
    {"refresh_mode", TEXTOID},
    {"initialize", BOOLOID},
    {"diamond_consistency", TEXTOID},
    {"diamond_schedule_policy", TEXTOID},
    {"cdc_mode", TEXTOID},
    {"append_only", BOOLOID},
    {"pooler_compatibility_mode", BOOLOID},
    {"partition_by", TEXTOID},
    {"max_differential_joins", INT4OID},
    {"max_delta_fraction", FLOAT8OID},
    {"output_distribution_column", TEXTOID},
    {"temporal", BOOLOID},
    {"storage_backend", TEXTOID},
    {"sink", TEXTOID},
    {"ducklake_sink_path", TEXTOID},
    {"ducklake_sink_table_id", INT8OID},
    {"notify", TEXTOID},
};
constexpr int kNargs = sizeof(kArgs) / sizeof(kArgs[0]);

// The element's values as text, in kArgs order.
std::vector<std::optional<std::string>> element_values(Spi& spi, const std::string& element) {
    std::string columns, names;
    for (const CreateArg& a : kArgs) {
        columns += std::string(columns.empty() ? "" : ", ") + "e." + a.name;
        names += std::string(names.empty() ? "" : ", ") + a.name + " pg_catalog.text";
    }
    SpiRows r =
        spi.query("SELECT " + columns +
                      " FROM pg_catalog.jsonb_to_record($1::pg_catalog.jsonb) AS e(" + names + ")",
                  {text_param(element)});
    return r.rows.at(0);
}

Datum value_datum(Oid type, const std::string& value) {
    switch (type) {
        case BOOLOID:
            return DirectFunctionCall1(boolin, CStringGetDatum(value.c_str()));
        case INT4OID:
            return DirectFunctionCall1(int4in, CStringGetDatum(value.c_str()));
        case INT8OID:
            return DirectFunctionCall1(int8in, CStringGetDatum(value.c_str()));
        case FLOAT8OID:
            return DirectFunctionCall1(float8in, CStringGetDatum(value.c_str()));
        default:
            return CStringGetTextDatum(value.c_str());
    }
}

// create_stream_table called as a function (not through SPI, whose
// statements run under the pinned search_path): its names resolve in the
// caller's search_path, as when the caller calls it.
void create_one(Oid create, const std::vector<std::optional<std::string>>& values) {
    pg_call([&] {
        FmgrInfo flinfo;
        fmgr_info(create, &flinfo);
        LOCAL_FCINFO(call, kNargs);
        InitFunctionCallInfoData(*call, &flinfo, kNargs, InvalidOid, nullptr, nullptr);
        for (int i = 0; i < kNargs; i++) {
            call->args[i].isnull = !values[i].has_value();
            call->args[i].value = values[i] ? value_datum(kArgs[i].type, *values[i]) : 0;
        }
        (void)FunctionCallInvoke(call);
    });
}

std::string bulk_create(const std::string& definitions) {
    Spi spi = Spi::connect();
    if (spi.query("SELECT pg_catalog.jsonb_typeof($1::pg_catalog.jsonb)", {text_param(definitions)})
            .rows[0][0] != std::optional<std::string>("array")) {
        throw pgt::Error(sqlstate::kInvalidParameterValue,
                         "bulk_create needs a JSON array of stream table definitions", "",
                         "Pass '[{\"name\": ..., \"query\": ...}, ...]'.");
    }
    SpiRows elements = spi.query(
        "SELECT e.v::pg_catalog.text, e.v OPERATOR(pg_catalog.->>) 'name' FROM "
        "pg_catalog.jsonb_array_elements($1::pg_catalog.jsonb) WITH ORDINALITY AS e(v, o) "
        "ORDER BY e.o",
        {text_param(definitions)});
    // Its only signature (the extension's own schema, which no other role
    // may create in).
    const Oid create = static_cast<Oid>(std::stoul(
        *spi.query("SELECT 'pgtrickle.create_stream_table'::pg_catalog.regproc::pg_catalog.oid")
             .rows[0][0]));
    std::string out = "[";
    for (std::size_t i = 0; i < elements.rows.size(); i++) {
        const std::string element = elements.rows[i][0].value_or("null");
        const std::string name = elements.rows[i][1].value_or("without a name");
        int64_t id = 0;
        try {
            id = in_subtransaction([&] {
                create_one(create, element_values(spi, element));
                // As create_stream_table resolved it, in the caller's path.
                return catalog::find_by_relid(spi, relation_named(name)).value().pgt_id;
            });
        } catch (const pgt::Error& e) {
            throw pgt::Error(
                e.sqlstate(),
                "bulk_create: definition " + std::to_string(i) + " (" + name + "): " + e.message(),
                e.detail().empty() ? "Nothing of the " + std::to_string(elements.rows.size()) +
                                         " definitions was created."
                                   : e.detail(),
                e.hint());
        }
        out += i == 0 ? "{\"name\": " : ", {\"name\": ";
        sql::append_json_string(out, name);
        out += ", \"status\": \"created\", \"pgt_id\": " + std::to_string(id) + "}";
    }
    spi.close();
    return out + "]";
}

}  // namespace
}  // namespace pgt::pg

Datum pgt_bulk_create(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&]() -> Datum {
        if (PG_ARGISNULL(0)) {
            throw pgt::Error("22004", "bulk_create needs definitions, not NULL");
        }
        const std::string given = pgt::pg::pg_call(
            [&] { return DatumGetCString(DirectFunctionCall1(jsonb_out, PG_GETARG_DATUM(0))); });
        const std::string result = pgt::pg::bulk_create(given);
        return pgt::pg::pg_call(
            [&] { return DirectFunctionCall1(jsonb_in, CStringGetDatum(result.c_str())); });
    });
}
