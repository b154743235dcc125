// Row identity V2 scalar payloads (seed §6.1): one small method per type (the
// commonest fixed-size ones are inline in encoder.hpp).
// Invariant: values equal under PostgreSQL's equality encode identically
// (signed zero, NaN payloads, numeric scale, bpchar padding, interval
// equivalents, cidr host bits) and unequal values encode differently.
#include "core/rowid/encoder.hpp"

#include "core/rowid/payload.hpp"

#include <array>
#include <cstring>

namespace pgt::rowid {
namespace {

using payload::put_be16;
using payload::put_be32;
using payload::put_be64;

constexpr std::int64_t kUsecsPerDay = payload::kUsecsPerDay;
constexpr std::int32_t kMaxZoneSecs = 86400;  // generous: PostgreSQL allows 15:59:59

// Indexed by IpFamily.
constexpr std::array<std::uint8_t, 2> kFamilyByte{wire::kFamilyIpv4, wire::kFamilyIpv6};
constexpr std::array<std::uint8_t, 2> kAddressBytes{4, 16};

// Keeps the first `bits` bits of a 16-byte-max address, zeroing the rest.
void zero_host_bits(std::uint8_t* addr, std::size_t len, unsigned bits) noexcept {
    for (std::size_t i = 0; i < len; ++i) {
        const unsigned keep = bits > 8 * i ? bits - 8 * static_cast<unsigned>(i) : 0;
        const unsigned mask = keep >= 8 ? 0xFFu : (0xFF00u >> keep) & 0xFFu;
        addr[i] = static_cast<std::uint8_t>(addr[i] & mask);
    }
}

}  // namespace

void Encoder::numeric(const NumericView& v) {
    const payload::CanonicalNumeric n = payload::canonical_numeric(v);
    payload::write_numeric_payload(value_slot(TypeTag::kNumeric, numeric_payload_size(n)), n);
    after_value();
}

void Encoder::escaped_value(TypeTag tag, std::string_view bytes) {
    value_slot(tag, 0);
    put_escaped(bytes);
    after_value();
}

void Encoder::text(std::string_view bytes) {
    escaped_value(TypeTag::kText, bytes);
}
void Encoder::varchar(std::string_view bytes) {
    escaped_value(TypeTag::kVarchar, bytes);
}
void Encoder::bytea(std::string_view bytes) {
    escaped_value(TypeTag::kBytea, bytes);
}

// bpchar equality ignores trailing spaces (bpchartruelen), so they are dropped.
void Encoder::bpchar(std::string_view bytes) {
    const std::size_t last = bytes.find_last_not_of(' ');
    escaped_value(TypeTag::kBpchar, bytes.substr(0, last == std::string_view::npos ? 0 : last + 1));
}

// name compares with strncmp: its bytes up to the first NUL are the value.
void Encoder::name(std::string_view bytes) {
    const std::size_t end = bytes.find('\0');
    const std::string_view value = bytes.substr(0, end);
    if (value.size() > kMaxEnumLabelBytes) {
        fail_value("name longer than 63 bytes");
    }
    escaped_value(TypeTag::kName, value);
}

// Equal values of such a type have equal images (its operator class says
// so), and unequal values unequal ones: the bytes are the identity.
void Encoder::image(std::string_view bytes) {
    escaped_value(TypeTag::kImage, bytes);
}

void Encoder::pg_char(std::uint8_t byte) {
    const char c = static_cast<char>(byte);
    escaped_value(TypeTag::kChar, std::string_view(&c, 1));
}

void Encoder::enum_label(std::string_view label) {
    if (label.size() > kMaxEnumLabelBytes) {
        fail_value("enum label longer than 63 bytes");
    }
    escaped_value(TypeTag::kEnum, label);
}

void Encoder::time(std::int64_t usecs_since_midnight) {
    if (usecs_since_midnight < 0 || usecs_since_midnight > kUsecsPerDay) {
        fail_value("time outside 00:00:00 .. 24:00:00");
    }
    put_be64(value_slot(TypeTag::kTime, 8), static_cast<std::uint64_t>(usecs_since_midnight));
    after_value();
}

// timetz_cmp: GMT-equivalent instant first, then the zone (seconds west).
void Encoder::timetz(std::int64_t usecs_local, std::int32_t zone_secs_west) {
    if (usecs_local < 0 || usecs_local > kUsecsPerDay || zone_secs_west < -kMaxZoneSecs ||
        zone_secs_west > kMaxZoneSecs) {
        fail_value("timetz time outside 00:00 .. 24:00 or zone beyond one day");
    }
    std::uint8_t* p = value_slot(TypeTag::kTimetz, 12);
    put_be64(p, payload::int8_key(payload::timetz_instant(usecs_local, zone_secs_west)));
    put_be32(p + 8, payload::int4_key(zone_secs_west));
    after_value();
}

void Encoder::interval(const IntervalValue& v) {
    const payload::Uint128 key = payload::int128_key(payload::interval_cmp_value(v));
    payload::put_be128(value_slot(TypeTag::kInterval, 16), key);
    after_value();
}

void Encoder::inet_value(TypeTag tag, const InetView& v, bool zero_host) {
    const auto family = static_cast<std::size_t>(v.family);
    if (family >= kFamilyByte.size() || v.address.size() != kAddressBytes[family] ||
        v.bits > 8 * v.address.size()) {
        fail_value("inet/cidr family, address length and prefix length disagree");
    }
    std::uint8_t* p = value_slot(tag, 2 + v.address.size());
    p[0] = kFamilyByte[family];
    p[1] = v.bits;
    std::memcpy(p + 2, v.address.data(), v.address.size());
    if (zero_host) {
        zero_host_bits(p + 2, v.address.size(), v.bits);
    }
    after_value();
}

void Encoder::inet(const InetView& v) {
    inet_value(TypeTag::kInet, v, false);
}
void Encoder::cidr(const InetView& v) {
    inet_value(TypeTag::kCidr, v, true);
}

// bit length (u32), then the packed bits escaped; pad bits are zeroed.
void Encoder::bits_value(TypeTag tag, std::uint32_t bit_length,
                         std::span<const std::uint8_t> packed) {
    if (packed.size() != (static_cast<std::size_t>(bit_length) + 7) / 8) {
        fail_value("bit string length disagrees with its packed byte count");
    }
    put_be32(value_slot(tag, 4), bit_length);
    if (packed.empty()) {
        put_escaped(nullptr, 0);
    } else {
        const unsigned pad = (8 - bit_length % 8) % 8;
        const auto last = static_cast<std::uint8_t>(packed.back() & (0xFFu << pad));
        put_escaped(packed.data(), packed.size() - 1, false);
        put_escaped(&last, 1);
    }
    after_value();
}

void Encoder::bit(std::uint32_t bit_length, std::span<const std::uint8_t> packed) {
    bits_value(TypeTag::kBit, bit_length, packed);
}

void Encoder::varbit(std::uint32_t bit_length, std::span<const std::uint8_t> packed) {
    bits_value(TypeTag::kVarbit, bit_length, packed);
}

}  // namespace pgt::rowid
