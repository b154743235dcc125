// Worst-case encoded sizes per type and per identity schema.
// Invariant: every bound here is >= what the encoder can write for any value
// the type admits (escaping doubled, numeric digit groups rounded up).
#include "core/rowid/bound.hpp"

namespace pgt::rowid {
namespace {

constexpr std::int32_t kVarHdrSz = 4;            // typmod offset of varchar/bpchar/numeric
constexpr std::uint64_t kFieldFraming = 2;       // TYPE_TAG + VALUE_TAG
constexpr std::uint64_t kEscapedTerminator = 2;  // 00 00
constexpr std::uint64_t kBitLengthBytes = 4;

// Worst case of an escaped payload of `raw` bytes: every byte 00.
constexpr std::uint64_t escaped(std::uint64_t raw) {
    return 2 * raw + kEscapedTerminator;
}

std::optional<std::uint64_t> numeric_bound(std::int32_t typmod) {
    if (typmod < kVarHdrSz) {
        return std::nullopt;  // unconstrained numeric
    }
    const auto precision = static_cast<std::uint64_t>(((typmod - kVarHdrSz) >> 16) & 0xFFFF);
    const std::uint64_t groups = (precision + 3) / 4 + 1;  // p digits straddle one extra group
    return 1 + 2 + 2 * groups + 2;
}

std::optional<std::uint64_t> composite_bound(const TypeDesc& t, std::uint32_t max_char_bytes) {
    std::uint64_t total = 2 + 1;  // FIELD_COUNT + TUPLE_END
    for (std::uint16_t i = 0; i < t.field_count; ++i) {
        const auto field = max_payload_bytes(t.fields[i], max_char_bytes);
        if (!field) {
            return std::nullopt;
        }
        total += kFieldFraming + *field;
    }
    return total;
}

std::optional<std::uint64_t> base_bound(const TypeInfo& info, std::int32_t typmod,
                                        std::uint32_t max_char_bytes) {
    switch (info.size_rule) {
        case SizeRule::kFixed:
            return info.max_payload;
        case SizeRule::kCharTypmod:
            if (typmod < kVarHdrSz) {
                return std::nullopt;
            }
            return escaped(static_cast<std::uint64_t>(typmod - kVarHdrSz) * max_char_bytes);
        case SizeRule::kBitTypmod:
            if (typmod < 0) {
                return std::nullopt;
            }
            return kBitLengthBytes + escaped((static_cast<std::uint64_t>(typmod) + 7) / 8);
        case SizeRule::kNumericTypmod:
            return numeric_bound(typmod);
        case SizeRule::kComposite:
        case SizeRule::kUnbounded:
            break;
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::uint64_t> max_payload_bytes(const TypeDesc& type, std::uint32_t max_char_bytes) {
    if (!check_type(type).supported) {
        return std::nullopt;
    }
    const TypeDesc* t = &type;
    while (t->kind == TypeKind::kDomain) {
        t = t->inner;
    }
    switch (t->kind) {
        case TypeKind::kBase:
            return base_bound(*builtin_type(t->oid), t->typmod, max_char_bytes);
        case TypeKind::kEnum:
            return type_info(TypeTag::kEnum)->max_payload;
        case TypeKind::kComposite:
            return composite_bound(*t, max_char_bytes);
        default:
            return std::nullopt;  // arrays, ranges, multiranges: unbounded by rule
    }
}

IdentityBound identity_bound(Domain domain, std::span<const TypeDesc> fields,
                             std::uint32_t max_char_bytes) {
    // VERSION DOMAIN [DISCRIMINATOR] FIELD_COUNT ... TUPLE_END
    std::uint64_t total = 1 + 1 + (domain == Domain::kSynthetic ? 1 : 0) + 2 + 1;
    for (const TypeDesc& field : fields) {
        const auto payload = max_payload_bytes(field, max_char_bytes);
        if (!payload) {
            return {};
        }
        total += kFieldFraming + *payload;
    }
    return {true, total};
}

}  // namespace pgt::rowid
