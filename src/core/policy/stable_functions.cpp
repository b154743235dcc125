// The list behind stable_use(): PostgreSQL 15's pg_catalog functions marked
// STABLE whose only instability is a pinned setting.
// Invariant: sorted within each table (binary search); a signature is
// spelled as regprocedure prints it.
#include "core/policy/stable_functions.hpp"

#include <algorithm>
#include <array>

namespace pgt::policy {

namespace {

// Date, time and time zone arithmetic, comparisons across timestamp and
// timestamptz, their casts and output (TimeZone, DateStyle, IntervalStyle),
// money (lc_monetary), to_char and friends (lc_numeric, lc_time), text
// search with the default configuration. Left out on purpose: age() of one
// argument and timetz(time), timezone(text,time with time zone) (the
// current date), the input functions of date and timestamp types ('now',
// 'today'), catalog and statistics readers, now() and its kin.
constexpr std::array<std::string_view, 79> kSettingsOnly = {
    "\"numeric\"(money)",
    "\"overlaps\"(timestamp with time zone,interval,timestamp with time zone,interval)",
    "\"overlaps\"(timestamp with time zone,interval,timestamp with time zone,timestamp with time "
    "zone)",
    "\"overlaps\"(timestamp with time zone,timestamp with time zone,timestamp with time "
    "zone,interval)",
    "\"time\"(timestamp with time zone)",
    "\"timestamp\"(timestamp with time zone)",
    "cash_out(money)",
    "date(timestamp with time zone)",
    "date_cmp_timestamptz(date,timestamp with time zone)",
    "date_eq_timestamptz(date,timestamp with time zone)",
    "date_ge_timestamptz(date,timestamp with time zone)",
    "date_gt_timestamptz(date,timestamp with time zone)",
    "date_le_timestamptz(date,timestamp with time zone)",
    "date_lt_timestamptz(date,timestamp with time zone)",
    "date_ne_timestamptz(date,timestamp with time zone)",
    "date_out(date)",
    "date_part(text,timestamp with time zone)",
    "date_trunc(text,timestamp with time zone)",
    "date_trunc(text,timestamp with time zone,text)",
    "interval_out(interval)",
    "interval_pl_timestamptz(interval,timestamp with time zone)",
    "make_timestamptz(integer,integer,integer,integer,integer,double precision)",
    "make_timestamptz(integer,integer,integer,integer,integer,double precision,text)",
    "money(bigint)",
    "money(integer)",
    "money(numeric)",
    "phraseto_tsquery(text)",
    "plainto_tsquery(text)",
    "timestamp_cmp_timestamptz(timestamp without time zone,timestamp with time zone)",
    "timestamp_eq_timestamptz(timestamp without time zone,timestamp with time zone)",
    "timestamp_ge_timestamptz(timestamp without time zone,timestamp with time zone)",
    "timestamp_gt_timestamptz(timestamp without time zone,timestamp with time zone)",
    "timestamp_le_timestamptz(timestamp without time zone,timestamp with time zone)",
    "timestamp_lt_timestamptz(timestamp without time zone,timestamp with time zone)",
    "timestamp_ne_timestamptz(timestamp without time zone,timestamp with time zone)",
    "timestamp_out(timestamp without time zone)",
    "timestamptz(date)",
    "timestamptz(date,time without time zone)",
    "timestamptz(timestamp without time zone)",
    "timestamptz_cmp_date(timestamp with time zone,date)",
    "timestamptz_cmp_timestamp(timestamp with time zone,timestamp without time zone)",
    "timestamptz_eq_date(timestamp with time zone,date)",
    "timestamptz_eq_timestamp(timestamp with time zone,timestamp without time zone)",
    "timestamptz_ge_date(timestamp with time zone,date)",
    "timestamptz_ge_timestamp(timestamp with time zone,timestamp without time zone)",
    "timestamptz_gt_date(timestamp with time zone,date)",
    "timestamptz_gt_timestamp(timestamp with time zone,timestamp without time zone)",
    "timestamptz_le_date(timestamp with time zone,date)",
    "timestamptz_le_timestamp(timestamp with time zone,timestamp without time zone)",
    "timestamptz_lt_date(timestamp with time zone,date)",
    "timestamptz_lt_timestamp(timestamp with time zone,timestamp without time zone)",
    "timestamptz_mi_interval(timestamp with time zone,interval)",
    "timestamptz_ne_date(timestamp with time zone,date)",
    "timestamptz_ne_timestamp(timestamp with time zone,timestamp without time zone)",
    "timestamptz_out(timestamp with time zone)",
    "timestamptz_pl_interval(timestamp with time zone,interval)",
    "timetz(timestamp with time zone)",
    "to_char(bigint,text)",
    "to_char(double precision,text)",
    "to_char(integer,text)",
    "to_char(interval,text)",
    "to_char(numeric,text)",
    "to_char(real,text)",
    "to_char(timestamp with time zone,text)",
    "to_char(timestamp without time zone,text)",
    "to_date(text,text)",
    "to_number(text,text)",
    "to_timestamp(text,text)",
    "to_tsquery(text)",
    "to_tsvector(json)",
    "to_tsvector(jsonb)",
    "to_tsvector(text)",
    "ts_headline(json,tsquery)",
    "ts_headline(json,tsquery,text)",
    "ts_headline(jsonb,tsquery)",
    "ts_headline(jsonb,tsquery,text)",
    "ts_headline(text,tsquery)",
    "ts_headline(text,tsquery,text)",
    "websearch_to_tsquery(text)",
};

// STABLE only because they call their arguments' output functions.
constexpr std::array<std::string_view, 36> kArgumentOutputs = {
    "anyarray_out(anyarray)",
    "anycompatiblearray_out(anycompatiblearray)",
    "anycompatiblemultirange_out(anycompatiblemultirange)",
    "anycompatiblerange_out(anycompatiblerange)",
    "anyenum_out(anyenum)",
    "anymultirange_out(anymultirange)",
    "anyrange_out(anyrange)",
    "anytextcat(anynonarray,text)",
    "array_out(anyarray)",
    "array_to_json(anyarray)",
    "array_to_json(anyarray,boolean)",
    "array_to_string(anyarray,text)",
    "array_to_string(anyarray,text,text)",
    "concat(\"any\")",
    "concat_ws(text,\"any\")",
    "enum_out(anyenum)",
    "format(text)",
    "format(text,\"any\")",
    "json_build_array(\"any\")",
    "json_build_array()",
    "json_build_object(\"any\")",
    "json_build_object()",
    "jsonb_build_array(\"any\")",
    "jsonb_build_array()",
    "jsonb_build_object(\"any\")",
    "jsonb_build_object()",
    "multirange_out(anymultirange)",
    "quote_literal(anyelement)",
    "quote_nullable(anyelement)",
    "range_out(anyrange)",
    "record_out(record)",
    "row_to_json(record)",
    "row_to_json(record,boolean)",
    "textanycat(text,anynonarray)",
    "to_json(anyelement)",
    "to_jsonb(anyelement)",
};

template <std::size_t N>
bool listed(const std::array<std::string_view, N>& table, std::string_view signature) {
    return std::binary_search(table.begin(), table.end(), signature);
}

}  // namespace

StableUse stable_use(std::string_view signature) {
    if (listed(kSettingsOnly, signature)) {
        return StableUse::kSettingsOnly;
    }
    if (listed(kArgumentOutputs, signature)) {
        return StableUse::kArgumentOutputs;
    }
    return StableUse::kUnknown;
}

}  // namespace pgt::policy
