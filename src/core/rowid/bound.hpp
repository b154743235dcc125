// Static boundedness of an identity schema (seed §8): from field types and
// typmods alone, is every identity provably at most 256 bytes (probe == id)?
// Invariant: conservative — any doubt answers "unbounded", because a wrong
// "bounded" would put a UNIQUE index on a digest.
#pragma once
#include "core/core.hpp"
#include "core/rowid/format.hpp"
#include "core/rowid/probe.hpp"
#include "core/rowid/types.hpp"

#include <cstdint>
#include <optional>
#include <span>

namespace pgt::rowid {

inline constexpr std::uint32_t kUtf8MaxCharBytes = 4;

struct IdentityBound {
    bool bounded = false;
    std::uint64_t max_bytes = 0;  // meaningful only when bounded
};

// Worst-case payload bytes of one value of `type`; nullopt when unbounded or
// unsupported. `max_char_bytes` is the database encoding's longest character.
std::optional<std::uint64_t> max_payload_bytes(const TypeDesc& type,
                                               std::uint32_t max_char_bytes = kUtf8MaxCharBytes);

// Worst-case size of a whole identity: header, every field, TUPLE_END.
IdentityBound identity_bound(Domain domain, std::span<const TypeDesc> fields,
                             std::uint32_t max_char_bytes = kUtf8MaxCharBytes);

// probe == id for every row of the schema.
constexpr bool probe_always_identity(const IdentityBound& bound) noexcept {
    return bound.bounded && bound.max_bytes <= kProbePrefixBytes;
}

// A UNIQUE probe index is exact only when probe == id and rows are not keyless.
constexpr bool unique_probe_index_allowed(Domain domain, const IdentityBound& bound) noexcept {
    return domain != Domain::kKeylessRow && probe_always_identity(bound);
}

}  // namespace pgt::rowid
