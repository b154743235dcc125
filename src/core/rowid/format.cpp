// Registry names of row identity V2 domains and synthetic discriminators,
// used in error messages and documentation (type tag names live in types.cpp). Invariant: the names
// match docs/row-identity-v2.md exactly (tests compare them).
#include "core/rowid/format.hpp"

#include <array>
#include <utility>

namespace pgt::rowid {
namespace {

template <typename Enum, std::size_t N>
const char* lookup(const std::array<std::pair<Enum, const char*>, N>& table, Enum key) noexcept {
    for (const auto& [value, name] : table) {
        if (value == key) {
            return name;
        }
    }
    return nullptr;
}

constexpr std::array<std::pair<Domain, const char*>, 7> kDomainNames{{
    {Domain::kScanKey, "SCAN_KEY"},
    {Domain::kKeylessRow, "KEYLESS_ROW"},
    {Domain::kGroupKey, "GROUP_KEY"},
    {Domain::kJoinKey, "JOIN_KEY"},
    {Domain::kSetKey, "SET_KEY"},
    {Domain::kWindowKey, "WINDOW_KEY"},
    {Domain::kSynthetic, "SYNTHETIC"},
}};

constexpr std::array<std::pair<Synthetic, const char*>, 2> kSyntheticNames{{
    {Synthetic::kScalarAggregateSingleton, "scalar_aggregate_singleton"},
    {Synthetic::kLateralInnerDummy, "lateral_inner_dummy"},
}};

}  // namespace

const char* domain_name(Domain domain) noexcept {
    return lookup(kDomainNames, domain);
}
const char* domain_spelling(Domain domain) noexcept {
    switch (domain) {
        case Domain::kScanKey:
            return "scan_key";
        case Domain::kKeylessRow:
            return "keyless_row";
        case Domain::kGroupKey:
            return "group_key";
        case Domain::kJoinKey:
            return "join_key";
        case Domain::kSetKey:
            return "set_key";
        case Domain::kWindowKey:
            return "window_key";
        case Domain::kSynthetic:
            return "synthetic";
    }
    return nullptr;
}

std::optional<Domain> domain_spelled(std::string_view spelling) noexcept {
    for (Domain d : {Domain::kScanKey, Domain::kKeylessRow, Domain::kGroupKey, Domain::kJoinKey,
                     Domain::kSetKey, Domain::kWindowKey, Domain::kSynthetic}) {
        if (spelling == domain_spelling(d)) {
            return d;
        }
    }
    return std::nullopt;
}

const char* synthetic_name(Synthetic kind) noexcept {
    return lookup(kSyntheticNames, kind);
}

}  // namespace pgt::rowid
