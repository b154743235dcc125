// Locality benchmark (seed 000 §13): a stream-table-shaped table keyed by
// the V2 probe vs one keyed by a hashed bigint; changes arrive in source-key
// order and are applied as probe-index lookups with shared_buffers far below
// the index sizes. Reports shared-buffer reads, time and index sizes.
// Invariant: both sides start every measured statement from a freshly
// restarted server (empty shared_buffers) with identical plans and settings.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench.hpp"

namespace pgt::bench {

namespace {

const std::string kV2 = "\"public\".\"loc_v2\"";
const std::string kHashed = "\"public\".\"loc_hashed\"";
const std::string kV2Id = "pgtrickle.encode_row_id_v2('scan_key'::text, ROW(\"g\"))";
const std::string kHash = "\"public\".\"bench_text_hash_int8\"(\"g\"::text)";

// The number after the first `"key": ` at or after `from` in EXPLAIN JSON.
double json_number(const std::string& json, const std::string& key, std::size_t from = 0) {
    const std::string needle = "\"" + key + "\": ";
    const std::size_t at = json.find(needle, from);
    if (at == std::string::npos) {
        throw std::runtime_error("EXPLAIN output lacks " + key);
    }
    return std::strtod(json.c_str() + at + needle.size(), nullptr);
}

// Node types in plan order, joined by " > ".
std::string plan_shape(const std::string& json) {
    const std::string needle = "\"Node Type\": \"";
    std::string out;
    for (std::size_t at = json.find(needle); at != std::string::npos;
         at = json.find(needle, at + 1)) {
        const std::size_t b = at + needle.size();
        out += (out.empty() ? "" : " > ") + json.substr(b, json.find('"', b) - b);
    }
    return out;
}

struct Sample {
    double read = 0, hit = 0, dirtied = 0, wal = 0, exec_ms = 0, warm_ms = 0;
};

struct Side {
    std::string label;
    std::string lookup;  // SQL with the change list as $1 (and $2)
    std::string apply;
    std::vector<std::vector<std::string>> params;  // per run
    std::vector<Sample> lookups, applies;
    std::string lookup_plan, apply_plan;
};

double timed_exec(Conn& c, const std::string& sql, double* ms) {
    const auto t0 = std::chrono::steady_clock::now();
    c.exec(sql);
    *ms = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return *ms;
}

void setup(Conn& c, long long rows, std::vector<std::string>* notes) {
    const std::string n = std::to_string(rows);
    double s = 0;
    c.exec("SET maintenance_work_mem = '1GB'");
    c.exec("DROP TABLE IF EXISTS " + kV2 + ", " + kHashed);
    c.exec("CREATE TABLE " + kV2 +
           " (\"k\" int8 NOT NULL, \"payload\" text NOT NULL,"
           " \"__pgt_row_id\" bytea NOT NULL, \"__pgt_row_probe\" bytea GENERATED ALWAYS AS"
           " (pgtrickle.row_probe_v1(\"__pgt_row_id\")) STORED) WITH (autovacuum_enabled = false)");
    c.exec("CREATE TABLE " + kHashed +
           " (\"k\" int8 NOT NULL, \"payload\" text NOT NULL, \"__pgt_row_id\" int8 NOT NULL)"
           " WITH (autovacuum_enabled = false)");
    timed_exec(c,
               "INSERT INTO " + kV2 +
                   " (\"k\", \"payload\", \"__pgt_row_id\") SELECT \"g\", md5(\"g\"::text), " +
                   kV2Id + " FROM generate_series(1::int8, " + n + "::int8) AS \"s\"(\"g\")",
               &s);
    notes->push_back("load V2 table " + fixed(s, 1) + " s");
    timed_exec(c,
               "INSERT INTO " + kHashed + " SELECT \"g\", md5(\"g\"::text), " + kHash +
                   " FROM generate_series(1::int8, " + n + "::int8) AS \"s\"(\"g\")",
               &s);
    notes->push_back("load hashed table " + fixed(s, 1) + " s");
    timed_exec(c, "CREATE UNIQUE INDEX \"loc_v2_probe\" ON " + kV2 + " (\"__pgt_row_probe\")", &s);
    notes->push_back("V2 probe index " + fixed(s, 1) + " s");
    timed_exec(c, "CREATE UNIQUE INDEX \"loc_hashed_id\" ON " + kHashed + " (\"__pgt_row_id\")",
               &s);
    notes->push_back("hashed index " + fixed(s, 1) + " s");
    timed_exec(c, "VACUUM (FREEZE, ANALYZE) " + kV2 + ", " + kHashed, &s);
    notes->push_back("vacuum " + fixed(s, 1) + " s");
    c.exec("CHECKPOINT");
}

// Sizes in bytes: probe index, int8 index on k, hashed index, both heaps.
std::vector<long long> sizes(Conn& c) {
    c.exec("CREATE INDEX \"loc_v2_k_int8\" ON " + kV2 + " (\"k\")");
    const Rows r = c.exec(
        "SELECT pg_relation_size('\"public\".\"loc_v2_probe\"'),"
        " pg_relation_size('\"public\".\"loc_v2_k_int8\"'),"
        " pg_relation_size('\"public\".\"loc_hashed_id\"'),"
        " pg_relation_size('" +
        kV2 + "'), pg_relation_size('" + kHashed + "')");
    c.exec("DROP INDEX \"public\".\"loc_v2_k_int8\"");
    std::vector<long long> out;
    for (const std::string& v : r.at(0)) {
        out.push_back(std::stoll(v));
    }
    return out;
}

std::string row(const std::string& metric, double v2, double hashed, int decimals) {
    return pad(metric, 28, false) + " | " + pad(fixed(v2, decimals), 10) + " | " +
           pad(fixed(hashed, decimals), 11) + " | " +
           pad(hashed > 0 ? fixed(v2 / hashed, 2) : "-", 9);
}

}  // namespace

void run_locality(const Options& opt) {
    std::unique_ptr<Conn> c = connect_retrying(opt.conninfo, 30);
    set_session(*c, true);
    std::printf("Building the locality tables (%lld rows each) ...\n", opt.rows);
    std::fflush(stdout);
    std::vector<std::string> notes;
    setup(*c, opt.rows, &notes);
    const std::vector<long long> sz = sizes(*c);
    const std::string shared_buffers = c->scalar("SHOW shared_buffers");
    const std::string fpw = c->scalar("SHOW full_page_writes");

    Side v2{"V2 probe",
            "SELECT count(*) FROM unnest($1::bytea[]) AS \"c\"(\"probe\") JOIN " + kV2 +
                " AS \"s\" ON \"s\".\"__pgt_row_probe\" = \"c\".\"probe\"",
            "UPDATE " + kV2 +
                " AS \"s\" SET \"payload\" = \"s\".\"payload\" || '+' FROM"
                " unnest($1::bytea[], $2::bytea[]) AS \"c\"(\"probe\", \"id\")"
                " WHERE \"s\".\"__pgt_row_probe\" = \"c\".\"probe\""
                " AND \"s\".\"__pgt_row_id\" = \"c\".\"id\"",
            {},
            {},
            {},
            {},
            {}};
    Side hashed{
        "hashed int8",
        "SELECT count(*) FROM unnest($1::int8[]) AS \"c\"(\"h\") JOIN " + kHashed +
            " AS \"s\" ON \"s\".\"__pgt_row_id\" = \"c\".\"h\"",
        "UPDATE " + kHashed +
            " AS \"s\" SET \"payload\" = \"s\".\"payload\" || '+' FROM"
            " unnest($1::int8[]) AS \"c\"(\"h\") WHERE \"s\".\"__pgt_row_id\" = \"c\".\"h\"",
        {},
        {},
        {},
        {},
        {}};

    // Change lists, computed up front (no table is read): keys lo..hi ascending,
    // one contiguous range per run, ranges spread over the key space.
    for (int r = 0; r < opt.runs; r++) {
        const long long lo = 1 + (2LL * r + 1) * opt.rows / (2LL * opt.runs) - opt.changes / 2;
        const std::vector<std::string> range = {std::to_string(lo),
                                                std::to_string(lo + opt.changes - 1)};
        const std::string series = " FROM generate_series($1::int8, $2::int8) AS \"s\"(\"g\")";
        const Rows p = c->exec("SELECT array_agg(pgtrickle.row_probe_v1(" + kV2Id +
                                   ") ORDER BY \"g\")::text, array_agg(" + kV2Id +
                                   " ORDER BY \"g\")::text" + series,
                               range);
        v2.params.push_back({p.at(0).at(0), p.at(0).at(1)});
        hashed.params.push_back(
            {c->scalar("SELECT array_agg(" + kHash + " ORDER BY \"g\")::text" + series, range)});
    }

    const std::string want = std::to_string(opt.changes);
    const std::string explain = "EXPLAIN (ANALYZE, BUFFERS, WAL, TIMING OFF, FORMAT JSON) ";
    for (const bool apply : {false, true}) {
        for (int r = 0; r < opt.runs; r++) {
            for (int i = 0; i < 2; i++) {
                // Alternate which side goes first so drift favours neither.
                Side& s = ((r + i) % 2 == 0) ? v2 : hashed;
                const std::string& sql = apply ? s.apply : s.lookup;
                // The lookup binds only the probes ($1); the V2 apply also the ids ($2).
                const std::vector<std::string> params =
                    apply ? s.params[r] : std::vector<std::string>{s.params[r][0]};
                c.reset();
                if (std::system(opt.restart_cmd.c_str()) != 0) {
                    throw std::runtime_error("restart failed: " + opt.restart_cmd);
                }
                c = connect_retrying(opt.conninfo, 60);
                set_session(*c, true);
                c->exec("EXPLAIN " + sql, params);  // catalogs and index metapage only
                Sample m;
                if (apply) {
                    c->exec("BEGIN");
                }
                const std::string json = c->scalar(explain + sql, params);
                if (apply) {
                    c->exec("ROLLBACK");
                } else {
                    const auto t0 = std::chrono::steady_clock::now();
                    const std::string n = c->scalar(sql, params);
                    m.warm_ms = std::chrono::duration<double, std::milli>(
                                    std::chrono::steady_clock::now() - t0)
                                    .count();
                    if (n != want) {
                        throw std::runtime_error(s.label + " lookup matched " + n + " rows");
                    }
                }
                const std::size_t nl = json.find("\"Node Type\": \"Nested Loop\"");
                if (nl == std::string::npos ||
                    json_number(json, "Actual Rows", nl) != static_cast<double>(opt.changes)) {
                    throw std::runtime_error(s.label + ": unexpected plan: " + plan_shape(json));
                }
                m.read = json_number(json, "Shared Read Blocks");
                m.hit = json_number(json, "Shared Hit Blocks");
                m.dirtied = json_number(json, "Shared Dirtied Blocks");
                m.wal = json_number(json, "WAL Bytes");
                m.exec_ms = json_number(json, "Execution Time");
                (apply ? s.applies : s.lookups).push_back(m);
                (apply ? s.apply_plan : s.lookup_plan) = plan_shape(json);
            }
        }
    }

    auto med = [](const std::vector<Sample>& v, double Sample::*f) {
        std::vector<double> xs;
        for (const Sample& s : v) {
            xs.push_back(s.*f);
        }
        return median(xs);
    };
    std::printf(
        "\nLocality: %lld rows per table, %d changes per run (keys ascending, one contiguous\n"
        "range per run), median of %d runs, shared_buffers = %s. Every measured statement\n"
        "runs right after a server restart (empty shared_buffers; the OS page cache stays\n"
        "warm, so a shared read is a copy from the page cache, not a disk read).\n"
        "full_page_writes = %s; a restart checkpoints, so an apply's first change to a page\n"
        "logs a full-page image when it is on.\n"
        "Setup: %s.\n"
        "  lookup = SELECT count(*) FROM unnest(<change probes>) JOIN <table> ON index key\n"
        "  apply  = UPDATE <table> SET payload = payload || '+' FROM unnest(<changes>)\n"
        "           WHERE probe (and, for V2, the full row id) match; rolled back\n"
        "  buffers/WAL/ms from EXPLAIN (ANALYZE, BUFFERS, WAL, TIMING OFF), top plan node\n\n",
        opt.rows, opt.changes, opt.runs, shared_buffers.c_str(), fpw.c_str(),
        [&] {
            std::string all;
            for (const std::string& n : notes) {
                all += (all.empty() ? "" : ", ") + n;
            }
            return all;
        }()
            .c_str());
    std::string head = pad("metric", 28, false) + " | " + pad("V2 probe", 10) + " | " +
                       pad("hashed int8", 11) + " | " + pad("V2/hashed", 9);
    std::printf("%s\n%s\n", head.c_str(), std::string(head.size(), '-').c_str());
    struct Metric {
        const char* name;
        bool apply;
        double Sample::*field;
        int decimals;
    };
    const std::vector<Metric> metrics = {
        {"lookup shared read blocks", false, &Sample::read, 0},
        {"lookup shared hit blocks", false, &Sample::hit, 0},
        {"lookup ms (cold)", false, &Sample::exec_ms, 1},
        {"lookup ms (warm, wall)", false, &Sample::warm_ms, 1},
        {"apply shared read blocks", true, &Sample::read, 0},
        {"apply shared hit blocks", true, &Sample::hit, 0},
        {"apply shared dirtied blocks", true, &Sample::dirtied, 0},
        {"apply WAL bytes", true, &Sample::wal, 0},
        {"apply ms (cold)", true, &Sample::exec_ms, 1},
    };
    for (const Metric& m : metrics) {
        const double a = med(m.apply ? v2.applies : v2.lookups, m.field);
        const double b = med(m.apply ? hashed.applies : hashed.lookups, m.field);
        std::printf("%s\n", row(m.name, a, b, m.decimals).c_str());
    }
    std::printf("\nPlans: V2 lookup:    %s\n       hashed lookup: %s\n", v2.lookup_plan.c_str(),
                hashed.lookup_plan.c_str());
    std::printf("       V2 apply:      %s\n       hashed apply:  %s\n", v2.apply_plan.c_str(),
                hashed.apply_plan.c_str());

    const double mb = 1024.0 * 1024.0;
    const double per_row = static_cast<double>(opt.rows);
    std::printf("\n%s\n", (pad("relation", 34, false) + " | " + pad("MB", 8) + " | " +
                           pad("B/row", 6) + " | " + pad("vs int8 idx", 11))
                              .c_str());
    const std::vector<std::pair<std::string, long long>> rels = {
        {"V2 probe index (bytea)", sz[0]},
        {"int8 index on k (same rows)", sz[1]},
        {"hashed int8 index", sz[2]},
        {"V2 heap", sz[3]},
        {"hashed heap", sz[4]},
    };
    for (const auto& [name, bytes] : rels) {
        std::printf(
            "%s | %s | %s | %s\n", pad(name, 34, false).c_str(),
            pad(fixed(bytes / mb, 1), 8).c_str(), pad(fixed(bytes / per_row, 1), 6).c_str(),
            pad(fixed(static_cast<double>(bytes) / static_cast<double>(sz[1]), 2), 11).c_str());
    }
}

}  // namespace pgt::bench
