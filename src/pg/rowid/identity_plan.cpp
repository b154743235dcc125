// Encoder plans of row identity V2 and the per-row walk from datums to the
// core encoder. Invariant: encode_once() and encode_args_once() (the per-row
// paths) hold no local with a destructor and look nothing up in the
// catalogs; whatever they lack they report by throwing PlanMiss, and the plan
// is built outside them. Outside pg_call they call only PostgreSQL code that
// cannot raise (the tupmacs.h macros, getmissingattr, palloc_extended with
// MCXT_ALLOC_NO_OOM) and throw NeedsGuard before anything that could
// (detoasting, jsonb, arrays, ranges, nested records).
//
// Design
// ------
//   flinfo->fn_extra ──► IdentityCallSite     storage and reset callback in fn_mcxt
//     ├─ EncodeCtx                             C++ heap
//     │    ├─ rowid::Encoder                   writes into PallocArena blocks (the result)
//     │    ├─ enum labels by value OID         all labels of a type, loaded on first sight
//     │    └─ scratch                          jsonb node arenas, copies of unaligned digits
//     ├─ IdentityArgMemo                       the domain/discriminator text last resolved
//     ├─ root CompositeSlot ──► CompositePlan per (type id, typmod) of the argument
//     │                          ├─ TupleDesc copy (fn_mcxt memory; missing values)
//     │                          └─ StoredAttr per attribute: storage facts, cached
//     │                             offset, FieldPlan (writer, tag, storage facts;
//     │                             nested FieldPlans for array elements and range
//     │                             subtypes, a CompositeSlot per composite)
//     └─ args CompositePlan                    encode_args(): one StoredAttr per argument
//
// Per row: encode_once() walks the tuple as heap_deform_tuple() would and
// calls one writer per live attribute as it reaches it; encode_args_once()
// calls one writer per argument (the ROW()-free form, no tuple at all). The
// encoder writes the identity straight into a palloc'd bytea (its
// OutputArena), so the result is never copied. A value whose (type id,
// typmod) has no plan in its slot, or an enum value without a cached label,
// throws PlanMiss; the call site builds the plan (catalog lookups under their
// own pg_calls) and restarts the row.
//
// Guards: a call site starts unguarded. A row then runs without PG_TRY,
// which is sound only while it calls nothing that can raise a PostgreSQL
// error. Whatever could (a toasted or compressed datum, a plan with jsonb,
// array, range or composite fields) throws NeedsGuard first; the call site
// then turns guarded for good and reruns the row under one pg_call, where a
// PostgreSQL error may longjmp out of it: nothing there has a destructor, and
// the encoder restarts clean at begin(). Either way a row costs one PG_TRY at
// most: the text arguments are resolved from the call site's memo
// (identity_arg_memo) without one.
//
// Ownership: fn_mcxt is reset or deleted by PostgreSQL without running C++
// destructors, so the call site is not `new`ed. It is constructed with
// placement new in fn_mcxt memory, and a MemoryContextCallback registered on
// fn_mcxt runs ~IdentityCallSite(), which frees C++ memory only (no
// PostgreSQL call). The TupleDesc copies are fn_mcxt memory and die with it.
// Plans are kept per distinct (type id, typmod) for the life of the call
// site, like PostgreSQL's own record type cache, so alternating row types
// (UNION ALL of ROW(1) and ROW('x')) never rebuild.
//
// Enum labels are cached per call site: ALTER TYPE ... RENAME VALUE during
// one query is not seen by that query's call sites (the DDL hook rebuilds
// dependent stream tables anyway, docs/row-identity-v2.md §6.1).
#include "pg/rowid/identity_plan.hpp"
#include "pg/rowid/encode_ctx.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/rowid/encoder.hpp"
#include "core/rowid/types.hpp"
#include "pg/rowid/identity_types.hpp"
#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include <sys/socket.h>  // AF_INET for utils/inet.h
#include "access/htup_details.h"
#include "access/tupdesc.h"
#include "catalog/pg_enum.h"
#include "nodes/nodeFuncs.h"
#include "nodes/primnodes.h"
#include "utils/array.h"
#include "utils/arrayaccess.h"
#include "utils/catcache.h"
#include "utils/date.h"
#include "utils/inet.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/multirangetypes.h"
#include "utils/rangetypes.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"
#include "utils/uuid.h"
}

namespace pgt::pg {

// The encoder's parts are this file's own (encode_ctx.hpp).
using namespace encode;  // NOLINT(google-build-using-namespace)

namespace {

// --- per-row helpers (no destructors, no catalog access) -----------------

void write_value(EncodeCtx& c, const FieldPlan& p, Datum value, bool isnull) {
    if (isnull) {
        c.encoder.null(p.tag);
    } else {
        p.write(c, p, value);
    }
}

}  // namespace

// heap_deform_tuple()'s walk (PostgreSQL 15, access/common/heaptuple.c),
// fused with the writers: each live attribute is written as it is reached,
// and offsets come from StoredAttr::cacheoff (computed when the plan was
// built) instead of the TupleDesc. Attributes the tuple lacks (it predates
// ALTER TYPE ... ADD ATTRIBUTE) read as their missing value, as there.
namespace encode {

void CompositePlan::write_fields(EncodeCtx& c, HeapTupleHeader th) const {
    const int natts = HeapTupleHeaderGetNatts(th);  // <= attrs.size(): matches()
    const bool hasnulls = (th->t_infomask & HEAP_HASNULL) != 0;
    const bits8* bp = th->t_bits;
    const char* tp = reinterpret_cast<const char*>(th) + th->t_hoff;
    uint32 off = 0;
    bool slow = false;  // an earlier NULL or variable-length attribute: cacheoff is invalid
    for (int i = 0; i < natts; ++i) {
        const StoredAttr& a = attrs[static_cast<std::size_t>(i)];
        if (hasnulls && att_isnull(i, bp)) {
            if (a.plan != nullptr) {
                c.encoder.null(a.plan->tag);
            }
            slow = true;
            continue;
        }
        if (!slow && a.cacheoff >= 0) {
            off = static_cast<uint32>(a.cacheoff);
        } else if (a.len == -1) {
            off = att_align_pointer(off, a.align, -1, tp + off);
            slow = true;
        } else {
            off = att_align_nominal(off, a.align);
        }
        if (a.plan != nullptr) {
            a.plan->write(c, *a.plan, fetch_att(tp + off, a.byval, a.len));
        }
        off = att_addlength_pointer(off, a.len, tp + off);
        if (a.len <= 0) {
            slow = true;
        }
    }
    for (int i = natts; i < static_cast<int>(attrs.size()); ++i) {
        const StoredAttr& a = attrs[static_cast<std::size_t>(i)];
        if (a.plan != nullptr) {
            bool isnull;
            const Datum value = getmissingattr(tupdesc, i + 1, &isnull);
            write_value(c, *a.plan, value, isnull);
        }
    }
}

}  // namespace encode

namespace {

// A varlena datum in a readable (possibly short-header) form; detoasting
// can raise, so an unguarded row stops here first.
const varlena* packed(const EncodeCtx& c, Datum d) {
    auto* v = reinterpret_cast<varlena*>(DatumGetPointer(d));
    if (VARATT_IS_EXTERNAL(v) || VARATT_IS_COMPRESSED(v)) [[unlikely]] {
        if (!c.guarded) {
            throw NeedsGuard{};
        }
        return pg_detoast_datum_packed(v);
    }
    return v;
}

std::string_view bytes_of(const varlena* v) {
    return {VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v)};
}

template <std::size_t N>
std::span<const std::uint8_t, N> fixed_bytes(const void* p) {
    return std::span<const std::uint8_t, N>(static_cast<const std::uint8_t*>(p), N);
}

std::uint16_t load_u16(const char* p) {
    std::uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// --- numeric: the stored NumericData, read without numeric.c -------------
// After the varlena header comes a uint16 header word whose two top bits say
// the format: 00 positive and 01 negative (long format: a uint16 sign/dscale
// word, then an int16 weight), 10 short, 11 special. Short: bit 13 sign,
// bits 12-7 display scale, bit 6 weight sign, bits 5-0 weight (the weight is
// bits 5-0 minus 64 when bit 6 is set). Special: the top four bits are
// 1100 NaN, 1101 +Infinity, 1111 -Infinity, and no digits follow. Digits are
// int16 base-10000 values in native byte order; digits[0] has the weight.
constexpr std::uint16_t kNumFormatMask = 0xC000;
constexpr std::uint16_t kNumNegativeLong = 0x4000;
constexpr std::uint16_t kNumShort = 0x8000;
constexpr std::uint16_t kNumSpecial = 0xC000;
constexpr std::uint16_t kNumSpecialMask = 0xF000;
constexpr std::uint16_t kNumShortNegative = 0x2000;
constexpr std::uint16_t kNumShortWeightNegative = 0x0040;
constexpr std::uint16_t kNumShortWeightBits = 0x003F;
constexpr int kNumShortWeightBias = 64;

struct NumericSpecial {
    std::uint16_t bits;
    rowid::NumericSign sign;
};
constexpr std::array<NumericSpecial, 3> kNumericSpecials{{
    {0xC000, rowid::NumericSign::kNaN},
    {0xD000, rowid::NumericSign::kPosInf},
    {0xF000, rowid::NumericSign::kNegInf},
}};

std::span<const std::int16_t> digits_at(EncodeCtx& c, const char* p, std::size_t bytes) {
    const std::size_t n = bytes / sizeof(std::int16_t);
    if (reinterpret_cast<std::uintptr_t>(p) % alignof(std::int16_t) == 0) {
        return {reinterpret_cast<const std::int16_t*>(p), n};
    }
    std::int16_t* copy = c.digits.take(n);  // a 1-byte varlena header leaves them unaligned
    if (n != 0) {
        std::memcpy(copy, p, n * sizeof(std::int16_t));
    }
    return {copy, n};
}

}  // namespace

namespace encode {

rowid::NumericView read_numeric(EncodeCtx& c, const varlena* v) {
    const char* data = VARDATA_ANY(v);
    const std::size_t len = VARSIZE_ANY_EXHDR(v);
    if (len < 2) {
        fail_corrupt("numeric header is truncated");
    }
    const std::uint16_t header = load_u16(data);
    rowid::NumericView out;
    switch (header & kNumFormatMask) {
        case kNumSpecial:
            for (const NumericSpecial& s : kNumericSpecials) {
                if ((header & kNumSpecialMask) == s.bits) {
                    out.sign = s.sign;
                    return out;
                }
            }
            fail_corrupt("unknown special numeric");
        case kNumShort:
            out.sign = (header & kNumShortNegative) ? rowid::NumericSign::kNegative
                                                    : rowid::NumericSign::kPositive;
            out.weight = static_cast<int>(header & kNumShortWeightBits) -
                         ((header & kNumShortWeightNegative) ? kNumShortWeightBias : 0);
            out.digits = digits_at(c, data + 2, len - 2);
            return out;
        default:
            if (len < 4) {
                fail_corrupt("numeric header is truncated");
            }
            out.sign = (header & kNumFormatMask) == kNumNegativeLong
                           ? rowid::NumericSign::kNegative
                           : rowid::NumericSign::kPositive;
            out.weight = static_cast<std::int16_t>(load_u16(data + 2));
            out.digits = digits_at(c, data + 4, len - 4);
            return out;
    }
}

}  // namespace encode

namespace {

// --- scalar writers ----------------------------------------------------------

rowid::InetView inet_view(const EncodeCtx& c, Datum d) {
    const auto* n = reinterpret_cast<const inet*>(packed(c, d));
    const auto* addr = reinterpret_cast<const std::uint8_t*>(ip_addr(n));
    switch (ip_family(n)) {
        case PGSQL_AF_INET:
            return {rowid::IpFamily::kIpv4, ip_bits(n), {addr, 4}};
        case PGSQL_AF_INET6:
            return {rowid::IpFamily::kIpv6, ip_bits(n), {addr, 16}};
        default:
            fail_corrupt("unknown inet address family");
    }
}

// bit and varbit: after the varlena header, an int32 bit count, then the bits.
void write_bits(EncodeCtx& c, Datum d, bool varying) {
    const varlena* v = packed(c, d);
    const char* data = VARDATA_ANY(v);
    const std::size_t len = VARSIZE_ANY_EXHDR(v);
    if (len < sizeof(int32)) {
        fail_corrupt("bit string header is truncated");
    }
    int32 bit_length;
    std::memcpy(&bit_length, data, sizeof bit_length);
    const std::span<const std::uint8_t> bits(
        reinterpret_cast<const std::uint8_t*>(data + sizeof(int32)), len - sizeof(int32));
    if (varying) {
        c.encoder.varbit(static_cast<std::uint32_t>(bit_length), bits);
    } else {
        c.encoder.bit(static_cast<std::uint32_t>(bit_length), bits);
    }
}

static_assert(sizeof(macaddr) == 6 && sizeof(macaddr8) == 8 && sizeof(pg_uuid_t) == 16);

struct ScalarWriter {
    TypeTag tag;
    WriteFn write;
};

// clang-format off
constexpr ScalarWriter kScalarWriters[] = {
    {TypeTag::kBool, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.boolean(DatumGetBool(d)); }},
    {TypeTag::kInt2, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.int2(DatumGetInt16(d)); }},
    {TypeTag::kInt4, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.int4(DatumGetInt32(d)); }},
    {TypeTag::kInt8, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.int8(DatumGetInt64(d)); }},
    {TypeTag::kOid, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.oid(DatumGetObjectId(d)); }},
    {TypeTag::kFloat4, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.float4(DatumGetFloat4(d)); }},
    {TypeTag::kFloat8, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.float8(DatumGetFloat8(d)); }},
    {TypeTag::kNumeric, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.numeric(read_numeric(c, packed(c, d))); }},
    {TypeTag::kText, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.text(bytes_of(packed(c, d))); }},
    {TypeTag::kVarchar, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.varchar(bytes_of(packed(c, d))); }},
    {TypeTag::kBpchar, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.bpchar(bytes_of(packed(c, d))); }},
    {TypeTag::kBytea, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.bytea(bytes_of(packed(c, d))); }},
    {TypeTag::kUuid, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.uuid(fixed_bytes<16>(DatumGetUUIDP(d)->data)); }},
    {TypeTag::kDate, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.date(DatumGetDateADT(d)); }},
    {TypeTag::kTime, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.time(DatumGetTimeADT(d)); }},
    {TypeTag::kTimestamp, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.timestamp(DatumGetTimestamp(d)); }},
    {TypeTag::kTimestamptz, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.timestamptz(DatumGetTimestampTz(d)); }},
    {TypeTag::kTimetz, [](EncodeCtx& c, const FieldPlan&, Datum d) {
         const TimeTzADT* t = DatumGetTimeTzADTP(d);
         c.encoder.timetz(t->time, t->zone); }},
    {TypeTag::kInterval, [](EncodeCtx& c, const FieldPlan&, Datum d) {
         const Interval* i = DatumGetIntervalP(d);
         c.encoder.interval({i->time, i->day, i->month}); }},
    {TypeTag::kInet, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.inet(inet_view(c, d)); }},
    {TypeTag::kCidr, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.cidr(inet_view(c, d)); }},
    {TypeTag::kMacaddr, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.macaddr(fixed_bytes<6>(DatumGetMacaddrP(d))); }},
    {TypeTag::kMacaddr8, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.macaddr8(fixed_bytes<8>(DatumGetMacaddr8P(d))); }},
    {TypeTag::kBit, [](EncodeCtx& c, const FieldPlan&, Datum d) { write_bits(c, d, false); }},
    {TypeTag::kVarbit, [](EncodeCtx& c, const FieldPlan&, Datum d) { write_bits(c, d, true); }},
    {TypeTag::kJsonb, write_jsonb},
    {TypeTag::kName, [](EncodeCtx& c, const FieldPlan&, Datum d) {
         c.encoder.name(std::string_view(NameStr(*DatumGetName(d)), NAMEDATALEN)); }},
    {TypeTag::kChar, [](EncodeCtx& c, const FieldPlan&, Datum d) {
         c.encoder.pg_char(static_cast<std::uint8_t>(DatumGetChar(d))); }},
};
// clang-format on

// A type whose equal values are equal images (rowid::TypeKind::kImage):
// its bytes as stored, a varlena's without its header (short or long
// headers, compression and TOAST give equal values other bytes).
void write_image(EncodeCtx& c, const FieldPlan& p, Datum d) {
    if (p.typbyval) {
        std::array<char, sizeof(Datum)> bytes{};
        store_att_byval(bytes.data(), d, p.typlen);
        c.encoder.image(std::string_view(bytes.data(), static_cast<std::size_t>(p.typlen)));
    } else if (p.typlen > 0) {
        c.encoder.image(std::string_view(DatumGetPointer(d), static_cast<std::size_t>(p.typlen)));
    } else if (p.typlen == -1) {
        c.encoder.image(bytes_of(packed(c, d)));
    } else {
        c.encoder.image(std::string_view(DatumGetCString(d)));
    }
}

// --- structural writers -------------------------------------------------------

void write_enum(EncodeCtx& c, const FieldPlan&, Datum d) {
    const Oid value = DatumGetObjectId(d);
    const auto it = c.enum_labels.find(value);
    if (it == c.enum_labels.end()) {
        c.miss = Miss{nullptr, InvalidOid, -1, value};
        throw PlanMiss{};
    }
    c.encoder.enum_label(it->second);
}

void write_array(EncodeCtx& c, const FieldPlan& p, Datum d) {
    AnyArrayType* a = DatumGetAnyArrayP(d);
    const int ndim = AARR_NDIM(a);
    if (ndim < 0 || ndim > MAXDIM) {
        fail_corrupt("array has an invalid number of dimensions");
    }
    std::array<rowid::ArrayDim, MAXDIM> dims;
    for (int i = 0; i < ndim; ++i) {
        dims[i] = {AARR_DIMS(a)[i], AARR_LBOUND(a)[i]};
    }
    // begin_array() validates the lengths: their running product stays in range.
    c.encoder.begin_array(p.inner->tag, {dims.data(), static_cast<std::size_t>(ndim)});
    std::int64_t count = ndim > 0 ? 1 : 0;
    for (int i = 0; i < ndim; ++i) {
        count *= dims[i].length;
    }
    const FieldPlan& e = *p.inner;
    array_iter iter;
    array_iter_setup(&iter, a);
    for (int i = 0; i < count; ++i) {
        bool isnull;
        const Datum v = array_iter_next(&iter, &isnull, i, e.typlen, e.typbyval, e.typalign);
        if (isnull) {
            c.encoder.null(e.tag);
        } else {
            e.write(c, e, v);
        }
    }
    c.encoder.end_array();
}

void write_bounds(EncodeCtx& c, const FieldPlan& p, const RangeBound& lower,
                  const RangeBound& upper, bool empty) {
    const rowid::RangeFlags flags{empty, lower.infinite, upper.infinite, lower.inclusive,
                                  upper.inclusive};
    c.encoder.begin_range(p.inner->tag, flags);
    if (!empty && !lower.infinite) {
        p.inner->write(c, *p.inner, lower.val);
    }
    if (!empty && !upper.infinite) {
        p.inner->write(c, *p.inner, upper.val);
    }
    c.encoder.end_range();
}

void write_range(EncodeCtx& c, const FieldPlan& p, Datum d) {
    const RangeType* r = DatumGetRangeTypeP(d);
    RangeBound lower;
    RangeBound upper;
    bool empty;
    range_deserialize(p.range, r, &lower, &upper, &empty);
    write_bounds(c, p, lower, upper, empty);
}

void write_multirange(EncodeCtx& c, const FieldPlan& p, Datum d) {
    const MultirangeType* mr = DatumGetMultirangeTypeP(d);
    c.encoder.begin_multirange(p.inner->tag);
    for (uint32 i = 0; i < mr->rangeCount; ++i) {
        RangeBound lower;
        RangeBound upper;
        multirange_get_bounds(p.range, mr, i, &lower, &upper);
        write_bounds(c, p, lower, upper, false);
    }
    c.encoder.end_multirange();
}

void write_composite(EncodeCtx& c, const FieldPlan& p, Datum d) {
    const HeapTupleHeader th = DatumGetHeapTupleHeader(d);
    const CompositePlan& plan = p.slot->get(c, th);
    c.encoder.begin_composite(plan.field_count());
    plan.write_fields(c, th);
    c.encoder.end_composite();
}

// --- plan building (outside the per-row path) -------------------------------

struct KindWriter {
    rowid::TypeKind kind;
    TypeTag tag;
    WriteFn write;
};

constexpr std::array<KindWriter, 6> kKindWriters{{
    {rowid::TypeKind::kImage, TypeTag::kImage, write_image},
    {rowid::TypeKind::kEnum, TypeTag::kEnum, write_enum},
    {rowid::TypeKind::kArray, TypeTag::kArray, write_array},
    {rowid::TypeKind::kRange, TypeTag::kRange, write_range},
    {rowid::TypeKind::kMultirange, TypeTag::kMultirange, write_multirange},
    {rowid::TypeKind::kComposite, TypeTag::kComposite, write_composite},
}};

// Writer and tag of a checked descriptor (a domain is its base type).
void choose_writer(FieldPlan& p, const rowid::TypeDesc& node) {
    if (node.kind == rowid::TypeKind::kBase) {
        const rowid::TypeInfo* info = rowid::builtin_type(node.oid);
        for (const ScalarWriter& w : kScalarWriters) {
            if (info != nullptr && w.tag == info->tag) {
                p.tag = w.tag;
                p.write = w.write;
            }
        }
    }
    for (const KindWriter& w : kKindWriters) {
        if (w.kind == node.kind) {
            p.tag = w.tag;
            p.write = w.write;
        }
    }
    if (p.write == nullptr) {
        throw pgt::Error("XX000", "row identity type has no writer after validation");
    }
}

// The attribute's offset in a tuple whose earlier attributes are all
// non-NULL, or -1 when it depends on the values; advances `next` (the offset
// after the previous attribute, -1 once unknown). Same rules as
// heap_deform_tuple's attcacheoff: a varlena offset is cached only when it
// needs no alignment, which is then valid for short and long headers alike.
int32 fixed_offset(int32& next, const FormData_pg_attribute& att) {
    if (next < 0) {
        return -1;
    }
    int32 off;
    if (att.attlen == -1) {
        off = next == static_cast<int32>(att_align_nominal(next, att.attalign)) ? next : -1;
    } else {
        off = static_cast<int32>(att_align_nominal(next, att.attalign));
    }
    next = off >= 0 && att.attlen > 0 ? off + att.attlen : -1;
    return off;
}

// Whether a field's writer calls no raising PostgreSQL function except the
// detoasting that packed() guards: scalars only (jsonb iterates and pallocs).
bool runs_unguarded(const FieldPlan& p) {
    return p.inner == nullptr && p.slot == nullptr && p.range == nullptr &&
           p.tag != TypeTag::kJsonb && p.tag != TypeTag::kArray && p.tag != TypeTag::kComposite &&
           p.tag != TypeTag::kRange && p.tag != TypeTag::kMultirange;
}

const FieldPlan* build_field(CompositePlan& owner, const IdentityType& resolved,
                             const rowid::TypeDesc& desc) {
    const rowid::TypeDesc* node = &desc;
    while (node->kind == rowid::TypeKind::kDomain) {
        node = node->inner;
    }
    const IdentityTypeFacts& facts = resolved.facts(*node);
    FieldPlan& p = owner.nodes.emplace_back();
    choose_writer(p, *node);
    p.typlen = facts.typlen;
    p.typbyval = facts.typbyval;
    p.typalign = facts.typalign;
    p.range = facts.range;
    if (node->inner != nullptr) {
        p.inner = build_field(owner, resolved, *node->inner);
    }
    if (node->kind == rowid::TypeKind::kComposite) {
        p.slot = &owner.slots.emplace_back();
    }
    return &p;
}

// Reads every label of the enum type that `value` belongs to.
void load_enum_labels(Oid value, std::unordered_map<Oid, std::string>& labels) {
    const Oid type = pg_call([&] {
        HeapTuple tup = SearchSysCache1(ENUMOID, ObjectIdGetDatum(value));
        if (!HeapTupleIsValid(tup)) {
            return InvalidOid;
        }
        const Oid t = reinterpret_cast<Form_pg_enum>(GETSTRUCT(tup))->enumtypid;
        ReleaseSysCache(tup);
        return t;
    });
    if (type == InvalidOid) {
        throw pgt::Error("22P03", "invalid internal value for enum: " + std::to_string(value));
    }
    CatCList* list =
        pg_call([&] { return SearchSysCacheList1(ENUMTYPOIDNAME, ObjectIdGetDatum(type)); });
    std::vector<std::pair<Oid, std::string>> found;
    try {
        for (int i = 0; i < list->n_members; ++i) {
            const auto* e = reinterpret_cast<Form_pg_enum>(GETSTRUCT(&list->members[i]->tuple));
            found.emplace_back(e->oid, NameStr(e->enumlabel));
        }
    } catch (...) {
        pg_call([&] { ReleaseSysCacheList(list); });
        throw;
    }
    pg_call([&] { ReleaseSysCacheList(list); });
    for (auto& [oid, label] : found) {
        labels.insert_or_assign(oid, std::move(label));
    }
}

}  // namespace

// --- the call site ------------------------------------------------------------

namespace {

// Identity blocks in CurrentMemoryContext (the caller's, at the time of the
// call): the bytea the SQL function returns. palloc_extended with
// MCXT_ALLOC_NO_OOM raises nothing for a valid size, and identities stay far
// below MaxAllocSize (64 MiB + the varlena header).
class PallocArena final : public rowid::OutputArena {
public:
    std::uint8_t* allocate(std::size_t size) noexcept override {
        static_assert(rowid::kMaxIdentityBytes + VARHDRSZ <= MaxAllocSize);
        return static_cast<std::uint8_t*>(palloc_extended(size, MCXT_ALLOC_NO_OOM));
    }
};

}  // namespace

class IdentityCallSite {
public:
    explicit IdentityCallSite(MemoryContext mcxt) : mcxt_(mcxt) {
        ctx_.encoder.set_output(&arena_, VARHDRSZ);
    }
    IdentityCallSite(const IdentityCallSite&) = delete;
    IdentityCallSite& operator=(const IdentityCallSite&) = delete;

    IdentityArgMemo& arg_memo() noexcept { return memo_; }

    Datum encode(const IdentityHeader& header, Datum record) {
        return run([&] { return encode_once(header, record); });
    }

    Datum encode_args(const IdentityHeader& header, FunctionCallInfo fcinfo, int first) {
        if (args_plan_ == nullptr) {
            args_plan_ = build_args_plan(fcinfo, first);
        }
        return run([&] { return encode_args_once(header, fcinfo, first); });
    }

private:
    // Runs `once` (one row) unguarded or under one pg_call, building what a
    // PlanMiss names and switching to guarded on NeedsGuard, until it succeeds.
    template <typename Once>
    Datum run(Once once) {
        Miss previous;
        for (;;) {
            try {
                if (!ctx_.guarded) [[likely]] {
                    return once();
                }
                return pg_call(once);
            } catch (const NeedsGuard&) {
                ctx_.guarded = true;
            } catch (const PlanMiss&) {
                if (ctx_.miss == previous) {
                    throw pgt::Error("XX000", "row identity plan for a record type cannot be built",
                                     "A value has more attributes than its type declares.");
                }
                previous = ctx_.miss;
                resolve_miss(previous);
            }
        }
    }

    void begin(const IdentityHeader& header, std::uint16_t field_count) {
        ctx_.digits.reset();
        if (header.domain == rowid::Domain::kSynthetic) {
            ctx_.encoder.begin_synthetic(header.synthetic, field_count);
        } else {
            ctx_.encoder.begin(header.domain, field_count);
        }
    }

    // The finished identity as the bytea it was written into.
    Datum finish() {
        const std::span<const std::uint8_t> id = ctx_.encoder.end();
        // The identity was written VARHDRSZ bytes into a block of arena_.
        auto* out = reinterpret_cast<bytea*>(const_cast<std::uint8_t*>(id.data()) - VARHDRSZ);
        SET_VARSIZE(out, VARHDRSZ + id.size());
        return PointerGetDatum(out);
    }

    Datum encode_once(const IdentityHeader& header, Datum record) {
        if (!ctx_.guarded && VARATT_IS_EXTENDED(DatumGetPointer(record))) {
            throw NeedsGuard{};  // a toasted record: detoasting can raise
        }
        // Detoasts only when guarded: unguarded, the record was checked above.
        const HeapTupleHeader th = ctx_.guarded
                                       ? DatumGetHeapTupleHeader(record)
                                       : reinterpret_cast<HeapTupleHeader>(DatumGetPointer(record));
        const CompositePlan& plan = root_.get(ctx_, th);
        if (!ctx_.guarded && !plan.unguarded_ok) {
            throw NeedsGuard{};
        }
        begin(header, plan.field_count());
        plan.write_fields(ctx_, th);
        return finish();
    }

    // The fields are the arguments first.. of the call, one per field.
    Datum encode_args_once(const IdentityHeader& header, FunctionCallInfo fcinfo, int first) {
        const CompositePlan& plan = *args_plan_;
        if (!ctx_.guarded && !plan.unguarded_ok) {
            throw NeedsGuard{};
        }
        begin(header, plan.field_count());
        const NullableDatum* args = fcinfo->args + first;
        for (const StoredAttr& a : plan.attrs) {
            write_value(ctx_, *a.plan, args->value, args->isnull);
            ++args;
        }
        return finish();
    }

    void resolve_miss(const Miss& miss) {
        ctx_.miss = Miss{};
        if (miss.slot != nullptr) {
            miss.slot->put(build_plan(miss.type, miss.typmod));
        } else if (miss.enum_value != InvalidOid) {
            load_enum_labels(miss.enum_value, ctx_.enum_labels);
        } else {
            throw pgt::Error("XX000", "row identity plan miss without a cause");
        }
    }

    // The plan of the argument fields first.. of this call site, from the
    // calling expression: each argument is a field of its expression's type,
    // typmod and collation, as ROW(...) would make it (field names f1, f2 ...).
    std::unique_ptr<CompositePlan> build_args_plan(FunctionCallInfo fcinfo, int first) {
        struct ArgType {
            Oid type;
            int32 typmod;
            Oid collation;
        };
        const int count = fcinfo->nargs - first;
        std::vector<ArgType> types(static_cast<std::size_t>(std::max(count, 0)));
        ArgType* out = types.data();
        const bool known = count >= 0 && pg_call([&] {
                               const Node* expr = fcinfo->flinfo->fn_expr;
                               if (expr == nullptr || !IsA(expr, FuncExpr) ||
                                   get_fn_expr_variadic(fcinfo->flinfo)) {
                                   return false;
                               }
                               const List* args = reinterpret_cast<const FuncExpr*>(expr)->args;
                               if (list_length(args) != fcinfo->nargs) {
                                   return false;
                               }
                               for (int i = 0; i < count; ++i) {
                                   const Node* arg =
                                       static_cast<const Node*>(list_nth(args, first + i));
                                   out[i] = {exprType(arg), exprTypmod(arg), exprCollation(arg)};
                               }
                               return true;
                           });
        if (!known) {
            throw pgt::Error("22023", "row identity fields must be separate arguments",
                             "The call passes a VARIADIC array, or its expression is unknown.",
                             "Call pgtrickle.encode_row_id_v2(domain, ROW(...)).");
        }
        auto plan = std::make_unique<CompositePlan>();
        plan->attrs.resize(types.size());
        for (std::size_t i = 0; i < types.size(); ++i) {
            const ArgType& t = types[i];
            const IdentityType resolved(t.type, t.typmod, t.collation, AnonymousRecords::kPerValue);
            const rowid::TypeVerdict verdict = rowid::check_type(resolved.root());
            if (!verdict.supported) {
                throw_unsupported_identity_type("field", "f" + std::to_string(i + 1), t.type,
                                                t.typmod, resolved, verdict);
            }
            StoredAttr& stored = plan->attrs[i];
            stored.plan = build_field(*plan, resolved, resolved.root());
            ++plan->live;
            plan->unguarded_ok = plan->unguarded_ok && runs_unguarded(*stored.plan);
        }
        return plan;
    }

    std::unique_ptr<CompositePlan> build_plan(Oid type, int32 typmod) {
        auto plan = std::make_unique<CompositePlan>();
        plan->type = type;
        plan->typmod = typmod;
        plan->tupdesc = pg_call([&] {
            MemoryContext old = MemoryContextSwitchTo(mcxt_);
            TupleDesc td = lookup_rowtype_tupdesc_copy(type, typmod);
            MemoryContextSwitchTo(old);
            return td;
        });
        plan->attrs.resize(static_cast<std::size_t>(plan->tupdesc->natts));
        int32 cacheoff = 0;  // -1 once an attribute's offset depends on the values
        for (int i = 0; i < plan->tupdesc->natts; ++i) {
            const Form_pg_attribute att = TupleDescAttr(plan->tupdesc, i);
            StoredAttr& stored = plan->attrs[static_cast<std::size_t>(i)];
            stored.len = att->attlen;
            stored.byval = att->attbyval;
            stored.align = att->attalign;
            stored.cacheoff = fixed_offset(cacheoff, *att);
            if (att->attisdropped) {
                continue;
            }
            const IdentityType resolved(att->atttypid, att->atttypmod, att->attcollation,
                                        AnonymousRecords::kPerValue);
            const rowid::TypeVerdict verdict = rowid::check_type(resolved.root());
            if (!verdict.supported) {
                throw_unsupported_identity_type("field", NameStr(att->attname), att->atttypid,
                                                att->atttypmod, resolved, verdict);
            }
            stored.plan = build_field(*plan, resolved, resolved.root());
            ++plan->live;
            plan->unguarded_ok = plan->unguarded_ok && runs_unguarded(*stored.plan);
        }
        return plan;
    }

    MemoryContext mcxt_;
    PallocArena arena_;
    EncodeCtx ctx_;
    CompositeSlot root_;
    std::unique_ptr<CompositePlan> args_plan_;  // encode_args(): fields as arguments
    IdentityArgMemo memo_;
};

namespace {

struct CallSiteStorage {
    alignas(IdentityCallSite) unsigned char site[sizeof(IdentityCallSite)];
    MemoryContextCallback on_reset;
};
static_assert(alignof(CallSiteStorage) <= MAXIMUM_ALIGNOF, "palloc alignment is too small");

void destroy_call_site(void* arg) {
    static_cast<IdentityCallSite*>(arg)->~IdentityCallSite();
}

}  // namespace

IdentityCallSite& new_identity_call_site(FunctionCallInfo fcinfo) {
    FmgrInfo* flinfo = fcinfo->flinfo;
    void* raw =
        pg_call([&] { return MemoryContextAllocZero(flinfo->fn_mcxt, sizeof(CallSiteStorage)); });
    auto* storage = static_cast<CallSiteStorage*>(raw);
    auto* site = new (storage->site) IdentityCallSite(flinfo->fn_mcxt);
    storage->on_reset.func = destroy_call_site;
    storage->on_reset.arg = site;
    try {
        pg_call([&] { MemoryContextRegisterResetCallback(flinfo->fn_mcxt, &storage->on_reset); });
    } catch (...) {
        site->~IdentityCallSite();
        throw;
    }
    flinfo->fn_extra = site;
    return *site;
}

IdentityArgMemo& identity_arg_memo(IdentityCallSite& site) {
    return site.arg_memo();
}

Datum encode_identity(IdentityCallSite& site, const IdentityHeader& header, Datum record) {
    return site.encode(header, record);
}

Datum encode_identity_args(IdentityCallSite& site, const IdentityHeader& header,
                           FunctionCallInfo fcinfo, int first) {
    return site.encode_args(header, fcinfo, first);
}

}  // namespace pgt::pg
