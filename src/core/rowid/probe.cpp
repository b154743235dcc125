// Bounded probe v1: prefix + xxh3_128 digest (libxxhash, Debian).
// Invariant: the digest is written high half first, each half big-endian —
// the same bytes as XXH128_canonicalFromHash on every host.
#include "core/rowid/probe.hpp"

#include "core/rowid/payload.hpp"

#include <xxhash.h>

#include <cstring>

namespace pgt::rowid {

Digest128 probe_digest_v1(std::span<const std::uint8_t> id) noexcept {
    const XXH128_hash_t h = XXH3_128bits(id.data(), id.size());
    return {h.high64, h.low64};
}

Probe row_probe_v1_with_digest(std::span<const std::uint8_t> id, const Digest128& digest) noexcept {
    Probe probe;
    if (probe_is_identity(id.size())) {
        if (!id.empty()) {
            std::memcpy(probe.bytes_.data(), id.data(), id.size());
        }
        probe.size_ = id.size();
        return probe;
    }
    std::memcpy(probe.bytes_.data(), id.data(), kProbePrefixBytes);
    payload::put_be64(probe.bytes_.data() + kProbePrefixBytes, digest.high);
    payload::put_be64(probe.bytes_.data() + kProbePrefixBytes + 8, digest.low);
    probe.size_ = kProbeMaxBytes;
    return probe;
}

Probe row_probe_v1(std::span<const std::uint8_t> id) noexcept {
    if (probe_is_identity(id.size())) {
        return row_probe_v1_with_digest(id, Digest128{});
    }
    return row_probe_v1_with_digest(id, probe_digest_v1(id));
}

}  // namespace pgt::rowid
