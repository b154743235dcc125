// libpq client for the e2e tests (see pg_conn.hpp).
// Invariant: PGresult objects never outlive the call that produced them.
#include "pg_conn.hpp"

#include <poll.h>

#include "cluster.hpp"

namespace pgt::e2e {

namespace {

std::string field(const PGresult* r, int code) {
    const char* v = PQresultErrorField(r, code);
    return v ? v : "";
}

void on_notice(void* arg, const PGresult* r) {
    static_cast<Conn*>(arg)->notices.push_back(field(r, PG_DIAG_MESSAGE_PRIMARY));
}

}  // namespace

Conn::Conn(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str())) {
    if (PQstatus(conn_) != CONNECTION_OK) {
        std::string msg = PQerrorMessage(conn_);
        PQfinish(conn_);
        throw std::runtime_error("connection failed: " + msg);
    }
    PQsetNoticeReceiver(conn_, on_notice, this);
}

Conn::~Conn() {
    PQfinish(conn_);
}

Result Conn::exec(const std::string& sql, const std::vector<std::string>& params) {
    std::vector<const char*> values;
    for (const auto& p : params) {
        values.push_back(p.c_str());
    }
    PGresult* r = params.empty() ? PQexec(conn_, sql.c_str())
                                 : PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()),
                                                nullptr, values.data(), nullptr, nullptr, 0);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        SqlError e(field(r, PG_DIAG_SQLSTATE), field(r, PG_DIAG_MESSAGE_PRIMARY),
                   field(r, PG_DIAG_MESSAGE_DETAIL), field(r, PG_DIAG_MESSAGE_HINT));
        e.context = field(r, PG_DIAG_CONTEXT);
        e.internal_query = field(r, PG_DIAG_INTERNAL_QUERY);
        PQclear(r);
        if (e.sqlstate.empty()) {
            throw std::runtime_error(PQerrorMessage(conn_));
        }
        throw e;
    }
    Result out;
    for (int i = 0; i < PQntuples(r); i++) {
        Row row;
        for (int j = 0; j < PQnfields(r); j++) {
            row.push_back(PQgetisnull(r, i, j) ? std::nullopt
                                               : std::optional<std::string>(PQgetvalue(r, i, j)));
        }
        out.rows.push_back(std::move(row));
    }
    PQclear(r);
    return out;
}

std::string Conn::scalar(const std::string& sql, const std::vector<std::string>& params) {
    Result r = exec(sql, params);
    if (r.rows.empty() || r.rows[0].empty()) {
        throw std::runtime_error("no rows: " + sql);
    }
    return r.at(0, 0);
}

SqlError Conn::error_of(const std::string& sql) {
    try {
        exec(sql);
    } catch (const SqlError& e) {
        return e;
    }
    throw std::logic_error("statement succeeded but an error was expected: " + sql);
}

int Conn::backend_pid() {
    return PQbackendPID(conn_);
}

std::vector<Notification> Conn::notifications(int wait_ms) {
    std::vector<Notification> out;
    auto collect = [&] {
        if (PQconsumeInput(conn_) == 0) {
            throw std::runtime_error(PQerrorMessage(conn_));
        }
        while (PGnotify* n = PQnotifies(conn_)) {
            out.push_back({n->relname, n->extra, n->be_pid});
            PQfreemem(n);
        }
    };
    collect();
    if (out.empty() && wait_ms > 0) {
        pollfd fd{PQsocket(conn_), POLLIN, 0};
        if (poll(&fd, 1, wait_ms) > 0) {
            collect();
        }
    }
    return out;
}

Conn connect(const std::string& dbname) {
    return Conn(cluster().conninfo(dbname));
}

}  // namespace pgt::e2e
