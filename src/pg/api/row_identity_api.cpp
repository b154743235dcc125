// SQL surface of row identity V2: pgtrickle.encode_row_id_v2(domain, fields),
// pgtrickle.encode_row_id_v2('synthetic', discriminator, fields) and
// pgtrickle.row_probe_v1(row_id) (docs/row-identity-v2.md §3, §10).
// Invariant: this file only parses arguments; identity bytes come from
// pg/analyze/identity_plan (the core encoder), probe bytes from the core.
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/rowid/format.hpp"
#include "core/rowid/probe.hpp"
#include "pg/analyze/identity_plan.hpp"
#include "pg/analyze/identity_types.hpp"
#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "fmgr.h"

PG_FUNCTION_INFO_V1(pgt_encode_row_id_v2);
PG_FUNCTION_INFO_V1(pgt_encode_row_id_v2_synthetic);
PG_FUNCTION_INFO_V1(pgt_row_probe_v1);
}

namespace pgt::pg {
namespace {

// A text argument's bytes (valid for the rest of the call); NULL raises 22004.
std::string_view text_arg(FunctionCallInfo fcinfo, int n, const char* argname) {
    if (PG_ARGISNULL(n)) {
        throw_null_argument(argname);
    }
    const text* t = pg_call([&] { return PG_GETARG_TEXT_PP(n); });
    return {VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)};
}

rowid::Domain domain_arg(FunctionCallInfo fcinfo, int n) {
    const std::string_view name = text_arg(fcinfo, n, "domain");
    const std::optional<rowid::Domain> domain = identity_domain_named(name);
    if (!domain) {
        throw pgt::Error("22023", "unknown row identity domain \"" + std::string(name) + "\"", "",
                         "Use one of " + identity_domain_spellings() + ".");
    }
    return *domain;
}

rowid::Synthetic discriminator_arg(FunctionCallInfo fcinfo, int n) {
    const std::string_view name = text_arg(fcinfo, n, "discriminator");
    const std::optional<rowid::Synthetic> kind = synthetic_named(name);
    if (!kind) {
        throw pgt::Error(
            "22023", "unknown synthetic row identity discriminator \"" + std::string(name) + "\"",
            "", "Use one of " + synthetic_spellings() + ".");
    }
    return *kind;
}

// NULL is not an identity: even an identity without fields is a tuple.
Datum fields_arg(FunctionCallInfo fcinfo, int n) {
    if (PG_ARGISNULL(n)) {
        throw pgt::Error("22004", "argument \"fields\" must not be null", "",
                         "Pass ROW() for an identity without fields.");
    }
    return PG_GETARG_DATUM(n);
}

Datum encode_row_id_v2(FunctionCallInfo fcinfo) {
    const IdentityHeader header{domain_arg(fcinfo, 0)};
    if (header.domain == rowid::Domain::kSynthetic) {
        throw pgt::Error("22023", "row identity domain \"synthetic\" needs a discriminator", "",
                         "Call pgtrickle.encode_row_id_v2('synthetic', discriminator, fields) "
                         "with one of " +
                             synthetic_spellings() + ".");
    }
    const Datum fields = fields_arg(fcinfo, 1);
    return encode_identity(identity_call_site(fcinfo), header, fields);
}

Datum encode_row_id_v2_synthetic(FunctionCallInfo fcinfo) {
    IdentityHeader header{domain_arg(fcinfo, 0)};
    if (header.domain != rowid::Domain::kSynthetic) {
        throw pgt::Error("22023", "only the synthetic row identity domain takes a discriminator",
                         "", "Call pgtrickle.encode_row_id_v2(domain, fields) for other domains.");
    }
    header.synthetic = discriminator_arg(fcinfo, 1);
    const Datum fields = fields_arg(fcinfo, 2);
    return encode_identity(identity_call_site(fcinfo), header, fields);
}

// The identity itself when it has at most 256 bytes, else its first 256
// bytes and the 16-byte digest. Nothing here can throw a C++ exception.
Datum row_probe_v1(FunctionCallInfo fcinfo) {
    return pg_call([&]() -> Datum {
        const bytea* id = PG_GETARG_BYTEA_PP(0);
        const std::size_t n = VARSIZE_ANY_EXHDR(id);
        if (rowid::probe_is_identity(n)) {
            return PointerGetDatum(id);
        }
        const rowid::Probe probe =
            rowid::row_probe_v1({reinterpret_cast<const std::uint8_t*>(VARDATA_ANY(id)), n});
        const std::span<const std::uint8_t> bytes = probe.bytes();
        auto* out = static_cast<bytea*>(palloc(VARHDRSZ + bytes.size()));
        SET_VARSIZE(out, VARHDRSZ + bytes.size());
        std::memcpy(VARDATA(out), bytes.data(), bytes.size());
        return PointerGetDatum(out);
    });
}

}  // namespace
}  // namespace pgt::pg

// encode_row_id_v2(domain text, fields record): not STRICT, so NULLs get
// named errors (22004) instead of a NULL identity.
Datum pgt_encode_row_id_v2(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::encode_row_id_v2(fcinfo); });
}

// encode_row_id_v2(domain text, discriminator text, fields record).
Datum pgt_encode_row_id_v2_synthetic(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::encode_row_id_v2_synthetic(fcinfo); });
}

// row_probe_v1(row_id bytea): STRICT.
Datum pgt_row_probe_v1(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::row_probe_v1(fcinfo); });
}
