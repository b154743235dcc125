#!/usr/bin/env bash
# `make demo`: a private PostgreSQL 15 cluster under .demo/ with pg_trickle
# preloaded, the sample shop of demo/demo.sql, and its output. KEEP=1 leaves
# the cluster running and prints how to connect.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
. "$ROOT/scripts/lib/cluster.sh"
DEMO="$ROOT/.demo"

cluster_stop "$DEMO/data" 2>/dev/null || true
rm -rf "$DEMO"
prepare_dir "$DEMO"
port=$(free_port)
PGT_SCHEDULER=on cluster_init "$DEMO/data" "$port" "$DEMO"
cluster_start "$DEMO/data" "$DEMO/server.log"
if [ "${KEEP:-0}" != "1" ]; then
  trap 'cluster_stop "$DEMO/data"' EXIT
fi
echo "pg_trickle demo: private cluster in $DEMO (port $port)"
psql -X -q -h "$DEMO" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -f "$ROOT/demo/demo.sql"
check_log_for_crash "$DEMO/server.log"
if [ "${KEEP:-0}" = "1" ]; then
  echo
  echo "The cluster is still running. Connect with:"
  echo "  psql -h $DEMO -p $port -U postgres"
  echo "Stop it with:"
  echo "  $( [ "$(id -u)" -eq 0 ] && echo 'runuser -u postgres -- ' )$PG_BINDIR/pg_ctl -D $DEMO/data stop"
else
  echo
  echo "Demo finished; cluster stopped (make demo KEEP=1 keeps it running)."
fi
