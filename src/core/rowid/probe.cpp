// Bounded probe v1: prefix + xxh3_128 digest (libxxhash, Debian).
// Invariant: the digest is written high half first, each half big-endian —
// the same bytes as XXH128_canonicalFromHash on every host.
#include "core/rowid/probe.hpp"

#include "core/rowid/payload.hpp"

// Plain XXH3_128bits on purpose: libxxhash's runtime-dispatched variant
// (XXH3_128bits_dispatch, AVX-512 on the benchmark machine) was slower inside
// the backend, not faster (docs/benchmarks.md, section 1).
#include <xxhash.h>

#include <cstring>

namespace pgt::rowid {

Digest128 probe_digest_v1(std::span<const std::uint8_t> id) noexcept {
    const XXH128_hash_t h = XXH3_128bits(id.data(), id.size());
    return {h.high64, h.low64};
}

namespace {

// The one definition of the probe layout.
void write_probe(std::span<const std::uint8_t> id, const Digest128& digest,
                 std::uint8_t* out) noexcept {
    if (probe_is_identity(id.size())) {
        if (!id.empty()) {
            std::memcpy(out, id.data(), id.size());
        }
        return;
    }
    std::memcpy(out, id.data(), kProbePrefixBytes);
    payload::put_be64(out + kProbePrefixBytes, digest.high);
    payload::put_be64(out + kProbePrefixBytes + 8, digest.low);
}

}  // namespace

Probe row_probe_v1_with_digest(std::span<const std::uint8_t> id, const Digest128& digest) noexcept {
    Probe probe;
    write_probe(id, digest, probe.bytes_.data());
    probe.size_ = probe_size_v1(id.size());
    return probe;
}

void write_row_probe_v1(std::span<const std::uint8_t> id, std::uint8_t* out) noexcept {
    write_probe(id, probe_is_identity(id.size()) ? Digest128{} : probe_digest_v1(id), out);
}

Probe row_probe_v1(std::span<const std::uint8_t> id) noexcept {
    if (probe_is_identity(id.size())) {
        return row_probe_v1_with_digest(id, Digest128{});
    }
    return row_probe_v1_with_digest(id, probe_digest_v1(id));
}

}  // namespace pgt::rowid
