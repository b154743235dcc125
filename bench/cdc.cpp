// `pgt_bench cdc`: (1) write path with 0, 1 and 3 DIFFERENTIAL stream tables,
// (2) 100-row DIFFERENTIAL refresh vs source size, zero-change refreshes,
// (3) DIFFERENTIAL vs FULL vs REFRESH MATERIALIZED VIEW.
// Invariant: the sides of a comparison run interleaved, round by round, with
// the same statements on identical tables; every SQL identifier is quoted.
#include "cdc.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace pgt::bench {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double mean(const std::vector<double>& v) {
    return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// A libpq connection for prepared single-row statements (the write path):
// every parameter is an int8, every statement runs in its own transaction.
class Session {
public:
    explicit Session(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str())) {
        if (PQstatus(conn_) != CONNECTION_OK) {
            std::string msg = PQerrorMessage(conn_);
            PQfinish(conn_);
            throw std::runtime_error("connection failed: " + msg);
        }
    }
    ~Session() { PQfinish(conn_); }
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    void command(const std::string& sql) { check(PQexec(conn_, sql.c_str()), sql); }

    void prepare(const std::string& name, const std::string& sql, int nparams) {
        const std::vector<Oid> types(static_cast<std::size_t>(nparams), 20);  // int8
        check(PQprepare(conn_, name.c_str(), sql.c_str(), nparams, types.data()), sql);
    }

    // Runs a prepared statement; returns the number of rows it affected.
    long long run(const std::string& name, const std::vector<long long>& args) {
        std::vector<std::string> text;
        std::vector<const char*> values;
        for (long long a : args) {
            text.push_back(std::to_string(a));
        }
        for (const std::string& t : text) {
            values.push_back(t.c_str());
        }
        PGresult* r = PQexecPrepared(conn_, name.c_str(), static_cast<int>(values.size()),
                                     values.data(), nullptr, nullptr, 0);
        check(r, name, false);
        const std::string n = PQcmdTuples(r);
        PQclear(r);
        return n.empty() ? 0 : std::stoll(n);
    }

private:
    void check(PGresult* r, const std::string& what, bool clear = true) {
        const ExecStatusType st = PQresultStatus(r);
        if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
            const char* code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
            std::string msg = std::string(code ? code : "") + ": " + PQerrorMessage(conn_);
            PQclear(r);
            throw std::runtime_error(msg + "  in: " + what.substr(0, 200));
        }
        if (clear) {
            PQclear(r);
        }
    }

    PGconn* conn_;
};

std::string qualified(const std::string& table) {
    return "\"public\"." + quote_ident(table);
}

// The source's columns, filled from the int8 SQL expression x.
std::string source_values(const std::string& x) {
    return x + ", (" + x + " % 1000)::int4, (" + x + " % 97)::int4, round((" + x +
           " % 10000) * 0.01 + 1, 2), 'note ' || " + x;
}

void create_source(Conn& c, const std::string& table, long long rows) {
    const std::string t = qualified(table);
    c.exec("DROP TABLE IF EXISTS " + t + " CASCADE");
    c.exec("CREATE TABLE " + t +
           " (\"id\" int8 PRIMARY KEY, \"grp\" int4 NOT NULL, \"qty\" int4 NOT NULL,"
           " \"price\" numeric(10,2) NOT NULL, \"note\" text NOT NULL)");
    c.exec("INSERT INTO " + t + " SELECT " + source_values("\"g\"") +
           " FROM generate_series(1::int8, " + std::to_string(rows) + "::int8) AS \"s\"(\"g\")");
    c.exec("VACUUM (FREEZE, ANALYZE) " + t);
}

// Three filter/projection queries; stream table k (k = 0, 1, 2) uses shape k.
std::string st_query(const std::string& source, int shape) {
    const std::string t = qualified(source);
    switch (shape) {
        case 0:
            return "SELECT \"id\", \"grp\", \"qty\" * \"price\" AS \"amount\", \"note\" FROM " + t +
                   " WHERE \"grp\" % 10 <> 0";
        case 1:
            return "SELECT \"id\", \"qty\", \"price\" FROM " + t + " WHERE \"qty\" > 10";
        default:
            return "SELECT \"id\", upper(\"note\") AS \"note_u\", \"grp\" FROM " + t +
                   " WHERE \"price\" < 50";
    }
}

void create_st(Conn& c, const std::string& name, const std::string& query,
               const std::string& mode) {
    c.exec("DROP TABLE IF EXISTS " + qualified(name));
    c.exec("SELECT pgtrickle.create_stream_table($1, $2, refresh_mode => $3)",
           {qualified(name), query, mode});
    c.exec("VACUUM (ANALYZE) " + qualified(name));
}

double refresh_ms(Conn& c, const std::string& st) {
    return c.timed_ms("SELECT pgtrickle.refresh_stream_table($1)", {qualified(st)});
}

struct History {
    std::string action;
    double server_ms = 0;
    long long inserted = 0, deleted = 0;
};

History last_history(Conn& c, const std::string& st) {
    const Rows r = c.exec(
        "SELECT h.\"action\", extract(epoch FROM h.\"end_time\" - h.\"start_time\") * 1000,"
        " h.\"rows_inserted\", h.\"rows_deleted\" FROM pgtrickle.\"pgt_refresh_history\" h"
        " JOIN pgtrickle.\"pgt_stream_tables\" s USING (\"pgt_id\")"
        " WHERE s.\"pgt_relid\" = $1::text::regclass ORDER BY h.\"refresh_id\" DESC LIMIT 1",
        {qualified(st)});
    if (r.empty()) {
        throw std::runtime_error("no refresh history for " + st);
    }
    return {r[0][0], std::stod(r[0][1]), std::stoll(r[0][2]), std::stoll(r[0][3])};
}

History expect(Conn& c, const std::string& st, const std::string& action) {
    History h = last_history(c, st);
    if (h.action != action) {
        throw std::runtime_error("refresh of " + st + " recorded " + h.action + ", expected " +
                                 action);
    }
    return h;
}

// The change buffer of a source, as a quoted name (empty when not captured).
std::string buffer_of(Conn& c, const std::string& source) {
    const Rows r = c.exec(
        "SELECT \"buffer_name\"::regclass::text FROM pgtrickle.\"pgt_sources\""
        " WHERE \"source_relid\" = $1::text::regclass",
        {qualified(source)});
    return r.empty() ? "" : r[0][0];
}

long long wal_now(Conn& c) {
    return std::stoll(c.scalar("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::int8"));
}

std::string table_line(const std::vector<std::string>& cells, const std::vector<std::size_t>& w) {
    std::string line;
    for (std::size_t i = 0; i < cells.size(); i++) {
        line += pad(cells[i], w[i], i != 0) + (i + 1 < cells.size() ? " | " : "");
    }
    return line;
}

void print_row(const std::vector<std::string>& cells, const std::vector<std::size_t>& w) {
    std::printf("%s\n", table_line(cells, w).c_str());
}

void print_head(const std::vector<std::string>& cells, const std::vector<std::size_t>& w) {
    const std::string line = table_line(cells, w);
    std::printf("%s\n%s\n", line.c_str(), std::string(line.size(), '-').c_str());
}

// --- 1. Write path ----------------------------------------------------------

struct WriteConfig {
    int st_count;
    std::string source;
    std::vector<std::string> sts;
    std::string buffer;
    bool statement_capture = false;  // swap the row trigger for the statement-level variant
};

// Replaces the capture row trigger of cfg's source with three statement-level
// triggers over transition tables (same function arguments), the
// alternative that section 1 measures against the row-level capture.
void use_statement_capture(Conn& c, const WriteConfig& cfg) {
    const std::string src = qualified(cfg.source);
    const std::string trig = c.scalar(
        "SELECT tgname FROM pg_catalog.pg_trigger WHERE tgrelid = $1::pg_catalog.regclass AND "
        "tgname NOT LIKE '%_truncate' AND tgname LIKE 'pgt_capture_%'",
        {src});
    const std::string args = c.scalar(
        "SELECT pg_catalog.substring(pg_catalog.pg_get_triggerdef(oid), "
        "'_capture_row\\((.*)\\)$') FROM pg_catalog.pg_trigger WHERE tgrelid = "
        "$1::pg_catalog.regclass AND tgname = $2",
        {src, trig});
    // pg_trickle refuses to drop a capture its stream tables need (its
    // sql_drop event trigger); this swap is the benchmark's own, so it runs
    // with event triggers off (session_replication_role = replica).
    c.exec("SET session_replication_role = replica");
    c.exec("DROP TRIGGER " + trig + " ON " + src);
    c.exec("RESET session_replication_role");
    const char* const kinds[3][2] = {{"INSERT", "NEW TABLE AS n"},
                                     {"UPDATE", "OLD TABLE AS o NEW TABLE AS n"},
                                     {"DELETE", "OLD TABLE AS o"}};
    // The UPDATE one keeps the row trigger's name, enabled ALWAYS as that
    // one was: a refresh checks that the capture it knows is there.
    for (const auto& k : kinds) {
        const std::string name = std::string(k[0]) == "UPDATE" ? trig : trig + "_" + k[0];
        c.exec("CREATE TRIGGER " + name + " AFTER " + k[0] + " ON " + src + " REFERENCING " + k[1] +
               " FOR EACH STATEMENT EXECUTE FUNCTION pgtrickle._capture_statement(" + args + ")");
        c.exec("ALTER TABLE " + src + " ENABLE ALWAYS TRIGGER " + name);
    }
}

struct OpStats {
    std::vector<double> ms;  // one entry per statement
    long long wal = 0, rows = 0;
};

constexpr int kOps = 3;
const char* const kOpNames[kOps] = {"INSERT", "UPDATE", "DELETE"};

// Brings every stream table of cfg up to date and vacuums what the round
// left behind, so each round starts from the same state (not timed).
void settle(Conn& c, const WriteConfig& cfg) {
    for (const std::string& st : cfg.sts) {
        c.exec("SELECT pgtrickle.refresh_stream_table($1)", {qualified(st)});
        c.exec("VACUUM " + qualified(st));
    }
    c.exec("VACUUM " + qualified(cfg.source));
    if (!cfg.buffer.empty()) {
        c.exec("VACUUM " + cfg.buffer);
        const std::string left = c.scalar("SELECT count(*) FROM " + cfg.buffer);
        if (left != "0") {
            throw std::runtime_error(cfg.buffer + " kept " + left + " rows after refreshing all");
        }
    }
}

void run_write_path(Conn& c, const Options& opt) {
    const long long rows = opt.rows;
    const int single = 3000;           // single-row statements per kind, round and table
    const int chunk = 250;             // ... run in chunks, alternating between the tables
    const long long bulk = rows / 10;  // rows per bulk statement
    std::vector<WriteConfig> cfgs = {{0, "cdc_w0", {}, ""},
                                     {1, "cdc_w1", {"cdc_w1_a"}, ""},
                                     {3, "cdc_w3", {"cdc_w3_a", "cdc_w3_b", "cdc_w3_c"}, ""},
                                     {1, "cdc_ws", {"cdc_ws_a"}, "", true}};
    std::printf(
        "== 1. Write path: %lld-row source with 0, 1 and 3 DIFFERENTIAL stream tables (row-level "
        "capture), and 1 with the statement-level capture (1S)\n",
        rows);
    std::fflush(stdout);
    for (WriteConfig& cfg : cfgs) {
        Clock::time_point t0 = Clock::now();
        create_source(c, cfg.source, rows);
        const double load = ms_since(t0);
        t0 = Clock::now();
        for (std::size_t k = 0; k < cfg.sts.size(); k++) {
            create_st(c, cfg.sts[k], st_query(cfg.source, static_cast<int>(k)), "DIFFERENTIAL");
        }
        cfg.buffer = buffer_of(c, cfg.source);
        if (cfg.statement_capture) {
            use_statement_capture(c, cfg);
        }
        std::printf("setup %s: load + PK + vacuum %.1f s, %d stream table(s) %.1f s%s%s\n",
                    cfg.source.c_str(), load / 1000, cfg.st_count, ms_since(t0) / 1000,
                    cfg.buffer.empty() ? "" : ", buffer ", cfg.buffer.c_str());
    }
    c.exec("CHECKPOINT");

    Session s(opt.conninfo);
    s.command("SET jit = off");
    s.command("SET max_parallel_workers_per_gather = 0");
    for (std::size_t i = 0; i < cfgs.size(); i++) {
        const std::string t = qualified(cfgs[i].source), n = std::to_string(i);
        s.prepare("ins" + n, "INSERT INTO " + t + " VALUES (" + source_values("$1::int8") + ")", 1);
        s.prepare("upd" + n, "UPDATE " + t + " SET \"qty\" = \"qty\" + 1 WHERE \"id\" = $1", 1);
        s.prepare("del" + n, "DELETE FROM " + t + " WHERE \"id\" = $1", 1);
        s.prepare("bins" + n,
                  "INSERT INTO " + t + " SELECT " + source_values("\"g\"") +
                      " FROM generate_series($1::int8, $2::int8) AS \"s\"(\"g\")",
                  2);
        s.prepare("bupd" + n,
                  "UPDATE " + t + " SET \"qty\" = \"qty\" + 1 WHERE \"id\" BETWEEN $1 AND $2", 2);
        s.prepare("bdel" + n, "DELETE FROM " + t + " WHERE \"id\" BETWEEN $1 AND $2", 2);
    }

    std::mt19937_64 rng(42);
    std::uniform_int_distribution<long long> any_id(1, rows);
    // stats[config][op]
    std::vector<std::vector<OpStats>> one(cfgs.size(), std::vector<OpStats>(kOps));
    std::vector<std::vector<OpStats>> many(cfgs.size(), std::vector<OpStats>(kOps));

    // `count` statements of each kind on config i: INSERTs of new ids from
    // base, UPDATEs of random existing ids, DELETEs of the ids just inserted.
    auto single_chunk = [&](std::size_t i, long long base, int count, bool record) {
        const std::string n = std::to_string(i);
        std::vector<long long> ids(static_cast<std::size_t>(count));
        std::iota(ids.begin(), ids.end(), base);
        std::vector<long long> upd(static_cast<std::size_t>(count));
        for (long long& id : upd) {
            id = any_id(rng);
        }
        std::vector<long long> del = ids;
        std::shuffle(del.begin(), del.end(), rng);
        const std::vector<std::pair<std::string, const std::vector<long long>*>> work = {
            {"ins" + n, &ids}, {"upd" + n, &upd}, {"del" + n, &del}};
        for (int op = 0; op < kOps; op++) {
            OpStats& st = one[i][static_cast<std::size_t>(op)];
            const long long w0 = wal_now(c);
            for (long long id : *work[static_cast<std::size_t>(op)].second) {
                const Clock::time_point t0 = Clock::now();
                if (s.run(work[static_cast<std::size_t>(op)].first, {id}) != 1) {
                    throw std::runtime_error(std::string(kOpNames[op]) + " missed id " +
                                             std::to_string(id));
                }
                if (record) {
                    st.ms.push_back(ms_since(t0));
                }
            }
            if (record) {
                st.wal += wal_now(c) - w0;
                st.rows += count;
            }
        }
    };

    std::printf(
        "\nsingle-row statements: %d rounds x %d of each kind per table in chunks of %d, tables"
        " alternating per chunk (+1 warm-up round) ...\n",
        opt.runs, single, chunk);
    std::fflush(stdout);
    long long next_id = rows + 1;
    for (int r = -1; r < opt.runs; r++) {
        for (int k = 0; k < single / chunk; k++) {
            for (std::size_t j = 0; j < cfgs.size(); j++) {
                const std::size_t i = (static_cast<std::size_t>(k) + j) % cfgs.size();
                single_chunk(i, next_id, chunk, r >= 0);
            }
            next_id += chunk;
        }
        for (const WriteConfig& cfg : cfgs) {
            settle(c, cfg);
        }
    }

    std::printf("bulk statements: %d rounds of %lld-row INSERT, UPDATE, DELETE per table ...\n",
                opt.runs, bulk);
    std::fflush(stdout);
    next_id = 2 * rows + 1;
    for (int r = 0; r < opt.runs; r++) {
        const long long upd_lo = 1 + (static_cast<long long>(r) * bulk) % (rows - bulk + 1);
        for (std::size_t j = 0; j < cfgs.size(); j++) {
            const std::size_t i = (static_cast<std::size_t>(r) + j) % cfgs.size();
            const std::string n = std::to_string(i);
            const std::vector<std::pair<std::string, std::vector<long long>>> work = {
                {"bins" + n, {next_id, next_id + bulk - 1}},
                {"bupd" + n, {upd_lo, upd_lo + bulk - 1}},
                {"bdel" + n, {next_id, next_id + bulk - 1}}};
            for (int op = 0; op < kOps; op++) {
                OpStats& st = many[i][static_cast<std::size_t>(op)];
                const long long w0 = wal_now(c);
                const Clock::time_point t0 = Clock::now();
                const long long got = s.run(work[static_cast<std::size_t>(op)].first,
                                            work[static_cast<std::size_t>(op)].second);
                st.ms.push_back(ms_since(t0));
                st.wal += wal_now(c) - w0;
                st.rows += bulk;
                if (got != bulk) {
                    throw std::runtime_error(std::string("bulk ") + kOpNames[op] + " touched " +
                                             std::to_string(got) + " rows");
                }
            }
            settle(c, cfgs[i]);
        }
        next_id += bulk;
    }

    std::printf(
        "\nSingle-row statements (autocommit, prepared, one libpq round trip each; client wall "
        "time):\nmean and median of %d statements per cell; ratios are of the means; WAL is "
        "bytes per statement incl. commit\n\n",
        opt.runs * single);
    // Columns: 0, 1 and 3 stream tables with the row-level capture, then 1
    // stream table with the statement-level capture ("1S").
    const std::vector<std::size_t> w1 = {6, 8, 8, 8, 8, 6, 6, 6, 8, 8, 8, 8, 6, 6, 6, 6};
    print_head({"op", "0 ST us", "1 ST us", "3 ST us", "1S us", "1/0", "3/0", "1S/0", "p50 0",
                "p50 1", "p50 3", "p50 1S", "WAL 0", "WAL 1", "WAL 3", "WAL 1S"},
               w1);
    for (int op = 0; op < kOps; op++) {
        const auto o = static_cast<std::size_t>(op);
        std::vector<std::string> mean_us, p50_us, ratio, wal;
        for (std::size_t i = 0; i < cfgs.size(); i++) {
            const double m = mean(one[i][o].ms);
            mean_us.push_back(fixed(m * 1000, 1));
            p50_us.push_back(fixed(median(one[i][o].ms) * 1000, 1));
            wal.push_back(std::to_string(one[i][o].wal / std::max(1LL, one[i][o].rows)));
            if (i > 0) {
                ratio.push_back(fixed(m / mean(one[0][o].ms), 2));
            }
        }
        std::vector<std::string> row = {kOpNames[op]};
        for (const auto* part : {&mean_us, &ratio, &p50_us, &wal}) {
            row.insert(row.end(), part->begin(), part->end());
        }
        print_row(row, w1);
    }

    std::printf(
        "\nBulk statements of %lld rows (one statement, autocommit; median of %d rounds; "
        "client wall time):\nWAL is bytes per changed row\n\n",
        bulk, opt.runs);
    const std::vector<std::size_t> w2 = {6, 9, 9, 9, 9, 6, 6, 6, 7, 7, 7, 7};
    print_head({"op", "0 ST ms", "1 ST ms", "3 ST ms", "1S ms", "1/0", "3/0", "1S/0", "WAL 0",
                "WAL 1", "WAL 3", "WAL 1S"},
               w2);
    for (int op = 0; op < kOps; op++) {
        const auto o = static_cast<std::size_t>(op);
        std::vector<std::string> ms, ratio, wal;
        for (std::size_t i = 0; i < cfgs.size(); i++) {
            const double m = median(many[i][o].ms);
            ms.push_back(fixed(m, 1));
            wal.push_back(std::to_string(many[i][o].wal / std::max(1LL, many[i][o].rows)));
            if (i > 0) {
                ratio.push_back(fixed(m / median(many[0][o].ms), 2));
            }
        }
        std::vector<std::string> row = {kOpNames[op]};
        for (const auto* part : {&ms, &ratio, &wal}) {
            row.insert(row.end(), part->begin(), part->end());
        }
        print_row(row, w2);
    }
    std::fflush(stdout);
    for (const WriteConfig& cfg : cfgs) {
        c.exec("DROP TABLE " + qualified(cfg.source) + " CASCADE");
    }
}

// --- 2. Refresh scaling and zero-change refreshes ---------------------------

struct ScaleCase {
    long long rows;
    std::string source, st, buffer;
    std::vector<double> client, server;
    std::set<long long> deleted;
    long long next_id;
};

// A 100-row delta in one transaction: 50 UPDATEs of a non-key column, 25
// INSERTs of new keys, 25 DELETEs of existing keys, all at random keys.
void apply_small_delta(Conn& c, ScaleCase& sc, std::mt19937_64& rng) {
    std::uniform_int_distribution<long long> any_id(1, sc.rows);
    std::set<long long> upd, del;
    while (upd.size() < 50 || del.size() < 25) {
        const long long id = any_id(rng);
        if (sc.deleted.count(id) != 0 || upd.count(id) != 0 || del.count(id) != 0) {
            continue;
        }
        (upd.size() < 50 ? upd : del).insert(id);
    }
    auto array = [](const std::set<long long>& ids) {
        std::string out = "{";
        for (long long id : ids) {
            out += (out.size() > 1 ? "," : "") + std::to_string(id);
        }
        return out + "}";
    };
    const std::string t = qualified(sc.source);
    c.exec("BEGIN");
    c.exec("UPDATE " + t + " SET \"qty\" = \"qty\" + 1 WHERE \"id\" = ANY ($1::int8[])",
           {array(upd)});
    c.exec("DELETE FROM " + t + " WHERE \"id\" = ANY ($1::int8[])", {array(del)});
    c.exec("INSERT INTO " + t + " SELECT " + source_values("\"g\"") +
               " FROM generate_series($1::int8, $2::int8) AS \"s\"(\"g\")",
           {std::to_string(sc.next_id), std::to_string(sc.next_id + 24)});
    c.exec("COMMIT");
    sc.next_id += 25;
    sc.deleted.insert(del.begin(), del.end());
}

// Median client and server (history) times of `calls` zero-change refreshes.
std::pair<double, double> zero_change(Conn& c, const std::string& st, int calls) {
    std::vector<double> client, server;
    for (int i = 0; i < calls; i++) {
        client.push_back(refresh_ms(c, st));
        server.push_back(expect(c, st, "NO_DATA").server_ms);
    }
    return {median(client), median(server)};
}

void check_contents(Conn& c, const std::string& source, const std::string& st) {
    const std::string want = c.scalar("SELECT count(*) FROM (" + st_query(source, 0) + ") AS q");
    const std::string got = c.scalar("SELECT count(*) FROM " + qualified(st));
    const std::string diff =
        c.scalar("SELECT count(*) FROM ((" + st_query(source, 0) +
                 " EXCEPT ALL SELECT \"id\", \"grp\", \"amount\", \"note\" FROM " + qualified(st) +
                 ") UNION ALL (SELECT \"id\", \"grp\", \"amount\", \"note\" FROM " + qualified(st) +
                 " EXCEPT ALL " + st_query(source, 0) + ")) AS d");
    if (want != got || diff != "0") {
        throw std::runtime_error(st + " differs from its query: " + got + " rows vs " + want +
                                 ", " + diff + " rows differ");
    }
}

struct Blocks {
    double hit = 0, read = 0;
};

// Cumulative shared-buffer hits and reads of a stream table's heap and
// indexes, after flushing this backend's pending statistics.
Blocks st_blocks(Conn& c, const std::string& st) {
    c.exec("SELECT pg_stat_force_next_flush()");
    c.exec("SELECT pg_stat_clear_snapshot()");
    const Rows r = c.exec(
        "SELECT coalesce(\"heap_blks_hit\", 0) + coalesce(\"idx_blks_hit\", 0),"
        " coalesce(\"heap_blks_read\", 0) + coalesce(\"idx_blks_read\", 0)"
        " FROM pg_statio_user_tables WHERE \"relid\" = $1::text::regclass",
        {qualified(st)});
    return {std::stod(r.at(0).at(0)), std::stod(r.at(0).at(1))};
}

// Returns the middle case's source (opt.rows) for section 3, with its stream table.
ScaleCase run_scaling(Conn& c, const Options& opt, bool big_scale) {
    std::vector<long long> sizes = {opt.rows / 10, opt.rows};
    if (big_scale) {
        sizes.push_back(opt.rows * 10);
    }
    std::printf("\n== 2. DIFFERENTIAL refresh of a 100-row delta vs source size\n");
    std::vector<ScaleCase> cases;
    for (long long n : sizes) {
        ScaleCase sc{
            n,    "cdc_r" + std::to_string(n), "cdc_r" + std::to_string(n) + "_st", "", {}, {}, {},
            n + 1};
        Clock::time_point t0 = Clock::now();
        create_source(c, sc.source, n);
        const double load = ms_since(t0);
        t0 = Clock::now();
        create_st(c, sc.st, st_query(sc.source, 0), "DIFFERENTIAL");
        sc.buffer = buffer_of(c, sc.source);
        std::printf("setup %s: load + PK + vacuum %.1f s, stream table %.1f s\n", sc.source.c_str(),
                    load / 1000, ms_since(t0) / 1000);
        std::fflush(stdout);
        cases.push_back(std::move(sc));
    }
    // Every stream table (heap and probe index) starts in shared_buffers, so
    // sizes are compared warm, not by which one the last load evicted.
    for (const ScaleCase& sc : cases) {
        c.exec(
            "SELECT pg_prewarm(i.\"indexrelid\") + pg_prewarm(i.\"indrelid\") FROM pg_index AS i"
            " WHERE i.\"indrelid\" = $1::text::regclass",
            {qualified(sc.st)});
    }
    c.exec("CHECKPOINT");

    std::mt19937_64 rng(7);
    const int warm = 3, measured = std::max(15, 3 * opt.runs);
    auto round = [&](int r, bool record) {
        for (std::size_t j = 0; j < cases.size(); j++) {
            ScaleCase& sc = cases[(static_cast<std::size_t>(r) + j) % cases.size()];
            apply_small_delta(c, sc, rng);
            const double ms = refresh_ms(c, sc.st);
            const History h = expect(c, sc.st, "DIFFERENTIAL");
            if (record) {
                sc.client.push_back(ms);
                sc.server.push_back(h.server_ms);
            }
        }
    };
    for (int r = 0; r < warm; r++) {
        round(r, false);
    }
    std::vector<Blocks> before;
    for (const ScaleCase& sc : cases) {
        before.push_back(st_blocks(c, sc.st));
    }
    for (int r = 0; r < measured; r++) {
        round(r, true);
    }
    std::vector<Blocks> per_refresh;
    for (std::size_t i = 0; i < cases.size(); i++) {
        const Blocks after = st_blocks(c, cases[i].st);
        per_refresh.push_back(
            {(after.hit - before[i].hit) / measured, (after.read - before[i].read) / measured});
    }
    for (const ScaleCase& sc : cases) {
        check_contents(c, sc.source, sc.st);
    }
    std::printf(
        "\nEach refresh follows one committed transaction of 50 UPDATEs (non-key column), 25 "
        "INSERTs and 25 DELETEs at random keys;\nmedian of %d refreshes per size (after %d "
        "warm-up), sizes interleaved; client = wall time of SELECT refresh_stream_table(), "
        "server = end_time - start_time in pgt_refresh_history.\nST MB = stream table with its "
        "index; levels = B-tree levels of its probe index (bt_metap); hit/read = stream-table "
        "heap + index blocks per refresh\n(pg_statio_user_tables; read = not in shared_buffers, "
        "copied from the OS page cache). Contents checked against the query afterwards.\n\n",
        measured, warm);
    const std::vector<std::size_t> w = {11, 9, 6, 9, 6, 7, 6, 6, 6};
    print_head({"source rows", "client ms", "ratio", "server ms", "ratio", "ST MB", "levels", "hit",
                "read"},
               w);
    const double c0 = median(cases[0].client), s0 = median(cases[0].server);
    for (std::size_t i = 0; i < cases.size(); i++) {
        const ScaleCase& sc = cases[i];
        const double cm = median(sc.client), sm = median(sc.server);
        const Rows info = c.exec(
            "SELECT pg_total_relation_size(i.\"indrelid\") / 1048576, (SELECT m.\"level\" + 1 FROM "
            "bt_metap(i.\"indexrelid\"::regclass::text) AS m) FROM pg_index AS i WHERE "
            "i.\"indrelid\" = $1::text::regclass",
            {qualified(sc.st)});
        print_row({std::to_string(sc.rows), fixed(cm, 2), fixed(cm / c0, 2), fixed(sm, 2),
                   fixed(sm / s0, 2), info.at(0).at(0), info.at(0).at(1),
                   fixed(per_refresh[i].hit, 0), fixed(per_refresh[i].read, 1)},
                  w);
    }
    std::fflush(stdout);

    ScaleCase mid;
    for (ScaleCase& sc : cases) {
        if (sc.rows == opt.rows) {
            mid = std::move(sc);
        } else {
            c.exec("DROP TABLE " + qualified(sc.source) + " CASCADE");
        }
    }

    // Zero-change refreshes on the opt.rows case: vacuumed buffer, then a
    // buffer holding the dead rows of a consumed 10% update, then vacuumed again.
    const int calls = 200;
    c.exec("VACUUM " + mid.buffer);
    zero_change(c, mid.st, 10);
    const auto [zc, zs] = zero_change(c, mid.st, calls);
    const long long big = opt.rows / 10;
    c.exec("UPDATE " + qualified(mid.source) +
           " SET \"qty\" = \"qty\" + 1 WHERE \"id\" BETWEEN 1 AND " + std::to_string(big));
    const double big_ms = refresh_ms(c, mid.st);
    const History big_h = expect(c, mid.st, "DIFFERENTIAL");
    const std::string dead_pages =
        c.scalar("SELECT pg_relation_size($1::text::regclass) / 8192", {mid.buffer});
    zero_change(c, mid.st, 3);
    const auto [dc, ds] = zero_change(c, mid.st, calls / 4);
    c.exec("VACUUM " + mid.buffer);
    zero_change(c, mid.st, 3);
    const auto [vc, vs] = zero_change(c, mid.st, calls / 4);
    std::printf(
        "\nZero-change refresh (nothing pending; history action NO_DATA) on the %lld-row stream "
        "table, median:\n\n",
        opt.rows);
    const std::vector<std::size_t> wz = {52, 6, 10, 10};
    print_head({"buffer state", "calls", "client ms", "server ms"}, wz);
    print_row({"empty, vacuumed", std::to_string(calls), fixed(zc, 3), fixed(zs, 3)}, wz);
    print_row(
        {"after a consumed " + std::to_string(big) + "-row UPDATE (" + dead_pages + " dead pages)",
         std::to_string(calls / 4), fixed(dc, 3), fixed(ds, 3)},
        wz);
    print_row(
        {"same, after VACUUM of the buffer", std::to_string(calls / 4), fixed(vc, 3), fixed(vs, 3)},
        wz);
    std::printf(
        "(that %lld-row DIFFERENTIAL refresh itself: client %.1f ms, server %.1f ms, "
        "%lld inserted / %lld deleted rows recorded)\n",
        big, big_ms, big_h.server_ms, big_h.inserted, big_h.deleted);
    std::fflush(stdout);
    return mid;
}

// --- 3. DIFFERENTIAL vs FULL vs REFRESH MATERIALIZED VIEW -------------------

void run_methods(Conn& c, const Options& opt, ScaleCase& sc) {
    std::printf("\n== 3. %d changed rows (UPDATE of a non-key column) on a %lld-row source\n",
                opt.changes, opt.rows);
    const std::string full = "cdc_m_full", mv = "cdc_m_mv", mvc = "cdc_m_mvc";
    const std::string query = st_query(sc.source, 0);
    Clock::time_point t0 = Clock::now();
    create_st(c, full, query, "FULL");
    for (const std::string& m : {mv, mvc}) {
        c.exec("DROP MATERIALIZED VIEW IF EXISTS " + qualified(m));
        c.exec("CREATE MATERIALIZED VIEW " + qualified(m) + " AS " + query);
        c.exec("CREATE UNIQUE INDEX ON " + qualified(m) + " (\"id\")");
        c.exec("VACUUM (ANALYZE) " + qualified(m));
    }
    c.exec("VACUUM " + sc.buffer);
    c.exec("VACUUM " + qualified(sc.source));
    c.exec("CHECKPOINT");
    std::printf("setup: FULL stream table and two materialized views %.1f s\n",
                ms_since(t0) / 1000);
    std::fflush(stdout);

    struct Method {
        std::string label;
        std::vector<double> client, server;
    };
    std::vector<Method> ms = {{"DIFFERENTIAL stream table", {}, {}},
                              {"FULL stream table", {}, {}},
                              {"REFRESH MATERIALIZED VIEW", {}, {}},
                              {"REFRESH MATERIALIZED VIEW CONCURRENTLY", {}, {}}};
    std::mt19937_64 rng(11);
    std::uniform_int_distribution<long long> any_id(1, opt.rows);
    for (int r = 0; r < opt.runs; r++) {
        std::set<long long> ids;
        while (static_cast<int>(ids.size()) < opt.changes) {
            const long long id = any_id(rng);
            if (sc.deleted.count(id) == 0) {
                ids.insert(id);
            }
        }
        std::string arr = "{";
        for (long long id : ids) {
            arr += (arr.size() > 1 ? "," : "") + std::to_string(id);
        }
        arr += "}";
        const std::string n =
            c.scalar("WITH u AS (UPDATE " + qualified(sc.source) +
                         " SET \"qty\" = \"qty\" + 1 WHERE \"id\" = ANY ($1::int8[]) RETURNING 1)"
                         " SELECT count(*) FROM u",
                     {arr});
        if (n != std::to_string(opt.changes)) {
            throw std::runtime_error("section 3 UPDATE changed " + n + " rows");
        }
        for (std::size_t j = 0; j < ms.size(); j++) {
            const std::size_t k = (static_cast<std::size_t>(r) + j) % ms.size();
            switch (k) {
                case 0:
                    ms[k].client.push_back(refresh_ms(c, sc.st));
                    ms[k].server.push_back(expect(c, sc.st, "DIFFERENTIAL").server_ms);
                    break;
                case 1:
                    ms[k].client.push_back(refresh_ms(c, full));
                    ms[k].server.push_back(expect(c, full, "FULL").server_ms);
                    break;
                case 2:
                    ms[k].client.push_back(
                        c.timed_ms("REFRESH MATERIALIZED VIEW " + qualified(mv)));
                    break;
                default:
                    ms[k].client.push_back(
                        c.timed_ms("REFRESH MATERIALIZED VIEW CONCURRENTLY " + qualified(mvc)));
                    break;
            }
        }
        for (const std::string& t : {sc.st, full, mvc, sc.source}) {
            c.exec("VACUUM " + qualified(t));
        }
        c.exec("VACUUM " + sc.buffer);
    }
    check_contents(c, sc.source, sc.st);
    check_contents(c, sc.source, full);
    std::printf(
        "\nEach round: one UPDATE of %d random rows (not timed), then each method once, in "
        "rotating order;\nmedian of %d rounds; client wall time; server = history end_time - "
        "start_time (stream tables only).\nThe views have a UNIQUE index on id (CONCURRENTLY "
        "needs one), as the stream tables have their probe index.\n\n",
        opt.changes, opt.runs);
    const std::vector<std::size_t> w = {38, 10, 10, 15};
    print_head({"method", "client ms", "server ms", "client / DIFF"}, w);
    const double d = median(ms[0].client);
    for (const Method& m : ms) {
        const double cm = median(m.client);
        print_row({m.label, fixed(cm, 1), m.server.empty() ? "-" : fixed(median(m.server), 1),
                   fixed(cm / d, 2)},
                  w);
    }
    std::fflush(stdout);
    c.exec("DROP TABLE " + qualified(sc.source) + " CASCADE");
}

}  // namespace

void run_cdc(const Options& opt, bool big_scale, bool write_only) {
    std::unique_ptr<Conn> c = connect_retrying(opt.conninfo, 30);
    set_session(*c, false);
    c->exec("CREATE EXTENSION IF NOT EXISTS pageinspect");
    c->exec("CREATE EXTENSION IF NOT EXISTS pg_prewarm");
    const Clock::time_point t0 = Clock::now();
    run_write_path(*c, opt);
    if (write_only) {
        std::printf("\ncdc benchmark (write path only): %.0f s\n", ms_since(t0) / 1000);
        return;
    }
    ScaleCase mid = run_scaling(*c, opt, big_scale);
    run_methods(*c, opt, mid);
    std::printf("\ncdc benchmark: %.0f s\n", ms_since(t0) / 1000);
}

}  // namespace pgt::bench
