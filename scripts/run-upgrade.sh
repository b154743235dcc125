#!/usr/bin/env bash
# Extension update test: pg_trickle 0.1.0's library (built from the commit
# that shipped it) makes stream tables of every mode in a private cluster
# (test/upgrade/before.sql); the installed library then must refuse that
# catalog, ALTER EXTENSION pg_trickle UPDATE must bring it to this version,
# and every stream table must equal its query through two rounds of
# changes (test/upgrade/after.sql, output compared with expected.out).
# Swaps the installed pg_trickle.so for the old one while the old library
# runs, and puts the current one back on every exit path.
set -euo pipefail
OUT="$1" PG_BINDIR="$2"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
. "$ROOT/scripts/lib/cluster.sh"
OLD_COMMIT=07e86f1be5550e7923f1f4cebdec250432ceddf2  # pg_trickle 0.1.0 (the last commit with catalog 0.1.0 only)
LIBDIR="$("$PG_BINDIR/pg_config" --pkglibdir)"
UP="$ROOT/test/upgrade"

if ! git -C "$ROOT" cat-file -e "$OLD_COMMIT^{commit}" 2>/dev/null; then
  echo "upgrade: commit $OLD_COMMIT (pg_trickle 0.1.0) is not in this clone's history;"
  echo "         fetch it (git fetch --unshallow) to build the old library"
  exit 1
fi
rm -rf "$OUT"
mkdir -p "$OUT/old"
git -C "$ROOT" archive "$OLD_COMMIT" | tar -x -C "$OUT/old"
echo "upgrade: building the 0.1.0 library (log: $OUT/old-build.log)"
cmake -S "$OUT/old" -B "$OUT/old/build" -DCMAKE_BUILD_TYPE=Release > "$OUT/old-build.log" 2>&1
cmake --build "$OUT/old/build" --target pg_trickle -j"$(nproc)" >> "$OUT/old-build.log" 2>&1

cp "$LIBDIR/pg_trickle.so" "$OUT/current.so"
restore_lib() { cp "$OUT/current.so" "$LIBDIR/pg_trickle.so"; }
prepare_dir "$OUT"
SOCK="$(mktemp -d /tmp/pgt_up_XXXXXX)"
[ "$(id -u)" -eq 0 ] && chown postgres:postgres "$SOCK"
port=$(free_port)
cluster_init "$OUT/data" "$port" "$SOCK"
trap 'cluster_stop "$OUT/data" 2>/dev/null || true; restore_lib; rm -rf "$SOCK"' EXIT
psql_do() { "$PG_BINDIR/psql" -X -q -h "$SOCK" -p "$port" -U postgres "$@"; }

cp "$OUT/old/build/pg_trickle.so" "$LIBDIR/pg_trickle.so"
cluster_start "$OUT/data" "$OUT/server-old.log"
psql_do -d postgres -c "CREATE DATABASE up" >/dev/null
psql_do -d up -f "$UP/before.sql" > "$OUT/before.out" 2>&1 || { cat "$OUT/before.out"; exit 1; }
cluster_stop "$OUT/data"

restore_lib
cluster_start "$OUT/data" "$OUT/server.log"
psql_do -d up -f "$UP/after.sql" > "$OUT/after.out" 2>&1 || true
rc=0
if ! diff -u "$UP/expected.out" "$OUT/after.out" > "$OUT/after.diff"; then
  echo "upgrade: FAILED"
  cat "$OUT/after.diff"
  rc=1
else
  echo "upgrade: ok"
fi
check_log_for_crash "$OUT/server-old.log" || rc=1
check_log_for_crash "$OUT/server.log" || rc=1
exit $rc
