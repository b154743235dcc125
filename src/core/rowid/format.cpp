// Registry names of row identity V2 domains and synthetic discriminators,
// used in error messages and documentation (type tag names live in types.cpp). Invariant: the names
// match docs/row-identity-v2.md exactly (tests compare them).
#include "core/rowid/format.hpp"

#include <array>
#include <string>
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

// As SQL spells them (encode_row_id_v2's first argument, the catalog).
constexpr std::array<std::pair<Domain, const char*>, 7> kDomainSpellings{{
    {Domain::kScanKey, "scan_key"},
    {Domain::kKeylessRow, "keyless_row"},
    {Domain::kGroupKey, "group_key"},
    {Domain::kJoinKey, "join_key"},
    {Domain::kSetKey, "set_key"},
    {Domain::kWindowKey, "window_key"},
    {Domain::kSynthetic, "synthetic"},
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
    return lookup(kDomainSpellings, domain);
}

std::optional<Domain> domain_spelled(std::string_view spelling) noexcept {
    for (const auto& [value, name] : kDomainSpellings) {
        if (spelling == name) {
            return value;
        }
    }
    return std::nullopt;
}

std::string domain_spellings() {
    std::string out;
    for (const auto& [value, name] : kDomainSpellings) {
        out += (out.empty() ? "" : ", ") + std::string(name);
    }
    return out;
}

const char* synthetic_name(Synthetic kind) noexcept {
    return lookup(kSyntheticNames, kind);
}

}  // namespace pgt::rowid
