// PostgreSQL types as row identity V2 sees them: a catalog type resolved into
// the core's neutral descriptor tree (rowid::TypeDesc) plus the PostgreSQL
// storage facts an encoder plan needs, and the creation-time check of a
// stream table's identity columns (docs/row-identity-v2.md §12).
// Invariant: descriptors come from the catalogs only, never from a value.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/rowid/bound.hpp"
#include "core/rowid/format.hpp"
#include "core/rowid/types.hpp"
#include "pg/analyze/defining_query.hpp"

extern "C" {
#include "postgres.h"
#include "utils/typcache.h"
}

namespace pgt::pg {

// Storage facts of one descriptor node (a domain node: of the domain).
struct IdentityTypeFacts {
    Oid type = InvalidOid;
    int32 typmod = -1;
    Oid collation = InvalidOid;  // the collation the node's values compare under
    int16 typlen = 0;
    bool typbyval = false;
    char typalign = 'i';
    TypeCacheEntry* range = nullptr;  // ranges, multiranges: the range's typcache entry
};

// How an anonymous `record` (no typmod: its shape is known per value only)
// resolves: rejected like any type without an encoder, or as a composite
// without fields whose values carry their own (type id, typmod).
enum class AnonymousRecords { kReject, kPerValue };

// One resolved type. Non-copyable and non-movable: the descriptors point at
// each other and the facts are keyed by descriptor address.
class IdentityType {
public:
    IdentityType(Oid type, int32 typmod, Oid collation, AnonymousRecords records);
    IdentityType(const IdentityType&) = delete;
    IdentityType& operator=(const IdentityType&) = delete;

    const rowid::TypeDesc& root() const { return *root_; }
    const IdentityTypeFacts& facts(const rowid::TypeDesc& node) const { return facts_.at(&node); }
    // Some node is a base type whose B-tree equality is not equality of
    // images (citext): identified by its bytes, which tells rows apart as
    // a reader sees them (what a FULL refresh matches) but not as its
    // equality groups them (what incremental maintenance would need).
    bool image_only() const { return image_only_; }

private:
    friend class IdentityTypeResolver;
    std::deque<std::vector<rowid::TypeDesc>> blocks_;  // a block never grows after creation
    std::unordered_map<const rowid::TypeDesc*, IdentityTypeFacts> facts_;
    const rowid::TypeDesc* root_ = nullptr;
    bool image_only_ = false;
};

// Raises 0A000 for `what` ("column", "field") `name` of type (type, typmod)
// that check_type() refused: the message names both, the detail the
// offending (possibly nested) type, its collation if at fault, and why.
[[noreturn]] void throw_unsupported_identity_type(const char* what, const std::string& name,
                                                  Oid type, int32 typmod,
                                                  const IdentityType& resolved,
                                                  const rowid::TypeVerdict& verdict);

// Creation-time validation: returns when every column can be part of a row
// identity, else throws pgt::Error 0A000 naming the first column that cannot.
void check_identity_columns(const std::vector<OutputColumn>& cols);

// "" when DIFFERENTIAL and IMMEDIATE can maintain identities over cols;
// else what keeps them from it (a column of a type IdentityType::image_only
// says, named), which only a FULL refresh maintains.
std::string image_identity_blocker(const std::vector<OutputColumn>& cols);

// Static boundedness (docs/row-identity-v2.md §11) of identities of `domain`
// over `cols`, for the database encoding; unsupported types are unbounded.
rowid::IdentityBound identity_bound_of(rowid::Domain domain, const std::vector<OutputColumn>& cols);

// True when every identity of q's row identity shape is at most 256 bytes,
// so its probe is the identity itself (an unknown domain answers false).
bool identity_probe_is_exact(const AnalyzedQuery& q);

// SQL spellings of the registries ("scan_key", "lateral_inner_dummy", ...),
// matched ASCII case-insensitively, and their lists for hints.
std::optional<rowid::Domain> identity_domain_named(std::string_view spelling);
std::optional<rowid::Synthetic> synthetic_named(std::string_view spelling);
std::string identity_domain_spellings();  // "scan_key, keyless_row, ..."
std::string synthetic_spellings();

}  // namespace pgt::pg
