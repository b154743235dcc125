// Catalog type -> row identity V2 descriptor tree, and the creation-time
// identity column check. Invariant: every catalog access runs under pg_call
// and copies what it needs out before the next one; one syscache lookup of
// pg_type per descriptor node.
#include "pg/rowid/identity_types.hpp"

#include <array>
#include <deque>
#include <string>

#include "core/error.hpp"
#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/tupdesc.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "fmgr.h"
#include "utils/fmgroids.h"
#include "utils/builtins.h"
#include "mb/pg_wchar.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

namespace pgt::pg {

namespace {

// Beyond this many nested nodes the container depth exceeds the format's 32
// (at most every other node is a domain), so check_type() rejects the type
// before it reaches a node left unresolved here.
constexpr int kMaxResolveDepth = 2 * static_cast<int>(rowid::kMaxDepth) + 4;

// The pg_type columns resolution needs.
struct TypeRow {
    bool found = false;
    char typtype = 0;
    int16 typlen = 0;
    bool typbyval = false;
    char typalign = 'i';
    Oid element = InvalidOid;  // element type of a true array, else 0
};

TypeRow type_row(Oid type) {
    TypeRow row = pg_call([&] {
        TypeRow r;
        HeapTuple tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
        if (!HeapTupleIsValid(tup)) {
            return r;
        }
        auto* form = reinterpret_cast<Form_pg_type>(GETSTRUCT(tup));
        r = {true,           form->typtype,  form->typlen,
             form->typbyval, form->typalign, IsTrueArrayType(form) ? form->typelem : InvalidOid};
        ReleaseSysCache(tup);
        return r;
    });
    if (!row.found) {
        throw pgt::Error("XX000", "cache lookup failed for type " + std::to_string(type));
    }
    return row;
}

rowid::Collation collation_kind(Oid type, Oid collation) {
    const rowid::TypeInfo* info = rowid::builtin_type(type);
    if (collation == InvalidOid || info == nullptr || !info->collatable) {
        return rowid::Collation::kNone;
    }
    const bool deterministic = pg_call([&] { return get_collation_isdeterministic(collation); });
    return deterministic ? rowid::Collation::kDeterministic : rowid::Collation::kNondeterministic;
}

// What the type's default B-tree operator class says of its equal values
// under `collation`: kEqualImages when they are always equal images
// (support function 4, BTEQUALIMAGE_PROC, the question B-tree
// deduplication asks): the bytes as stored are then an exact identity;
// kEqualityOnly without the function or when it says no; kNone without a
// B-tree class.
enum class BtreeEquality { kNone, kEqualityOnly, kEqualImages };

BtreeEquality btree_equality_kind(Oid type, Oid collation) {
    return pg_call([&] {
        const Oid opclass = GetDefaultOpClass(type, BTREE_AM_OID);
        if (!OidIsValid(opclass)) {
            return BtreeEquality::kNone;
        }
        const Oid input = get_opclass_input_type(opclass);
        const Oid proc =
            get_opfamily_proc(get_opclass_family(opclass), input, input, BTEQUALIMAGE_PROC);
        return OidIsValid(proc) &&
                       DatumGetBool(OidFunctionCall1Coll(proc, collation, ObjectIdGetDatum(input)))
                   ? BtreeEquality::kEqualImages
                   : BtreeEquality::kEqualityOnly;
    });
}

template <typename V>
struct Spelling {
    std::string_view name;
    V value;
};

constexpr std::array<Spelling<rowid::Synthetic>, 2> kSynthetics{{
    {"scalar_aggregate_singleton", rowid::Synthetic::kScalarAggregateSingleton},
    {"lateral_inner_dummy", rowid::Synthetic::kLateralInnerDummy},
}};

bool equal_ascii_ci(std::string_view given, std::string_view lower) {
    if (given.size() != lower.size()) {
        return false;
    }
    for (std::size_t i = 0; i < given.size(); ++i) {
        const char c = given[i];
        if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c) != lower[i]) {
            return false;
        }
    }
    return true;
}

template <typename V, std::size_t N>
std::optional<V> named(const std::array<Spelling<V>, N>& table, std::string_view spelling) {
    for (const Spelling<V>& s : table) {
        if (equal_ascii_ci(spelling, s.name)) {
            return s.value;
        }
    }
    return std::nullopt;
}

template <typename V, std::size_t N>
std::string spellings(const std::array<Spelling<V>, N>& table) {
    std::string out;
    for (const Spelling<V>& s : table) {
        out += (out.empty() ? "" : ", ") + std::string(s.name);
    }
    return out;
}

std::string type_name(Oid type, int32 typmod) {
    const char* name = pg_call([&] { return format_type_with_typemod(type, typmod); });
    return name;
}

}  // namespace

// Fills descriptor nodes top-down; each step handles one pg_type.typtype.
class IdentityTypeResolver {
public:
    IdentityTypeResolver(IdentityType& out, AnonymousRecords records)
        : out_(out), records_(records) {}

    rowid::TypeDesc* allocate(std::size_t n) { return out_.blocks_.emplace_back(n).data(); }

    void resolve(rowid::TypeDesc& d, Oid type, int32 typmod, Oid collation, int depth) {
        const TypeRow row = type_row(type);
        IdentityTypeFacts facts{type, typmod, collation, row.typlen, row.typbyval, row.typalign};
        d.typmod = typmod;
        d.kind = rowid::TypeKind::kOther;
        if (depth <= kMaxResolveDepth) {
            const Request req{type, typmod, collation, depth, row};
            for (const Step& s : kSteps) {
                if (s.typtype == row.typtype) {
                    (this->*s.fill)(d, req, facts);
                }
            }
        }
        out_.facts_[&d] = facts;
    }

private:
    struct Request {
        Oid type;
        int32 typmod;
        Oid collation;
        int depth;
        TypeRow row;
    };
    using Fill = void (IdentityTypeResolver::*)(rowid::TypeDesc&, const Request&,
                                                IdentityTypeFacts&);
    struct Step {
        char typtype;
        Fill fill;
    };
    static const Step kSteps[7];

    void inner(rowid::TypeDesc& d, rowid::TypeKind kind, Oid type, int32 typmod, Oid collation,
               int depth) {
        rowid::TypeDesc* node = allocate(1);
        resolve(*node, type, typmod, collation, depth + 1);
        d.kind = kind;
        d.inner = node;
    }

    void base(rowid::TypeDesc& d, const Request& r, IdentityTypeFacts&) {
        if (r.row.element != InvalidOid) {  // array elements share the array's typmod/collation
            inner(d, rowid::TypeKind::kArray, r.row.element, r.typmod, r.collation, r.depth);
            return;
        }
        d.kind = rowid::TypeKind::kBase;
        d.oid = r.type;
        d.collation = collation_kind(r.type, r.collation);
        if (rowid::builtin_type(r.type) != nullptr) {
            return;
        }
        // User-defined, or built in without an encoder: identified by its
        // bytes when its equality is equality of images, or (only for FULL,
        // image_only) when it has a B-tree equality at all.
        const BtreeEquality eq = btree_equality_kind(r.type, r.collation);
        if (eq != BtreeEquality::kNone) {
            d.kind = rowid::TypeKind::kImage;
            out_.image_only_ = out_.image_only_ || eq == BtreeEquality::kEqualityOnly;
        }
    }

    void domain(rowid::TypeDesc& d, const Request& r, IdentityTypeFacts&) {
        int32 base_typmod = r.typmod;
        const Oid base_type = pg_call([&] { return getBaseTypeAndTypmod(r.type, &base_typmod); });
        inner(d, rowid::TypeKind::kDomain, base_type, base_typmod, r.collation, r.depth);
    }

    void enumeration(rowid::TypeDesc& d, const Request&, IdentityTypeFacts&) {
        d.kind = rowid::TypeKind::kEnum;
    }

    void range(rowid::TypeDesc& d, const Request& r, IdentityTypeFacts& facts) {
        facts.range = pg_call([&] { return lookup_type_cache(r.type, TYPECACHE_RANGE_INFO); });
        range_of(d, rowid::TypeKind::kRange, facts.range, r.depth);
    }

    void multirange(rowid::TypeDesc& d, const Request& r, IdentityTypeFacts& facts) {
        facts.range =
            pg_call([&] { return lookup_type_cache(r.type, TYPECACHE_MULTIRANGE_INFO)->rngtype; });
        range_of(d, rowid::TypeKind::kMultirange, facts.range, r.depth);
    }

    void range_of(rowid::TypeDesc& d, rowid::TypeKind kind, TypeCacheEntry* range, int depth) {
        if (range == nullptr || range->rngelemtype == nullptr) {
            throw pgt::Error("XX000", "range type information is missing");
        }
        inner(d, kind, range->rngelemtype->type_id, -1, range->rng_collation, depth);
    }

    void composite(rowid::TypeDesc& d, const Request& r, IdentityTypeFacts&) {
        TupleDesc td = pg_call([&] { return lookup_rowtype_tupdesc_copy(r.type, r.typmod); });
        int live = 0;
        for (int i = 0; i < td->natts; ++i) {
            live += TupleDescAttr(td, i)->attisdropped ? 0 : 1;
        }
        rowid::TypeDesc* fields = live > 0 ? allocate(live) : nullptr;
        for (int i = 0, f = 0; i < td->natts; ++i) {
            const Form_pg_attribute att = TupleDescAttr(td, i);
            if (!att->attisdropped) {
                resolve(fields[f++], att->atttypid, att->atttypmod, att->attcollation, r.depth + 1);
            }
        }
        d.kind = rowid::TypeKind::kComposite;
        d.fields = fields;
        d.field_count = static_cast<std::uint16_t>(live);
    }

    // `record` has a shape only with a typmod; record[] is a true array.
    void pseudo(rowid::TypeDesc& d, const Request& r, IdentityTypeFacts& facts) {
        if (r.type == RECORDOID && r.typmod >= 0) {
            composite(d, r, facts);
        } else if (r.type == RECORDOID && records_ == AnonymousRecords::kPerValue) {
            d.kind = rowid::TypeKind::kComposite;  // fields resolved per value type
        } else if (r.row.element != InvalidOid) {
            base(d, r, facts);
        }
    }

    IdentityType& out_;
    AnonymousRecords records_;
};

const IdentityTypeResolver::Step IdentityTypeResolver::kSteps[7] = {
    {TYPTYPE_BASE, &IdentityTypeResolver::base},
    {TYPTYPE_DOMAIN, &IdentityTypeResolver::domain},
    {TYPTYPE_ENUM, &IdentityTypeResolver::enumeration},
    {TYPTYPE_RANGE, &IdentityTypeResolver::range},
    {TYPTYPE_MULTIRANGE, &IdentityTypeResolver::multirange},
    {TYPTYPE_COMPOSITE, &IdentityTypeResolver::composite},
    {TYPTYPE_PSEUDO, &IdentityTypeResolver::pseudo},
};

IdentityType::IdentityType(Oid type, int32 typmod, Oid collation, AnonymousRecords records) {
    IdentityTypeResolver resolver(*this, records);
    rowid::TypeDesc* root = resolver.allocate(1);
    resolver.resolve(*root, type, typmod, collation, 0);
    root_ = root;
}

void throw_unsupported_identity_type(const char* what, const std::string& name, Oid type,
                                     int32 typmod, const IdentityType& resolved,
                                     const rowid::TypeVerdict& verdict) {
    const rowid::TypeDesc* bad =
        verdict.offending != nullptr ? verdict.offending : &resolved.root();
    const IdentityTypeFacts& facts = resolved.facts(*bad);
    const bool collation_fault = bad->kind == rowid::TypeKind::kBase &&
                                 bad->collation == rowid::Collation::kNondeterministic;
    std::string offending = type_name(facts.type, facts.typmod);
    if (collation_fault) {
        const char* coll = pg_call([&] { return get_collation_name(facts.collation); });
        offending += std::string(" with collation \"") + (coll != nullptr ? coll : "?") + "\"";
    }
    const char* reason = verdict.reason != nullptr ? verdict.reason : "unsupported";
    throw pgt::Error("0A000",
                     std::string(what) + " \"" + name + "\" of type " + type_name(type, typmod) +
                         " cannot be part of a row identity",
                     "Type " + offending + " is not supported: " + reason + ".",
                     collation_fault
                         ? "Give the expression a deterministic collation, for example "
                           "COLLATE \"C\"."
                         : "Cast the expression to a supported type, or leave it out of the "
                           "identity.");
}

void check_identity_columns(const std::vector<OutputColumn>& cols) {
    for (const OutputColumn& col : cols) {
        const IdentityType resolved(col.type, col.typmod, col.collation, AnonymousRecords::kReject);
        const rowid::TypeVerdict verdict = rowid::check_type(resolved.root());
        if (!verdict.supported) {
            throw_unsupported_identity_type("column", col.name, col.type, col.typmod, resolved,
                                            verdict);
        }
    }
}

std::string image_identity_blocker(const std::vector<OutputColumn>& cols) {
    for (const OutputColumn& col : cols) {
        const IdentityType resolved(col.type, col.typmod, col.collation, AnonymousRecords::kReject);
        if (resolved.image_only()) {
            return "a row identity over column \"" + col.name + "\" of type " +
                   type_name(col.type, col.typmod) +
                   ", whose equal values can differ (its B-tree equality is not equality of "
                   "images)";
        }
    }
    return "";
}

rowid::IdentityBound identity_bound_of(rowid::Domain domain,
                                       const std::vector<OutputColumn>& cols) {
    std::deque<IdentityType> resolved;  // keeps every descriptor tree alive
    std::vector<rowid::TypeDesc> fields;
    for (const OutputColumn& col : cols) {
        resolved.emplace_back(col.type, col.typmod, col.collation, AnonymousRecords::kReject);
        fields.push_back(resolved.back().root());
    }
    const int max_char = pg_call([] { return pg_database_encoding_max_length(); });
    return rowid::identity_bound(domain, fields, static_cast<std::uint32_t>(max_char));
}

bool identity_probe_is_exact(const AnalyzedQuery& q) {
    const std::optional<rowid::Domain> domain = q.identity.domain;
    if (!domain) {
        return false;
    }
    std::vector<OutputColumn> key;
    for (int i : q.identity.key_columns) {
        key.push_back(column_at(q, i));
    }
    return rowid::probe_always_identity(identity_bound_of(*domain, key));
}

std::optional<rowid::Domain> identity_domain_named(std::string_view spelling) {
    // The registry's spellings are lower case; SQL callers may write any case.
    std::string lower(spelling);
    for (char& c : lower) {
        c = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    }
    return rowid::domain_spelled(lower);
}

std::optional<rowid::Synthetic> synthetic_named(std::string_view spelling) {
    return named(kSynthetics, spelling);
}

std::string identity_domain_spellings() {
    return rowid::domain_spellings();
}

std::string synthetic_spellings() {
    return spellings(kSynthetics);
}

}  // namespace pgt::pg
