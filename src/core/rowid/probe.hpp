// Bounded B-tree probe v1 of a row identity (seed §8): the identity itself
// when it fits 256 bytes, otherwise its first 256 bytes plus xxh3_128 of all
// of it. Invariant: the probe only narrows index candidates; equality of the
// complete identity is the only proof of a match.
#pragma once
#include "core/core.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace pgt::rowid {

inline constexpr std::uint8_t kProbeVersion = 1;
inline constexpr std::size_t kProbePrefixBytes = 256;
inline constexpr std::size_t kProbeDigestBytes = 16;
inline constexpr std::size_t kProbeMaxBytes = kProbePrefixBytes + kProbeDigestBytes;  // 272

// XXH3_128bits(id, seed 0) as its two 64-bit halves.
struct Digest128 {
    std::uint64_t high = 0;
    std::uint64_t low = 0;
};

// A probe in place (no heap): at most 272 bytes.
class Probe {
public:
    // Views into this object: call on a named Probe, never on a temporary.
    std::span<const std::uint8_t> bytes() const& noexcept { return {bytes_.data(), size_}; }
    std::span<const std::uint8_t> bytes() const&& = delete;
    std::size_t size() const noexcept { return size_; }

private:
    friend Probe row_probe_v1_with_digest(std::span<const std::uint8_t>, const Digest128&) noexcept;
    std::array<std::uint8_t, kProbeMaxBytes> bytes_{};
    std::size_t size_ = 0;
};

// True when probe == id, so the caller may return the identity datum itself.
constexpr bool probe_is_identity(std::size_t id_size) noexcept {
    return id_size <= kProbePrefixBytes;
}

// Size of the probe of an identity of `id_size` bytes.
constexpr std::size_t probe_size_v1(std::size_t id_size) noexcept {
    return probe_is_identity(id_size) ? id_size : kProbeMaxBytes;
}

Digest128 probe_digest_v1(std::span<const std::uint8_t> id) noexcept;

// Writes the probe of `id` (probe_size_v1(id.size()) bytes) to `out`, which
// must not overlap `id`: the same bytes as row_probe_v1(id), without the copy
// through a Probe (the PostgreSQL side writes straight into its bytea).
void write_row_probe_v1(std::span<const std::uint8_t> id, std::uint8_t* out) noexcept;

// probe = id                                     if |id| <= 256
//       = id[0..256] || BE64(high) || BE64(low)  otherwise (digest of the whole id)
Probe row_probe_v1(std::span<const std::uint8_t> id) noexcept;

// Same layout with a caller-chosen digest. Tests use it to force digest
// collisions between distinct identities; production code never does.
Probe row_probe_v1_with_digest(std::span<const std::uint8_t> id, const Digest128& digest) noexcept;

}  // namespace pgt::rowid
