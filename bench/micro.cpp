// Encoding throughput benchmark: for each key shape, SELECT count(expr) over
// a pre-built table, where expr is the V2 identity (with and without its
// probe) or the baseline text-cast + '|' join + xxh3_128, plus the bare scan.
// Invariant: all expressions of one shape read the same table in the same
// session with the same settings, interleaved round by round.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench.hpp"

namespace pgt::bench {

namespace {

struct Column {
    std::string name;
    std::string type;
    std::string fill;  // SQL expression over "g" (the generate_series value)
};

struct Shape {
    std::string label;
    std::string table;
    std::string domain;  // row identity domain
    std::vector<Column> cols;
};

std::vector<Shape> shapes() {
    const std::string md5g = "md5(\"g\"::text)";
    return {
        {"int8", "bench_int8", "scan_key", {{"k", "int8", "\"g\""}}},
        {"uuid", "bench_uuid", "scan_key", {{"u", "uuid", md5g + "::uuid"}}},
        {"int4, int4",
         "bench_int4x2",
         "scan_key",
         {{"a", "int4", "(\"g\" / 1000)::int4"}, {"b", "int4", "(\"g\" % 1000)::int4"}}},
        {"int4, short text",
         "bench_int4_text",
         "scan_key",
         {{"a", "int4", "(\"g\" % 1000)::int4"}, {"t", "text", "'customer-' || \"g\""}}},
        {"text 200B, text 200B",
         "bench_text200x2",
         "scan_key",
         {{"t1", "text", "left(repeat(" + md5g + ", 7), 200)"},
          {"t2", "text", "left(repeat(md5((-\"g\")::text), 7), 200)"}}},
        {"keyless 12 columns",
         "bench_keyless12",
         "keyless_row",
         {{"c_int4", "int4", "\"g\"::int4"},
          {"c_int8", "int8", "\"g\" * 1000003"},
          {"c_numeric", "numeric(12,2)", "round(\"g\" * 0.37, 2)"},
          {"c_text", "text", "'item ' || \"g\""},
          {"c_timestamptz", "timestamptz",
           "timestamptz '2024-01-01 00:00:00+00' + \"g\" * interval '1 second'"},
          {"c_bool", "bool", "\"g\" % 2 = 0"},
          {"c_date", "date", "date '2000-01-01' + (\"g\" % 10000)::int4"},
          {"c_float8", "float8", "\"g\" / 7.0"},
          {"c_uuid", "uuid", md5g + "::uuid"},
          {"c_varchar", "varchar(32)", "'v' || (\"g\" % 977)"},
          {"c_int2", "int2", "(\"g\" % 30000)::int2"},
          {"c_jsonb", "jsonb", "jsonb_build_object('id', \"g\", 'tag', 't' || (\"g\" % 10))"}}},
    };
}

std::string list(const Shape& s, const std::string& suffix) {
    std::string out;
    for (const Column& c : s.cols) {
        out += (out.empty() ? "" : ", ") + quote_ident(c.name) + suffix;
    }
    return out;
}

void build_table(Conn& c, const Shape& s, long long rows) {
    const std::string t = "\"public\"." + quote_ident(s.table);
    std::string defs, fills;
    for (const Column& col : s.cols) {
        defs += (defs.empty() ? "" : ", ") + quote_ident(col.name) + " " + col.type + " NOT NULL";
        fills += (fills.empty() ? "" : ", ") + col.fill;
    }
    c.exec("DROP TABLE IF EXISTS " + t);
    c.exec("CREATE TABLE " + t + " (" + defs + ") WITH (autovacuum_enabled = false)");
    c.exec("INSERT INTO " + t + " SELECT " + fills + " FROM generate_series(1::int8, " +
           std::to_string(rows) + "::int8) AS \"s\"(\"g\")");
    c.exec("VACUUM (FREEZE, ANALYZE) " + t);
}

struct Timings {
    std::vector<double> scan, row, v2_id, v2, base;
};

}  // namespace

void run_micro(const Options& opt) {
    std::unique_ptr<Conn> c = connect_retrying(opt.conninfo, 30);
    set_session(*c, false);
    const std::vector<Shape> all = shapes();

    std::printf("Building %zu tables of %lld rows ...\n", all.size(), opt.rows);
    std::fflush(stdout);
    for (const Shape& s : all) {
        build_table(*c, s, opt.rows);
    }
    c->exec("CHECKPOINT");

    std::printf(
        "\nEncoding throughput: SELECT count(expr) FROM <table of %lld rows>, median of %d "
        "runs\n(client wall time; one warm-up round first; jit = off, no parallel workers)\n"
        "  scan     = count(*)\n"
        "  ROW      = count(ROW(cols))   (building the record V2 takes, alone)\n"
        "  V2 id    = pgtrickle.encode_row_id_v2(domain, ROW(cols))\n"
        "  V2       = pgtrickle.row_probe_v1(V2 id)            (what a stream table stores)\n"
        "  baseline = bench_text_hash(array_to_string(ARRAY[col::text, ...], '|'))\n"
        "  raw      = baseline / V2;  net = (baseline - scan) / (V2 - scan)\n\n",
        opt.rows, opt.runs);
    const std::vector<std::size_t> w = {20, 7, 6, 8, 6, 11, 4, 4, 10};
    const std::vector<std::string> head = {"shape",       "scan ms", "ROW ms", "V2 id ms",  "V2 ms",
                                           "baseline ms", "raw",     "net",    "id/probe B"};
    std::string line;
    for (std::size_t i = 0; i < head.size(); i++) {
        line += pad(head[i], w[i], i != 0) + (i + 1 < head.size() ? " | " : "");
    }
    std::printf("%s\n%s\n", line.c_str(), std::string(line.size(), '-').c_str());
    std::fflush(stdout);

    for (const Shape& s : all) {
        const std::string t = "\"public\"." + quote_ident(s.table);
        const std::string id = "pgtrickle.encode_row_id_v2(" + quote_literal(s.domain) +
                               "::text, ROW(" + list(s, "") + "))";
        const std::string probe = "pgtrickle.row_probe_v1(" + id + ")";
        const std::string base = "\"public\".\"bench_text_hash\"(array_to_string(ARRAY[" +
                                 list(s, "::text") + "], '|'))";
        const std::string q_scan = "SELECT count(*) FROM " + t;
        const std::string q_row = "SELECT count(ROW(" + list(s, "") + ")) FROM " + t;
        const std::string q_id = "SELECT count(" + id + ") FROM " + t;
        const std::string q_v2 = "SELECT count(" + probe + ") FROM " + t;
        const std::string q_base = "SELECT count(" + base + ") FROM " + t;

        // Every expression must be non-NULL on every row, else count() lies.
        const std::string want = std::to_string(opt.rows);
        for (const std::string& q : {q_scan, q_row, q_id, q_v2, q_base}) {
            if (c->scalar(q) != want) {
                throw std::runtime_error("unexpected count from: " + q);
            }
        }
        Timings tm;
        for (int r = 0; r < opt.runs; r++) {
            tm.scan.push_back(c->timed_ms(q_scan));
            tm.row.push_back(c->timed_ms(q_row));
            tm.v2_id.push_back(c->timed_ms(q_id));
            tm.v2.push_back(c->timed_ms(q_v2));
            tm.base.push_back(c->timed_ms(q_base));
        }
        const double scan = median(tm.scan), v2_id = median(tm.v2_id), v2 = median(tm.v2),
                     b = median(tm.base);
        const Rows len = c->exec("SELECT avg(octet_length(" + id + "))::int8, avg(octet_length(" +
                                 probe + "))::int8 FROM " + t);
        const std::string id_bytes = len.at(0).at(0) + "/" + len.at(0).at(1);
        const std::vector<std::string> cells = {
            s.label,
            fixed(scan, 1),
            fixed(median(tm.row), 1),
            fixed(v2_id, 1),
            fixed(v2, 1),
            fixed(b, 1),
            fixed(b / v2, 2),
            fixed(v2 > scan ? (b - scan) / (v2 - scan) : 0.0, 2),
            id_bytes};
        line.clear();
        for (std::size_t i = 0; i < cells.size(); i++) {
            line += pad(cells[i], w[i], i != 0) + (i + 1 < cells.size() ? " | " : "");
        }
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
        c->exec("DROP TABLE " + t);
    }
    std::printf(
        "(id/probe B = average identity / probe length in bytes; an identity over 256 "
        "bytes has a 256 + 16 byte probe)\n");
}

}  // namespace pgt::bench
