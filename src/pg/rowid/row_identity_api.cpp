// SQL surface of row identity V2: pgtrickle.encode_row_id_v2(domain, fields),
// pgtrickle.encode_row_id_v2('synthetic', discriminator, fields) and
// pgtrickle.row_probe_v1(row_id) (docs/row-identity-v2.md §3, §10), plus the
// ROW()-free form pgtrickle._encode_row_id_v2_fields(domain, VARIADIC "any")
// and the planner support function that rewrites
// encode_row_id_v2(domain, ROW(a, b, ...)) into _encode_row_id_v2_fields(domain,
// a, b, ...): same bytes, without building and taking apart a record per row.
// Invariant: this file only parses arguments (and, at plan time, rewrites
// calls); identity bytes come from pg/rowid/identity_plan (the core
// encoder), probe bytes from the core.
// Per row, no PostgreSQL call that can raise runs outside pg_call, and the
// common row runs none at all: text arguments are read in place (pg_call only
// to detoast one), a domain or discriminator already seen at this call site
// is recognised by its bytes (IdentityArgMemo), and the probe is written
// straight into its palloc'd result (MCXT_ALLOC_NO_OOM, which cannot raise).
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/rowid/format.hpp"
#include "core/rowid/probe.hpp"
#include "pg/rowid/identity_plan.hpp"
#include "pg/rowid/identity_types.hpp"
#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "catalog/pg_type_d.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pg_list.h"
#include "nodes/primnodes.h"
#include "nodes/supportnodes.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(pgt_encode_row_id_v2);
PG_FUNCTION_INFO_V1(pgt_encode_row_id_v2_synthetic);
PG_FUNCTION_INFO_V1(pgt_encode_row_id_v2_fields);
PG_FUNCTION_INFO_V1(pgt_encode_row_id_v2_support);
PG_FUNCTION_INFO_V1(pgt_row_probe_v1);
}

namespace pgt::pg {
namespace {

// A varlena argument in readable form (valid for the rest of the call): the
// datum itself unless it is toasted or compressed (PG_GETARG_*_PP's test).
const varlena* varlena_arg(FunctionCallInfo fcinfo, int n) {
    auto* v = reinterpret_cast<varlena*>(DatumGetPointer(PG_GETARG_DATUM(n)));
    if (VARATT_IS_EXTERNAL(v) || VARATT_IS_COMPRESSED(v)) [[unlikely]] {
        return pg_call([&] { return pg_detoast_datum_packed(v); });
    }
    return v;
}

// A text argument's bytes (valid for the rest of the call); NULL raises 22004.
std::string_view text_arg(FunctionCallInfo fcinfo, int n, const char* argname) {
    if (PG_ARGISNULL(n)) {
        throw_null_argument(argname);
    }
    const varlena* t = varlena_arg(fcinfo, n);
    return {VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)};
}

// Whether argument n is a non-NULL Const of the calling FuncExpr: then every
// call through this FmgrInfo passes the same value.
bool arg_is_const(FunctionCallInfo fcinfo, int n) {
    return pg_call([&] {
        const Node* expr = fcinfo->flinfo->fn_expr;
        if (expr == nullptr || !IsA(expr, FuncExpr)) {
            return false;
        }
        const List* args = reinterpret_cast<const FuncExpr*>(expr)->args;
        if (n >= list_length(args)) {
            return false;
        }
        const Node* arg = static_cast<const Node*>(list_nth(args, n));
        return IsA(arg, Const) && !reinterpret_cast<const Const*>(arg)->constisnull;
    });
}

// A domain or discriminator argument, resolved through the call site's memo;
// `resolve` parses a spelling not seen before (and raises 22023). The
// constant case is the per-row fast path; everything else is out of line.
template <typename V, typename Resolve>
[[gnu::noinline]] V named_arg_read(FunctionCallInfo fcinfo, int n, const char* argname,
                                   TextMemo<V>& memo, Resolve resolve) {
    const std::string_view name = text_arg(fcinfo, n, argname);
    if (const V* known = memo.find(name)) {
        return *known;
    }
    const V value = resolve(name);
    memo.remember(name, value);
    if (!memo.const_checked()) {
        memo.set_constant(arg_is_const(fcinfo, n));
    }
    return value;
}

template <typename V, typename Resolve>
V named_arg(FunctionCallInfo fcinfo, int n, const char* argname, TextMemo<V>& memo,
            Resolve resolve) {
    if (const V* fixed = memo.constant()) [[likely]] {
        return *fixed;
    }
    return named_arg_read(fcinfo, n, argname, memo, resolve);
}

rowid::Domain domain_arg(FunctionCallInfo fcinfo, int n, TextMemo<rowid::Domain>& memo) {
    return named_arg(fcinfo, n, "domain", memo, [](std::string_view name) {
        const std::optional<rowid::Domain> domain = identity_domain_named(name);
        if (!domain) {
            throw pgt::Error("22023", "unknown row identity domain \"" + std::string(name) + "\"",
                             "", "Use one of " + identity_domain_spellings() + ".");
        }
        return *domain;
    });
}

rowid::Synthetic discriminator_arg(FunctionCallInfo fcinfo, int n,
                                   TextMemo<rowid::Synthetic>& memo) {
    return named_arg(fcinfo, n, "discriminator", memo, [](std::string_view name) {
        const std::optional<rowid::Synthetic> kind = synthetic_named(name);
        if (!kind) {
            throw pgt::Error(
                "22023",
                "unknown synthetic row identity discriminator \"" + std::string(name) + "\"", "",
                "Use one of " + synthetic_spellings() + ".");
        }
        return *kind;
    });
}

// NULL is not an identity: even an identity without fields is a tuple.
Datum fields_arg(FunctionCallInfo fcinfo, int n) {
    if (PG_ARGISNULL(n)) {
        throw pgt::Error("22004", "argument \"fields\" must not be null", "",
                         "Pass ROW() for an identity without fields.");
    }
    return PG_GETARG_DATUM(n);
}

[[noreturn, gnu::noinline]] void throw_missing_discriminator() {
    throw pgt::Error("22023", "row identity domain \"synthetic\" needs a discriminator", "",
                     "Call pgtrickle.encode_row_id_v2('synthetic', discriminator, fields) "
                     "with one of " +
                         synthetic_spellings() + ".");
}

// The header of a call without a discriminator (argument 0 is the domain).
inline IdentityHeader unary_header(FunctionCallInfo fcinfo, IdentityCallSite& site) {
    const IdentityHeader header{domain_arg(fcinfo, 0, identity_arg_memo(site).domain)};
    if (header.domain == rowid::Domain::kSynthetic) {
        throw_missing_discriminator();
    }
    return header;
}

Datum encode_row_id_v2(FunctionCallInfo fcinfo) {
    IdentityCallSite& site = identity_call_site(fcinfo);
    const IdentityHeader header = unary_header(fcinfo, site);
    const Datum fields = fields_arg(fcinfo, 1);
    return encode_identity(site, header, fields);
}

// _encode_row_id_v2_fields(domain, field, ...): arguments 1.. are the fields.
Datum encode_row_id_v2_fields(FunctionCallInfo fcinfo) {
    IdentityCallSite& site = identity_call_site(fcinfo);
    const IdentityHeader header = unary_header(fcinfo, site);
    return encode_identity_args(site, header, fcinfo, 1);
}

constexpr const char* kFieldsFunction = "_encode_row_id_v2_fields";

// Whether `row` is ROW(...) of an anonymous record whose fields the fields
// function takes one per argument with the same field names (f1, f2, ...)
// and types: no named composite (its dropped columns), no unknown literal.
bool rewritable_row(const RowExpr* row) {
    const int n = list_length(row->args);
    if (row->row_typeid != RECORDOID || n == 0 || n + 1 > FUNC_MAX_ARGS ||
        list_length(row->colnames) != n) {
        return false;
    }
    for (int i = 0; i < n; ++i) {
        char expected[16];
        snprintf(expected, sizeof expected, "f%d", i + 1);
        const Node* name = static_cast<const Node*>(list_nth(row->colnames, i));
        if (!IsA(name, String) || strcmp(strVal(name), expected) != 0 ||
            exprType(static_cast<const Node*>(list_nth(row->args, i))) == UNKNOWNOID) {
            return false;
        }
    }
    return true;
}

// Planner support (SupportRequestSimplify) of encode_row_id_v2(text, record):
// encode_row_id_v2(domain, ROW(a, b)) becomes
// <same schema>._encode_row_id_v2_fields(domain, a, b) when that function
// exists. Anything else is left alone (NULL).
Datum encode_row_id_v2_support(FunctionCallInfo fcinfo) {
    return pg_call([&]() -> Datum {
        Node* raw = reinterpret_cast<Node*>(PG_GETARG_POINTER(0));
        if (!IsA(raw, SupportRequestSimplify)) {
            return PointerGetDatum(nullptr);
        }
        const FuncExpr* call = reinterpret_cast<SupportRequestSimplify*>(raw)->fcall;
        if (list_length(call->args) != 2 || !IsA(lsecond(call->args), RowExpr)) {
            return PointerGetDatum(nullptr);
        }
        const auto* row = static_cast<const RowExpr*>(lsecond(call->args));
        if (!rewritable_row(row)) {
            return PointerGetDatum(nullptr);
        }
        const char* schema = get_namespace_name(get_func_namespace(call->funcid));
        if (schema == nullptr) {
            return PointerGetDatum(nullptr);
        }
        Oid argtypes[2] = {TEXTOID, ANYOID};
        List* name = list_make2(makeString(pstrdup(schema)), makeString(pstrdup(kFieldsFunction)));
        const Oid target = LookupFuncName(name, 2, argtypes, true);
        if (!OidIsValid(target) || get_func_rettype(target) != BYTEAOID) {
            return PointerGetDatum(nullptr);
        }
        List* args = lcons(linitial(call->args), list_copy(row->args));
        FuncExpr* fields =
            makeFuncExpr(target, BYTEAOID, args, InvalidOid, call->inputcollid, call->funcformat);
        fields->location = call->location;
        return PointerGetDatum(fields);
    });
}

Datum encode_row_id_v2_synthetic(FunctionCallInfo fcinfo) {
    IdentityCallSite& site = identity_call_site(fcinfo);
    IdentityArgMemo& memo = identity_arg_memo(site);
    IdentityHeader header{domain_arg(fcinfo, 0, memo.domain)};
    if (header.domain != rowid::Domain::kSynthetic) {
        throw pgt::Error("22023", "only the synthetic row identity domain takes a discriminator",
                         "", "Call pgtrickle.encode_row_id_v2(domain, fields) for other domains.");
    }
    header.synthetic = discriminator_arg(fcinfo, 1, memo.synthetic);
    const Datum fields = fields_arg(fcinfo, 2);
    return encode_identity(site, header, fields);
}

// The identity itself when it has at most 256 bytes, else its first 256
// bytes and the 16-byte digest, written into the result bytea in place.
// Out of memory is std::bad_alloc (53200 through pgt_entry).
Datum row_probe_v1(FunctionCallInfo fcinfo) {
    const varlena* id = varlena_arg(fcinfo, 0);
    const std::size_t n = VARSIZE_ANY_EXHDR(id);
    if (rowid::probe_is_identity(n)) {
        return PointerGetDatum(id);
    }
    const std::size_t size = VARHDRSZ + rowid::probe_size_v1(n);
    auto* out = static_cast<bytea*>(palloc_extended(size, MCXT_ALLOC_NO_OOM));
    if (out == nullptr) {
        throw std::bad_alloc();
    }
    rowid::write_row_probe_v1({reinterpret_cast<const std::uint8_t*>(VARDATA_ANY(id)), n},
                              reinterpret_cast<std::uint8_t*>(VARDATA(out)));
    SET_VARSIZE(out, size);
    return PointerGetDatum(out);
}

}  // namespace
}  // namespace pgt::pg

// encode_row_id_v2(domain text, fields record): not STRICT, so NULLs get
// named errors (22004) instead of a NULL identity.
Datum pgt_encode_row_id_v2(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::encode_row_id_v2(fcinfo); });
}

// _encode_row_id_v2_fields(domain text, VARIADIC fields "any"): not STRICT
// (a NULL argument is a NULL field).
Datum pgt_encode_row_id_v2_fields(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::encode_row_id_v2_fields(fcinfo); });
}

// The planner support function of encode_row_id_v2(text, record).
Datum pgt_encode_row_id_v2_support(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::encode_row_id_v2_support(fcinfo); });
}

// encode_row_id_v2(domain text, discriminator text, fields record).
Datum pgt_encode_row_id_v2_synthetic(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::encode_row_id_v2_synthetic(fcinfo); });
}

// row_probe_v1(row_id bytea): STRICT.
Datum pgt_row_probe_v1(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::row_probe_v1(fcinfo); });
}
