// Row identity V2 from PostgreSQL datums: the per-call-site encoder state of
// pgtrickle.encode_row_id_v2 (kept in fn_extra) and the one function that
// turns a composite datum into identity bytes (docs/row-identity-v2.md §13).
// Invariant: the per-row path reads stored representations only — no catalog
// or fmgr lookup, no output/send function, no ::text — and every catalog fact
// comes from a plan built the first time a (type id, typmod) is seen.
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <string_view>

#include "core/rowid/format.hpp"

extern "C" {
#include "postgres.h"
#include "fmgr.h"
}

namespace pgt::pg {

// What precedes the tuple: the domain and, for SYNTHETIC only, the
// discriminator.
struct IdentityHeader {
    rowid::Domain domain = rowid::Domain::kScanKey;
    rowid::Synthetic synthetic = rowid::Synthetic::kScalarAggregateSingleton;
};

class IdentityCallSite;  // encoder, plans and scratch of one call site

// The last spelling of a text argument (the domain, the discriminator) that a
// call site resolved, and its value: an argument is parsed once per call site,
// and later rows only compare its bytes, or, when the argument is a Const in
// the calling expression, do not read it at all.
template <typename V>
class TextMemo {
public:
    static constexpr std::size_t kMaxBytes = 32;  // longer spellings are never remembered

    // The value when the argument is known to be constant at this call site.
    const V* constant() const noexcept { return constant_ ? &value_ : nullptr; }
    bool const_checked() const noexcept { return const_checked_; }
    // After remember(): whether the argument is a non-NULL Const.
    void set_constant(bool is_const) noexcept {
        const_checked_ = true;
        constant_ = is_const && size_ <= kMaxBytes;
    }

    const V* find(std::string_view text) const noexcept {
        if (text.size() != size_ || std::memcmp(text.data(), bytes_.data(), size_) != 0) {
            return nullptr;
        }
        return &value_;
    }
    void remember(std::string_view text, V value) noexcept {
        if (text.size() <= kMaxBytes) {
            std::memcpy(bytes_.data(), text.data(), text.size());
            size_ = text.size();
            value_ = value;
        }
    }

private:
    std::size_t size_ = kMaxBytes + 1;  // nothing remembered yet
    bool const_checked_ = false;
    bool constant_ = false;
    std::array<char, kMaxBytes> bytes_{};
    V value_{};
};

struct IdentityArgMemo {
    TextMemo<rowid::Domain> domain;
    TextMemo<rowid::Synthetic> synthetic;
};

// The argument memo of a call site (SQL surface, pg/rowid/row_identity_api.cpp).
IdentityArgMemo& identity_arg_memo(IdentityCallSite& site);

// The call site's state in fcinfo->flinfo->fn_extra, created on first use
// and destroyed when fn_mcxt is reset or deleted.
IdentityCallSite& new_identity_call_site(FunctionCallInfo fcinfo);
inline IdentityCallSite& identity_call_site(FunctionCallInfo fcinfo) {
    if (void* site = fcinfo->flinfo->fn_extra) [[likely]] {
        return *static_cast<IdentityCallSite*>(site);
    }
    return new_identity_call_site(fcinfo);
}

// Encodes the fields of the composite datum `record` (not NULL) as one
// identity; returns a bytea palloc'd in CurrentMemoryContext. Errors are
// pgt::Error (0A000 unsupported field type, 54000 limits, 22023 bad input).
Datum encode_identity(IdentityCallSite& site, const IdentityHeader& header, Datum record);

// The same identity, with the fields passed as the arguments first.. of the
// call itself instead of inside a record (the ROW()-free form that
// encode_row_id_v2's planner support rewrites `ROW(...)` calls into): the
// plan comes from the argument expressions' types in fn_expr, once per call
// site. Same bytes as encode_identity() of ROW(those arguments).
Datum encode_identity_args(IdentityCallSite& site, const IdentityHeader& header,
                           FunctionCallInfo fcinfo, int first);

}  // namespace pgt::pg
