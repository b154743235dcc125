// Row identity V2 encoder: buffer, frame stack, tuple/array/range framing
// and the contextual errors. Invariant: every byte goes through take(), so
// no identity can exceed Limits::max_bytes, and every value is bracketed by
// value_slot()/after_value(), so framing is uniform at every nesting level.
#include "core/rowid/encoder.hpp"

#include "core/error.hpp"
#include "core/rowid/payload.hpp"
#include "core/rowid/types.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <string>

namespace pgt::rowid {
namespace {

constexpr std::size_t kInitialCapacity = 256;
// The first arena block of an identity fits the widest identity seen so far,
// up to this size; a wider one grows (copies) once.
constexpr std::size_t kMaxFirstBlock = 8192;
constexpr std::size_t kMinFirstBlock = 64;
constexpr std::uint32_t kUnlimitedCount = std::numeric_limits<std::uint32_t>::max();

}  // namespace

Encoder::Encoder(Limits limits) : limits_(limits) {
    if (limits_.max_depth > kMaxDepth || limits_.max_bytes > kMaxIdentityBytes) {
        throw Error(sqlstate::kInvalidParameterValue, "row identity limits may only be lowered",
                    "The format limits are a depth of 32 and 64 MiB.");
    }
    // frames_[0] stays the kClosed sentinel: values outside begin()/end() are misuse.
    scratch_cap_ = std::min(kInitialCapacity, limits_.max_bytes);
    scratch_ = std::make_unique<std::uint8_t[]>(scratch_cap_);
    data_ = scratch_.get();
    cap_ = scratch_cap_;
    note_width(0);
    json_order_.reserve(64);
}

void Encoder::set_output(OutputArena* arena, std::size_t headroom) noexcept {
    arena_ = arena;
    headroom_ = arena != nullptr ? headroom : 0;
    close_all();
    len_ = 0;
    data_ = scratch_.get();
    cap_ = scratch_cap_;
}

// --- buffer -------------------------------------------------------------

// Where the next identity starts: the scratch buffer, or a fresh arena block
// sized for the widest identity seen.
void Encoder::reset_output() {
    len_ = 0;
    if (arena_ == nullptr) [[likely]] {
        data_ = scratch_.get();
        cap_ = scratch_cap_;
        return;
    }
    std::uint8_t* block = arena_->allocate(headroom_ + first_block_);
    if (block == nullptr) {
        cap_ = 0;
        throw std::bad_alloc();
    }
    data_ = block + headroom_;
    cap_ = first_block_;
}

void Encoder::note_width(std::size_t len) noexcept {
    widest_ = std::max(widest_, len);
    first_block_ = std::min({std::max(widest_, kMinFirstBlock), kMaxFirstBlock, limits_.max_bytes});
}

void Encoder::grow(std::size_t n) {
    if (n > limits_.max_bytes - len_) {
        fail_size(len_ + n);
    }
    const std::size_t want =
        std::min(std::max({cap_ * 2, len_ + n, kInitialCapacity}), limits_.max_bytes);
    if (arena_ == nullptr) {
        auto bigger = std::make_unique<std::uint8_t[]>(want);
        if (len_ != 0) {
            std::memcpy(bigger.get(), data_, len_);
        }
        scratch_ = std::move(bigger);
        scratch_cap_ = want;
        data_ = scratch_.get();
    } else {
        std::uint8_t* block = arena_->allocate(headroom_ + want);
        if (block == nullptr) {
            throw std::bad_alloc();
        }
        if (len_ != 0) {
            std::memcpy(block + headroom_, data_, len_);
        }
        data_ = block + headroom_;
    }
    cap_ = want;
}

// 00 -> 00 FF; the value ends with 00 00 when `terminate`.
void Encoder::put_escaped(const std::uint8_t* data, std::size_t n, bool terminate) {
    if (n > limits_.max_bytes) {
        fail_size(len_ + n);
    }
    const std::uint8_t* const end = data + n;
    std::size_t zeros = 0;
    for (const std::uint8_t* cur = data; cur < end; ++zeros, ++cur) {
        cur = static_cast<const std::uint8_t*>(std::memchr(cur, 0, end - cur));
        if (cur == nullptr) {
            break;
        }
    }
    std::uint8_t* p = take(n + zeros + (terminate ? 2 : 0));
    if (zeros == 0) [[likely]] {
        if (n != 0) {
            std::memcpy(p, data, n);
        }
        p += n;
    } else {
        for (const std::uint8_t* cur = data; cur < end; ++cur) {
            *p++ = *cur;
            if (*cur == wire::kEscape) {
                *p++ = wire::kEscapedZero;
            }
        }
    }
    if (terminate) {
        p[0] = wire::kTerminator;
        p[1] = wire::kTerminator;
    }
}

// --- identity -----------------------------------------------------------

void Encoder::begin_identity(Domain domain, std::uint16_t field_count, std::size_t header_extra) {
    close_all();
    json_order_.clear();
    domain_ = domain;
    reset_output();
    Frame& tuple = frames_[1];
    tuple = Frame{};
    tuple.kind = FrameKind::kTuple;
    tuple.expected = field_count;
    depth_ = 1;
    std::uint8_t* p = take(4 + header_extra);
    p[0] = kVersion;
    p[1] = static_cast<std::uint8_t>(domain);
    payload::put_be16(p + 2 + header_extra, field_count);
}

void Encoder::begin(Domain domain, std::uint16_t field_count) {
    if (domain != valid_domain_) [[unlikely]] {
        if (domain == Domain::kSynthetic || domain_name(domain) == nullptr) {
            close_all();
            fail_misuse("begin() needs a registered non-SYNTHETIC domain; use begin_synthetic()");
        }
        valid_domain_ = domain;
    }
    begin_identity(domain, field_count, 0);
}

void Encoder::begin_synthetic(Synthetic kind, std::uint16_t field_count) {
    if (synthetic_name(kind) == nullptr) {
        close_all();
        fail_misuse("begin_synthetic() needs a registered discriminator");
    }
    begin_identity(Domain::kSynthetic, field_count, 1);
    data_[2] = static_cast<std::uint8_t>(kind);
}

std::span<const std::uint8_t> Encoder::end() {
    if (depth_ != 1) {
        fail_misuse(depth_ < 1 ? "end() without begin()" : "end() with a nested value open");
    }
    if (top().written != top().expected) {
        fail_misuse("end() before every declared field was written");
    }
    put_byte(wire::kTupleEnd);
    close_all();
    if (len_ > widest_) [[unlikely]] {
        note_width(len_);
    }
    return {data_, len_};
}

// --- value framing ----------------------------------------------------------

std::uint8_t* Encoder::nested_slot(TypeTag tag, std::size_t payload) {
    const Frame& f = top();
    switch (f.kind) {
        case FrameKind::kArray:
        case FrameKind::kRange:
            if (tag != f.item || f.written >= f.expected) {
                fail_misuse(tag != f.item ? "value type differs from the array element or range "
                                            "subtype type"
                                          : "more values than the array or range holds");
            }
            break;
        case FrameKind::kMultirange:
            if (tag != TypeTag::kRange) {
                fail_misuse("a multirange holds only ranges (begin_range)");
            }
            return take(payload);  // each range body starts with 01
        case FrameKind::kTuple:
            fail_misuse("more values than the declared field count");
        case FrameKind::kClosed:
            fail_misuse("value outside begin()/end()");
    }
    std::uint8_t* p = take(1 + payload);
    p[0] = f.kind == FrameKind::kArray ? wire::kValueTag : wire::kBoundFinite;
    return p + 1;
}

void Encoder::bound_suffix(const Frame& range) {
    const bool is_lower = range.lower_finite && range.written == 1;
    const std::uint8_t lower =
        range.lower_inclusive ? wire::kLowerInclusive : wire::kLowerExclusive;
    const std::uint8_t upper =
        range.upper_inclusive ? wire::kUpperInclusive : wire::kUpperExclusive;
    put_byte(is_lower ? lower : upper);
}

void Encoder::null(TypeTag type) {
    if (!is_registered_tag(type)) {
        fail_misuse("NULL of an unregistered type tag");
    }
    Frame& f = top();
    const bool field = f.kind == FrameKind::kTuple;
    const bool element = f.kind == FrameKind::kArray && type == f.item;
    if (!(field || element) || f.written >= f.expected) {
        fail_misuse("NULL outside a field or array element of its declared type");
    }
    if (field) {
        std::uint8_t* p = take(2);
        p[0] = static_cast<std::uint8_t>(type);
        p[1] = wire::kNullTag;
    } else {
        put_byte(wire::kNullTag);
    }
    ++f.written;
}

// --- structural values --------------------------------------------------

void Encoder::push_frame(const Frame& frame) {
    const std::uint32_t new_depth = depth_;
    if (new_depth > limits_.max_depth) {
        fail_depth(new_depth);
    }
    frames_[++depth_] = frame;
}

void Encoder::pop_frame(FrameKind expected, const char* what) {
    const Frame& f = top();
    if (f.kind != expected || depth_ <= 1) {
        fail_misuse(what);
    }
    if (f.written != f.expected && f.kind != FrameKind::kMultirange) {
        fail_misuse("nested value closed before all of its parts were written");
    }
    --depth_;
}

void Encoder::begin_array(TypeTag element, std::span<const ArrayDim> dims) {
    if (!is_registered_tag(element)) {
        fail_misuse("array of an unregistered element type tag");
    }
    if (dims.size() > kMaxArrayDims) {
        fail_value("array has more than 6 dimensions");
    }
    std::uint64_t count = dims.empty() ? 0 : 1;
    for (const ArrayDim& d : dims) {
        if (d.length < 0) {
            fail_value("array dimension length is negative");
        }
        count *= static_cast<std::uint64_t>(d.length);
        if (count > kMaxArrayElements) {
            fail_size(std::numeric_limits<std::size_t>::max());
        }
    }
    const std::size_t ndims = count == 0 ? 0 : dims.size();  // PostgreSQL: empty is 0-D
    std::uint8_t* p = value_slot(TypeTag::kArray, 2 + 8 * ndims);
    p[0] = static_cast<std::uint8_t>(element);
    p[1] = static_cast<std::uint8_t>(ndims);
    for (std::size_t i = 0; i < ndims; ++i) {
        payload::put_be32(p + 2 + 8 * i, static_cast<std::uint32_t>(dims[i].length));
        payload::put_be32(p + 6 + 8 * i, payload::int4_key(dims[i].lower_bound));
    }
    Frame f;
    f.kind = FrameKind::kArray;
    f.item = element;
    f.expected = static_cast<std::uint32_t>(count);
    push_frame(f);
}

void Encoder::end_array() {
    pop_frame(FrameKind::kArray, "end_array() without a matching begin_array()");
    after_value();
}

void Encoder::begin_composite(std::uint16_t field_count) {
    payload::put_be16(value_slot(TypeTag::kComposite, 2), field_count);
    Frame f;
    f.kind = FrameKind::kTuple;
    f.expected = field_count;
    push_frame(f);
}

void Encoder::end_composite() {
    pop_frame(FrameKind::kTuple, "end_composite() without a matching begin_composite()");
    put_byte(wire::kTupleEnd);
    after_value();
}

void Encoder::begin_range(TypeTag subtype, const RangeFlags& flags) {
    if (!is_registered_tag(subtype)) {
        fail_misuse("range of an unregistered subtype tag");
    }
    const bool in_multirange = top().kind == FrameKind::kMultirange;
    if (in_multirange && (subtype != top().item || flags.empty)) {
        fail_misuse("multirange member is empty or of another subtype");
    }
    Frame f;
    f.kind = FrameKind::kRange;
    f.item = subtype;
    f.lower_finite = !flags.empty && !flags.lower_infinite;
    f.upper_infinite = !flags.empty && flags.upper_infinite;
    f.lower_inclusive = flags.lower_inclusive;
    f.upper_inclusive = flags.upper_inclusive;
    f.expected = flags.empty ? 0 : 2u - flags.lower_infinite - flags.upper_infinite;
    const bool lower_infinite = !flags.empty && flags.lower_infinite;
    const std::size_t head = in_multirange ? 0 : 1;
    std::uint8_t* p = value_slot(TypeTag::kRange, head + 1 + (lower_infinite ? 1 : 0));
    if (!in_multirange) {
        p[0] = static_cast<std::uint8_t>(subtype);
    }
    p[head] = flags.empty ? wire::kRangeEmpty : wire::kRangeNonEmpty;
    if (lower_infinite) {
        p[head + 1] = wire::kLowerInfinite;
    }
    push_frame(f);
}

void Encoder::end_range() {
    const bool upper_infinite = top().upper_infinite;  // read before the frame is dropped
    pop_frame(FrameKind::kRange, "end_range() without a matching begin_range()");
    if (upper_infinite) {
        put_byte(wire::kUpperInfinite);
    }
    after_value();
}

void Encoder::begin_multirange(TypeTag subtype) {
    if (!is_registered_tag(subtype)) {
        fail_misuse("multirange of an unregistered subtype tag");
    }
    *value_slot(TypeTag::kMultirange, 1) = static_cast<std::uint8_t>(subtype);
    Frame f;
    f.kind = FrameKind::kMultirange;
    f.item = subtype;
    f.expected = kUnlimitedCount;
    push_frame(f);
}

void Encoder::end_multirange() {
    pop_frame(FrameKind::kMultirange, "end_multirange() without a matching begin_multirange()");
    put_byte(wire::kMultirangeEnd);
    after_value();
}

// --- errors --------------------------------------------------------------

std::string Encoder::context() const {
    const char* domain = domain_name(domain_);
    std::string out = std::string("in a ") + (domain != nullptr ? domain : "?") + " identity";
    if (depth_ >= 1) {
        out += ", field " + std::to_string(frames_[1].written + 1) + " of " +
               std::to_string(frames_[1].expected);
    }
    return out;
}

void Encoder::fail_size(std::size_t need) const {
    const std::string at_least =
        need == std::numeric_limits<std::size_t>::max() ? "more" : std::to_string(need);
    throw Error(sqlstate::kProgramLimitExceeded, "row identity exceeds the maximum encoded size",
                "Encoding needs " + at_least + " bytes, the limit is " +
                    std::to_string(limits_.max_bytes) + " bytes (" + context() + ").",
                "Use narrower identity columns, for example a primary key, for this stream table.");
}

void Encoder::fail_depth(std::uint32_t depth) const {
    throw Error(sqlstate::kProgramLimitExceeded, "row identity nesting exceeds the depth limit",
                "Nesting depth " + std::to_string(depth) + " exceeds the limit of " +
                    std::to_string(limits_.max_depth) + " (" + context() + ").",
                "Identity values may nest arrays, composites, ranges and jsonb containers at most "
                "32 levels deep.");
}

void Encoder::fail_misuse(const char* what) const {
    throw Error(sqlstate::kInternalError, "row identity encoder misuse",
                std::string(what) + " (" + context() + ").");
}

void Encoder::fail_value(const char* what) const {
    throw Error(sqlstate::kInvalidParameterValue, "invalid row identity input value",
                std::string(what) + " (" + context() + ").");
}

}  // namespace pgt::rowid
