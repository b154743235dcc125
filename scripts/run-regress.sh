#!/usr/bin/env bash
# pg_regress over test/regress with its own temporary instance that
# preloads pg_trickle. Fails when a .sql test is missing from the schedule
# (or a scheduled test has no .sql/.out), and prints the diffs on failure.
# --installcheck (first): against the running server libpq's environment
# (PGHOST, PGPORT, PGUSER) names instead, as PGXS's `make installcheck`:
# the installed extension, database contrib_regression.
set -euo pipefail
INSTALLCHECK=0
if [ "${1:-}" = "--installcheck" ]; then
  INSTALLCHECK=1
  shift
fi
OUT="$1" PG_BINDIR="$2" PGXS_SRC="$3"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
. "$ROOT/scripts/lib/cluster.sh"
REG="$ROOT/test/regress"

scheduled=$(grep -E '^test:' "$REG/schedule" | sed 's/^test://' | tr ' ' '\n' | sed '/^$/d' | sort)
present=$(cd "$REG/sql" && ls *.sql | sed 's/\.sql$//' | sort)
if [ "$scheduled" != "$present" ]; then
  echo "regress: test/regress/schedule and test/regress/sql disagree:" >&2
  diff <(echo "$scheduled") <(echo "$present") >&2 || true
  exit 1
fi
for t in $scheduled; do
  [ -f "$REG/expected/$t.out" ] || { echo "regress: expected/$t.out is missing" >&2; exit 1; }
done

if [ $INSTALLCHECK -eq 1 ]; then
  rm -rf "$OUT"
  mkdir -p "$OUT"
  set +e
  "$PGXS_SRC/test/regress/pg_regress" --bindir="$PG_BINDIR" --inputdir="$REG" \
    --outputdir="$OUT" --schedule="$REG/schedule" --dbname=contrib_regression
  rc=$?
  set -e
  if [ $rc -ne 0 ] && [ -f "$OUT/regression.diffs" ]; then
    cat "$OUT/regression.diffs"
  fi
  exit $rc
fi

rm -rf "$OUT"
prepare_dir "$OUT"
printf '%s\n' "shared_preload_libraries = 'pg_trickle'" "pg_trickle.enabled = off" > "$OUT/temp.conf"
chmod a+r "$OUT/temp.conf"
port=$(free_port)
set +e
as_pg "$PGXS_SRC/test/regress/pg_regress" \
  --temp-instance="$OUT/tmp_check" --temp-config="$OUT/temp.conf" \
  --bindir="$PG_BINDIR" --inputdir="$REG" --outputdir="$OUT" \
  --schedule="$REG/schedule" --port="$port"
rc=$?
set -e
if [ $rc -ne 0 ] && [ -f "$OUT/regression.diffs" ]; then
  cat "$OUT/regression.diffs"
fi
if [ -f "$OUT/log/postmaster.log" ]; then
  check_log_for_crash "$OUT/log/postmaster.log" || rc=1
fi
exit $rc
