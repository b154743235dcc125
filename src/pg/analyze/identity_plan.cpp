// Encoder plans of row identity V2 and the per-row walk from datums to the
// core encoder. Invariant: encode_once() (the per-row path) holds no local
// with a destructor and looks nothing up in the catalogs; whatever it lacks
// it reports by throwing PlanMiss, and the plan is built outside it.
//
// Design
// ------
//   flinfo->fn_extra ──► IdentityCallSite     storage and reset callback in fn_mcxt
//     ├─ EncodeCtx                             C++ heap
//     │    ├─ rowid::Encoder                   one growing scratch buffer
//     │    ├─ enum labels by value OID         all labels of a type, loaded on first sight
//     │    └─ scratch                          deform buffers per composite level,
//     │                                        jsonb node arenas, copies of unaligned digits
//     └─ root CompositeSlot ──► CompositePlan per (type id, typmod) of the argument
//                                ├─ TupleDesc copy (fn_mcxt memory)
//                                └─ FieldPlan per live attribute: writer, tag, storage
//                                   facts; nested FieldPlans for array elements and
//                                   range subtypes, a CompositeSlot per composite
//
// Per row: one pg_call runs encode_once(): deform the tuple, call one writer
// per field, copy the finished bytes into a palloc'd bytea. A value whose
// (type id, typmod) has no plan in its slot, or an enum value without a
// cached label, throws PlanMiss out of the pg_call; the call site builds the
// plan (catalog lookups under their own pg_calls) and restarts the row. A
// PostgreSQL error (detoast, palloc) may longjmp out of encode_once: nothing
// there has a destructor, and the encoder restarts clean at begin().
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
#include "pg/analyze/identity_plan.hpp"

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
#include "pg/analyze/identity_types.hpp"
#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include <sys/socket.h>  // AF_INET for utils/inet.h
#include "access/htup_details.h"
#include "access/tupdesc.h"
#include "catalog/pg_enum.h"
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

namespace {

using rowid::TypeTag;

constexpr const char* kCorrupt = "XX001";  // data_corrupted

[[noreturn]] void fail_corrupt(const char* what) {
    throw pgt::Error(kCorrupt,
                     std::string("invalid stored value in a row identity field: ") + what);
}

// Storage for nodes that must not move once handed out: blocks are never
// reallocated, reset() only rewinds. Amortised, a row allocates nothing.
template <typename T>
class BlockArena {
public:
    T* take(std::size_t n) {
        if (n == 0) {
            return nullptr;
        }
        while (block_ < blocks_.size() && blocks_[block_].size - used_ < n) {
            ++block_;
            used_ = 0;
        }
        if (block_ == blocks_.size()) {
            const std::size_t last = blocks_.empty() ? 0 : blocks_.back().size;
            const std::size_t size = std::max({n, kMinBlock, 2 * last});
            blocks_.push_back({std::make_unique<T[]>(size), size});
            used_ = 0;
        }
        T* p = blocks_[block_].data.get() + used_;
        used_ += n;
        return p;
    }
    void reset() noexcept { block_ = used_ = 0; }

private:
    static constexpr std::size_t kMinBlock = 64;
    struct Block {
        std::unique_ptr<T[]> data;
        std::size_t size;
    };
    std::vector<Block> blocks_;
    std::size_t block_ = 0;
    std::size_t used_ = 0;
};

// Thrown out of encode_once() when EncodeCtx::miss names something to build.
struct PlanMiss {};

struct CompositeSlot;

struct Miss {
    CompositeSlot* slot = nullptr;  // composite: the slot that lacks a plan ...
    Oid type = InvalidOid;          // ... for this (type id, typmod)
    int32 typmod = -1;
    Oid enum_value = InvalidOid;  // enum: the value without a cached label
    bool operator==(const Miss&) const = default;
};

struct DeformLevel {
    std::unique_ptr<Datum[]> values;
    std::unique_ptr<bool[]> nulls;
    int capacity = 0;
};

// An open jsonb container while the tree is built: children are filled in
// place; a raw scalar ("1" stored as a one-element array) has no children.
struct JsonFrame {
    rowid::JsonNode* items = nullptr;
    rowid::JsonMember* members = nullptr;
    std::uint32_t count = 0;
    std::uint32_t filled = 0;
};

struct EncodeCtx {
    rowid::Encoder encoder;
    std::unordered_map<Oid, std::string> enum_labels;
    // Composite nesting (top level included) is at most 1 + the depth limit.
    std::array<DeformLevel, rowid::kMaxDepth + 1> levels;
    std::uint32_t level = 0;
    BlockArena<rowid::JsonNode> json_nodes;
    BlockArena<rowid::JsonMember> json_members;
    std::vector<JsonFrame> json_frames;
    rowid::JsonNode json_root;
    BlockArena<std::int16_t> digits;  // numeric digits that were not 2-byte aligned
    Miss miss;
};

struct FieldPlan;
using WriteFn = void (*)(EncodeCtx&, const FieldPlan&, Datum);

// How to write one (non-NULL) value of a type, resolved at plan time.
struct FieldPlan {
    WriteFn write = nullptr;
    TypeTag tag = TypeTag::kBool;  // also the tag of a NULL at this position
    int16 typlen = 0;              // storage of this type's values (array elements)
    bool typbyval = false;
    char typalign = 'i';
    const FieldPlan* inner = nullptr;  // array element, range/multirange subtype
    TypeCacheEntry* range = nullptr;   // range, multirange: the range's typcache entry
    CompositeSlot* slot = nullptr;     // composite: plans by the value's (type id, typmod)
};

struct PlannedField {
    int attno;  // 0-based attribute index
    const FieldPlan* plan;
};

class CompositePlan {
public:
    Oid type = InvalidOid;
    int32 typmod = -1;
    TupleDesc tupdesc = nullptr;       // fn_mcxt copy
    std::vector<PlannedField> fields;  // live attributes, in order
    std::deque<FieldPlan> nodes;       // every FieldPlan of this composite
    std::deque<CompositeSlot> slots;   // nested composite positions

    bool matches(Oid t, int32 m, int natts) const {
        return t == type && m == typmod && natts <= tupdesc->natts;
    }
    std::uint16_t field_count() const { return static_cast<std::uint16_t>(fields.size()); }
    void write_fields(EncodeCtx& c, HeapTupleHeader th) const;
};

struct CompositeSlot {
    std::vector<std::unique_ptr<CompositePlan>> plans;
    const CompositePlan* last = nullptr;

    const CompositePlan& get(EncodeCtx& c, HeapTupleHeader th) {
        const Oid type = HeapTupleHeaderGetTypeId(th);
        const int32 typmod = HeapTupleHeaderGetTypMod(th);
        const int natts = HeapTupleHeaderGetNatts(th);
        if (last != nullptr && last->matches(type, typmod, natts)) [[likely]] {
            return *last;
        }
        for (const std::unique_ptr<CompositePlan>& p : plans) {
            if (p->matches(type, typmod, natts)) {
                last = p.get();
                return *p;
            }
        }
        c.miss = Miss{this, type, typmod, InvalidOid};
        throw PlanMiss{};
    }

    // Adds a plan, replacing one of the same key (a type that gained attributes).
    void put(std::unique_ptr<CompositePlan> plan) {
        std::erase_if(plans, [&](const std::unique_ptr<CompositePlan>& p) {
            return p->type == plan->type && p->typmod == plan->typmod;
        });
        last = plan.get();
        plans.push_back(std::move(plan));
    }
};

// --- per-row helpers (no destructors, no catalog access) -----------------

DeformLevel& enter_level(EncodeCtx& c, int natts) {
    if (c.level >= c.levels.size()) {
        throw pgt::Error("XX000", "row identity composite nesting exceeds its scratch levels");
    }
    DeformLevel& lv = c.levels[c.level++];
    if (lv.capacity < natts) {
        lv.values = std::make_unique<Datum[]>(natts);
        lv.nulls = std::make_unique<bool[]>(natts);
        lv.capacity = natts;
    }
    return lv;
}

void CompositePlan::write_fields(EncodeCtx& c, HeapTupleHeader th) const {
    DeformLevel& lv = enter_level(c, tupdesc->natts);
    HeapTupleData tuple;
    tuple.t_len = HeapTupleHeaderGetDatumLength(th);
    ItemPointerSetInvalid(&tuple.t_self);
    tuple.t_tableOid = InvalidOid;
    tuple.t_data = th;
    heap_deform_tuple(&tuple, tupdesc, lv.values.get(), lv.nulls.get());
    for (const PlannedField& f : fields) {
        if (lv.nulls[f.attno]) {
            c.encoder.null(f.plan->tag);
        } else {
            f.plan->write(c, *f.plan, lv.values[f.attno]);
        }
    }
    --c.level;
}

const varlena* packed(Datum d) {
    return pg_detoast_datum_packed(reinterpret_cast<varlena*>(DatumGetPointer(d)));
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

// --- scalar writers ----------------------------------------------------------

rowid::InetView inet_view(Datum d) {
    const inet* n = DatumGetInetPP(d);
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
    const varlena* v = packed(d);
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

void write_jsonb(EncodeCtx& c, const FieldPlan&, Datum d);

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
    {TypeTag::kNumeric, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.numeric(read_numeric(c, packed(d))); }},
    {TypeTag::kText, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.text(bytes_of(packed(d))); }},
    {TypeTag::kVarchar, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.varchar(bytes_of(packed(d))); }},
    {TypeTag::kBpchar, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.bpchar(bytes_of(packed(d))); }},
    {TypeTag::kBytea, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.bytea(bytes_of(packed(d))); }},
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
    {TypeTag::kInet, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.inet(inet_view(d)); }},
    {TypeTag::kCidr, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.cidr(inet_view(d)); }},
    {TypeTag::kMacaddr, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.macaddr(fixed_bytes<6>(DatumGetMacaddrP(d))); }},
    {TypeTag::kMacaddr8, [](EncodeCtx& c, const FieldPlan&, Datum d) { c.encoder.macaddr8(fixed_bytes<8>(DatumGetMacaddr8P(d))); }},
    {TypeTag::kBit, [](EncodeCtx& c, const FieldPlan&, Datum d) { write_bits(c, d, false); }},
    {TypeTag::kVarbit, [](EncodeCtx& c, const FieldPlan&, Datum d) { write_bits(c, d, true); }},
    {TypeTag::kJsonb, write_jsonb},
};
// clang-format on

// --- jsonb: JsonbIterator tokens -> the core's JsonNode tree ----------------

rowid::JsonNode* json_target(EncodeCtx& c) {
    if (c.json_frames.empty()) {
        return &c.json_root;
    }
    JsonFrame& f = c.json_frames.back();
    if (f.filled >= f.count) {
        fail_corrupt("jsonb container holds more values than it declares");
    }
    if (f.items != nullptr) {
        return &f.items[f.filled];
    }
    return f.members != nullptr ? &f.members[f.filled].value : &c.json_root;
}

void json_done(EncodeCtx& c) {
    if (!c.json_frames.empty()) {
        ++c.json_frames.back().filled;
    }
}

void json_open(EncodeCtx& c, JsonbIteratorToken token, const JsonbValue& v) {
    rowid::JsonNode* node = json_target(c);
    JsonFrame f;
    if (token == WJB_BEGIN_ARRAY && v.val.array.rawScalar) {
        f.count = 1;  // the scalar becomes the node itself
    } else if (token == WJB_BEGIN_ARRAY) {
        f.count = static_cast<std::uint32_t>(v.val.array.nElems);
        f.items = c.json_nodes.take(f.count);
        *node = rowid::json_array({f.items, f.count});
    } else {
        f.count = static_cast<std::uint32_t>(v.val.object.nPairs);
        f.members = c.json_members.take(f.count);
        *node = rowid::json_object({f.members, f.count});
    }
    c.json_frames.push_back(f);
}

rowid::JsonNode json_scalar(EncodeCtx& c, const JsonbValue& v) {
    switch (v.type) {
        case jbvNull:
            return rowid::json_null();
        case jbvString:
            return rowid::json_string(
                {v.val.string.val, static_cast<std::size_t>(v.val.string.len)});
        case jbvNumeric:
            return rowid::json_number(
                read_numeric(c, reinterpret_cast<const varlena*>(v.val.numeric)));
        case jbvBool:
            return rowid::json_bool(v.val.boolean);
        default:
            fail_corrupt("unexpected jsonb scalar type");
    }
}

void json_token(EncodeCtx& c, JsonbIteratorToken token, const JsonbValue& v) {
    switch (token) {
        case WJB_BEGIN_ARRAY:
        case WJB_BEGIN_OBJECT:
            json_open(c, token, v);
            return;
        case WJB_KEY:
            if (c.json_frames.empty() || c.json_frames.back().members == nullptr) {
                fail_corrupt("jsonb key outside an object");
            }
            json_target(c);  // bounds check
            c.json_frames.back().members[c.json_frames.back().filled].key = {
                v.val.string.val, static_cast<std::size_t>(v.val.string.len)};
            return;
        case WJB_VALUE:
        case WJB_ELEM:
            *json_target(c) = json_scalar(c, v);
            json_done(c);
            return;
        case WJB_END_ARRAY:
        case WJB_END_OBJECT:
            c.json_frames.pop_back();
            json_done(c);
            return;
        default:
            fail_corrupt("unexpected jsonb iterator token");
    }
}

void write_jsonb(EncodeCtx& c, const FieldPlan&, Datum d) {
    Jsonb* jb = DatumGetJsonbP(d);
    c.json_nodes.reset();
    c.json_members.reset();
    c.json_frames.clear();
    c.json_root = rowid::json_null();
    JsonbIterator* it = JsonbIteratorInit(&jb->root);
    JsonbValue v;
    JsonbIteratorToken token;
    while ((token = JsonbIteratorNext(&it, &v, false)) != WJB_DONE) {
        json_token(c, token, v);
    }
    c.encoder.jsonb(c.json_root);
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

constexpr std::array<KindWriter, 5> kKindWriters{{
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

class IdentityCallSite {
public:
    explicit IdentityCallSite(MemoryContext mcxt) : mcxt_(mcxt) {}

    Datum encode(const IdentityHeader& header, Datum record) {
        Miss previous;
        for (;;) {
            try {
                return pg_call([&] { return encode_once(header, record); });
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

private:
    Datum encode_once(const IdentityHeader& header, Datum record) {
        const HeapTupleHeader th = DatumGetHeapTupleHeader(record);
        const CompositePlan& plan = root_.get(ctx_, th);
        ctx_.level = 0;
        ctx_.digits.reset();
        if (header.domain == rowid::Domain::kSynthetic) {
            ctx_.encoder.begin_synthetic(header.synthetic, plan.field_count());
        } else {
            ctx_.encoder.begin(header.domain, plan.field_count());
        }
        plan.write_fields(ctx_, th);
        const std::span<const std::uint8_t> id = ctx_.encoder.end();
        auto* out = static_cast<bytea*>(palloc(VARHDRSZ + id.size()));
        SET_VARSIZE(out, VARHDRSZ + id.size());
        std::memcpy(VARDATA(out), id.data(), id.size());
        return PointerGetDatum(out);
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
        for (int i = 0; i < plan->tupdesc->natts; ++i) {
            const Form_pg_attribute att = TupleDescAttr(plan->tupdesc, i);
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
            plan->fields.push_back({i, build_field(*plan, resolved, resolved.root())});
        }
        return plan;
    }

    MemoryContext mcxt_;
    EncodeCtx ctx_;
    CompositeSlot root_;
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

IdentityCallSite& identity_call_site(FunctionCallInfo fcinfo) {
    FmgrInfo* flinfo = fcinfo->flinfo;
    if (flinfo->fn_extra != nullptr) {
        return *static_cast<IdentityCallSite*>(flinfo->fn_extra);
    }
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

Datum encode_identity(IdentityCallSite& site, const IdentityHeader& header, Datum record) {
    return site.encode(header, record);
}

}  // namespace pgt::pg
