// libpq client for the benchmark driver (see pq.hpp).
// Invariant: PGresult objects never outlive the call that produced them.
#include "pq.hpp"

#include <chrono>
#include <stdexcept>
#include <thread>

namespace pgt::bench {

namespace {

std::string field(const PGresult* r, int code) {
    const char* v = PQresultErrorField(r, code);
    return v ? v : "";
}

// Discards NOTICEs (VACUUM, DROP ... IF EXISTS) so they do not clutter tables.
void ignore_notice(void*, const PGresult*) {}

PGresult* run(PGconn* conn, const std::string& sql, const std::vector<std::string>& params) {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const std::string& p : params) {
        values.push_back(p.c_str());
    }
    PGresult* r = params.empty() ? PQexec(conn, sql.c_str())
                                 : PQexecParams(conn, sql.c_str(), static_cast<int>(params.size()),
                                                nullptr, values.data(), nullptr, nullptr, 0);
    const ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        std::string msg = field(r, PG_DIAG_SQLSTATE) + ": " + field(r, PG_DIAG_MESSAGE_PRIMARY);
        if (msg == ": ") {
            msg = PQerrorMessage(conn);
        }
        PQclear(r);
        const std::string head = sql.substr(0, 200);
        throw std::runtime_error(msg + "\n  in: " + head + (sql.size() > 200 ? " ..." : ""));
    }
    return r;
}

}  // namespace

Conn::Conn(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str())) {
    if (PQstatus(conn_) != CONNECTION_OK) {
        std::string msg = PQerrorMessage(conn_);
        PQfinish(conn_);
        throw std::runtime_error("connection failed: " + msg);
    }
    PQsetNoticeReceiver(conn_, ignore_notice, nullptr);
}

Conn::~Conn() {
    PQfinish(conn_);
}

Rows Conn::exec(const std::string& sql, const std::vector<std::string>& params) {
    PGresult* r = run(conn_, sql, params);
    Rows rows;
    for (int i = 0; i < PQntuples(r); i++) {
        std::vector<std::string> row;
        for (int j = 0; j < PQnfields(r); j++) {
            row.emplace_back(PQgetvalue(r, i, j));
        }
        rows.push_back(std::move(row));
    }
    PQclear(r);
    return rows;
}

std::string Conn::scalar(const std::string& sql, const std::vector<std::string>& params) {
    Rows rows = exec(sql, params);
    if (rows.empty() || rows[0].empty()) {
        throw std::runtime_error("no value from: " + sql.substr(0, 200));
    }
    return rows[0][0];
}

double Conn::timed_ms(const std::string& sql, const std::vector<std::string>& params) {
    const auto t0 = std::chrono::steady_clock::now();
    PQclear(run(conn_, sql, params));
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

std::unique_ptr<Conn> connect_retrying(const std::string& conninfo, int timeout_s) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    for (;;) {
        try {
            return std::make_unique<Conn>(conninfo);
        } catch (const std::runtime_error&) {
            if (std::chrono::steady_clock::now() > deadline) {
                throw;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    }
}

std::string quote_ident(const std::string& name) {
    std::string out = "\"";
    for (char c : name) {
        out += c;
        if (c == '"') {
            out += '"';
        }
    }
    return out + "\"";
}

}  // namespace pgt::bench
