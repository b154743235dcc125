// Row identity V2 encoder: typed field values in, one canonical, ordered,
// memcomparable, prefix-free identity out (normative text:
// docs/row-identity-v2.md). Invariant: the bytes written for a logical value
// are frozen for the life of V2 — optimise how they are written, never what.
//
// Design
// ------
// The PostgreSQL side resolves each identity field to a TypeTag once per call
// site, then per row calls begin(), one method per field, and end(). The
// encoder owns one growing scratch buffer and a fixed frame stack, so a row
// costs no allocation once the buffer has grown to the widest identity seen.
// Alternatively the caller lends an OutputArena: each identity is then
// written straight into one block of the arena's memory (the PostgreSQL side
// pallocs the result bytea this way and never copies it). Every value method writes "slot framing +
// payload" at the current position, which is a tuple field, an array element or a range bound:
//
//   identity := VERSION DOMAIN [DISCRIMINATOR] tuple
//   tuple    := FIELD_COUNT(u16) field* TUPLE_END(00)
//   field    := TYPE_TAG NULL_TAG(01) | TYPE_TAG VALUE_TAG(02) payload
//
//   +---------+--------+----------------+-------------+-----------------------+-----------+
//   | VERSION | DOMAIN | DISCRIMINATOR  | FIELD_COUNT | FIELD 1 .. FIELD n    | TUPLE_END |
//   |   02    | 1 byte | SYNTHETIC only | u16 BE      | tag 01 (NULL)         |    00     |
//   |         |        | 1 byte         |             | tag 02 payload (value)|           |
//   +---------+--------+----------------+-------------+-----------------------+-----------+
//
// Nested values reuse the framing: a composite payload is a tuple, an array
// payload is ELEM_TAG NDIMS dims (NULL_TAG | VALUE_TAG payload)*, a range
// payload is SUBTYPE_TAG body. Limits (depth, size) raise pgt::Error 54000
// with the field and domain in the detail; bad input 22023; misuse XX000.
// After any error the identity is abandoned; the next begin() starts clean.
// An Encoder is single-threaded state: keep one per call site (fn_extra).
#pragma once
#include "core/core.hpp"
#include "core/rowid/format.hpp"
#include "core/rowid/payload.hpp"
#include "core/rowid/values.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pgt::rowid {

// Caller-owned memory for identities (Encoder::set_output). Blocks it
// returns must stay valid until the caller is done with the identity; the
// encoder never frees them.
class OutputArena {
public:
    // A block of at least `size` bytes, or nullptr when there is no memory
    // (the encoder then throws std::bad_alloc). Must not throw.
    virtual std::uint8_t* allocate(std::size_t size) noexcept = 0;

protected:
    ~OutputArena() = default;
};

class Encoder {
public:
    explicit Encoder(Limits limits = {});
    Encoder(const Encoder&) = delete;
    Encoder& operator=(const Encoder&) = delete;

    // --- where identities go --------------------------------------------
    // nullptr (the default): the encoder's own scratch buffer. Otherwise
    // every begin() takes a new block from `arena` and writes the identity
    // `headroom` bytes into it (room the caller fills, e.g. a varlena
    // header), growing into a larger block if needed; end()'s span then
    // points into that block, `headroom` bytes after its start.
    void set_output(OutputArena* arena, std::size_t headroom) noexcept;

    // --- identity --------------------------------------------------------
    // Start a new identity (discarding any previous one) of `field_count`
    // top-level fields. SYNTHETIC needs begin_synthetic().
    void begin(Domain domain, std::uint16_t field_count);
    void begin_synthetic(Synthetic kind, std::uint16_t field_count = 0);
    // Finish; the span stays valid until the next begin() on this encoder.
    // Input bytes must never alias that span (copy a child identity first).
    std::span<const std::uint8_t> end();

    // --- one value at the current position ---------------------------------
    void null(TypeTag type);
    void boolean(bool v);
    void int2(std::int16_t v);
    void int4(std::int32_t v);
    void int8(std::int64_t v);
    void oid(std::uint32_t v);
    void float4(float v);
    void float8(double v);
    void numeric(const NumericView& v);
    void text(std::string_view bytes);     // database-encoding bytes
    void varchar(std::string_view bytes);  // same payload as text
    void bpchar(std::string_view bytes);   // trailing spaces are not significant
    void bytea(std::string_view bytes);
    void uuid(std::span<const std::uint8_t, 16> bytes);
    void date(std::int32_t days_since_2000);
    void time(std::int64_t usecs_since_midnight);  // 0 ..= 86400000000
    void timestamp(std::int64_t usecs_since_2000);
    void timestamptz(std::int64_t usecs_since_2000_utc);
    void timetz(std::int64_t usecs_local, std::int32_t zone_secs_west);
    void interval(const IntervalValue& v);
    void inet(const InetView& v);
    void cidr(const InetView& v);  // host bits are zeroed
    void macaddr(std::span<const std::uint8_t, 6> bytes);
    void macaddr8(std::span<const std::uint8_t, 8> bytes);
    void bit(std::uint32_t bit_length, std::span<const std::uint8_t> packed);
    void varbit(std::uint32_t bit_length, std::span<const std::uint8_t> packed);
    void enum_label(std::string_view label);  // never the enum OID
    void name(std::string_view bytes);        // up to the first NUL, at most 63 bytes
    // A user-defined type whose equal values are equal images
    // (TypeKind::kImage): the value's bytes as stored (a varlena's data
    // without its header; a fixed-length type's typlen bytes).
    void image(std::string_view bytes);
    void pg_char(std::uint8_t byte);  // "char"
    void jsonb(const JsonNode& root);

    // --- structural values (each begin_* needs its end_*) -------------------
    // Arrays: then exactly product(lengths) element values or null(element).
    void begin_array(TypeTag element, std::span<const ArrayDim> dims);
    void end_array();
    // Composites: then `field_count` values, each with its own type.
    void begin_composite(std::uint16_t field_count);
    void end_composite();
    // Ranges: then one value per finite bound (lower first); none if empty.
    void begin_range(TypeTag subtype, const RangeFlags& flags);
    void end_range();
    // Multiranges: then begin_range/end_range per range, in stored order;
    // ranges must be non-empty and their subtype is the multirange's.
    void begin_multirange(TypeTag subtype);
    void end_multirange();

    const Limits& limits() const noexcept { return limits_; }

private:
    enum class FrameKind : std::uint8_t { kClosed, kTuple, kArray, kRange, kMultirange };
    struct Frame {
        FrameKind kind = FrameKind::kClosed;
        TypeTag item = TypeTag::kBool;  // array element / range, multirange subtype
        bool lower_finite = false;      // ranges only
        bool lower_inclusive = false;
        bool upper_inclusive = false;
        bool upper_infinite = false;
        std::uint32_t expected = 0;  // fields, elements, finite bounds
        std::uint32_t written = 0;
    };
    // [0] is a kClosed sentinel, [1] the identity's tuple, then one frame
    // per open nested value (at most max_depth of them).
    static constexpr std::size_t kFrameSlots = kMaxDepth + 2;

    // Hot path: inline. Every byte goes through take(); grow() enforces
    // Limits::max_bytes (cap_ never exceeds it).
    std::uint8_t* take(std::size_t n) {
        if (n > cap_ - len_) [[unlikely]] {
            grow(n);
        }
        std::uint8_t* p = data_ + len_;
        len_ += n;
        return p;
    }
    void grow(std::size_t n);
    void reset_output();
    void note_width(std::size_t len) noexcept;
    void put_byte(std::uint8_t b) { *take(1) = b; }
    void put_escaped(const std::uint8_t* data, std::size_t n, bool terminate = true);
    void put_escaped(std::string_view bytes) {
        put_escaped(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    }

    // Writes the slot framing of one value at the current position and
    // reserves `payload` bytes after it; returns where the payload goes.
    std::uint8_t* value_slot(TypeTag tag, std::size_t payload) {
        const Frame& f = top();
        if (f.kind == FrameKind::kTuple && f.written < f.expected) [[likely]] {
            std::uint8_t* p = take(2 + payload);
            p[0] = static_cast<std::uint8_t>(tag);
            p[1] = wire::kValueTag;
            return p + 2;
        }
        return nested_slot(tag, payload);
    }
    std::uint8_t* nested_slot(TypeTag tag, std::size_t payload);
    void after_value() {
        Frame& f = top();
        ++f.written;
        if (f.kind == FrameKind::kRange) [[unlikely]] {
            bound_suffix(f);
        }
    }
    void bound_suffix(const Frame& range);
    void push_frame(const Frame& frame);
    Frame& top() noexcept { return frames_[depth_]; }
    const Frame& top() const noexcept { return frames_[depth_]; }
    void close_all() noexcept { depth_ = 0; }
    void begin_identity(Domain domain, std::uint16_t field_count, std::size_t header_extra);
    void bits_value(TypeTag tag, std::uint32_t bit_length, std::span<const std::uint8_t> packed);
    void inet_value(TypeTag tag, const InetView& v, bool zero_host_bits);
    void escaped_value(TypeTag tag, std::string_view bytes);
    void json_value(const JsonNode& node, std::uint32_t depth);
    void json_object(const JsonNode& node, std::uint32_t depth);
    void pop_frame(FrameKind expected, const char* what);
    std::uint32_t depth() const noexcept { return depth_ - 1; }

    [[noreturn]] void fail_size(std::size_t need) const;
    [[noreturn]] void fail_depth(std::uint32_t depth) const;
    [[noreturn]] void fail_misuse(const char* what) const;
    [[noreturn]] void fail_value(const char* what) const;
    std::string context() const;

    Limits limits_;
    Domain domain_ = Domain::kScanKey;
    // The identity being written: data_[0 .. len_) of cap_ usable bytes
    // (cap_ <= limits_.max_bytes). data_ is scratch_ or arena memory.
    std::uint8_t* data_ = nullptr;
    std::size_t len_ = 0;
    std::size_t cap_ = 0;
    std::unique_ptr<std::uint8_t[]> scratch_;
    std::size_t scratch_cap_ = 0;
    OutputArena* arena_ = nullptr;
    std::size_t headroom_ = 0;
    std::size_t widest_ = 0;       // largest identity finished so far ...
    std::size_t first_block_ = 0;  // ... and the arena block size it suggests
    Domain valid_domain_{};        // last domain begin() accepted (0: none yet)
    std::array<Frame, kFrameSlots> frames_{};
    std::uint32_t depth_ = 0;                // index of the innermost open frame
    std::vector<std::uint32_t> json_order_;  // scratch for sorting object keys
};

// --- inline value methods (the common scalars; the rest: encoder_values.cpp) ---

inline void Encoder::boolean(bool v) {
    *value_slot(TypeTag::kBool, 1) = v ? 1 : 0;
    after_value();
}

inline void Encoder::int2(std::int16_t v) {
    payload::put_be16(value_slot(TypeTag::kInt2, 2), payload::int2_key(v));
    after_value();
}

inline void Encoder::int4(std::int32_t v) {
    payload::put_be32(value_slot(TypeTag::kInt4, 4), payload::int4_key(v));
    after_value();
}

inline void Encoder::int8(std::int64_t v) {
    payload::put_be64(value_slot(TypeTag::kInt8, 8), payload::int8_key(v));
    after_value();
}

inline void Encoder::oid(std::uint32_t v) {
    payload::put_be32(value_slot(TypeTag::kOid, 4), v);
    after_value();
}

inline void Encoder::float4(float v) {
    payload::put_be32(value_slot(TypeTag::kFloat4, 4), payload::float4_key(v));
    after_value();
}

inline void Encoder::float8(double v) {
    payload::put_be64(value_slot(TypeTag::kFloat8, 8), payload::float8_key(v));
    after_value();
}

inline void Encoder::uuid(std::span<const std::uint8_t, 16> bytes) {
    std::memcpy(value_slot(TypeTag::kUuid, 16), bytes.data(), 16);
    after_value();
}

inline void Encoder::macaddr(std::span<const std::uint8_t, 6> bytes) {
    std::memcpy(value_slot(TypeTag::kMacaddr, 6), bytes.data(), 6);
    after_value();
}

inline void Encoder::macaddr8(std::span<const std::uint8_t, 8> bytes) {
    std::memcpy(value_slot(TypeTag::kMacaddr8, 8), bytes.data(), 8);
    after_value();
}

inline void Encoder::date(std::int32_t days_since_2000) {
    payload::put_be32(value_slot(TypeTag::kDate, 4), payload::int4_key(days_since_2000));
    after_value();
}

inline void Encoder::timestamp(std::int64_t usecs_since_2000) {
    payload::put_be64(value_slot(TypeTag::kTimestamp, 8), payload::int8_key(usecs_since_2000));
    after_value();
}

inline void Encoder::timestamptz(std::int64_t usecs_since_2000_utc) {
    payload::put_be64(value_slot(TypeTag::kTimestamptz, 8),
                      payload::int8_key(usecs_since_2000_utc));
    after_value();
}

}  // namespace pgt::rowid
