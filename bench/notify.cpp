// `pgt_bench notify`: single-row UPDATE latency on three identical tables:
// no trigger, pgtrickle.notify_changes() with nobody listening, and the
// trigger with one session listening (and draining) its channel. Two
// statements: an UPDATE that changes a column, and a no-op UPDATE
// (SET qty = qty) that the trigger must drop before building any JSON; each
// single-row (the latency targets) and as one bulk UPDATE (per-row cost).
// Invariant: the tables run interleaved in chunks over the same random ids,
// in rotating order; the listener's count proves what was (not) sent.
#include "notify.hpp"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace pgt::bench {

namespace {

using Clock = std::chrono::steady_clock;

// One connection for the timed statements: prepared, one int8 parameter,
// autocommit, each checked to have updated the rows it should.
class Writer {
public:
    explicit Writer(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str())) {
        if (PQstatus(conn_) != CONNECTION_OK) {
            std::string msg = PQerrorMessage(conn_);
            PQfinish(conn_);
            throw std::runtime_error("connection failed: " + msg);
        }
    }
    ~Writer() { PQfinish(conn_); }
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;

    void prepare(const std::string& name, const std::string& sql) {
        const Oid int8 = 20;
        check(PQprepare(conn_, name.c_str(), sql.c_str(), 1, &int8), "1");
    }
    // Milliseconds of one round trip of the prepared statement, which must
    // update `want` rows.
    double timed(const std::string& name, long long id, long long want = 1) {
        const std::string text = std::to_string(id);
        const char* value = text.c_str();
        const Clock::time_point t0 = Clock::now();
        PGresult* r = PQexecPrepared(conn_, name.c_str(), 1, &value, nullptr, nullptr, 0);
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        check(r, std::to_string(want).c_str());
        return ms;
    }

private:
    void check(PGresult* r, const char* want_rows) {
        const ExecStatusType st = PQresultStatus(r);
        const bool ok = st == PGRES_COMMAND_OK &&
                        (PQcmdTuples(r)[0] == '\0' || std::string(PQcmdTuples(r)) == want_rows);
        if (!ok) {
            std::string msg = PQerrorMessage(conn_);
            msg += std::string(" (") + PQcmdStatus(r) + ")";
            PQclear(r);
            throw std::runtime_error("notify bench statement failed: " + msg);
        }
        PQclear(r);
    }
    PGconn* conn_;
};

// The listening session: LISTENs once, then only drains (never timed).
class Listener {
public:
    Listener(const std::string& conninfo, const std::string& channel)
        : conn_(PQconnectdb(conninfo.c_str())) {
        if (PQstatus(conn_) != CONNECTION_OK) {
            PQfinish(conn_);
            throw std::runtime_error("listener connection failed");
        }
        PQclear(PQexec(conn_, ("LISTEN " + quote_ident(channel)).c_str()));
    }
    ~Listener() { PQfinish(conn_); }
    Listener(const Listener&) = delete;
    Listener& operator=(const Listener&) = delete;

    // Reads what has arrived (waiting up to wait_ms for the socket); true
    // once a payload equal to marker was seen.
    bool drain(const std::string& marker = "", int wait_ms = 0) {
        bool seen = false;
        if (wait_ms > 0) {
            pollfd fd{PQsocket(conn_), POLLIN, 0};
            poll(&fd, 1, wait_ms);
        }
        PQconsumeInput(conn_);
        while (PGnotify* n = PQnotifies(conn_)) {
            if (!marker.empty() && marker == n->extra) {
                seen = true;
            } else {
                received++;
            }
            PQfreemem(n);
        }
        return seen;
    }
    long long received = 0;

private:
    PGconn* conn_;
};

struct Table {
    const char* label;
    std::string name;
    std::string channel;  // empty: no trigger
};

constexpr int kOps = 2;
const char* const kOpLabels[kOps] = {"UPDATE SET qty = qty + 1", "UPDATE SET qty = qty (no-op)"};
const char* const kOpSql[kOps] = {"\"qty\" = \"qty\" + 1", "\"qty\" = \"qty\""};

void create_table(Conn& c, const Table& t, long long rows) {
    const std::string q = "\"public\"." + quote_ident(t.name);
    c.exec("DROP TABLE IF EXISTS " + q);
    c.exec("CREATE TABLE " + q +
           " (\"id\" int8 PRIMARY KEY, \"grp\" int4 NOT NULL, \"qty\" int4 NOT NULL,"
           " \"price\" numeric(10,2) NOT NULL, \"note\" text NOT NULL)");
    c.exec("INSERT INTO " + q +
           " SELECT g, (g % 1000)::int4, (g % 97)::int4, round((g % 10000) * 0.01 + 1, 2),"
           " 'note ' || g FROM generate_series(1::int8, " +
           std::to_string(rows) + "::int8) AS s(g)");
    if (!t.channel.empty()) {
        c.exec("CREATE TRIGGER \"notify\" AFTER INSERT OR UPDATE OR DELETE ON " + q +
               " FOR EACH ROW EXECUTE FUNCTION pgtrickle.notify_changes(" +
               quote_literal(t.channel) + ", 'id')");
    }
    c.exec("VACUUM (FREEZE, ANALYZE) " + q);
}

double mean(const std::vector<double>& v) {
    return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double p95(std::vector<double> v) {
    if (v.empty()) {
        return 0;
    }
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(0.95 * static_cast<double>(v.size() - 1))];
}

// Bulk UPDATEs of `span` rows from a rotating start, changing and no-op, on
// every table in rotating order; returns ms[op][table], one entry per round.
std::vector<std::vector<std::vector<double>>> run_bulk(Conn& c, Writer& w, Listener& listener,
                                                       const std::vector<Table>& tables,
                                                       const Options& opt, long long span,
                                                       long long& changing_heard) {
    std::vector<std::vector<std::vector<double>>> ms(
        kOps, std::vector<std::vector<double>>(tables.size()));
    for (int r = -1; r < opt.runs; r++) {  // round -1 warms up, not recorded
        const long long lo = 1 + ((r + 1) * span) % (opt.rows - span + 1);
        for (int op = 0; op < kOps; op++) {
            for (std::size_t j = 0; j < tables.size(); j++) {
                const std::size_t i = (static_cast<std::size_t>(r + 1 + op) + j) % tables.size();
                const double t =
                    w.timed("b" + std::to_string(op) + "_" + std::to_string(i), lo, span);
                if (r >= 0) {
                    ms[static_cast<std::size_t>(op)][i].push_back(t);
                }
                changing_heard += (i == 2 && op == 0) ? span : 0;
                // Not timed: the listener keeps up, so no round pays for another's backlog.
                const Clock::time_point until = Clock::now() + std::chrono::seconds(60);
                while (listener.received < changing_heard && Clock::now() < until) {
                    listener.drain("", 10);
                }
                c.exec("VACUUM \"public\"." + quote_ident(tables[i].name));
            }
        }
    }
    return ms;
}

void print_bulk(const std::vector<Table>& tables,
                const std::vector<std::vector<std::vector<double>>>& ms, long long span, int runs) {
    std::printf(
        "\nBulk: one UPDATE of %lld consecutive rows (autocommit; median of %d rounds; client "
        "wall time; us per row = ms * 1000 / rows)\n\n",
        span, runs);
    std::printf("%-30s | %-18s | %9s | %8s | %8s\n", "statement", "table", "median ms", "us/row",
                "ratio");
    std::printf("%s\n", std::string(86, '-').c_str());
    for (int op = 0; op < kOps; op++) {
        const auto o = static_cast<std::size_t>(op);
        const double base = median(ms[o][0]);
        for (std::size_t i = 0; i < tables.size(); i++) {
            const double m = median(ms[o][i]);
            std::printf("%-30s | %-18s | %9s | %8s | %8s\n", kOpLabels[op], tables[i].label,
                        fixed(m, 1).c_str(), fixed(m * 1000 / static_cast<double>(span), 3).c_str(),
                        fixed(m / base, 3).c_str());
        }
    }
}

void print_results(const std::vector<Table>& tables,
                   const std::vector<std::vector<std::vector<double>>>& ms, int per_cell) {
    std::printf(
        "\nClient wall time per statement (autocommit, prepared, one round trip), %d statements "
        "per cell;\nratios against the table without the trigger, of means and of medians.\n\n",
        per_cell);
    std::printf("%-30s | %-18s | %8s | %8s | %8s | %10s | %10s\n", "statement", "table", "mean us",
                "p50 us", "p95 us", "mean ratio", "p50 ratio");
    std::printf("%s\n", std::string(110, '-').c_str());
    for (int op = 0; op < kOps; op++) {
        const auto o = static_cast<std::size_t>(op);
        const double base_mean = mean(ms[o][0]), base_p50 = median(ms[o][0]);
        for (std::size_t i = 0; i < tables.size(); i++) {
            const double m = mean(ms[o][i]), p = median(ms[o][i]);
            std::printf("%-30s | %-18s | %8s | %8s | %8s | %10s | %10s\n", kOpLabels[op],
                        tables[i].label, fixed(m * 1000, 1).c_str(), fixed(p * 1000, 1).c_str(),
                        fixed(p95(ms[o][i]) * 1000, 1).c_str(), fixed(m / base_mean, 3).c_str(),
                        fixed(p / base_p50, 3).c_str());
        }
    }
    std::printf(
        "\nTargets: changing UPDATE with the trigger <= 1.30 x, no-op UPDATE <= 1.05 x "
        "(the trigger returns before building JSON).\n");
}

}  // namespace

void run_notify(const Options& opt) {
    std::unique_ptr<Conn> c = connect_retrying(opt.conninfo, 30);
    set_session(*c, false);
    const std::vector<Table> tables = {{"no trigger", "nt_plain", ""},
                                       {"trigger", "nt_trigger", "bench_unheard"},
                                       {"trigger + listener", "nt_heard", "bench_heard"}};
    std::printf("== Change notifications: single-row UPDATEs on %lld-row tables\n", opt.rows);
    for (const Table& t : tables) {
        const Clock::time_point t0 = Clock::now();
        create_table(*c, t, opt.rows);
        std::printf("setup %s: %.1f s\n", t.name.c_str(),
                    std::chrono::duration<double>(Clock::now() - t0).count());
        std::fflush(stdout);
    }
    c->exec("CHECKPOINT");

    Writer w(opt.conninfo);
    Listener listener(opt.conninfo, tables[2].channel);
    for (std::size_t i = 0; i < tables.size(); i++) {
        for (int op = 0; op < kOps; op++) {
            const std::string head =
                "UPDATE \"public\"." + quote_ident(tables[i].name) + " SET " + kOpSql[op];
            const std::string n = std::to_string(op) + "_" + std::to_string(i);
            w.prepare("u" + n, head + " WHERE \"id\" = $1");
            w.prepare("b" + n, head + " WHERE \"id\" BETWEEN $1 AND $1 + " +
                                   std::to_string(opt.rows / 10 - 1));
        }
    }

    const int per_round = 8000, chunk = 200;
    std::mt19937_64 rng(2024);
    std::uniform_int_distribution<long long> any_id(1, opt.rows);
    // ms[op][table]: one entry per statement
    std::vector<std::vector<std::vector<double>>> ms(
        kOps, std::vector<std::vector<double>>(tables.size()));
    long long changing_heard = 0;
    for (int r = -1; r < opt.runs; r++) {  // round -1 warms up, not recorded
        for (int k = 0; k < per_round / chunk; k++) {
            std::vector<long long> ids(chunk);
            for (long long& id : ids) {
                id = any_id(rng);
            }
            for (int op = 0; op < kOps; op++) {
                for (std::size_t j = 0; j < tables.size(); j++) {
                    const std::size_t i = (static_cast<std::size_t>(k + op) + j) % tables.size();
                    const std::string stmt = "u" + std::to_string(op) + "_" + std::to_string(i);
                    for (long long id : ids) {
                        const double t = w.timed(stmt, id);
                        if (r >= 0) {
                            ms[static_cast<std::size_t>(op)][i].push_back(t);
                        }
                    }
                    changing_heard += (i == 2 && op == 0) ? chunk : 0;
                    listener.drain();
                }
            }
        }
        for (const Table& t : tables) {
            c->exec("VACUUM \"public\"." + quote_ident(t.name));
        }
    }

    // Everything committed before the marker has reached the listener.
    c->exec("SELECT pg_notify($1, 'end')", {tables[2].channel});
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(30);
    while (!listener.drain("end", 100)) {
        if (Clock::now() > deadline) {
            throw std::runtime_error("the listener never received the end marker");
        }
    }
    std::printf("listener received %lld notifications for %lld changing UPDATEs (no-op: none)\n",
                listener.received, changing_heard);
    if (listener.received != changing_heard) {
        throw std::runtime_error("notification count does not match the changing UPDATEs");
    }
    print_results(tables, ms, opt.runs * per_round);
    std::fflush(stdout);
    const long long span = opt.rows / 10;
    const auto bulk = run_bulk(*c, w, listener, tables, opt, span, changing_heard);
    if (listener.received != changing_heard) {
        throw std::runtime_error("bulk: notification count does not match the changing rows");
    }
    print_bulk(tables, bulk, span, opt.runs);
    std::fflush(stdout);
    for (const Table& t : tables) {
        c->exec("DROP TABLE \"public\"." + quote_ident(t.name));
    }
}

}  // namespace pgt::bench
