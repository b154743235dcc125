// Row identity V2 through SQL: pgtrickle.encode_row_id_v2 and row_probe_v1
// against the golden vectors of docs/row-identity-v2.md and the core encoder
// (equality, ordering, framing, settings, rejections, plan cache).
// Invariant: the SQL path and src/core produce the same bytes for the same
// logical value; a vector the SQL path cannot express is listed with a reason.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/rowid/decimal.hpp"
#include "core/rowid/encoder.hpp"
#include "core/rowid/hex.hpp"
#include "core/rowid/probe.hpp"
#include "common/golden_doc.hpp"
#include "fixture.hpp"

namespace pgt::e2e {
namespace {

using namespace pgt::rowid;

// --- golden vectors: the document's tables ------------------------------------

std::string compact(std::string_view hex) {
    std::string out;
    for (char ch : hex) {
        if (ch != ' ') {
            out += ch;
        }
    }
    return out;
}

// Rows "| `family.name` | input | `hex` |" of docs/row-identity-v2.md, hex compacted.
std::map<std::string, std::string> document_vectors() {
    const auto doc = pgt::testing::read_doc_vectors(
        (std::filesystem::path(__FILE__).parent_path() / "../../docs/row-identity-v2.md").string());
    std::map<std::string, std::string> rows;
    for (const auto& [id, hex] : doc.hex_by_id) {
        rows.emplace(id, compact(hex));
    }
    return rows;
}

// Field vectors: the value expression of a one-field SCAN_KEY identity.
// clang-format off
const std::map<std::string, std::string> kFieldSql = {
    {"bool.null", "NULL::bool"}, {"bool.false", "false"}, {"bool.true", "true"},
    {"int2.min", "(-32768)::int2"}, {"int2.minus_one", "(-1)::int2"}, {"int2.zero", "0::int2"},
    {"int2.one", "1::int2"}, {"int2.max", "32767::int2"},
    {"int4.null", "NULL::int4"}, {"int4.min", "(-2147483648)::int4"}, {"int4.minus_one", "(-1)::int4"},
    {"int4.zero", "0::int4"}, {"int4.one", "1::int4"}, {"int4.max", "2147483647::int4"},
    {"int8.min", "(-9223372036854775808)::int8"}, {"int8.minus_one", "(-1)::int8"}, {"int8.zero", "0::int8"},
    {"int8.one", "1::int8"}, {"int8.max", "9223372036854775807::int8"},
    {"oid.zero", "0::oid"}, {"oid.one", "1::oid"}, {"oid.max", "'4294967295'::oid"},
    {"float4.neg_inf", "'-Infinity'::float4"}, {"float4.minus_1_5", "(-1.5)::float4"},
    {"float4.neg_zero", "'-0'::float4"}, {"float4.zero", "0::float4"},
    {"float4.denorm_min", "'1.4e-45'::float4"}, {"float4.one_5", "1.5::float4"},
    {"float4.pos_inf", "'Infinity'::float4"}, {"float4.nan", "'NaN'::float4"},
    // a NaN computed at run time (on x86 its sign bit is set)
    {"float4.nan_negative", "('Infinity'::float4 - 'Infinity'::float4)"},
    {"float8.neg_inf", "'-Infinity'::float8"}, {"float8.minus_one", "(-1)::float8"},
    {"float8.neg_zero", "'-0'::float8"}, {"float8.zero", "0::float8"}, {"float8.one", "1::float8"},
    {"float8.max", "'1.7976931348623157e308'::float8"}, {"float8.pos_inf", "'Infinity'::float8"},
    {"float8.nan", "'NaN'::float8"}, {"float8.nan_negative", "('Infinity'::float8 - 'Infinity'::float8)"},
    {"numeric.neg_inf", "'-Infinity'::numeric"}, {"numeric.minus_one", "(-1)::numeric"},
    {"numeric.minus_small", "(-0.0001)::numeric"}, {"numeric.zero", "0::numeric"},
    {"numeric.zero_scaled", "0.000::numeric"}, {"numeric.small", "0.0001::numeric"},
    {"numeric.half", "0.5::numeric"}, {"numeric.one", "1::numeric"}, {"numeric.one_0", "1.0::numeric"},
    {"numeric.one_00", "1.00::numeric"}, {"numeric.ten_thousand", "10000::numeric"},
    {"numeric.mixed", "12345.6789::numeric"}, {"numeric.pos_inf", "'Infinity'::numeric"},
    {"numeric.nan", "'NaN'::numeric"},
    {"text.empty", "''::text"}, {"text.a", "'a'::text"}, {"text.utf8", "'\xc3\xa9'::text"},
    {"varchar.abc", "'abc'::varchar"}, {"bpchar.padded", "'ab   '::char(5)"},
    {"bpchar.unpadded", "'ab'::bpchar"}, {"bpchar.blank", "'   '::char(3)"},
    {"bytea.empty", "''::bytea"}, {"bytea.zero_ff", "'\\x00ff'::bytea"}, {"bytea.ab", "'\\x6162'::bytea"},
    {"enum.sad", "'sad'::mood"},
    {"name.ab", "'ab'::name"},
    {"char.x", "'x'::\"char\""},
    {"image.bytes", "'\\x01000000'::blob"},
    {"char.zero", "''::\"char\""},
    {"uuid.nil", "'00000000-0000-0000-0000-000000000000'::uuid"},
    {"uuid.sample", "'123e4567-e89b-12d3-a456-426614174000'::uuid"},
    {"uuid.max", "'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid"},
    {"inet.v4_host", "'192.168.0.1/32'::inet"}, {"inet.v4_host_bits_kept", "'10.1.2.3/8'::inet"},
    {"inet.v6_loopback", "'::1/128'::inet"},
    {"cidr.v4_host_bits_zeroed", "'10.1.2.3/8'::inet::cidr"},
    {"cidr.v4_partial_byte", "'192.168.255.255/20'::inet::cidr"},
    {"macaddr.sample", "'08:00:2b:01:02:03'::macaddr"},
    {"macaddr8.sample", "'08:00:2b:01:02:03:04:05'::macaddr8"},
    {"bit.empty", "B''"}, {"bit.one", "B'1'"}, {"bit.101", "B'101'"}, {"bit.zero_byte", "B'00000000'"},
    {"varbit.one", "B'1'::varbit"},
    {"date.neg_inf", "'-infinity'::date"}, {"date.1999_12_31", "'1999-12-31'::date"},
    {"date.2000_01_01", "'2000-01-01'::date"}, {"date.2024_02_29", "'2024-02-29'::date"},
    {"date.pos_inf", "'infinity'::date"},
    {"time.midnight", "'00:00'::time"}, {"time.noon", "'12:00'::time"}, {"time.end_of_day", "'24:00'::time"},
    {"timestamp.neg_inf", "'-infinity'::timestamp"},
    {"timestamp.before_2000", "'1999-12-31 23:59:59.999999'::timestamp"},
    {"timestamp.2000", "'2000-01-01 00:00'::timestamp"}, {"timestamp.2024", "'2024-01-01 00:00'::timestamp"},
    {"timestamp.pos_inf", "'infinity'::timestamp"},
    {"timestamptz.2024", "'2024-01-01 00:00+00'::timestamptz"},
    {"timetz.noon_utc", "'12:00+00'::timetz"}, {"timetz.13_plus_01", "'13:00+01'::timetz"},
    {"interval.zero", "'0'::interval"}, {"interval.one_month", "'1 mon'::interval"},
    {"interval.thirty_days", "'30 days'::interval"}, {"interval.one_day", "'1 day'::interval"},
    {"interval.24_hours", "'24 hours'::interval"}, {"interval.minus_1us", "'-1 microsecond'::interval"},
    {"interval.max_fields", "'2147483647 mons 2147483647 days 2562047788:00:54.775807'::interval"},
    {"interval.min_fields", "('-2147483647 mons -2147483647 days -2562047788:00:54.775807'::interval - '1 mon 1 day 00:00:00.000001'::interval)"},
    {"jsonb.null", "'null'::jsonb"}, {"jsonb.false", "'false'::jsonb"}, {"jsonb.true", "'true'::jsonb"},
    {"jsonb.string", "'\"a\"'::jsonb"}, {"jsonb.number", "'1'::jsonb"}, {"jsonb.number_scaled", "'1.0'::jsonb"},
    {"jsonb.empty_array", "'[]'::jsonb"}, {"jsonb.empty_object", "'{}'::jsonb"},
    {"jsonb.object_b_first", "'{\"b\":1,\"a\":[true,null]}'::jsonb"},
    {"jsonb.object_a_first", "'{\"a\":[true,null],\"b\":1}'::jsonb"},
    {"array.null", "NULL::int4[]"}, {"array.empty", "'{}'::int4[]"}, {"array.int4_1_2", "'{1,2}'::int4[]"},
    {"array.lower_bound_0", "'[0:1]={1,2}'::int4[]"}, {"array.int4_1_null", "'{1,NULL}'::int4[]"},
    {"array.two_dims", "'{{1,2},{3,4}}'::int4[]"},
    {"composite.null", "NULL::record"}, {"composite.empty", "ROW()"},
    {"composite.int4_text", "ROW(1, 'a'::text)"}, {"composite.all_null", "ROW(NULL::int4, NULL::text)"},
    {"composite.nested", "ROW(ROW(1))"},
    {"range.empty", "'empty'::int4range"}, {"range.int4_1_5", "'[1,5)'::int4range"},
    {"range.lower_infinite", "'(,5)'::int4range"}, {"range.upper_infinite", "'[1,)'::int4range"},
    {"range.unbounded", "'(,)'::int4range"}, {"range.numeric_inclusive", "'[1.0,2.0]'::numrange"},
    {"range.numeric_exclusive_lower", "'(1.0,2.0)'::numrange"},
    {"multirange.empty", "'{}'::int4multirange"}, {"multirange.two", "'{[1,3),[5,7)}'::int4multirange"},
};

// Identity vectors: a complete SQL expression of type bytea.
const std::map<std::string, std::string> kIdentitySql = {
    {"id.scan_key", "pgtrickle.encode_row_id_v2('scan_key', ROW(1))"},
    {"id.keyless_row", "pgtrickle.encode_row_id_v2('keyless_row', ROW(1))"},
    {"id.group_key", "pgtrickle.encode_row_id_v2('group_key', ROW(1))"},
    {"id.join_key", "pgtrickle.encode_row_id_v2('join_key', ROW(1))"},
    {"id.set_key", "pgtrickle.encode_row_id_v2('set_key', ROW(1))"},
    {"id.window_key", "pgtrickle.encode_row_id_v2('window_key', ROW(1))"},
    {"id.synthetic.scalar_aggregate_singleton", "pgtrickle.encode_row_id_v2('synthetic', 'scalar_aggregate_singleton', ROW())"},
    {"id.synthetic.lateral_inner_dummy", "pgtrickle.encode_row_id_v2('synthetic', 'lateral_inner_dummy', ROW())"},
    {"id.no_fields", "pgtrickle.encode_row_id_v2('scan_key', ROW())"},
    {"id.group_key.nulls", "pgtrickle.encode_row_id_v2('group_key', ROW(NULL::int4, NULL::text))"},
    {"id.framing.1_23", "pgtrickle.encode_row_id_v2('scan_key', ROW('1'::text, '23'::text))"},
    {"id.framing.12_3", "pgtrickle.encode_row_id_v2('scan_key', ROW('12'::text, '3'::text))"},
    {"id.join_key.children", "pgtrickle.encode_row_id_v2('join_key', ROW("
                             "pgtrickle.encode_row_id_v2('scan_key', ROW(1)), "
                             "pgtrickle.encode_row_id_v2('scan_key', ROW('x'::text))))"},
    // probe vectors: the 16 digest bytes after the 256-byte prefix
    {"probe.overflow.257", "substring(pgtrickle.row_probe_v1(pgtrickle.encode_row_id_v2('scan_key', ROW(repeat('a', 248)))) from 257)"},
    {"probe.overflow.309", "substring(pgtrickle.row_probe_v1(pgtrickle.encode_row_id_v2('scan_key', ROW(repeat('a', 300)))) from 257)"},
};

// Vectors whose input SQL cannot produce, and why.
const std::map<std::string, std::string> kNotExpressible = {
    {"float4.nan_payload", "SQL has no way to build a NaN with a chosen payload"},
    {"float8.nan_payload", "SQL has no way to build a NaN with a chosen payload"},
    {"numeric.one_unnormalized", "PostgreSQL always stores numerics normalised"},
    {"text.nul", "text never holds a NUL byte"},
    {"text.nul_inside", "text never holds a NUL byte"},
    {"text.byte_ff", "ff alone is not valid UTF-8"},
    {"bit.101_pad_bits_ignored", "PostgreSQL always stores zero pad bits"},
    {"array.text_nul", "text never holds a NUL byte"},
    {"id.framing.a0_b", "text never holds a NUL byte"},
    {"id.framing.a_0b", "text never holds a NUL byte"},
    {"probe.digest.empty", "an identity is never empty"},
};
// clang-format on

constexpr std::string_view kFieldPrefix = "02010001";  // VERSION SCAN_KEY FIELD_COUNT=1

// --- helpers --------------------------------------------------------------------

std::string hex_of(const std::span<const std::uint8_t> bytes) {
    return to_hex(bytes);
}

// The bytes the core encoder writes for a SCAN_KEY identity built by `fields`.
template <typename F>
std::string core_scan_key(std::uint16_t count, F&& fields) {
    Encoder e;
    e.begin(Domain::kScanKey, count);
    fields(e);
    return hex_of(e.end());
}

class RowIdentity : public DbTest {
protected:
    std::string id_hex(const std::string& fields, const std::string& domain = "scan_key") {
        return db->scalar("SELECT encode(pgtrickle.encode_row_id_v2('" + domain + "', " + fields +
                          "), 'hex')");
    }

    // Field bytes of ROW(expr) as a SCAN_KEY identity.
    std::string field_hex(const std::string& expr) {
        const std::string id = id_hex("ROW(" + expr + ")");
        if (id.rfind(kFieldPrefix, 0) != 0 || id.size() < kFieldPrefix.size() + 2 ||
            id.substr(id.size() - 2) != "00") {
            return "<not a one-field identity: " + id + ">";
        }
        return id.substr(kFieldPrefix.size(), id.size() - kFieldPrefix.size() - 2);
    }

    std::vector<std::string> column(const std::string& sql) {
        std::vector<std::string> out;
        for (const Row& r : db->exec(sql).rows) {
            out.push_back(r.at(0).value_or("<NULL>"));
        }
        return out;
    }
};

// A replayable seed: PGT_SEED if set, else random; printed either way.
unsigned test_seed() {
    const char* env = std::getenv("PGT_SEED");
    const unsigned seed =
        env != nullptr ? static_cast<unsigned>(std::stoul(env)) : std::random_device{}() % 1000000;
    std::cout << "[ seed ] PGT_SEED=" << seed << "\n";
    return seed;
}

// A user-defined base type with the I/O and B-tree operators of `like`
// (bytea or int4: its functions under another name), with or without the
// equalimage support function that says its equal values are equal images.
void create_user_type(Conn& db, const std::string& t, const char* like, bool equal_image) {
    const std::string cmp = std::string(like) == "int4" ? "btint4cmp" : "byteacmp";
    const std::string pre = std::string(like) == "int4" ? "int4" : "bytea";
    std::string sql = "CREATE TYPE " + t + "; CREATE FUNCTION " + t + "_in(cstring) RETURNS " + t +
                      " LANGUAGE internal IMMUTABLE STRICT AS '" + pre + "in'; CREATE FUNCTION " +
                      t + "_out(" + t +
                      ") RETURNS cstring LANGUAGE internal IMMUTABLE STRICT AS '" + pre +
                      "out'; CREATE TYPE " + t + " (INPUT = " + t + "_in, OUTPUT = " + t +
                      "_out, LIKE = " + like + ");";
    const char* ops[][2] = {{"eq", "="}, {"lt", "<"}, {"le", "<="}, {"gt", ">"}, {"ge", ">="}};
    for (const auto& op : ops) {
        sql += "CREATE FUNCTION " + t + "_" + op[0] + "(" + t + ", " + t +
               ") RETURNS bool LANGUAGE internal IMMUTABLE STRICT AS '" + pre + op[0] +
               "'; CREATE OPERATOR " + op[1] + " (LEFTARG = " + t + ", RIGHTARG = " + t +
               ", FUNCTION = " + t + "_" + op[0] + ");";
    }
    sql += "CREATE FUNCTION " + t + "_cmp(" + t + ", " + t +
           ") RETURNS int LANGUAGE internal IMMUTABLE STRICT AS '" + cmp +
           "'; CREATE OPERATOR CLASS " + t + "_ops DEFAULT FOR TYPE " + t +
           " USING btree AS OPERATOR 1 <, OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, "
           "OPERATOR 5 >, FUNCTION 1 " +
           t + "_cmp(" + t + ", " + t + ")" +
           (equal_image ? ", FUNCTION 4 btequalimage(oid)" : "") + ";";
    db.exec(sql);
}

// --- golden vectors ---------------------------------------------------------------

TEST_F(RowIdentity, golden_vectors_through_sql_equal_the_document) {
    db->exec("CREATE TYPE mood AS ENUM ('happy', 'sad')");
    create_user_type(*db, "blob", "bytea", true);
    const auto doc = document_vectors();
    ASSERT_FALSE(doc.empty()) << "no vectors parsed from docs/row-identity-v2.md";
    std::set<std::string> families_checked;
    for (const auto& [id, hex] : doc) {
        SCOPED_TRACE(id);
        const std::string family = id.substr(0, id.find('.'));
        if (const auto f = kFieldSql.find(id); f != kFieldSql.end()) {
            EXPECT_EQ(field_hex(f->second), hex) << f->second;
            families_checked.insert(family);
        } else if (const auto i = kIdentitySql.find(id); i != kIdentitySql.end()) {
            EXPECT_EQ(db->scalar("SELECT encode(" + i->second + ", 'hex')"), hex) << i->second;
            families_checked.insert(family);
        } else {
            EXPECT_TRUE(kNotExpressible.count(id)) << "document vector without a SQL check: " << id;
        }
    }
    for (const auto& [id, hex] : doc) {
        EXPECT_TRUE(families_checked.count(id.substr(0, id.find('.'))))
            << "no vector of this family was checked through SQL: " << id;
    }
    for (const auto& [id, sql] : kFieldSql) {
        EXPECT_TRUE(doc.count(id)) << "SQL vector missing from the document: " << id;
    }
}

// --- setting independence -------------------------------------------------------

TEST_F(RowIdentity, identities_do_not_depend_on_session_settings) {
    db->exec(
        "CREATE TYPE mood AS ENUM ('happy', 'sad');"
        "CREATE TYPE pair AS (f float8, d date);"
        "CREATE TABLE v AS SELECT 1.5::float8 AS f8, 0.1::float4 AS f4, "
        "12345.6789::numeric AS n, '2024-02-29'::date AS d, '12:34:56.789'::time AS t, "
        "'2024-01-01 12:00:00.5+00'::timestamptz AS tz, '2024-01-01 12:00'::timestamp AS ts, "
        "'1 year 2 mons 3 days 04:05:06.7'::interval AS i, '\\x00ff'::bytea AS b, "
        "'{\"a\": [1.5, \"x\"], \"b\": null}'::jsonb AS j, '12:00+02'::timetz AS ttz, "
        "'x y'::text AS tx, ARRAY[1.5, 2.25]::numeric[] AS arr, "
        "'[2024-01-01,2024-02-01)'::daterange AS dr, 'sad'::mood AS m, "
        "'::ffff:1.2.3.4/64'::inet AS ip, ROW(1.5, '2024-01-01')::pair AS r");
    const std::vector<std::string> settings = {
        "SET DateStyle = 'ISO, MDY'; SET TimeZone = 'UTC'; SET IntervalStyle = 'postgres'; "
        "SET bytea_output = 'hex'; SET extra_float_digits = 1; SET lc_numeric = 'C'",
        "SET DateStyle = 'SQL, DMY'; SET TimeZone = 'America/New_York'; "
        "SET IntervalStyle = 'iso_8601'; SET bytea_output = 'escape'; "
        "SET extra_float_digits = -3; SET lc_numeric = 'C.utf8'",
        "SET DateStyle = 'German'; SET TimeZone = 'Asia/Kolkata'; "
        "SET IntervalStyle = 'sql_standard'; SET bytea_output = 'hex'; "
        "SET extra_float_digits = 3; SET lc_numeric = 'POSIX'",
    };
    std::vector<std::string> ids;
    for (const std::string& s : settings) {
        db->exec(s);
        ids.push_back(
            db->scalar("SELECT encode(pgtrickle.encode_row_id_v2('keyless_row', v), "
                       "'hex') || '/' || encode(pgtrickle.encode_row_id_v2('scan_key', "
                       "ROW(v.tz, v.i, v.f8, v.n, v.j)), 'hex') FROM v"));
    }
    EXPECT_EQ(ids[1], ids[0]) << settings[1];
    EXPECT_EQ(ids[2], ids[0]) << settings[2];
}

// --- equality agreement ---------------------------------------------------------

TEST_F(RowIdentity, equal_values_encode_identically_and_unequal_ones_differently) {
    // clang-format off
    const std::vector<std::pair<std::string, std::string>> pairs = {
        {"1.0::numeric", "1.00::numeric"}, {"0::numeric", "(-0.000)::numeric"},
        {"1::numeric", "1.0001::numeric"},
        {"'+0.0'::float8", "'-0.0'::float8"}, {"'0'::float4", "'-0'::float4"},
        {"'NaN'::float8", "('Infinity'::float8 - 'Infinity'::float8)"},
        {"'NaN'::float4", "('Infinity'::float4 - 'Infinity'::float4)"},
        {"'NaN'::float8", "'Infinity'::float8"},
        {"'ab'::char(5)", "'ab'::bpchar"}, {"'ab   '::char(5)", "'ab'::char(2)"},
        {"'ab'::text", "'ab '::text"},
        {"'2024-01-01 00:00+00'::timestamptz", "'2024-01-01 01:00+01'::timestamptz"},
        {"'2024-01-01 00:00+00'::timestamptz", "'2023-12-31 19:00-05'::timestamptz"},
        {"'2024-01-01 00:00+00'::timestamptz", "'2024-01-01 00:00+01'::timestamptz"},
        {"'1 mon'::interval", "'30 days'::interval"}, {"'1 mon'::interval", "'720 hours'::interval"},
        {"'1 day'::interval", "'24 hours'::interval"}, {"'1 mon'::interval", "'31 days'::interval"},
        {"'{\"a\":1,\"b\":2}'::jsonb", "'{\"b\":2,\"a\":1}'::jsonb"},
        {"'{\"a\":1,\"b\":2}'::jsonb", "'{\"a\":0,\"b\":2,\"a\":1}'::jsonb"},
        {"'{\"n\":1.0}'::jsonb", "'{\"n\":1}'::jsonb"}, {"'1'::jsonb", "'[1]'::jsonb"},
        {"'10.1.2.3/8'::inet::cidr", "'10.0.0.0/8'::cidr"},
        {"'10.1.2.3/8'::inet", "'10.0.0.0/8'::inet"},
        {"'[1,5)'::int4range", "'[1,4]'::int4range"}, {"'[1,5)'::int4range", "'(0,5)'::int4range"},
        {"ARRAY[1.0, 2.00]::numeric[]", "ARRAY[1, 2]::numeric[]"},
        {"'[0:1]={1,2}'::int4[]", "'{1,2}'::int4[]"}, {"'{}'::int4[]", "'{NULL}'::int4[]"},
    };
    // clang-format on
    for (const auto& [a, b] : pairs) {
        const Result r = db->exec("SELECT (" + a + ") = (" + b +
                                  "), pgtrickle.encode_row_id_v2('scan_key', ROW(" + a +
                                  ")) = pgtrickle.encode_row_id_v2('scan_key', ROW(" + b + "))");
        EXPECT_EQ(r.at(0, 1), r.at(0, 0)) << a << " vs " << b << ": SQL equality " << r.at(0, 0);
    }
}

// --- ordering -------------------------------------------------------------------

struct OrderCase {
    const char* name;
    const char* generator;  // a value per g in 1..2000, may use random()
    const char* extras;     // more values, a VALUES list body
    const char* collate;    // ORDER BY suffix
};

// clang-format off
const OrderCase kOrderCases[] = {
    {"int4", "(floor(random() * 4294967296) - 2147483648)::int8::int4",
     "(-2147483648), (2147483647), (0), (-1), (1)", ""},
    {"int8", "((random() - 0.5) * 1.8e19)::numeric::int8",
     "(-9223372036854775808), (9223372036854775807), (0), (-1), (1)", ""},
    {"float8", "(random() - 0.5) * 10 ^ (random() * 600 - 300)",
     "('Infinity'::float8), ('-Infinity'), ('NaN'), ('-0'), (0), (1e-320), (-1e-320)", ""},
    {"numeric", "round(((random() - 0.5) * 10 ^ (random() * 40 - 20))::numeric, (random() * 25)::int)",
     "('NaN'::numeric), ('Infinity'), ('-Infinity'), (0), (0.000), (-0.0001), (1e300), (-1e300), "
     "(1e-300), (1.0), (1.00)", ""},
    {"text", "(SELECT coalesce(string_agg(chr(CASE WHEN random() < 0.7 THEN 97 + (random() * 3)::int "
             "ELSE 160 + (random() * 3000)::int END), ''), '') FROM generate_series(1, (g % 7)))",
     "(''), ('a'), ('aa'), ('b')", " COLLATE \"C\""},
    {"timestamptz", "'2000-01-01 00:00+00'::timestamptz + (random() - 0.5) * interval '400 years'",
     "('infinity'::timestamptz), ('-infinity')", ""},
    {"interval", "make_interval(months => (random() * 2000 - 1000)::int, days => (random() * 20000 - 10000)::int, "
                 "secs => (random() - 0.5) * 1e7)",
     "('1 mon'::interval), ('30 days'), ('720 hours'), ('-1 microsecond'), ('0')", ""},
};
// clang-format on

TEST_F(RowIdentity, byte_order_of_identities_is_the_order_of_the_values) {
    const unsigned seed = test_seed();
    for (const OrderCase& c : kOrderCases) {
        SCOPED_TRACE(c.name);
        const std::string t = std::string("o_") + c.name;
        db->exec("SELECT setseed(" + std::to_string(seed / 1000000.0) + ")");
        db->exec("CREATE TABLE " + t + " AS SELECT " + c.generator +
                 " AS v FROM generate_series(1, 2000) g");
        db->exec("INSERT INTO " + t + " VALUES " + c.extras);
        db->exec("ALTER TABLE " + t + " ADD COLUMN id bytea");
        db->exec("UPDATE " + t + " SET id = pgtrickle.encode_row_id_v2('scan_key', ROW(v))");
        const std::string by_value = "array_agg(v ORDER BY v" + std::string(c.collate) + ")";
        EXPECT_EQ(db->scalar("SELECT " + by_value + " = array_agg(v ORDER BY id) FROM " + t), "t");
        // equal identities exactly for equal values, and never descending values
        EXPECT_EQ(db->scalar("SELECT count(*) FROM (SELECT v, id, lag(v) OVER w AS pv, "
                             "lag(id) OVER w AS pid FROM " +
                             t +
                             " WINDOW w AS (ORDER BY id)) s WHERE pid IS NOT NULL AND "
                             "(pv > v" +
                             c.collate + " OR (pid = id) <> (pv = v))"),
                  "0");
    }
}

// --- cross-check with the core encoder ---------------------------------------------

TEST_F(RowIdentity, stored_values_encode_like_the_core_encoder) {
    const unsigned seed = test_seed();
    db->exec("SELECT setseed(" + std::to_string(seed / 1000000.0) + ")");
    db->exec("SET extra_float_digits = 3");
    // A table: numerics are stored with 1-byte headers, so digits are unaligned.
    db->exec(
        "CREATE TABLE x AS SELECT g, round(((random() - 0.5) * 10 ^ (random() * 40 - "
        "20))::numeric, "
        "(random() * 25)::int) AS n, (random() - 0.5) * 10 ^ (random() * 40 - 20) AS f, "
        "md5(g::text) AS t FROM generate_series(1, 300) g");
    db->exec(
        "INSERT INTO x VALUES (1001, 1e300, 0, ''), (1002, -1e-300, 0, ''), "
        "(1003, 123456789012345678901234567890.1234567890123456789, 0, ''), "
        "(1004, 1.000000000000000000000000000000000000000000000000000000000000000000001, 0, ''), "
        "(1005, 1.5, 'NaN', ''), (1006, '-Infinity', '-Infinity', ''), "
        "(1007, 'Infinity', 'Infinity', '')");
    const Result r = db->exec(
        "SELECT n::text, f::text, t, encode(pgtrickle.encode_row_id_v2('scan_key', "
        "ROW(n, f, t, ARRAY[n], numrange(n, NULL))), 'hex') FROM x");
    ASSERT_EQ(r.size(), 307u);
    for (const Row& row : r.rows) {
        const DecimalNumeric n = parse_decimal(*row.at(0));
        const double f = std::strtod(row.at(1)->c_str(), nullptr);
        const std::string want = core_scan_key(5, [&](Encoder& e) {
            e.numeric(n.view());
            e.float8(f);
            e.text(*row.at(2));
            const ArrayDim dim{1, 1};
            e.begin_array(TypeTag::kNumeric, std::span(&dim, 1));
            e.numeric(n.view());
            e.end_array();
            e.begin_range(TypeTag::kNumeric, {.upper_infinite = true});
            e.numeric(n.view());
            e.end_range();
        });
        EXPECT_EQ(*row.at(3), want) << "numeric " << *row.at(0) << ", float8 " << *row.at(1);
    }
}

// --- framing ----------------------------------------------------------------------

TEST_F(RowIdentity, field_boundaries_and_nulls_are_unambiguous) {
    const std::vector<std::string> rows = {
        "ROW(1, 23)",
        "ROW(12, 3)",
        "ROW('1'::text, '23'::text)",
        "ROW('12'::text, '3'::text)",
        "ROW('a'::text, 'bc'::text)",
        "ROW('ab'::text, 'c'::text)",
        "ROW(NULL::text)",
        "ROW(''::text)",
        "ROW(0)",
        "ROW(NULL::int4)",
        "ROW(ROW(1, 2))",
        "ROW(1, 2)",
        "ROW()",
        "ROW(NULL::record)",
        "ROW(ROW(NULL::int4))",
        "ROW(ARRAY[]::int4[])",
        "ROW(ARRAY[NULL]::int4[])",
        "ROW(''::bytea, ''::bytea)",
        "ROW(''::bytea)",
    };
    std::vector<std::string> ids;
    for (const std::string& r : rows) {
        ids.push_back(id_hex(r));
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
        for (std::size_t j = 0; j < ids.size(); ++j) {
            if (i != j) {
                EXPECT_NE(ids[i].rfind(ids[j], 0), 0u)
                    << rows[j] << " is equal to or a byte prefix of " << rows[i];
            }
        }
    }
    EXPECT_NE(id_hex("ROW(1)", "scan_key"), id_hex("ROW(1)", "group_key"));
}

// --- probe --------------------------------------------------------------------------

TEST_F(RowIdentity, probe_is_the_identity_up_to_256_bytes_then_prefix_and_digest) {
    // 247 'a' make a 256-byte identity, 248 a 257-byte one.
    const std::string id = "pgtrickle.encode_row_id_v2('scan_key', ROW(repeat('a', %)))";
    auto with = [&](int n) {
        std::string s = id;
        return s.replace(s.find('%'), 1, std::to_string(n));
    };
    EXPECT_EQ(db->scalar("SELECT pgtrickle.row_probe_v1(" + with(1) + ") = " + with(1)), "t");
    EXPECT_EQ(db->scalar("SELECT length(" + with(247) + ") || ' ' || (pgtrickle.row_probe_v1(" +
                         with(247) + ") = " + with(247) + ")"),
              "256 true");
    for (int n : {248, 300, 5000}) {
        const Result r =
            db->exec("SELECT length(pgtrickle.row_probe_v1(" + with(n) +
                     ")), substring(pgtrickle.row_probe_v1(" + with(n) +
                     ") from 1 for 256) = substring(" + with(n) + " from 1 for 256), encode(" +
                     with(n) + ", 'hex'), encode(pgtrickle.row_probe_v1(" + with(n) + "), 'hex')");
        EXPECT_EQ(r.at(0, 0), "272") << n;
        EXPECT_EQ(r.at(0, 1), "t") << n;
        const auto bytes = from_hex(r.at(0, 2));
        ASSERT_TRUE(bytes.has_value());
        const Probe probe = row_probe_v1(*bytes);
        EXPECT_EQ(r.at(0, 3), hex_of(probe.bytes())) << n;
    }
    EXPECT_EQ(db->scalar("SELECT pgtrickle.row_probe_v1(NULL) IS NULL"), "t");
}

// --- rejections -----------------------------------------------------------------------

TEST_F(RowIdentity, unsupported_types_are_rejected_naming_field_and_type) {
    SqlError e = db->error_of("SELECT pgtrickle.encode_row_id_v2('scan_key', ROW(point(1, 2)))");
    EXPECT_EQ(e.sqlstate, "0A000");
    EXPECT_EQ(e.message, "field \"f1\" of type point cannot be part of a row identity");
    EXPECT_NE(e.detail.find("point"), std::string::npos) << e.detail;

    e = db->error_of("SELECT pgtrickle.encode_row_id_v2('scan_key', ROW(1, ARRAY[point(1, 2)]))");
    EXPECT_EQ(e.sqlstate, "0A000");
    EXPECT_EQ(e.message, "field \"f2\" of type point[] cannot be part of a row identity");
    EXPECT_EQ(e.detail, "Type point is not supported: type has no row identity V2 encoder.");

    e = db->error_of("SELECT pgtrickle.encode_row_id_v2('scan_key', ROW('{}'::json))");
    EXPECT_EQ(e.sqlstate, "0A000");
    EXPECT_NE(e.detail.find("jsonb"), std::string::npos) << e.detail;

    db->exec("CREATE TABLE p (a int, b point); INSERT INTO p VALUES (1, point(1, 2))");
    e = db->error_of("SELECT pgtrickle.encode_row_id_v2('keyless_row', p) FROM p");
    EXPECT_EQ(e.sqlstate, "0A000");
    EXPECT_EQ(e.message, "field \"b\" of type point cannot be part of a row identity");
}

TEST_F(RowIdentity, non_deterministic_collations_are_rejected) {
    if (db->scalar("SELECT count(*) FROM pg_collation WHERE collprovider = 'i'") == "0") {
        GTEST_SKIP() << "this server has no ICU collations, so none is non-deterministic";
    }
    db->exec(
        "CREATE COLLATION nd (provider = icu, locale = 'und-u-ks-level2', deterministic = false);"
        "CREATE COLLATION d (provider = icu, locale = 'und');"
        "CREATE TABLE tnd (k int, x text COLLATE nd); INSERT INTO tnd VALUES (1, 'a');"
        "CREATE TYPE ndrange AS RANGE (subtype = text, collation = nd);"
        "CREATE DOMAIN ndtext AS text COLLATE nd; CREATE TYPE ndpair AS (k int, x text COLLATE "
        "nd)");
    for (const std::string sql : {
             "SELECT pgtrickle.encode_row_id_v2('scan_key', ROW('a'::text COLLATE nd))",
             "SELECT pgtrickle.encode_row_id_v2('scan_key', ROW(ARRAY['a'::text COLLATE nd]))",
             "SELECT pgtrickle.encode_row_id_v2('keyless_row', tnd) FROM tnd",
             "SELECT pgtrickle.encode_row_id_v2('scan_key', ROW(ndrange('a', 'b')))",
             "SELECT pgtrickle.encode_row_id_v2('scan_key', ROW('a'::ndtext))",
             "SELECT pgtrickle.encode_row_id_v2('scan_key', ROW(ROW(1, 'a')::ndpair))",
         }) {
        SqlError e = db->error_of(sql);
        EXPECT_EQ(e.sqlstate, "0A000") << sql;
        EXPECT_NE(e.detail.find("collation \"nd\""), std::string::npos) << e.detail;
        EXPECT_NE(e.detail.find("non-deterministic"), std::string::npos) << e.detail;
    }
    EXPECT_EQ(db->scalar("SELECT pgtrickle.encode_row_id_v2('scan_key', ROW('a'::text COLLATE d)) "
                         "= pgtrickle.encode_row_id_v2('scan_key', ROW('a'::text COLLATE \"C\"))"),
              "t");
}

TEST_F(RowIdentity, stream_table_creation_rejects_identity_columns_without_encoder) {
    db->exec("CREATE TABLE src (id int PRIMARY KEY, p point, j json)");
    SqlError e = db->error_of("SELECT pgtrickle.create_stream_table('st', 'SELECT p FROM src')");
    EXPECT_EQ(e.sqlstate, "0A000");
    EXPECT_EQ(e.message, "column \"p\" of type point cannot be part of a row identity");
    EXPECT_EQ(e.detail, "Type point is not supported: type has no row identity V2 encoder.");
    e = db->error_of(
        "SELECT pgtrickle.create_stream_table('st', 'SELECT ARRAY[j] AS js FROM src')");
    EXPECT_EQ(e.sqlstate, "0A000");
    EXPECT_EQ(e.message, "column \"js\" of type json[] cannot be part of a row identity");
    EXPECT_EQ(count("SELECT 1 FROM pgtrickle.pgt_stream_tables"), 0);
}

// name and "char" columns (catalog-like tables) in a row identity: a
// keyless select, a GROUP BY and a DISTINCT over them are maintained
// DIFFERENTIAL, equal to their queries after every change.
TEST_F(RowIdentity, name_and_char_columns_are_identities_of_maintained_tables) {
    db->exec(
        "CREATE TABLE objs (id int PRIMARY KEY, n name, k \"char\", v int);"
        "INSERT INTO objs SELECT g, 'obj_' || (g % 7), (ARRAY['r', 'v', 'i', ''])[g % 4 + 1]::"
        "\"char\", g % 5 FROM generate_series(1, 40) g;"
        "SELECT pgtrickle.create_stream_table('by_row', 'SELECT n, k, v FROM objs', "
        "refresh_mode => 'DIFFERENTIAL');"
        "SELECT pgtrickle.create_stream_table('by_name', 'SELECT n, count(*) AS c, sum(v) AS s "
        "FROM objs GROUP BY n', refresh_mode => 'DIFFERENTIAL');"
        "SELECT pgtrickle.create_stream_table('kinds', 'SELECT DISTINCT k, n FROM objs', "
        "refresh_mode => 'DIFFERENTIAL')");
    const std::vector<std::string> changes = {
        "UPDATE objs SET n = repeat('x', 63) WHERE id % 6 = 0",
        "UPDATE objs SET k = '' WHERE id % 5 = 1; DELETE FROM objs WHERE id % 9 = 0",
        "INSERT INTO objs VALUES (100, 'obj_1', 'r', 4), (101, 'new', 'm', 1)",
    };
    for (const std::string& change : changes) {
        db->exec(change);
        for (const char* st : {"by_row", "by_name", "kinds"}) {
            refresh(st);
            EXPECT_EQ(last_action(st), "DIFFERENTIAL") << st << " after " << change;
            EXPECT_MATCHES_QUERY(*db, st) << " after " << change;
        }
    }
}

TEST_F(RowIdentity, user_types_whose_equal_values_are_equal_images_are_identities) {
    create_user_type(*db, "blob", "bytea", true);
    create_user_type(*db, "qty", "int4", true);
    db->exec(
        "CREATE TABLE items (id int PRIMARY KEY, b blob, q qty, v int);"
        "INSERT INTO items SELECT g, ('\\x' || lpad(to_hex(g % 7), 2, '0'))::text::blob, (g % "
        "4)::text::qty, g % 5 FROM generate_series(1, 40) g;"
        "SELECT pgtrickle.create_stream_table('by_row', 'SELECT b, q, v FROM items', "
        "refresh_mode => 'DIFFERENTIAL');"
        "SELECT pgtrickle.create_stream_table('by_blob', 'SELECT b, q, count(*) AS c, sum(v) AS "
        "s FROM items GROUP BY b, q', refresh_mode => 'DIFFERENTIAL');"
        "SELECT pgtrickle.create_stream_table('blobs', 'SELECT DISTINCT b FROM items', "
        "refresh_mode => 'IMMEDIATE');"
        "SELECT pgtrickle.create_stream_table('blob_set', 'SELECT DISTINCT b, q FROM items', "
        "refresh_mode => 'DIFFERENTIAL');"
        // A key of the type: the two tables' keys selected, joined on it.
        "CREATE TABLE tags (b blob PRIMARY KEY, label text);"
        "INSERT INTO tags SELECT DISTINCT b, 'tag ' || v FROM items WHERE id < 4;"
        "SELECT pgtrickle.create_stream_table('tagged', 'SELECT i.id, t.b, t.label FROM items i "
        "JOIN tags t ON t.b = i.b', refresh_mode => 'DIFFERENTIAL')");
    // Their keys are matched with the type's own `=`, which the refresh's
    // pinned search_path does not reach by name.
    EXPECT_NE(db->scalar("SELECT delta_program::text FROM pgtrickle.pgt_stream_tables WHERE "
                         "pgt_name = 'blob_set'")
                  .find("OPERATOR(public.=)"),
              std::string::npos);
    EXPECT_EQ(db->scalar("SELECT row_identity_domain || ':' || array_to_string("
                         "row_identity_columns, ',') FROM pgtrickle.pgt_stream_tables WHERE "
                         "pgt_name = 'by_blob'"),
              "group_key:b,q");
    const std::vector<std::string> changes = {
        "UPDATE items SET b = ('\\x' || repeat('ab', 3000))::text::blob WHERE id % 6 = 0",
        "UPDATE items SET q = '9'::text::qty WHERE id % 5 = 1; DELETE FROM items WHERE id % 9 = "
        "0",
        "INSERT INTO items VALUES (100, '\\x01'::text::blob, '1'::text::qty, 4), (101, NULL, "
        "NULL, 1)",
        "UPDATE tags SET label = label || '+'; INSERT INTO tags VALUES ('\\x0102'::blob, 'one'); "
        "UPDATE items SET v = v + 1, b = '\\x0102'::blob WHERE id = 2",
    };
    for (const std::string& change : changes) {
        db->exec(change);
        for (const char* st : {"by_row", "by_blob", "blobs", "blob_set", "tagged"}) {
            if (std::string(st) != "blobs") {
                refresh(st);
                EXPECT_EQ(last_action(st), "DIFFERENTIAL") << st << " after " << change;
            }
            EXPECT_MATCHES_QUERY(*db, st) << " after " << change;
        }
    }
    // Every grouping set's groups would be matched by a bare `=`: refused.
    try {
        db->exec(
            "SELECT pgtrickle.create_stream_table('rolled', 'SELECT b, q, count(*) AS c FROM "
            "items GROUP BY ROLLUP (b, q)', refresh_mode => 'DIFFERENTIAL')");
        FAIL() << "created";
    } catch (const SqlError& e) {
        EXPECT_EQ(e.sqlstate, "0A000") << e.what();
        EXPECT_NE(std::string(e.what()).find("equality is not pg_catalog's"), std::string::npos)
            << e.what();
    }
    // Without equalimage nothing says equal values look alike: a FULL
    // refresh, which matches rows by their images, maintains it (AUTO picks
    // it); DIFFERENTIAL and IMMEDIATE, which group by equality, name it.
    create_user_type(*db, "fuzzy", "bytea", false);
    db->exec(
        "ALTER TABLE items ADD COLUMN f fuzzy; UPDATE items SET f = ('\\x' || lpad(to_hex(id % "
        "3), 2, '0'))::text::fuzzy");
    for (const char* mode : {"DIFFERENTIAL", "IMMEDIATE"}) {
        const SqlError e = db->error_of(
            std::string("SELECT pgtrickle.create_stream_table('by_fuzzy', 'SELECT f, count(*) AS "
                        "c FROM items GROUP BY f', refresh_mode => '") +
            mode + "')");
        EXPECT_EQ(e.sqlstate, "0A000") << mode;
        EXPECT_NE(e.message.find("row identity over column \"f\" of type fuzzy, whose equal "
                                 "values can differ"),
                  std::string::npos)
            << e.message;
    }
    db->exec(
        "SELECT pgtrickle.create_stream_table('by_fuzzy', 'SELECT f, count(*) AS c FROM items "
        "GROUP BY f', refresh_mode => 'FULL');"
        "SELECT pgtrickle.create_stream_table('fuzzy_rows', 'SELECT f, v FROM items', "
        "refresh_mode => 'AUTO')");
    EXPECT_EQ(modes("fuzzy_rows"), "AUTO/FULL");
    db->exec(
        "UPDATE items SET f = '\\x0a'::text::fuzzy WHERE id % 4 = 0; DELETE FROM items "
        "WHERE id % 11 = 0");
    for (const char* st : {"by_fuzzy", "fuzzy_rows"}) {
        refresh(st);
        EXPECT_EQ(last_action(st), "FULL") << st;
        EXPECT_MATCHES_QUERY(*db, st);
    }
}

TEST_F(RowIdentity, null_and_unknown_arguments_raise_named_errors) {
    struct Case {
        const char* sql;
        const char* sqlstate;
        const char* message;
    };
    const Case cases[] = {
        {"SELECT pgtrickle.encode_row_id_v2(NULL, ROW(1))", "22004",
         "argument \"domain\" must not be null"},
        {"SELECT pgtrickle.encode_row_id_v2('scan_key', NULL)", "22004",
         "argument \"fields\" must not be null"},
        {"SELECT pgtrickle.encode_row_id_v2('nope', ROW(1))", "22023",
         "unknown row identity domain \"nope\""},
        {"SELECT pgtrickle.encode_row_id_v2('synthetic', ROW())", "22023",
         "row identity domain \"synthetic\" needs a discriminator"},
        {"SELECT pgtrickle.encode_row_id_v2('scan_key', 'lateral_inner_dummy', ROW())", "22023",
         "only the synthetic row identity domain takes a discriminator"},
        {"SELECT pgtrickle.encode_row_id_v2('synthetic', 'nope', ROW())", "22023",
         "unknown synthetic row identity discriminator \"nope\""},
        {"SELECT pgtrickle.encode_row_id_v2('synthetic', NULL, ROW())", "22004",
         "argument \"discriminator\" must not be null"},
    };
    for (const Case& c : cases) {
        SqlError e = db->error_of(c.sql);
        EXPECT_EQ(e.sqlstate, c.sqlstate) << c.sql;
        EXPECT_EQ(e.message, c.message) << c.sql;
    }
    EXPECT_NE(db->error_of(cases[2].sql).hint.find("scan_key, keyless_row"), std::string::npos);
}

// --- the plan cache -------------------------------------------------------------------

TEST_F(RowIdentity, one_call_site_serves_records_of_different_types) {
    const std::vector<std::string> got = column(
        "SELECT encode(pgtrickle.encode_row_id_v2('scan_key', r), 'hex') FROM "
        "(SELECT 1 AS k, ROW(1) AS r UNION ALL SELECT 2, ROW('x'::text) "
        "UNION ALL SELECT 3, ROW(2) UNION ALL SELECT 4, ROW('y'::text, 3)) s ORDER BY k");
    const std::vector<std::string> want = {
        core_scan_key(1, [](Encoder& e) { e.int4(1); }),
        core_scan_key(1, [](Encoder& e) { e.text("x"); }),
        core_scan_key(1, [](Encoder& e) { e.int4(2); }),
        hex_of([] {
            static Encoder e;
            e.begin(Domain::kScanKey, 2);
            e.text("y");
            e.int4(3);
            return e.end();
        }()),
    };
    EXPECT_EQ(got, want);
}

TEST_F(RowIdentity, alternating_and_nested_record_types_encode_every_row_correctly) {
    const std::vector<std::string> got = column(
        "SELECT encode(pgtrickle.encode_row_id_v2('scan_key', ROW(CASE WHEN g % 2 = 0 "
        "THEN ROW(g) ELSE ROW(g::text) END)), 'hex') FROM generate_series(1, 200) g ORDER BY g");
    ASSERT_EQ(got.size(), 200u);
    for (int g = 1; g <= 200; ++g) {
        const std::string want = core_scan_key(1, [&](Encoder& e) {
            e.begin_composite(1);
            if (g % 2 == 0) {
                e.int4(g);
            } else {
                e.text(std::to_string(g));
            }
            e.end_composite();
        });
        EXPECT_EQ(got[g - 1], want) << "g = " << g;
    }
    // A record holding an array of records of its own (anonymous) type.
    EXPECT_EQ(id_hex("ROW(ARRAY[ROW(NULL::record[])])"), core_scan_key(1, [](Encoder& e) {
                  const ArrayDim dim{1, 1};
                  e.begin_array(TypeTag::kComposite, std::span(&dim, 1));
                  e.begin_composite(1);
                  e.null(TypeTag::kArray);
                  e.end_composite();
                  e.end_array();
              }));
}

TEST_F(RowIdentity, domains_enums_and_table_rows_use_their_stored_values) {
    db->exec(
        "CREATE DOMAIN posint AS int4 CHECK (VALUE > 0);"
        "CREATE TYPE mood AS ENUM ('happy', 'sad'); CREATE TYPE size AS ENUM ('s', 'm', 'l');"
        "CREATE TYPE pair AS (a posint, b mood);"
        "CREATE TABLE w (k int, s size, p pair, dropped int, t text);"
        "ALTER TABLE w DROP COLUMN dropped;"
        "INSERT INTO w VALUES (1, 'm', ROW(5, 'sad'), 'x')");
    EXPECT_EQ(id_hex("ROW(5::posint)"), id_hex("ROW(5::int4)"));
    EXPECT_EQ(db->scalar("SELECT encode(pgtrickle.encode_row_id_v2('keyless_row', w), 'hex') "
                         "FROM w"),
              hex_of([] {
                  static Encoder e;
                  e.begin(Domain::kKeylessRow, 4);
                  e.int4(1);
                  e.enum_label("m");
                  e.begin_composite(2);
                  e.int4(5);
                  e.enum_label("sad");
                  e.end_composite();
                  e.text("x");
                  return e.end();
              }()));
    EXPECT_EQ(id_hex("ROW(ARRAY['happy', 'sad']::mood[], 'l'::size)"),
              core_scan_key(2, [](Encoder& e) {
                  const ArrayDim dim{2, 1};
                  e.begin_array(TypeTag::kEnum, std::span(&dim, 1));
                  e.enum_label("happy");
                  e.enum_label("sad");
                  e.end_array();
                  e.enum_label("l");
              }));
}

TEST_F(RowIdentity, toasted_and_compressed_values_encode_like_inline_ones) {
    db->exec(
        "CREATE TABLE big (t text, b bytea, j jsonb);"
        "ALTER TABLE big ALTER COLUMN b SET STORAGE EXTERNAL;"
        "INSERT INTO big SELECT repeat('ab', 50000), decode(repeat('00ff', 20000), 'hex'), "
        "(SELECT jsonb_object_agg('k' || i, i) FROM generate_series(1, 3000) i)");
    const std::string got = db->scalar(
        "SELECT encode(pgtrickle.encode_row_id_v2('scan_key', ROW(t, b)), 'hex') "
        "FROM big");
    std::string bytes;
    for (int i = 0; i < 20000; ++i) {
        bytes += std::string("\0\xff", 2);
    }
    std::string text;
    for (int i = 0; i < 50000; ++i) {
        text += "ab";
    }
    EXPECT_EQ(got, core_scan_key(2, [&](Encoder& e) {
                  e.text(text);
                  e.bytea(bytes);
              }));
    EXPECT_EQ(db->scalar("SELECT pgtrickle.encode_row_id_v2('scan_key', ROW(j)) = "
                         "pgtrickle.encode_row_id_v2('scan_key', ROW(j::text::jsonb)) FROM big"),
              "t");
}

}  // namespace
}  // namespace pgt::e2e
