// Type registry of row identity V2: which PostgreSQL types have a proven
// encoder, their stable tags, size rules and ordering, and validation of a
// neutral type descriptor. Invariant: no fallback — a type absent from the
// registry is rejected with a reason, never encoded some other way.
#pragma once
#include "core/core.hpp"
#include "core/rowid/format.hpp"

#include <cstdint>

namespace pgt::rowid {

// How the maximum payload size of a type follows from its typmod.
enum class SizeRule : std::uint8_t {
    kFixed,          // at most TypeInfo::max_payload bytes
    kCharTypmod,     // varchar(n), bpchar(n): n = typmod - 4 characters
    kBitTypmod,      // bit(n), varbit(n): n = typmod bits
    kNumericTypmod,  // numeric(p, s): typmod = ((p << 16) | s) + 4
    kComposite,      // sum over the fields
    kUnbounded,      // text, bytea, jsonb, arrays, ranges, multiranges
};

// What unsigned byte order of same-typed payloads means.
enum class ByteOrder : std::uint8_t {
    kTypeOrder,     // equals PostgreSQL's default btree order (text: C collation)
    kSubtypeOrder,  // ranges/multiranges: equals range_cmp iff the subtype's does
    kIdentityOnly,  // deterministic and injective, but not the type's sort order
};

struct TypeInfo {
    TypeTag tag;
    const char* name;
    std::uint32_t builtin_oid;  // 0: no fixed OID (enum, array, composite, range, multirange)
    SizeRule size_rule;
    std::uint32_t max_payload;  // kFixed: worst-case payload bytes
    bool collatable;
    ByteOrder order;
};

// Registry lookups; nullptr when absent.
const TypeInfo* type_info(TypeTag tag) noexcept;
bool is_registered_tag(TypeTag tag) noexcept;  // one table load
const TypeInfo* builtin_type(std::uint32_t oid) noexcept;

// A type as the PostgreSQL side resolved it (typtype, typmod, collation).
enum class TypeKind : std::uint8_t {
    kBase,  // a built-in base type, identified by `oid`
    // A user-defined base type whose default B-tree operator class says
    // equal values are equal images (btree support function 4,
    // "equalimage", true for the collation): encoded as its stored bytes.
    kImage,
    kEnum,        // any enum type
    kDomain,      // encoded as its base type (`inner`)
    kArray,       // element type in `inner`
    kComposite,   // live (non-dropped) attributes in `fields`
    kRange,       // subtype in `inner`
    kMultirange,  // range subtype in `inner`
    kOther,       // pseudo-types and anything else: rejected
};

enum class Collation : std::uint8_t { kNone, kDeterministic, kNondeterministic };

struct TypeDesc {
    TypeKind kind = TypeKind::kBase;
    std::uint32_t oid = 0;  // kBase: built-in type OID
    std::int32_t typmod = -1;
    Collation collation = Collation::kNone;
    const TypeDesc* inner = nullptr;
    const TypeDesc* fields = nullptr;
    std::uint16_t field_count = 0;
};

// Result of validation. When unsupported, `reason` is a static sentence and
// `offending` the innermost descriptor at fault (the PostgreSQL side raises
// 0A000 naming the expression and that type).
struct TypeVerdict {
    bool supported = false;
    TypeTag tag = TypeTag::kBool;  // tag of the outer type when supported
    const char* reason = nullptr;
    const TypeDesc* offending = nullptr;
};

TypeVerdict check_type(const TypeDesc& type) noexcept;

}  // namespace pgt::rowid
