// The encoder's per-call-site state and plan types (identity_plan.cpp),
// shared with the writers kept in files of their own (identity_jsonb.cpp).
// Internal to src/pg/rowid. Invariant: as identity_plan.cpp states: nothing
// here looks anything up in the catalogs per row.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/rowid/encoder.hpp"
#include "core/rowid/types.hpp"

extern "C" {
#include "postgres.h"
#include "access/htup_details.h"
#include "access/tupdesc.h"
#include "utils/typcache.h"
}

namespace pgt::pg::encode {

using rowid::TypeTag;

inline constexpr const char* kCorrupt = "XX001";  // data_corrupted

[[noreturn]] inline void fail_corrupt(const char* what) {
    throw pgt::Error(kCorrupt,
                     std::string("invalid stored value in a row identity field: ") + what);
}

// Storage for nodes that must not move once handed out: blocks are never
// reallocated, reset() only rewinds. Amortised, a row allocates nothing.
template <typename T>
class BlockArena {
public:
    T* take(std::size_t n) {
        if (n == 0) {
            return nullptr;
        }
        while (block_ < blocks_.size() && blocks_[block_].size - used_ < n) {
            ++block_;
            used_ = 0;
        }
        if (block_ == blocks_.size()) {
            const std::size_t last = blocks_.empty() ? 0 : blocks_.back().size;
            const std::size_t size = std::max({n, kMinBlock, 2 * last});
            blocks_.push_back({std::make_unique<T[]>(size), size});
            used_ = 0;
        }
        T* p = blocks_[block_].data.get() + used_;
        used_ += n;
        return p;
    }
    void reset() noexcept { block_ = used_ = 0; }

private:
    static constexpr std::size_t kMinBlock = 64;
    struct Block {
        std::unique_ptr<T[]> data;
        std::size_t size;
    };
    std::vector<Block> blocks_;
    std::size_t block_ = 0;
    std::size_t used_ = 0;
};

// Thrown out of encode_once() when EncodeCtx::miss names something to build.
struct PlanMiss {};

// Thrown out of an unguarded encode_once() before a PostgreSQL call that can
// raise (see "Guards" above).
struct NeedsGuard {};

struct CompositeSlot;

struct Miss {
    CompositeSlot* slot = nullptr;  // composite: the slot that lacks a plan ...
    Oid type = InvalidOid;          // ... for this (type id, typmod)
    int32 typmod = -1;
    Oid enum_value = InvalidOid;  // enum: the value without a cached label
    bool operator==(const Miss&) const = default;
};

// An open jsonb container while the tree is built: children are filled in
// place; a raw scalar ("1" stored as a one-element array) has no children.
struct JsonFrame {
    rowid::JsonNode* items = nullptr;
    rowid::JsonMember* members = nullptr;
    std::uint32_t count = 0;
    std::uint32_t filled = 0;
};

struct EncodeCtx {
    rowid::Encoder encoder;
    std::unordered_map<Oid, std::string> enum_labels;
    BlockArena<rowid::JsonNode> json_nodes;
    BlockArena<rowid::JsonMember> json_members;
    std::vector<JsonFrame> json_frames;
    rowid::JsonNode json_root;
    BlockArena<std::int16_t> digits;  // numeric digits that were not 2-byte aligned
    Miss miss;
    bool guarded = false;  // encode_once() runs under pg_call
};

struct FieldPlan;
using WriteFn = void (*)(EncodeCtx&, const FieldPlan&, Datum);

// How to write one (non-NULL) value of a type, resolved at plan time.
struct FieldPlan {
    WriteFn write = nullptr;
    TypeTag tag = TypeTag::kBool;  // also the tag of a NULL at this position
    int16 typlen = 0;              // storage of this type's values (array elements)
    bool typbyval = false;
    char typalign = 'i';
    const FieldPlan* inner = nullptr;  // array element, range/multirange subtype
    TypeCacheEntry* range = nullptr;   // range, multirange: the range's typcache entry
    CompositeSlot* slot = nullptr;     // composite: plans by the value's (type id, typmod)
};

// One attribute of a composite type as stored in its tuples: what
// heap_deform_tuple reads from the Form_pg_attribute, packed small.
struct StoredAttr {
    const FieldPlan* plan = nullptr;  // nullptr: a dropped attribute, skipped
    int32 cacheoff = -1;              // offset when every earlier attribute is non-NULL
    int16 len = 0;
    bool byval = false;
    char align = 'i';
};

class CompositePlan {
public:
    Oid type = InvalidOid;
    int32 typmod = -1;
    TupleDesc tupdesc = nullptr;      // fn_mcxt copy (missing attribute values)
    std::vector<StoredAttr> attrs;    // every attribute, dropped ones included
    std::uint16_t live = 0;           // attributes with a plan (the identity's fields)
    bool unguarded_ok = true;         // only scalar fields: no raising call but detoasting
    std::deque<FieldPlan> nodes;      // every FieldPlan of this composite
    std::deque<CompositeSlot> slots;  // nested composite positions

    bool matches(Oid t, int32 m, int natts) const {
        return t == type && m == typmod && natts <= static_cast<int>(attrs.size());
    }
    std::uint16_t field_count() const { return live; }
    void write_fields(EncodeCtx& c, HeapTupleHeader th) const;
};

struct CompositeSlot {
    std::vector<std::unique_ptr<CompositePlan>> plans;
    const CompositePlan* last = nullptr;

    const CompositePlan& get(EncodeCtx& c, HeapTupleHeader th) {
        const Oid type = HeapTupleHeaderGetTypeId(th);
        const int32 typmod = HeapTupleHeaderGetTypMod(th);
        const int natts = HeapTupleHeaderGetNatts(th);
        if (last != nullptr && last->matches(type, typmod, natts)) [[likely]] {
            return *last;
        }
        for (const std::unique_ptr<CompositePlan>& p : plans) {
            if (p->matches(type, typmod, natts)) {
                last = p.get();
                return *p;
            }
        }
        c.miss = Miss{this, type, typmod, InvalidOid};
        throw PlanMiss{};
    }

    // Adds a plan, replacing one of the same key (a type that gained attributes).
    void put(std::unique_ptr<CompositePlan> plan) {
        std::erase_if(plans, [&](const std::unique_ptr<CompositePlan>& p) {
            return p->type == plan->type && p->typmod == plan->typmod;
        });
        last = plan.get();
        plans.push_back(std::move(plan));
    }
};

// The stored numeric v as the core encoder reads it (identity_plan.cpp).
rowid::NumericView read_numeric(EncodeCtx& c, const varlena* v);

// Writes a jsonb value (identity_jsonb.cpp).
void write_jsonb(EncodeCtx& c, const FieldPlan& p, Datum d);

}  // namespace pgt::pg::encode
