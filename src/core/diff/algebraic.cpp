// Algebraic aggregate delta SQL (see algebraic.hpp for the picture).
// Invariant: every condition that can be NULL is folded to true/false
// before it decides between the algebraic and the recomputed path, so a
// touched group takes exactly one of them.
#include "core/diff/algebraic.hpp"
#include "core/sql/names.hpp"

#include <string>
#include <vector>

#include "core/diff/apply.hpp"
#include "core/diff/group_rescan.hpp"
#include "core/diff/join_region.hpp"
#include "core/diff/scale_state.hpp"
#include "core/diff/scan_delta.hpp"
#include "core/diff/slots.hpp"
#include "core/error.hpp"

namespace pgt::diff {

namespace {
// Names of sql/names.hpp the statements below use.
const std::string kRowId = sql::kRowIdColumn;
const std::string kSign = sql::kSignColumn;
const std::string kWeight = sql::kWeightColumn;
}  // namespace

namespace {

using ir::AggKind;
using ir::AlgebraicAgg;

std::string n(std::size_t i) {
    return std::to_string(i + 1);
}

std::string op(const char* o) {
    return std::string(" OPERATOR(pg_catalog.") + o + ") ";
}

bool summed(const AlgebraicAgg& x) {
    return x.kind == AggKind::kSum || x.kind == AggKind::kAvg;
}

// A numeric sum whose display scale depends on its inputs' values: kept
// by numeric_scale_state per input (a fixed scale needs only the count).
bool tracked_scale(const AlgebraicAgg& x) {
    return summed(x) && x.numeric && x.fixed_scale < 0;
}

// The packed scale state (scale_state.hpp) of `count` inputs of fixed
// scale s: 0 when there are none, as numeric_scale_state starts.
std::string fixed_scale_state(const AlgebraicAgg& x, const std::string& count) {
    return "CASE WHEN " + count + " = 0 THEN 0::pg_catalog.int8 ELSE " +
           std::to_string(static_cast<int64_t>(x.fixed_scale) * kScaleUnit) +
           "::pg_catalog.int8 OPERATOR(pg_catalog.+) " + count + " END";
}

// COUNT(x), or COUNT(*) FILTER (...): counts its non-NULL argument.
bool counts_argument(const AlgebraicAgg& x) {
    return x.kind == AggKind::kCount || (x.kind == AggKind::kCountStar && !x.arg.empty());
}

const std::string kUnit = std::to_string(kScaleUnit);

// Whether grouping key j's equal values may look different.
bool key_unlike(const ir::AlgebraicGroup& a, std::size_t j) {
    return j >= a.key_alike.size() || !a.key_alike[j];
}

// The stored column holding aggregate i's current value ("" when none:
// a SUM/AVG inside an output expression lives in its sums).
std::string stored_value(const ir::AlgebraicGroup& a, std::size_t i) {
    const AlgebraicAgg& x = a.aggs[i];
    if (x.output >= 0) {
        return a.group.scan.outputs.at(static_cast<std::size_t>(x.output)).name;
    }
    return summed(x) ? "" : "__pgt_v" + n(i);
}

// The aggregate call over its argument (as the defining query has it).
std::string agg_call(const AlgebraicAgg& x) {
    const char* f = x.kind == AggKind::kSum   ? "pg_catalog.sum("
                    : x.kind == AggKind::kAvg ? "pg_catalog.avg("
                    : x.kind == AggKind::kMin ? "pg_catalog.min("
                    : x.kind == AggKind::kMax ? "pg_catalog.max("
                                              : "pg_catalog.count(";
    return f + (x.arg.empty() ? std::string("*") : x.arg) + ")";
}

const std::string& output_template(const ir::AlgebraicGroup& a, std::size_t p) {
    static const std::string none;
    return p < a.output_templates.size() ? a.output_templates[p] : none;
}

bool any_key_unlike(const ir::AlgebraicGroup& a) {
    for (std::size_t j = 0; j < a.group.group_outputs.size(); j++) {
        if (key_unlike(a, j)) {
            return true;
        }
    }
    return false;
}

// d: the weight, grouping values and aggregate arguments of every netted
// image that passes WHERE.
std::string d_cte(const ir::AlgebraicGroup& a) {
    const ir::ScanFilterProject& s = a.group.scan;
    std::vector<std::string> cols{s.alias + "." + kSign + " AS " + kWeight};
    for (std::size_t j = 0; j < a.group.group_outputs.size(); j++) {
        cols.push_back(s.outputs.at(static_cast<std::size_t>(a.group.group_outputs[j])).expr +
                       " AS " + sql::key_column(j));
    }
    for (std::size_t i = 0; i < a.aggs.size(); i++) {
        if (!a.aggs[i].arg.empty()) {
            cols.push_back(a.aggs[i].arg + " AS " + sql::argument_column(i));
        }
    }
    // OFFSET 0 keeps d a subquery of its own: each argument is computed once
    // per image, not once per aggregate call that reads it (q01's
    // price * (1 - discount) was multiplied six times per image).
    return "d AS (SELECT " + join(cols, ", ") + " FROM src " + s.alias +
           (s.predicate.empty() ? "" : " WHERE " + s.predicate) + " OFFSET 0)";
}

// dg: per touched group, what the change adds and removes. unit_weights:
// every weight is +1 or -1 (images not netted), so a signed sum is the sum
// of the inserted minus the sum of the deleted (no multiplication per row).
std::string dg_cte(const ir::AlgebraicGroup& a, bool unit_weights) {
    std::vector<std::string> keys, cols;
    for (std::size_t j = 0; j < a.group.group_outputs.size(); j++) {
        keys.push_back("d." + sql::key_column(j));
    }
    cols = keys;
    const std::string w = "d." + kWeight;
    cols.push_back("pg_catalog.sum(" + w + ")::pg_catalog.int8 AS __pgt_dc");
    for (std::size_t j = 0; j < keys.size(); j++) {
        if (key_unlike(a, j)) {
            cols.push_back("pg_catalog.min((" + keys[j] + ")::pg_catalog.text) AS __pgt_kmin" +
                           n(j));
            cols.push_back("pg_catalog.max((" + keys[j] + ")::pg_catalog.text) AS __pgt_kmax" +
                           n(j));
        }
    }
    for (std::size_t i = 0; i < a.aggs.size(); i++) {
        const AlgebraicAgg& x = a.aggs[i];
        // Aggregates over the same argument (sum(q) and avg(q)) read one
        // column, so PostgreSQL shares their transition states.
        std::size_t same = i;
        for (std::size_t k = 0; k < i; k++) {
            if (!x.arg.empty() && a.aggs[k].arg == x.arg) {
                same = k;
                break;
            }
        }
        const std::string v = "d." + sql::argument_column(same);
        if (counts_argument(x) || summed(x)) {
            cols.push_back("pg_catalog.sum(" + w + ") FILTER (WHERE " + v +
                           " IS NOT NULL)::pg_catalog.int8 AS __pgt_dn" + n(i));
        }
        if (summed(x) && unit_weights) {
            auto part = [&](const char* cmp) {
                return "COALESCE(pg_catalog.sum((" + v + ")::pg_catalog.numeric) FILTER (WHERE " +
                       w + " " + cmp + " 0), 0)";
            };
            cols.push_back(part(">") + op("-") + part("<") + " AS __pgt_ds" + n(i));
        } else if (summed(x)) {
            cols.push_back("pg_catalog.sum((" + v + ")::pg_catalog.numeric" + op("*") + "(" + w +
                           ")::pg_catalog.numeric) AS __pgt_ds" + n(i));
        }
        // A NaN or ±Infinity input makes the change's sum NaN or ±Infinity
        // (m tests the sum once per group, not every input).
        if (tracked_scale(x)) {
            cols.push_back("pgtrickle.numeric_scale_state(" + v + ", " + w + ") FILTER (WHERE " +
                           w + " > 0) AS __pgt_si" + n(i));
            cols.push_back("pgtrickle.numeric_scale_state(" + v + ", - " + w + ") FILTER (WHERE " +
                           w + " < 0) AS __pgt_sd" + n(i));
        }
        if (x.kind == AggKind::kMin || x.kind == AggKind::kMax) {
            std::string f = x.kind == AggKind::kMin ? "pg_catalog.min(" : "pg_catalog.max(";
            cols.push_back(f + v + ") FILTER (WHERE " + w + " > 0) AS __pgt_mi" + n(i));
            cols.push_back(f + v + ") FILTER (WHERE " + w + " < 0) AS __pgt_md" + n(i));
        }
    }
    return "dg AS (SELECT " + join(cols, ", ") + " FROM d" +
           (keys.empty() ? "" : " GROUP BY " + join(keys, ", ")) + ")";
}

// j: dg with its identity and the stored row's state (NULL: not stored).
std::string j_cte(const ir::AlgebraicGroup& a, const ir::IdentityTarget& t) {
    std::vector<std::string> fields;
    for (std::size_t j = 0; j < a.group.group_outputs.size(); j++) {
        fields.push_back("dg." + sql::key_column(j));
    }
    std::vector<std::string> cols{"dk.*", "t.ctid AS __pgt_tid", "t.__pgt_count AS __pgt_c0"};
    for (std::size_t j = 0; j < a.group.group_outputs.size(); j++) {
        if (key_unlike(a, j)) {
            cols.push_back(
                "(t." +
                a.group.scan.outputs.at(static_cast<std::size_t>(a.group.group_outputs[j])).name +
                ")::pg_catalog.text AS __pgt_kt" + n(j));
        }
    }
    if (any_key_unlike(a)) {
        cols.push_back("t.__pgt_mixed AS __pgt_mixed0");
    }
    for (std::size_t i = 0; i < a.aggs.size(); i++) {
        const AlgebraicAgg& x = a.aggs[i];
        if (!stored_value(a, i).empty()) {
            cols.push_back("t." + stored_value(a, i) + " AS __pgt_o" + n(i));
        }
        if (summed(x)) {
            cols.push_back("t.__pgt_n" + n(i) + " AS __pgt_n0_" + n(i));
            cols.push_back("t.__pgt_s" + n(i) + " AS __pgt_s0_" + n(i));
        }
        if (tracked_scale(x)) {
            cols.push_back("t.__pgt_sc" + n(i) + " AS __pgt_sc0_" + n(i));
        }
    }
    return "dk AS (SELECT dg.*, " + row_id_expression(t.domain, fields) +
           " AS __pgt_id FROM dg), j AS (SELECT " + join(cols, ", ") + " FROM dk LEFT JOIN " +
           t.table + " t ON " + id_match("t", "dk") + ")";
}

// m: new count, non-NULL counts and sums; m2: new display scales.
std::string m_ctes(const ir::AlgebraicGroup& a) {
    std::vector<std::string> cols{
        "j.*", "COALESCE(j.__pgt_c0, 0)" + op("+") + "COALESCE(j.__pgt_dc, 0) AS __pgt_c1"};
    std::vector<std::string> scales{"m.*"};
    for (std::size_t i = 0; i < a.aggs.size(); i++) {
        const AlgebraicAgg& x = a.aggs[i];
        if (summed(x)) {
            cols.push_back("COALESCE(j.__pgt_n0_" + n(i) + ", 0)" + op("+") +
                           "COALESCE(j.__pgt_dn" + n(i) + ", 0) AS __pgt_n1_" + n(i));
            cols.push_back("COALESCE(j.__pgt_s0_" + n(i) + ", 0)" + op("+") +
                           "COALESCE(j.__pgt_ds" + n(i) + ", 0) AS __pgt_s1_" + n(i));
        }
        if (summed(x) && x.numeric) {
            // NaN sorts above Infinity: outside (-Infinity, Infinity) is not finite.
            const std::string ds = "j.__pgt_ds" + n(i);
            cols.push_back("COALESCE(" + ds + op("<=") + "'-Infinity'::pg_catalog.numeric OR " +
                           ds + op(">=") + "'Infinity'::pg_catalog.numeric, false) AS __pgt_nf" +
                           n(i));
        }
        if (tracked_scale(x)) {
            scales.push_back("CASE WHEN m.__pgt_n1_" + n(i) +
                             " = 0 THEN 0::pg_catalog.int8 ELSE "
                             "pgtrickle.numeric_scale_merge(CASE WHEN m.__pgt_tid IS NULL THEN "
                             "0::pg_catalog.int8 ELSE m.__pgt_sc0_" +
                             n(i) + " END, m.__pgt_si" + n(i) + ", m.__pgt_sd" + n(i) +
                             ") END AS __pgt_sc1_" + n(i));
        } else if (summed(x) && x.numeric) {
            scales.push_back(fixed_scale_state(x, "m.__pgt_n1_" + n(i)) + " AS __pgt_sc1_" + n(i));
        }
    }
    return "m AS (SELECT " + join(cols, ", ") + " FROM j), m2 AS (SELECT " + join(scales, ", ") +
           " FROM m)";
}

// When the stored state cannot give the group's new values.
std::string rescan_condition(const ir::AlgebraicGroup& a) {
    std::vector<std::string> c{"(m2.__pgt_tid IS NOT NULL AND m2.__pgt_c0 IS NULL)",
                               "m2.__pgt_c1 < 0"};
    // A key that may look different for equal values: the stored row shows
    // one spelling; a group that has (or would get) several is recomputed,
    // so the row shows what a recomputation shows.
    for (std::size_t j = 0; j < a.group.group_outputs.size(); j++) {
        if (!key_unlike(a, j)) {
            continue;
        }
        const std::string lo = "m2.__pgt_kmin" + n(j), hi = "m2.__pgt_kmax" + n(j),
                          kt = "m2.__pgt_kt" + n(j);
        c.push_back("(CASE WHEN m2.__pgt_tid IS NULL THEN " + lo + " IS DISTINCT FROM " + hi +
                    " ELSE COALESCE(m2.__pgt_mixed0, true) OR " + lo + " IS DISTINCT FROM " + kt +
                    " OR " + hi + " IS DISTINCT FROM " + kt + " END)");
    }
    for (std::size_t i = 0; i < a.aggs.size(); i++) {
        const AlgebraicAgg& x = a.aggs[i];
        const std::string o = "m2.__pgt_o" + n(i);
        if (summed(x)) {
            c.push_back("m2.__pgt_n1_" + n(i) + " < 0");
        }
        if (summed(x) && x.numeric) {
            c.push_back("m2.__pgt_nf" + n(i));
        }
        if (tracked_scale(x)) {
            const std::string sc = "m2.__pgt_sc1_" + n(i);
            c.push_back("(m2.__pgt_n1_" + n(i) + " > 0 AND (" + sc + " IS NULL OR " + sc + op("%") +
                        kUnit + " = 0))");
        }
        if (x.kind == AggKind::kMin || x.kind == AggKind::kMax) {
            const std::string del = "m2.__pgt_md" + n(i);
            c.push_back("COALESCE(" + del + op(x.kind == AggKind::kMin ? "<=" : ">=") + o + ", " +
                        del + " IS NOT NULL)");
            if (!x.exact_ties) {
                c.push_back("COALESCE(m2.__pgt_mi" + n(i) + op("=") + o + ", false)");
            }
        }
    }
    return "(" + join(c, " OR ") + ")";
}

// The new value of aggregate i from the state in m2.
std::string agg_value(const ir::AlgebraicGroup& a, std::size_t i) {
    const AlgebraicAgg& x = a.aggs[i];
    const std::string o = "m2.__pgt_o" + n(i), cnt = "m2.__pgt_n1_" + n(i);
    std::string sum = "m2.__pgt_s1_" + n(i);
    if (tracked_scale(x)) {
        sum = "pg_catalog.round(" + sum + ", (m2.__pgt_sc1_" + n(i) + op("/") + kUnit +
              ")::pg_catalog.int4)";
    } else if (x.numeric) {
        sum = "pg_catalog.round(" + sum + ", " + std::to_string(x.fixed_scale) + ")";
    }
    switch (x.kind) {
        case AggKind::kCountStar:
            if (x.arg.empty()) {
                return "m2.__pgt_c1";
            }
            [[fallthrough]];
        case AggKind::kCount:
            return "COALESCE(" + o + ", 0)" + op("+") + "COALESCE(m2.__pgt_dn" + n(i) + ", 0)";
        case AggKind::kSum:
            return "CASE WHEN " + cnt + " = 0 THEN NULL ELSE (" + sum + ")::" + x.result_type +
                   " END";
        case AggKind::kAvg:
            return "CASE WHEN " + cnt + " = 0 THEN NULL ELSE " + sum + op("/") + "(" + cnt +
                   ")::pg_catalog.numeric END";
        case AggKind::kMin:
            return "LEAST(" + o + ", m2.__pgt_mi" + n(i) + ")";
        case AggKind::kMax:
            return "GREATEST(" + o + ", m2.__pgt_mi" + n(i) + ")";
    }
    throw Error(sqlstate::kInternalError, "unknown aggregate kind");
}

// The new value of output p from the state in m2.
std::string new_value(const ir::AlgebraicGroup& a, std::size_t p) {
    for (std::size_t j = 0; j < a.group.group_outputs.size(); j++) {
        if (static_cast<std::size_t>(a.group.group_outputs[j]) == p) {
            return "m2." + sql::key_column(j);
        }
    }
    if (!output_template(a, p).empty()) {
        return fill_slots(output_template(a, p), ir::agg_slot, a.aggs.size(),
                          [&](std::size_t i) { return agg_value(a, i); });
    }
    for (std::size_t i = 0; i < a.aggs.size(); i++) {
        if (a.aggs[i].output >= 0 && static_cast<std::size_t>(a.aggs[i].output) == p) {
            return agg_value(a, i);
        }
    }
    throw Error(sqlstate::kInternalError,
                "output " + std::to_string(p) + " is neither a grouping key nor an aggregate");
}

std::vector<std::string> aux_state(const ir::AlgebraicGroup& a) {
    std::vector<std::string> v{"r.__pgt_c1"};
    if (any_key_unlike(a)) {
        v.push_back("false");  // the algebraic path keeps only one-spelling groups
    }
    for (std::size_t i = 0; i < a.aggs.size(); i++) {
        if (a.aggs[i].output < 0 && !summed(a.aggs[i])) {
            v.push_back("r.__pgt_hv" + n(i));
        }
        if (summed(a.aggs[i])) {
            v.push_back("r.__pgt_n1_" + n(i));
            v.push_back("r.__pgt_s1_" + n(i));
        }
        if (summed(a.aggs[i]) && a.aggs[i].numeric) {
            v.push_back("r.__pgt_sc1_" + n(i));
        }
    }
    return v;
}

std::string image(const std::vector<std::string>& cols) {
    return "ROW(" + join(cols, ", ") + ")::pg_catalog.text";
}

}  // namespace

std::vector<AuxColumn> aux_columns(const ir::AlgebraicGroup& a) {
    std::vector<AuxColumn> out{{"__pgt_count", "pg_catalog.int8", "pg_catalog.count(*)"}};
    std::vector<std::string> spellings;
    for (std::size_t j = 0; j < a.group.group_outputs.size(); j++) {
        if (key_unlike(a, j)) {
            spellings.push_back(
                "pg_catalog.count(DISTINCT (" +
                a.group.scan.outputs.at(static_cast<std::size_t>(a.group.group_outputs[j])).expr +
                ")::pg_catalog.text) > 1");
        }
    }
    if (!spellings.empty()) {
        out.push_back({"__pgt_mixed", "pg_catalog.bool", "(" + join(spellings, " OR ") + ")"});
    }
    for (std::size_t i = 0; i < a.aggs.size(); i++) {
        const AlgebraicAgg& x = a.aggs[i];
        if (x.output < 0 && !summed(x)) {
            out.push_back({"__pgt_v" + n(i), x.value_type, agg_call(x)});
        }
        if (!summed(x)) {
            continue;
        }
        out.push_back({"__pgt_n" + n(i), "pg_catalog.int8", "pg_catalog.count(" + x.arg + ")"});
        out.push_back({"__pgt_s" + n(i), "pg_catalog.numeric",
                       "pg_catalog.sum((" + x.arg + ")::pg_catalog.numeric)"});
        if (tracked_scale(x)) {
            out.push_back({"__pgt_sc" + n(i), "pg_catalog.int8",
                           "pgtrickle.numeric_scale_state(" + x.arg + ", 1::pg_catalog.int8)"});
        } else if (x.numeric) {
            out.push_back({"__pgt_sc" + n(i), "pg_catalog.int8",
                           fixed_scale_state(x, "pg_catalog.count(" + x.arg + ")")});
        }
    }
    return out;
}

std::string algebraic_full_query(const ir::AlgebraicGroup& a) {
    const ir::ScanFilterProject& s = a.group.scan;
    std::vector<std::string> cols, keys;
    for (const ir::OutputColumn& o : s.outputs) {
        cols.push_back(o.expr + " AS " + o.name);
    }
    for (const AuxColumn& c : aux_columns(a)) {
        cols.push_back(c.expr + " AS " + c.name);
    }
    for (int p : a.group.group_outputs) {
        keys.push_back(s.outputs.at(static_cast<std::size_t>(p)).expr);
    }
    return "SELECT " + join(cols, ", ") + " FROM " + a.group.source_table + " " + s.alias +
           (s.predicate.empty() ? "" : " WHERE " + s.predicate) +
           (keys.empty() ? "" : " GROUP BY " + join(keys, ", "));
}

std::string algebraic_row_query_aggregate(const ir::AlgebraicGroup& a,
                                          const std::string& row_query) {
    std::vector<std::string> cols, keys, names;
    for (std::size_t j = 0; j < a.group.group_outputs.size(); j++) {
        keys.push_back("r." + sql::key_column(j));
        names.push_back(sql::key_column(j));
    }
    for (std::size_t i = 0; i < a.aggs.size(); i++) {
        if (!a.aggs[i].arg.empty()) {
            names.push_back(sql::argument_column(i));
        }
    }
    for (std::size_t p = 0; p < a.group.scan.outputs.size(); p++) {
        std::string e;
        for (std::size_t j = 0; j < a.group.group_outputs.size(); j++) {
            if (static_cast<std::size_t>(a.group.group_outputs[j]) == p) {
                e = keys[j];
            }
        }
        for (const AlgebraicAgg& x : a.aggs) {
            if (x.output >= 0 && static_cast<std::size_t>(x.output) == p) {
                e = agg_call(x);
            }
        }
        if (!output_template(a, p).empty()) {
            e = fill_slots(output_template(a, p), ir::agg_slot, a.aggs.size(),
                           [&](std::size_t i) { return agg_call(a.aggs[i]); });
        }
        if (e.empty()) {
            throw Error(
                sqlstate::kInternalError,
                "output " + std::to_string(p) + " is neither a grouping key nor an aggregate");
        }
        cols.push_back(e + " AS " + a.group.scan.outputs[p].name);
    }
    for (const AuxColumn& c : aux_columns(a)) {
        cols.push_back(c.expr + " AS " + c.name);
    }
    // count(*) alone over a join reads no column: no column list then.
    return "SELECT " + join(cols, ", ") + " FROM (" + row_query + ") r" +
           (names.empty() ? "" : " (" + join(names, ", ") + ")") +
           (keys.empty() ? "" : " GROUP BY " + join(keys, ", "));
}

namespace {

void check_shape(const ir::AlgebraicGroup& a, const ir::IdentityTarget& t) {
    const bool scalar = a.group.group_outputs.empty();
    if (scalar ? t.domain != rowid::Domain::kSynthetic
               : (t.domain != rowid::Domain::kGroupKey ||
                  t.columns.size() != a.group.group_outputs.size()) ||
                     !a.group.having.empty()) {
        throw Error(sqlstate::kInternalError,
                    "algebraic aggregates need a group_key identity over the grouping keys (or a "
                    "synthetic one without them) and no HAVING");
    }
}

// Everything after `d`: dg … r, the algebraic writes, then `keys` (the
// groups to recompute), `rescan` (CTEs defining f and g over keys), the
// rescan's writes and the result row.
std::string algebraic_tail(const ir::AlgebraicGroup& a, const ir::IdentityTarget& t,
                           const std::string& rescan, bool unit_weights = false) {
    const bool scalar = a.group.group_outputs.empty();
    std::vector<std::string> cols, vals, sets;
    for (std::size_t p = 0; p < a.group.scan.outputs.size(); p++) {
        cols.push_back(a.group.scan.outputs[p].name);
        // An output expression is computed only for groups that stay (the
        // query never divides by a vanished group's count of 0).
        vals.push_back(output_template(a, p).empty()
                           ? new_value(a, p)
                           : "CASE WHEN NOT m2.__pgt_rescan AND " +
                                 std::string(scalar ? "true" : "m2.__pgt_c1 > 0") + " THEN " +
                                 new_value(a, p) + " END");
    }
    std::vector<std::string> state = aux_state(a);
    std::vector<std::string> all_cols = cols, r_vals, t_vals;
    for (const AuxColumn& c : aux_columns(a)) {
        all_cols.push_back(c.name);
    }
    for (std::size_t p = 0; p < cols.size(); p++) {
        r_vals.push_back("r.__pgt_v" + n(p));
    }
    r_vals.insert(r_vals.end(), state.begin(), state.end());
    for (std::size_t k = 0; k < all_cols.size(); k++) {
        sets.push_back(all_cols[k] + " = " + r_vals[k]);
        t_vals.push_back("t." + all_cols[k]);
    }
    std::vector<std::string> v_cols{"m2.*"};
    for (std::size_t p = 0; p < vals.size(); p++) {
        v_cols.push_back(vals[p] + " AS __pgt_v" + n(p));
    }
    for (std::size_t i = 0; i < a.aggs.size(); i++) {
        if (a.aggs[i].output < 0 && !summed(a.aggs[i])) {
            v_cols.push_back(agg_value(a, i) + " AS __pgt_hv" + n(i));
        }
    }
    std::vector<std::string> key_cols;
    for (std::size_t j = 0; j < a.group.group_outputs.size(); j++) {
        key_cols.push_back("r." + sql::key_column(j));
    }
    const std::string live = scalar ? "true" : "r.__pgt_c1 > 0";
    // Joined on ctid (a TID scan per emptied group): "ctid = ANY (ARRAY(...))"
    // was planned as a sequential scan of the stream table for an estimated
    // 10 rows, 0.12 ms of a one-row change to a 1,000-group table.
    std::string del = scalar ? "SELECT 1 WHERE false"
                             : "DELETE FROM " + t.table + " t USING r WHERE t.ctid" + kEq +
                                   "r.__pgt_tid AND NOT r.__pgt_rescan AND r.__pgt_c1 = 0 "
                                   "RETURNING 1";
    auto count = [](const char* cte) {
        return std::string("(SELECT pg_catalog.count(*) FROM ") + cte + ")";
    };
    // Without rescan CTEs (rescan ""): the groups that would be recomputed
    // are left as they are and counted in a fourth column instead.
    const std::string tail =
        rescan.empty()
            ? " SELECT " + count("ains") + ", " + count("adel") + ", " + count("aupd") +
                  ", (SELECT pg_catalog.count(*) FROM r WHERE r.__pgt_rescan)"
            : ", keys AS (SELECT " + join(key_cols, ", ") + " FROM r WHERE r.__pgt_rescan), " +
                  rescan + rescan_apply_ctes(all_cols, t) + " SELECT " + count("ins") + op("+") +
                  count("ains") + ", " + count("del") + op("+") + count("adel") + ", " +
                  count("upd") + op("+") + count("aupd");
    return dg_cte(a, unit_weights) + ", " + j_cte(a, t) + ", " + m_ctes(a) +
           ", r0 AS (SELECT m2.*, " + rescan_condition(a) +
           " AS __pgt_rescan FROM m2), r AS (SELECT " + join(v_cols, ", ") +
           " FROM r0 m2), adel AS (" + del + "), aupd AS (UPDATE " + t.table + " t SET " +
           join(sets, ", ") + " FROM r WHERE t.ctid" + kEq +
           "r.__pgt_tid AND NOT r.__pgt_rescan AND " + live + " AND " + image(t_vals) +
           " IS DISTINCT FROM " + image(r_vals) + " RETURNING 1), ains AS (INSERT INTO " + t.table +
           " (" + join(all_cols, ", ") + ", " + kRowId + ") SELECT " + join(r_vals, ", ") +
           ", r.__pgt_id FROM r WHERE r.__pgt_tid IS NULL AND NOT " + "r.__pgt_rescan AND " + live +
           " RETURNING 1)" + tail;
}

}  // namespace

bool linear_aggregates(const ir::AlgebraicGroup& a) {
    for (const AlgebraicAgg& x : a.aggs) {
        if (x.kind == AggKind::kMin || x.kind == AggKind::kMax) {
            return false;
        }
    }
    return true;
}

std::string algebraic_group_sql(const ir::AlgebraicGroup& a, const ir::IdentityTarget& t,
                                bool netted, bool rescans) {
    check_shape(a, t);
    // MIN/MAX over every image (not netted) hold because a value that came
    // and went within the window shows as a deletion: one at or beyond the
    // stored extreme recomputes the group, one short of it was never the
    // extreme. Without rescans they need nothing else to go wrong.
    if (!rescans && !linear_aggregates(a)) {
        throw Error(sqlstate::kInternalError, "MIN/MAX need their groups' rescans");
    }
    if (!rescans) {
        return (netted ? window_source_ctes(a.group.scan)
                       : window_source_ctes_unnetted(a.group.scan)) +
               ", " + d_cte(a) + ", " + algebraic_tail(a, t, "", !netted);
    }
    // The recomputed groups: the same outputs and auxiliary columns.
    ir::GroupRescan full = a.group;
    for (const AuxColumn& c : aux_columns(a)) {
        full.scan.outputs.push_back({c.expr, c.name});
    }
    return (netted ? window_source_ctes(a.group.scan) : window_source_ctes_unnetted(a.group.scan)) +
           ", " + d_cte(a) + ", " + algebraic_tail(a, t, rescan_keyed_ctes(full, t), !netted);
}

std::vector<std::string> algebraic_d_columns(const ir::AlgebraicGroup& a) {
    std::vector<std::string> d_cols{kWeight};
    for (std::size_t j = 0; j < a.group.group_outputs.size(); j++) {
        d_cols.push_back(sql::key_column(j));
    }
    for (std::size_t i = 0; i < a.aggs.size(); i++) {
        if (!a.aggs[i].arg.empty()) {
            d_cols.push_back(sql::argument_column(i));
        }
    }
    return d_cols;
}

void algebraic_signed_main(DeltaProgram& p, const ir::AlgebraicGroup& a,
                           const ir::IdentityTarget& t, const std::string& ctes,
                           const std::string& row_query, const ir::JoinRegion& fresh) {
    check_shape(a, t);
    for (const AuxColumn& c : aux_columns(a)) {
        p.full_aux.push_back(c.name);
    }
    p.full_query = algebraic_row_query_aggregate(a, row_query);
    // Recomputed groups: the full query narrowed to their keys (only when
    // some group is recomputed: the filter is a one-time gate).
    ir::JoinRegion narrowed = fresh;
    narrowed.query = p.full_query;
    narrowed.whole_query.clear();
    p.main = "WITH " + ctes + ", " + algebraic_tail(a, t, region_rescan_ctes(narrowed, t) + " ");
}

DeltaProgram algebraic_join_program(const ir::AlgebraicJoin& aj, const ir::IdentityTarget& t) {
    const ir::AlgebraicGroup& a = aj.shape;
    check_shape(a, t);
    ir::JoinRegion region = aj.region;
    region.image_multiplicity = true;  // every copy of a changed row counts
    // Unnetted images (netted ones to fall back on) for sums and counts;
    // MIN/MAX need the committed states only.
    DeltaProgram p = join_region_program(region, t, !linear_aggregates(a));
    algebraic_signed_main(
        p, a, t, "d (" + join(algebraic_d_columns(a), ", ") + ") AS (" + kBranchesMarker + ")",
        aj.row_query, aj.region);
    return p;
}

}  // namespace pgt::diff
