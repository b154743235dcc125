#!/usr/bin/env bash
# isolationtester over test/isolation/specs against a private cluster that
# preloads pg_trickle; each spec's output must equal expected/<name>.out.
# Fails when a spec has no expected output, and prints the diff otherwise.
set -euo pipefail
OUT="$1" PG_BINDIR="$2" PGXS_SRC="$3"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
. "$ROOT/scripts/lib/cluster.sh"
ISO="$ROOT/test/isolation"
TESTER="$PGXS_SRC/test/isolation/isolationtester"

rm -rf "$OUT"
prepare_dir "$OUT"
SOCK="$(mktemp -d /tmp/pgt_iso_XXXXXX)"
[ "$(id -u)" -eq 0 ] && chown postgres:postgres "$SOCK"
port=$(free_port)
cluster_init "$OUT/data" "$port" "$SOCK"
cluster_start "$OUT/data" "$OUT/server.log"
trap 'cluster_stop "$OUT/data"; rm -rf "$SOCK"' EXIT

rc=0
for spec in "$ISO"/specs/*.spec; do
  name="$(basename "$spec" .spec)"
  db="iso_$name"
  psql -X -q -h "$SOCK" -p "$port" -U postgres -d postgres -c "CREATE DATABASE \"$db\"" >/dev/null
  "$TESTER" "host=$SOCK port=$port user=postgres dbname=$db" < "$spec" > "$OUT/$name.out" 2>&1 || true
  if [ ! -f "$ISO/expected/$name.out" ]; then
    echo "isolation: $name has no expected output (test/isolation/expected/$name.out)"
    rc=1
  elif ! diff -u "$ISO/expected/$name.out" "$OUT/$name.out" > "$OUT/$name.diff"; then
    echo "isolation: $name FAILED"
    cat "$OUT/$name.diff"
    rc=1
  else
    echo "isolation: $name ok"
  fi
done
check_log_for_crash "$OUT/server.log" || rc=1
exit $rc
