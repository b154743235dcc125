# Shell helpers for private PostgreSQL clusters (demo, regress, benches).
# Invariant: server processes never run as root: as root, everything that
# touches a data directory runs as the `postgres` OS user.
PG_BINDIR="${PG_BINDIR:-$(pg_config --bindir)}"

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# Creates DIR owned by the server's user and makes every ancestor
# traversable by it (a checkout under a 0700 home would block initdb).
prepare_dir() {
  local dir
  mkdir -p "$1"
  dir="$(cd "$1" && pwd)"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres:postgres "$dir"
    local d="$dir"
    while [ "$d" != "/" ]; do
      d="$(dirname "$d")"
      if ! runuser -u postgres -- test -x "$d"; then
        echo "note: granting o+x on $d so the postgres user can reach $dir"
        chmod o+x "$d"
      fi
    done
  fi
}

# Prints a TCP port on 127.0.0.1 that nothing listens on.
free_port() {
  local p
  for _ in $(seq 1 200); do
    p=$(( 20000 + RANDOM % 20000 ))
    if ! (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  echo "no free port found" >&2
  return 1
}

# cluster_init DATADIR PORT SOCKDIR: initdb plus our settings. The background
# scheduler is off unless PGT_SCHEDULER=on (tests and benchmarks refresh
# explicitly; the demo turns it on).
cluster_init() {
  local data="$1" port="$2" sock="$3"
  as_pg "$PG_BINDIR/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
  cat >> "$data/postgresql.conf" <<CONF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$sock'
shared_preload_libraries = 'pg_trickle'
pg_trickle.enabled = ${PGT_SCHEDULER:-off}
fsync = off
synchronous_commit = off
full_page_writes = off
CONF
}

cluster_start() {
  local data="$1" log="$2"
  as_pg "$PG_BINDIR/pg_ctl" -D "$data" -l "$log" -w -t 60 start >/dev/null
}

cluster_stop() {
  local data="$1"
  if [ -f "$data/postmaster.pid" ]; then
    as_pg "$PG_BINDIR/pg_ctl" -D "$data" -m fast -w stop >/dev/null || true
  fi
}

# Fails when the server log shows a backend crash.
check_log_for_crash() {
  local log="$1"
  if grep -E "terminated by signal|was terminated by exception|PANIC:" "$log"; then
    echo "server log $log shows a crash" >&2
    return 1
  fi
}
