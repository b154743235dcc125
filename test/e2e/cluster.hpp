// The e2e harness's private PostgreSQL cluster: initdb into the build tree,
// a free port, a unix socket in the work directory, pg_trickle preloaded.
// Invariant: server processes never run as root (as root the harness runs
// them as the `postgres` OS user), and a run whose server log shows a
// crash fails even if every test passed.
#pragma once

#include <string>

namespace pgt::e2e {

class Cluster {
public:
    // Starts a fresh cluster under workdir; throws std::runtime_error. The
    // background scheduler runs only when `scheduler` is set; without
    // `preload`, pg_trickle is not in shared_preload_libraries (it is then
    // loaded on first use, and no scheduler can start).
    // `logical`: wal_level = logical (a publisher for logical replication).
    // `extra_conf`: lines appended to postgresql.conf (later lines win).
    void start(const std::string& workdir, bool scheduler = false, bool preload = true,
               bool logical = false, const std::string& extra_conf = "");
    // Starts a streaming hot standby of the running `primary` under workdir
    // (pg_basebackup -R: the primary's settings, its own port and socket);
    // throws std::runtime_error. Promote it with SELECT pg_promote().
    void start_standby(const std::string& workdir, const Cluster& primary);
    void stop();
    // Lines of the server log that show a backend crash ("" if none).
    std::string crash_lines() const;
    // Lines of the server log that contain `text` ("" if none).
    std::string log_lines(const std::string& text) const;
    std::string conninfo(const std::string& dbname = "postgres") const;
    const std::string& socket_dir() const { return sockdir_; }
    int port() const { return port_; }

private:
    // Fresh workdir and socket dir, a free port (nothing started yet).
    void prepare(const std::string& workdir);
    void launch();  // pg_ctl start of datadir_

    std::string workdir_;
    std::string sockdir_;  // short path under /tmp (unix socket paths are limited)
    std::string datadir_;
    std::string logfile_;
    int port_ = 0;
    bool running_ = false;
};

// The cluster shared by every test of this binary.
Cluster& cluster();

}  // namespace pgt::e2e
