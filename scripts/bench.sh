#!/usr/bin/env bash
# `make bench`: builds nothing itself; runs bench/pgt_bench from BUILD (arg 1)
# against private PostgreSQL 15 clusters: encoding throughput, then locality
# with shared_buffers = 32MB, then capture and refresh (cdc), then change
# notifications (notify). Prints tables only.
# Invariant: only clusters this script created are started, restarted or
# stopped, always as the `postgres` OS user when run as root.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
. "$ROOT/scripts/lib/cluster.sh"

# Internal: restart one of our clusters (the driver's cold-cache step).
if [ "${1:-}" = "__restart" ]; then
  cluster_stop "$2"
  cluster_start "$2" "$3"
  exit 0
fi

BUILD="${1:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
BIN="$BUILD/bench/pgt_bench"
MICRO_ROWS="${BENCH_MICRO_ROWS:-1000000}"
LOCALITY_ROWS="${BENCH_LOCALITY_ROWS:-5000000}"
CHANGES="${BENCH_CHANGES:-10000}"
RUNS="${BENCH_RUNS:-5}"
CDC_ROWS="${BENCH_CDC_ROWS:-1000000}"
CDC_BIG="${BENCH_CDC_BIG:-1}"   # cdc: refresh scaling also at 10 x BENCH_CDC_ROWS
CDC_WRITE_ONLY="${BENCH_CDC_WRITE_ONLY:-0}"   # cdc: only the write-path section
NOTIFY_ROWS="${BENCH_NOTIFY_ROWS:-1000000}"   # notify: rows in each of the three tables
ONLY="${BENCH_ONLY:-all}"   # all | micro | locality | cdc | notify
case "$ONLY" in
  all|micro|locality|cdc|notify) ;;
  *) echo "BENCH_ONLY must be all, micro, locality, cdc or notify (got '$ONLY')" >&2; exit 2 ;;
esac
[ -x "$BIN" ] || { echo "missing $BIN: run make bench (or make build) first" >&2; exit 1; }

WORK="$BUILD/bench/run"
SOCK="$(mktemp -d /tmp/pgt-bench.XXXXXX)"   # short: socket paths are limited
DATA=""
cleanup() {
  if [ -n "$DATA" ]; then cluster_stop "$DATA"; fi
  rm -rf "$SOCK"
}
trap cleanup EXIT
prepare_dir "$SOCK"

# new_cluster NAME SETTINGS...: a fresh, started cluster in $WORK/NAME.
new_cluster() {
  local name="$1"; shift
  if [ -n "$DATA" ]; then cluster_stop "$DATA"; rm -rf "$(dirname "$DATA")"; fi
  DATA="$WORK/$name/data"
  LOG="$WORK/$name/server.log"
  cluster_stop "$DATA" 2>/dev/null || true
  rm -rf "${WORK:?}/$name"
  prepare_dir "$WORK/$name"
  PORT=$(free_port)
  cluster_init "$DATA" "$PORT" "$SOCK"
  printf '%s\n' "$@" | as_pg tee -a "$DATA/postgresql.conf" >/dev/null
  as_pg touch "$LOG"
  cluster_start "$DATA" "$LOG"
  CONN="host=$SOCK port=$PORT user=postgres dbname=postgres"
}

echo "pg_trickle benchmarks: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
echo "PostgreSQL: $("$PG_BINDIR/postgres" --version)"
echo "load average at start (others' work adds noise): $(cut -d' ' -f1-3 /proc/loadavg)"
echo

if [ "$ONLY" = all ] || [ "$ONLY" = micro ]; then
  new_cluster micro "shared_buffers = 1GB" "max_wal_size = 4GB"
  "$BIN" micro --conn "$CONN" --rows "$MICRO_ROWS" --runs "$RUNS"
  check_log_for_crash "$LOG"
  echo
fi

if [ "$ONLY" = all ] || [ "$ONLY" = locality ]; then
  # full_page_writes back to PostgreSQL's default (cluster_init turns it off
  # for tests): the apply's WAL then includes the first-touch page images.
  new_cluster locality "shared_buffers = 32MB" "max_wal_size = 4GB" "autovacuum = off" \
    "full_page_writes = on"
  "$BIN" locality --conn "$CONN" --rows "$LOCALITY_ROWS" --changes "$CHANGES" --runs "$RUNS" \
    --restart-cmd "\"$ROOT/scripts/bench.sh\" __restart \"$DATA\" \"$LOG\""
  check_log_for_crash "$LOG"
  echo
fi

if [ "$ONLY" = all ] || [ "$ONLY" = cdc ]; then
  # autovacuum off: the driver vacuums between rounds, so no cell pays for a
  # vacuum or analyze that happened to start during it. shared_buffers holds
  # every refresh-scaling stream table (10M rows: about 1.1 GB) warm.
  new_cluster cdc "shared_buffers = 3GB" "max_wal_size = 4GB" "autovacuum = off"
  "$BIN" cdc --conn "$CONN" --rows "$CDC_ROWS" --changes "$CHANGES" --runs "$RUNS" \
    --big-scale "$CDC_BIG" --write-only "$CDC_WRITE_ONLY"
  check_log_for_crash "$LOG"
  echo
fi

if [ "$ONLY" = all ] || [ "$ONLY" = notify ]; then
  # autovacuum off: the driver vacuums the three tables between rounds.
  new_cluster notify "shared_buffers = 1GB" "max_wal_size = 4GB" "autovacuum = off"
  "$BIN" notify --conn "$CONN" --rows "$NOTIFY_ROWS" --runs "$RUNS"
  check_log_for_crash "$LOG"
fi

if [ -n "$DATA" ]; then cluster_stop "$DATA"; fi
rm -rf "${WORK:?}"
DATA=""
