#!/usr/bin/env bash
# Proves an engine change kept what refreshes run: builds the library of
# git revision OLD_REV, makes the same stream tables with it and with the
# installed (current) library in a private cluster (the 22 TPC-H queries at
# SF 0.01 and test/programs/shapes.sql), and compares mode, identity and
# delta program of each, byte for byte (as explain_st formats it).
# Usage: scripts/compare-programs.sh OLD_REV [OUT_DIR]
# Installs OLD_REV's library and scripts over the current ones while they
# run, and puts the current ones back on every exit path.
set -euo pipefail
OLD_REV="$1" OUT="${2:-/tmp/pgt_compare}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
. "$ROOT/scripts/lib/cluster.sh"
PG_BINDIR="$(pg_config --bindir)"
LIBDIR="$(pg_config --pkglibdir)" EXTDIR="$(pg_config --sharedir)/extension"

rm -rf "$OUT"
mkdir -p "$OUT/old" "$OUT/current"
git -C "$ROOT" archive "$OLD_REV" | tar -x -C "$OUT/old"
echo "compare: building $OLD_REV (log: $OUT/old-build.log)"
cmake -S "$OUT/old" -B "$OUT/old/build" -DCMAKE_BUILD_TYPE=Release -DPGT_BUILD_TESTS=OFF \
  > "$OUT/old-build.log" 2>&1
cmake --build "$OUT/old/build" --target pg_trickle -j"$(nproc)" >> "$OUT/old-build.log" 2>&1

cp "$LIBDIR/pg_trickle.so" "$OUT/current/"
cp "$EXTDIR"/pg_trickle* "$OUT/current/"
restore() {
  rm -f "$EXTDIR"/pg_trickle*
  cp "$OUT/current/pg_trickle.so" "$LIBDIR/"
  cp "$OUT/current"/pg_trickle.control "$OUT/current"/pg_trickle--*.sql "$EXTDIR/"
}
install_old() {
  rm -f "$EXTDIR"/pg_trickle*
  cp "$OUT/old/build/pg_trickle.so" "$LIBDIR/"
  cp "$OUT/old/build/pg_trickle.control" "$EXTDIR/"
  cp "$OUT/old/sql"/pg_trickle--*.sql "$EXTDIR/"
}
prepare_dir "$OUT"
SOCK="$(mktemp -d /tmp/pgt_cmp_XXXXXX)"
[ "$(id -u)" -eq 0 ] && chown postgres:postgres "$SOCK"
port=$(free_port)
cluster_init "$OUT/data" "$port" "$SOCK"
trap 'cluster_stop "$OUT/data" 2>/dev/null || true; restore; rm -rf "$SOCK"' EXIT
psql_do() { "$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -p "$port" -U postgres "$@"; }

# The stream tables: each TPC-H query DIFFERENTIAL where it can be, else
# AUTO; then the shapes.
{
  for f in "$ROOT"/bench/tpch/queries/q*.sql; do
    n="$(basename "$f" .sql)"
    q="$(grep -v '^[[:space:]]*--' "$f" | sed -e ':a' -e 'N' -e '$!ba' -e 's/;[[:space:]]*$//')"
    printf 'DO $do$ BEGIN\n  PERFORM pgtrickle.create_stream_table(%s, $q$%s$q$, refresh_mode => %s);\n' \
      "'$n'" "$q" "'DIFFERENTIAL'"
    printf 'EXCEPTION WHEN feature_not_supported THEN\n  PERFORM pgtrickle.create_stream_table(%s, $q$%s$q$, refresh_mode => %s);\nEND $do$;\n' \
      "'$n'" "$q" "'AUTO'"
  done
  cat "$ROOT/test/programs/shapes.sql"
} > "$OUT/create.sql"

dump() {  # $1: label
  cluster_start "$OUT/data" "$OUT/server-$1.log"
  psql_do -d postgres -c "DROP DATABASE IF EXISTS cmp" -c "CREATE DATABASE cmp" >/dev/null
  psql_do -d cmp -c "CREATE EXTENSION pg_trickle" >/dev/null
  psql_do -d cmp -v sf=0.01 -f "$ROOT/bench/tpch/schema.sql" -f "$ROOT/bench/tpch/datagen.sql" \
    > /dev/null
  psql_do -d cmp -f "$OUT/create.sql" > "$OUT/create-$1.log" 2>&1
  # The program as explain_st formats it (section by section): the same
  # statements compare equal whichever storage form a revision uses.
  psql_do -d cmp -At -c "SELECT pgt_name, refresh_mode, row_identity_domain,
      coalesce(pg_catalog.md5(pgtrickle._explain_program(coalesce(
        pg_catalog.to_jsonb(s) OPERATOR(pg_catalog.->>) 'delta_program',
        pg_catalog.to_jsonb(s) OPERATOR(pg_catalog.->>) 'delta_sql'))), '-')
      FROM pgtrickle.pgt_stream_tables s ORDER BY 1" \
    > "$OUT/programs-$1.txt"
  cluster_stop "$OUT/data"
}
install_old
dump old
restore
dump current
echo "compare: $(wc -l < "$OUT/programs-current.txt") stream tables"
if diff -u "$OUT/programs-old.txt" "$OUT/programs-current.txt"; then
  echo "compare: every mode, identity and delta program is the same as at $OLD_REV"
else
  echo "compare: DIFFERENT from $OLD_REV (above)"
  exit 1
fi
