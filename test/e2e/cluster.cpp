// Private cluster lifecycle for the e2e tests (see cluster.hpp).
// Invariant: each run starts from an empty data directory.
#include "cluster.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace pgt::e2e {

namespace {

std::string run_prefix() {
    return geteuid() == 0 ? "runuser -u postgres -- " : "";
}

void sh(const std::string& cmd) {
    if (std::system(cmd.c_str()) != 0) {
        throw std::runtime_error("command failed: " + cmd);
    }
}

// Lets the kernel pick a free TCP port on 127.0.0.1.
int pick_free_port() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        throw std::runtime_error("cannot find a free port");
    }
    int port = ntohs(addr.sin_port);
    close(fd);
    return port;
}

// The server runs as `postgres`: every ancestor of dir must be traversable.
void make_reachable(const std::string& dir) {
    std::string d = dir;
    while (d.size() > 1) {
        d = d.substr(0, d.find_last_of('/'));
        if (d.empty()) {
            break;
        }
        struct stat st;
        if (stat(d.c_str(), &st) == 0 && (st.st_mode & S_IXOTH) == 0) {
            chmod(d.c_str(), st.st_mode | S_IXOTH);
        }
    }
}

}  // namespace

void Cluster::prepare(const std::string& workdir) {
    workdir_ = workdir;
    datadir_ = workdir + "/data";
    logfile_ = workdir + "/server.log";
    port_ = pick_free_port();
    sh("rm -rf '" + workdir + "' && mkdir -p '" + workdir + "'");
    char tmpl[] = "/tmp/pgt_e2e_XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
        throw std::runtime_error("mkdtemp failed");
    }
    sockdir_ = tmpl;
    if (geteuid() == 0) {
        make_reachable(workdir);
        sh("chown postgres:postgres '" + workdir + "' '" + sockdir_ + "'");
    }
}

void Cluster::launch() {
    sh(run_prefix() + PGT_PG_BINDIR "/pg_ctl -D '" + datadir_ + "' -l '" + logfile_ +
       "' -w -t 60 start > /dev/null");
    running_ = true;
}

void Cluster::start(const std::string& workdir, bool scheduler, bool preload, bool logical,
                    const std::string& extra_conf) {
    prepare(workdir);
    sh(run_prefix() + PGT_PG_BINDIR "/initdb -D '" + datadir_ +
       "' -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 > '" + workdir + "/initdb.log' 2>&1");
    std::ofstream conf(datadir_ + "/postgresql.conf", std::ios::app);
    conf << "port = " << port_ << "\n"
         << "listen_addresses = ''\n"
         << "unix_socket_directories = '" << sockdir_ << "'\n"
         << "shared_preload_libraries = '" << (preload ? "pg_trickle" : "") << "'\n"
         << "pg_trickle.enabled = " << (scheduler ? "on" : "off") << "\n"
         << "pg_trickle.scheduler_interval_ms = 200\n"
         << "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
         << "max_connections = 50\n"
         << (logical ? "wal_level = logical\n" : "") << extra_conf;
    conf.close();
    launch();
}

// initdb --auth=trust allows local replication connections, and PG 15's
// defaults (wal_level = replica, max_wal_senders = 10) allow streaming.
void Cluster::start_standby(const std::string& workdir, const Cluster& primary) {
    prepare(workdir);
    sh(run_prefix() + PGT_PG_BINDIR "/pg_basebackup -D '" + datadir_ +
       "' -R -X stream -c fast --no-sync -h '" + primary.sockdir_ + "' -p " +
       std::to_string(primary.port_) + " -U postgres > '" + workdir + "/basebackup.log' 2>&1");
    // The copied postgresql.conf is the primary's: later lines win.
    std::ofstream conf(datadir_ + "/postgresql.conf", std::ios::app);
    conf << "port = " << port_ << "\n"
         << "unix_socket_directories = '" << sockdir_ << "'\n";
    conf.close();
    launch();
}

void Cluster::stop() {
    if (running_) {
        running_ = false;
        sh(run_prefix() + PGT_PG_BINDIR "/pg_ctl -D '" + datadir_ +
           "' -m fast -w stop > /dev/null");
    }
}

std::string Cluster::crash_lines() const {
    std::ifstream in(logfile_);
    std::string line, out;
    while (std::getline(in, line)) {
        if (line.find("terminated by signal") != std::string::npos ||
            line.find("terminated by exception") != std::string::npos ||
            line.find("PANIC:") != std::string::npos) {
            out += line + "\n";
        }
    }
    return out;
}

std::string Cluster::log_lines(const std::string& text) const {
    std::ifstream in(logfile_);
    std::string line, out;
    while (std::getline(in, line)) {
        if (line.find(text) != std::string::npos) {
            out += line + "\n";
        }
    }
    return out;
}

std::string Cluster::conninfo(const std::string& dbname) const {
    std::ostringstream s;
    s << "host=" << sockdir_ << " port=" << port_ << " user=postgres dbname=" << dbname;
    return s.str();
}

Cluster& cluster() {
    static Cluster c;
    return c;
}

}  // namespace pgt::e2e
