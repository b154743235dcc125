// Resource limits, input validation, encoder misuse and type validation of
// row identity V2. Invariant: every refusal is a pgt::Error with the
// documented SQLSTATE (54000 limits, 22023 bad input, XX000 misuse) and never
// a silently different encoding; registries match docs/row-identity-v2.md.
#include "core/error.hpp"
#include "core/rowid/bound.hpp"
#include "core/rowid/encoder.hpp"
#include "core/rowid/types.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace pgt::rowid;
using namespace std::string_view_literals;

// Runs `fn` and returns the pgt::Error it throws (fails the test if none).
pgt::Error error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const pgt::Error& e) {
        return e;
    }
    ADD_FAILURE() << "no pgt::Error thrown";
    return pgt::Error("00000", "none");
}

void nest_composites(Encoder& e, int levels) {
    for (int i = 0; i < levels; ++i) {
        e.begin_composite(1);
    }
    e.int4(7);
    for (int i = 0; i < levels; ++i) {
        e.end_composite();
    }
}

// --- depth -------------------------------------------------------------------

TEST(RowIdLimits, ThirtyTwoNestedCompositesAreAccepted) {
    Encoder e;
    e.begin(Domain::kGroupKey, 1);
    nest_composites(e, 32);
    // header 4, then per level tag 02 count(2) ... 00 = 5 bytes, int4 field 6, end 1.
    EXPECT_EQ(e.end().size(), 4u + 32 * 5 + 6 + 1);
}

TEST(RowIdLimits, ThirtyThirdNestingLevelRaisesProgramLimitExceededWithContext) {
    Encoder e;
    e.begin(Domain::kGroupKey, 2);
    e.int4(1);
    const pgt::Error err = error_of([&] { nest_composites(e, 33); });
    EXPECT_EQ(err.sqlstate(), "54000");
    EXPECT_STREQ(err.message(), "row identity nesting exceeds the depth limit");
    EXPECT_NE(err.detail().find("GROUP_KEY"), std::string::npos) << err.detail();
    EXPECT_NE(err.detail().find("field 2 of 2"), std::string::npos) << err.detail();
    EXPECT_NE(err.detail().find("33"), std::string::npos) << err.detail();
}

std::vector<JsonNode> nested_json_arrays(int levels) {
    std::vector<JsonNode> chain(static_cast<std::size_t>(levels) + 1, json_null());
    for (int i = levels - 1; i >= 0; --i) {
        chain[i] = json_array(std::span(&chain[i + 1], 1));
    }
    return chain;
}

TEST(RowIdLimits, JsonbContainersCountTowardsTheDepthLimit) {
    Encoder e;
    const auto ok = nested_json_arrays(32);
    e.begin(Domain::kScanKey, 1);
    e.jsonb(ok[0]);
    EXPECT_NO_THROW(e.end());
    const auto deep = nested_json_arrays(33);
    e.begin(Domain::kScanKey, 1);
    EXPECT_EQ(error_of([&] { e.jsonb(deep[0]); }).sqlstate(), "54000");
    // One composite around it leaves room for 31 jsonb levels only.
    e.begin(Domain::kScanKey, 1);
    e.begin_composite(1);
    EXPECT_EQ(error_of([&] { e.jsonb(ok[0]); }).sqlstate(), "54000");
}

TEST(RowIdLimits, LoweredDepthLimitIsEnforced) {
    Encoder e(Limits{2, kMaxIdentityBytes});
    e.begin(Domain::kScanKey, 1);
    EXPECT_NO_THROW(nest_composites(e, 2));
    e.begin(Domain::kScanKey, 1);
    EXPECT_EQ(error_of([&] { nest_composites(e, 3); }).sqlstate(), "54000");
}

// --- size ------------------------------------------------------------------------

TEST(RowIdLimits, IdentityOfExactlyTheSizeLimitIsAcceptedOneMoreByteIsNot) {
    // 4 header + 2 framing + n + 2 terminator + 1 end = n + 9 bytes.
    Encoder e(Limits{kMaxDepth, 100});
    e.begin(Domain::kScanKey, 1);
    e.text(std::string(91, 'a'));
    EXPECT_EQ(e.end().size(), 100u);
    e.begin(Domain::kScanKey, 1);
    e.text(std::string(92, 'a'));
    const pgt::Error err = error_of([&] { e.end(); });
    EXPECT_EQ(err.sqlstate(), "54000");
    EXPECT_STREQ(err.message(), "row identity exceeds the maximum encoded size");
    EXPECT_NE(err.detail().find("SCAN_KEY"), std::string::npos) << err.detail();
}

TEST(RowIdLimits, EscapedBytesCountTowardsTheSizeLimit) {
    Encoder e(Limits{kMaxDepth, 100});
    e.begin(Domain::kScanKey, 1);
    EXPECT_EQ(error_of([&] { e.bytea(std::string(60, '\0')); }).sqlstate(), "54000");
}

TEST(RowIdLimits, DefaultSizeLimitIs64MiB) {
    Encoder e;
    e.begin(Domain::kKeylessRow, 2);
    const std::string huge(kMaxIdentityBytes / 2, 'x');
    e.text(huge);
    const pgt::Error err = error_of([&] { e.text(huge); });
    EXPECT_EQ(err.sqlstate(), "54000");
    EXPECT_NE(err.detail().find("67108864"), std::string::npos) << err.detail();
    EXPECT_NE(err.detail().find("field 2 of 2"), std::string::npos) << err.detail();
}

TEST(RowIdLimits, HugeArrayShapeIsRejectedBeforeAnyElement) {
    Encoder e;
    e.begin(Domain::kScanKey, 1);
    const ArrayDim dims[] = {{100000, 1}, {100000, 1}};
    EXPECT_EQ(error_of([&] { e.begin_array(TypeTag::kInt4, dims); }).sqlstate(), "54000");
}

TEST(RowIdLimits, LimitsCanOnlyBeLowered) {
    EXPECT_EQ(error_of([] {
                  Encoder e(Limits{kMaxDepth + 1, kMaxIdentityBytes});
              }).sqlstate(),
              "22023");
    EXPECT_EQ(error_of([] {
                  Encoder e(Limits{kMaxDepth, kMaxIdentityBytes + 1});
              }).sqlstate(),
              "22023");
}

// --- invalid input values --------------------------------------------------------

struct Case {
    const char* name;
    void (*run)(Encoder&);
};

constexpr std::uint8_t kV4[] = {10, 0, 0, 1};
constexpr std::uint8_t kTwoBytes[] = {0xff, 0xff};
constexpr std::int16_t kBadDigit[] = {10000};
constexpr ArrayDim kSevenDims[7] = {};
constexpr ArrayDim kOneElement[] = {{1, 1}};

// Each runs inside a one-field SCAN_KEY identity.
// clang-format off
constexpr Case kInvalidValues[] = {
    {"numeric digit", [](Encoder& e) { e.numeric({NumericSign::kPositive, 0, kBadDigit}); }},
    {"numeric sign", [](Encoder& e) { e.numeric({static_cast<NumericSign>(9), 0, {}}); }},
    {"negative time", [](Encoder& e) { e.time(-1); }},
    {"time past 24:00", [](Encoder& e) { e.time(86400000001); }},
    {"timetz zone", [](Encoder& e) { e.timetz(0, 90000); }},
    {"inet prefix", [](Encoder& e) { e.inet({IpFamily::kIpv4, 33, kV4}); }},
    {"inet address length", [](Encoder& e) { e.inet({IpFamily::kIpv6, 8, kV4}); }},
    {"bit length", [](Encoder& e) { e.bit(3, kTwoBytes); }},
    {"enum label", [](Encoder& e) { e.enum_label(std::string(64, 'l')); }},
    {"array dims", [](Encoder& e) { e.begin_array(TypeTag::kInt4, kSevenDims); }},
};
// clang-format on

TEST(RowIdLimits, InvalidInputValuesRaiseInvalidParameterValue) {
    Encoder e;
    for (const Case& c : kInvalidValues) {
        e.begin(Domain::kScanKey, 1);
        EXPECT_EQ(error_of([&] { c.run(e); }).sqlstate(), "22023") << c.name;
    }
}

TEST(RowIdLimits, DuplicateJsonbKeysAreRejected) {
    const JsonMember members[] = {{"k", json_null()}, {"k", json_bool(true)}};
    Encoder e;
    e.begin(Domain::kScanKey, 1);
    EXPECT_EQ(error_of([&] { e.jsonb(json_object(members)); }).sqlstate(), "22023");
}

// --- misuse ----------------------------------------------------------------------

// clang-format off
constexpr Case kMisuse[] = {
    {"value before begin", [](Encoder& e) { e.int4(1); }},
    {"too many fields", [](Encoder& e) { e.begin(Domain::kScanKey, 1); e.int4(1); e.int4(2); }},
    {"too few fields", [](Encoder& e) { e.begin(Domain::kScanKey, 2); e.int4(1); e.end(); }},
    {"open composite", [](Encoder& e) { e.begin(Domain::kScanKey, 1); e.begin_composite(1); e.end(); }},
    {"element type", [](Encoder& e) { e.begin(Domain::kScanKey, 1); e.begin_array(TypeTag::kInt4, kOneElement); e.int8(1); }},
    {"missing element", [](Encoder& e) { e.begin(Domain::kScanKey, 1); e.begin_array(TypeTag::kInt4, kOneElement); e.end_array(); }},
    {"null bound", [](Encoder& e) { e.begin(Domain::kScanKey, 1); e.begin_range(TypeTag::kInt4, {}); e.null(TypeTag::kInt4); }},
    {"empty in multirange", [](Encoder& e) { e.begin(Domain::kScanKey, 1); e.begin_multirange(TypeTag::kInt4); e.begin_range(TypeTag::kInt4, {.empty = true}); }},
    {"scalar in multirange", [](Encoder& e) { e.begin(Domain::kScanKey, 1); e.begin_multirange(TypeTag::kInt4); e.int4(1); }},
    {"end_array for composite", [](Encoder& e) { e.begin(Domain::kScanKey, 1); e.begin_composite(0); e.end_array(); }},
    {"unregistered null tag", [](Encoder& e) { e.begin(Domain::kScanKey, 1); e.null(static_cast<TypeTag>(0x77)); }},
    {"unregistered element tag", [](Encoder& e) { e.begin(Domain::kScanKey, 1); e.begin_array(static_cast<TypeTag>(0), kOneElement); }},
    {"synthetic via begin", [](Encoder& e) { e.begin(Domain::kSynthetic, 0); }},
    {"unregistered domain", [](Encoder& e) { e.begin(static_cast<Domain>(0x42), 0); }},
    {"unregistered discriminator", [](Encoder& e) { e.begin_synthetic(static_cast<Synthetic>(0x42)); }},
};
// clang-format on

TEST(RowIdLimits, EncoderMisuseRaisesInternalError) {
    for (const Case& c : kMisuse) {
        Encoder e;
        EXPECT_EQ(error_of([&] { c.run(e); }).sqlstate(), "XX000") << c.name;
    }
}

TEST(RowIdLimits, EncoderRecoversAfterAnErrorAtTheNextBegin) {
    Encoder fresh;
    fresh.begin(Domain::kScanKey, 1);
    fresh.text("ok");
    const auto fresh_id = fresh.end();
    const std::vector<std::uint8_t> expected(fresh_id.begin(), fresh_id.end());
    Encoder e;
    e.begin(Domain::kScanKey, 1);
    e.begin_composite(2);
    EXPECT_THROW(nest_composites(e, 40), pgt::Error);
    e.begin(Domain::kScanKey, 1);
    e.text("ok");
    const auto id = e.end();
    EXPECT_EQ(std::vector<std::uint8_t>(id.begin(), id.end()), expected);
}

// --- type validation ------------------------------------------------------------

TypeDesc base(std::uint32_t oid, Collation collation = Collation::kNone) {
    TypeDesc t;
    t.oid = oid;
    t.collation = collation;
    return t;
}

TEST(RowIdTypes, EveryRegisteredBuiltinOidResolvesToItsTag) {
    const std::map<std::uint32_t, TypeTag> expected = {
        {16, TypeTag::kBool},        {21, TypeTag::kInt2},          {23, TypeTag::kInt4},
        {20, TypeTag::kInt8},        {26, TypeTag::kOid},           {700, TypeTag::kFloat4},
        {701, TypeTag::kFloat8},     {1700, TypeTag::kNumeric},     {25, TypeTag::kText},
        {1043, TypeTag::kVarchar},   {1042, TypeTag::kBpchar},      {17, TypeTag::kBytea},
        {2950, TypeTag::kUuid},      {1082, TypeTag::kDate},        {1083, TypeTag::kTime},
        {1114, TypeTag::kTimestamp}, {1184, TypeTag::kTimestamptz}, {1266, TypeTag::kTimetz},
        {1186, TypeTag::kInterval},  {869, TypeTag::kInet},         {650, TypeTag::kCidr},
        {829, TypeTag::kMacaddr},    {774, TypeTag::kMacaddr8},     {1560, TypeTag::kBit},
        {1562, TypeTag::kVarbit},    {3802, TypeTag::kJsonb},       {19, TypeTag::kName},
        {18, TypeTag::kChar},
    };
    for (const auto& [oid, tag] : expected) {
        const TypeVerdict v = check_type(base(oid));
        EXPECT_TRUE(v.supported) << oid;
        EXPECT_EQ(v.tag, tag) << oid;
    }
}

// A base type the PostgreSQL side found to have image equality (its B-tree
// class's equalimage says so) is its bytes, tag 1e, unbounded; a base type
// without a tag of its own is not, unless so marked.
TEST(RowIdTypes, TypesWithImageEqualityAreTheirBytes) {
    TypeDesc image;
    image.kind = TypeKind::kImage;
    image.oid = 790;  // money: built in, no tag of its own
    const TypeVerdict v = check_type(image);
    EXPECT_TRUE(v.supported);
    EXPECT_EQ(v.tag, TypeTag::kImage);
    EXPECT_FALSE(max_payload_bytes(image, 4).has_value());
    EXPECT_FALSE(check_type(base(790)).supported);
}

TEST(RowIdTypes, TypesWithoutAnEncoderAreRejectedWithAReason) {
    const TypeVerdict json = check_type(base(114));
    EXPECT_FALSE(json.supported);
    EXPECT_NE(std::string(json.reason).find("jsonb"), std::string::npos);
    for (std::uint32_t oid : {142u, 600u, 790u, 0u, 99999u}) {
        const TypeDesc t = base(oid);
        const TypeVerdict v = check_type(t);
        EXPECT_FALSE(v.supported) << oid;
        EXPECT_NE(v.reason, nullptr) << oid;
        EXPECT_EQ(v.offending, &t) << oid;
    }
    TypeDesc other;
    other.kind = TypeKind::kOther;
    EXPECT_FALSE(check_type(other).supported);
}

TEST(RowIdTypes, NondeterministicCollationsAreRejectedEvenWhenNested) {
    EXPECT_TRUE(check_type(base(25, Collation::kDeterministic)).supported);
    EXPECT_FALSE(check_type(base(25, Collation::kNondeterministic)).supported);
    EXPECT_TRUE(check_type(base(23, Collation::kNondeterministic)).supported);  // not collatable
    const TypeDesc element = base(1043, Collation::kNondeterministic);
    TypeDesc array;
    array.kind = TypeKind::kArray;
    array.inner = &element;
    const TypeVerdict v = check_type(array);
    EXPECT_FALSE(v.supported);
    EXPECT_EQ(v.offending, &element);
    EXPECT_NE(std::string(v.reason).find("collation"), std::string::npos);
}

TEST(RowIdTypes, StructuralTypesAreSupportedWhenTheirContentsAre) {
    const TypeDesc int4 = base(23);
    const TypeDesc point = base(600);
    TypeDesc domain{TypeKind::kDomain, 0, -1, Collation::kNone, &int4, nullptr, 0};
    EXPECT_EQ(check_type(domain).tag, TypeTag::kInt4);
    TypeDesc range{TypeKind::kRange, 0, -1, Collation::kNone, &int4, nullptr, 0};
    EXPECT_EQ(check_type(range).tag, TypeTag::kRange);
    TypeDesc multirange{TypeKind::kMultirange, 0, -1, Collation::kNone, &int4, nullptr, 0};
    EXPECT_EQ(check_type(multirange).tag, TypeTag::kMultirange);
    TypeDesc mood{TypeKind::kEnum, 0, -1, Collation::kNone, nullptr, nullptr, 0};
    EXPECT_EQ(check_type(mood).tag, TypeTag::kEnum);
    const TypeDesc fields[] = {int4, point};
    TypeDesc composite{TypeKind::kComposite, 0, -1, Collation::kNone, nullptr, fields, 2};
    const TypeVerdict v = check_type(composite);
    EXPECT_FALSE(v.supported);
    EXPECT_EQ(v.offending, &fields[1]);
    composite.field_count = 1;
    EXPECT_EQ(check_type(composite).tag, TypeTag::kComposite);
    TypeDesc incomplete{TypeKind::kArray, 0, -1, Collation::kNone, nullptr, nullptr, 0};
    EXPECT_FALSE(check_type(incomplete).supported);
}

TEST(RowIdTypes, TypesNestedDeeperThanTheLimitAreRejected) {
    std::vector<TypeDesc> chain(40);
    chain.back() = base(23);
    for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
        chain[i].kind = TypeKind::kArray;
        chain[i].inner = &chain[i + 1];
    }
    EXPECT_TRUE(check_type(chain[chain.size() - 1 - 32]).supported);
    EXPECT_FALSE(check_type(chain[chain.size() - 1 - 33]).supported);
}

// --- registries agree with the document ---------------------------------------

// Rows "| `hh` | name | ..." of the section whose heading starts with `heading`.
std::map<std::string, std::vector<std::string>> doc_registry(const std::string& heading) {
    std::ifstream in(PGT_SOURCE_DIR "/docs/row-identity-v2.md");
    std::map<std::string, std::vector<std::string>> rows;
    std::string line;
    bool inside = false;
    while (std::getline(in, line)) {
        if (line.rfind("#", 0) == 0) {
            inside = line.rfind(heading, 0) == 0;
        }
        if (!inside || line.rfind("| `", 0) != 0) {
            continue;
        }
        std::vector<std::string> cells;
        std::string cell;
        for (char c : line.substr(1)) {
            if (c == '|') {
                cells.push_back(
                    cell.substr(cell.find_first_not_of(' '),
                                cell.find_last_not_of(' ') - cell.find_first_not_of(' ') + 1));
                cell.clear();
            } else if (c != '`') {
                cell.push_back(c);
            }
        }
        rows[cells[0]] = cells;
    }
    return rows;
}

std::string hex_byte(unsigned v) {
    const char* digits = "0123456789abcdef";
    return {digits[v >> 4], digits[v & 15]};
}

TEST(RowIdTypes, TypeTagTableOfTheDocumentMatchesTheRegistry) {
    const auto rows = doc_registry("### 6.1");
    ASSERT_EQ(rows.size(), 34u);
    for (unsigned v = 1; v < 0xFF; ++v) {
        const TypeInfo* info = type_info(static_cast<TypeTag>(v));
        const auto it = rows.find(hex_byte(v));
        ASSERT_EQ(info != nullptr, it != rows.end()) << hex_byte(v);
        if (info != nullptr) {
            EXPECT_EQ(it->second[1], info->name) << hex_byte(v);
            const std::string oid = info->builtin_oid ? std::to_string(info->builtin_oid) : "—";
            EXPECT_EQ(it->second[2], oid) << hex_byte(v);
        }
    }
}

TEST(RowIdTypes, DomainAndDiscriminatorTablesOfTheDocumentMatchTheCode) {
    const auto domains = doc_registry("### 3.1");
    const auto synthetic = doc_registry("### 3.2");
    ASSERT_EQ(domains.size(), 7u);
    ASSERT_EQ(synthetic.size(), 2u);
    for (unsigned v = 1; v < 0xFF; ++v) {
        const char* d = domain_name(static_cast<Domain>(v));
        const char* s = synthetic_name(static_cast<Synthetic>(v));
        ASSERT_EQ(d != nullptr, domains.count(hex_byte(v)) == 1) << v;
        ASSERT_EQ(s != nullptr, synthetic.count(hex_byte(v)) == 1) << v;
        if (d != nullptr) {
            EXPECT_EQ(domains.at(hex_byte(v))[1], d);
        }
        if (s != nullptr) {
            EXPECT_EQ(synthetic.at(hex_byte(v))[1], s);
        }
    }
}

}  // namespace
