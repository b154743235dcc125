// The row identity V2 type registry table and descriptor validation.
// Invariant: one row per supported type; built-in OIDs are PostgreSQL's fixed
// catalog numbers (pg_type.dat), never looked up at run time.
#include "core/rowid/types.hpp"

#include <array>

namespace pgt::rowid {
namespace {

using enum SizeRule;
using enum ByteOrder;

constexpr std::uint32_t kEnumMaxPayload = 2 * kMaxEnumLabelBytes + 2;  // also name's
constexpr std::uint32_t kCharMaxPayload = 2 * 1 + 2;

// clang-format off
constexpr std::array<TypeInfo, 34> kRegistry{{
    // tag                   name           oid   size rule       max  collate order
    {TypeTag::kBool,        "bool",          16, kFixed,           1, false, kTypeOrder},
    {TypeTag::kInt2,        "int2",          21, kFixed,           2, false, kTypeOrder},
    {TypeTag::kInt4,        "int4",          23, kFixed,           4, false, kTypeOrder},
    {TypeTag::kInt8,        "int8",          20, kFixed,           8, false, kTypeOrder},
    {TypeTag::kOid,         "oid",           26, kFixed,           4, false, kTypeOrder},
    {TypeTag::kFloat4,      "float4",       700, kFixed,           4, false, kTypeOrder},
    {TypeTag::kFloat8,      "float8",       701, kFixed,           8, false, kTypeOrder},
    {TypeTag::kNumeric,     "numeric",     1700, kNumericTypmod,   0, false, kTypeOrder},
    {TypeTag::kText,        "text",          25, kUnbounded,       0, true,  kTypeOrder},
    {TypeTag::kVarchar,     "varchar",     1043, kCharTypmod,      0, true,  kTypeOrder},
    {TypeTag::kBpchar,      "bpchar",      1042, kCharTypmod,      0, true,  kTypeOrder},
    {TypeTag::kBytea,       "bytea",         17, kUnbounded,       0, false, kTypeOrder},
    {TypeTag::kUuid,        "uuid",        2950, kFixed,          16, false, kTypeOrder},
    {TypeTag::kDate,        "date",        1082, kFixed,           4, false, kTypeOrder},
    {TypeTag::kTime,        "time",        1083, kFixed,           8, false, kTypeOrder},
    {TypeTag::kTimestamp,   "timestamp",   1114, kFixed,           8, false, kTypeOrder},
    {TypeTag::kTimestamptz, "timestamptz", 1184, kFixed,           8, false, kTypeOrder},
    {TypeTag::kTimetz,      "timetz",      1266, kFixed,          12, false, kTypeOrder},
    {TypeTag::kInterval,    "interval",    1186, kFixed,          16, false, kTypeOrder},
    {TypeTag::kInet,        "inet",         869, kFixed,          18, false, kIdentityOnly},
    {TypeTag::kCidr,        "cidr",         650, kFixed,          18, false, kIdentityOnly},
    {TypeTag::kMacaddr,     "macaddr",      829, kFixed,           6, false, kTypeOrder},
    {TypeTag::kMacaddr8,    "macaddr8",     774, kFixed,           8, false, kTypeOrder},
    {TypeTag::kBit,         "bit",         1560, kBitTypmod,       0, false, kIdentityOnly},
    {TypeTag::kVarbit,      "varbit",      1562, kBitTypmod,       0, false, kIdentityOnly},
    {TypeTag::kEnum,        "enum",           0, kFixed, kEnumMaxPayload, false, kIdentityOnly},
    {TypeTag::kJsonb,       "jsonb",       3802, kUnbounded,       0, false, kIdentityOnly},
    {TypeTag::kName,        "name",          19, kFixed, kEnumMaxPayload, true, kIdentityOnly},
    {TypeTag::kChar,        "char",          18, kFixed, kCharMaxPayload, false, kIdentityOnly},
    {TypeTag::kImage,       "image",          0, kUnbounded,       0, false, kIdentityOnly},
    {TypeTag::kArray,       "array",          0, kUnbounded,       0, false, kIdentityOnly},
    {TypeTag::kComposite,   "composite",      0, kComposite,       0, false, kIdentityOnly},
    {TypeTag::kRange,       "range",          0, kUnbounded,       0, false, kSubtypeOrder},
    {TypeTag::kMultirange,  "multirange",     0, kUnbounded,       0, false, kSubtypeOrder},
}};
// clang-format on

constexpr std::array<bool, 256> kRegisteredTags = [] {
    std::array<bool, 256> table{};
    for (const TypeInfo& info : kRegistry) {
        table[static_cast<std::uint8_t>(info.tag)] = true;
    }
    return table;
}();

// Built-in types that are rejected for a more specific reason than "absent".
struct KnownRejection {
    std::uint32_t oid;
    const char* reason;
};
constexpr std::array<KnownRejection, 2> kKnownRejections{{
    {114, "type json has no equality operator; use jsonb"},
    {142, "type xml has no equality operator"},
}};

constexpr const char* kNoEncoder = "type has no row identity V2 encoder";
constexpr const char* kNondeterministic =
    "non-deterministic collation: unequal bytes can compare equal, so no exact identity exists";
constexpr const char* kTooDeep = "type nests more than 32 containers (row identity depth limit)";
constexpr const char* kIncomplete =
    "type descriptor is incomplete (missing base, element, subtype or fields)";

TypeVerdict accept(TypeTag tag) noexcept {
    return {true, tag, nullptr, nullptr};
}
TypeVerdict reject(const TypeDesc& t, const char* reason) noexcept {
    return {false, TypeTag::kBool, reason, &t};
}

TypeVerdict check_base(const TypeDesc& t) noexcept {
    if (const TypeInfo* info = builtin_type(t.oid)) {
        if (info->collatable && t.collation == Collation::kNondeterministic) {
            return reject(t, kNondeterministic);
        }
        return accept(info->tag);
    }
    for (const KnownRejection& known : kKnownRejections) {
        if (known.oid == t.oid) {
            return reject(t, known.reason);
        }
    }
    return reject(t, kNoEncoder);
}

TypeVerdict check_at(const TypeDesc& t, std::uint32_t enclosing) noexcept;

// A container type of `levels` nesting levels whose contents are `inner`.
TypeVerdict check_container(const TypeDesc& t, TypeTag tag, std::uint32_t levels,
                            std::uint32_t enclosing) noexcept {
    if (enclosing + levels > kMaxDepth) {
        return reject(t, kTooDeep);
    }
    if (t.inner == nullptr) {
        return reject(t, kIncomplete);
    }
    const TypeVerdict inner = check_at(*t.inner, enclosing + levels);
    return inner.supported ? accept(tag) : inner;
}

TypeVerdict check_composite(const TypeDesc& t, std::uint32_t enclosing) noexcept {
    if (enclosing + 1 > kMaxDepth) {
        return reject(t, kTooDeep);
    }
    if (t.field_count > 0 && t.fields == nullptr) {
        return reject(t, kIncomplete);
    }
    for (std::uint16_t i = 0; i < t.field_count; ++i) {
        const TypeVerdict field = check_at(t.fields[i], enclosing + 1);
        if (!field.supported) {
            return field;
        }
    }
    return accept(TypeTag::kComposite);
}

TypeVerdict check_at(const TypeDesc& t, std::uint32_t enclosing) noexcept {
    switch (t.kind) {
        case TypeKind::kBase:
            return check_base(t);
        case TypeKind::kEnum:
            return accept(TypeTag::kEnum);
        case TypeKind::kImage:
            return accept(TypeTag::kImage);
        case TypeKind::kDomain:
            return t.inner != nullptr ? check_at(*t.inner, enclosing) : reject(t, kIncomplete);
        case TypeKind::kArray:
            return check_container(t, TypeTag::kArray, 1, enclosing);
        case TypeKind::kRange:
            return check_container(t, TypeTag::kRange, 1, enclosing);
        case TypeKind::kMultirange:  // a multirange frame holds range frames
            return check_container(t, TypeTag::kMultirange, 2, enclosing);
        case TypeKind::kComposite:
            return check_composite(t, enclosing);
        case TypeKind::kOther:
            break;
    }
    return reject(t, kNoEncoder);
}

}  // namespace

const TypeInfo* type_info(TypeTag tag) noexcept {
    for (const TypeInfo& info : kRegistry) {
        if (info.tag == tag) {
            return &info;
        }
    }
    return nullptr;
}

const TypeInfo* builtin_type(std::uint32_t oid) noexcept {
    for (const TypeInfo& info : kRegistry) {
        if (oid != 0 && info.builtin_oid == oid) {
            return &info;
        }
    }
    return nullptr;
}

bool is_registered_tag(TypeTag tag) noexcept {
    return kRegisteredTags[static_cast<std::uint8_t>(tag)];
}

const char* type_tag_name(TypeTag tag) noexcept {
    const TypeInfo* info = type_info(tag);
    return info != nullptr ? info->name : nullptr;
}

TypeVerdict check_type(const TypeDesc& type) noexcept {
    return check_at(type, 0);
}

}  // namespace pgt::rowid
