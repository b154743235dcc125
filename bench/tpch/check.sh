#!/usr/bin/env bash
# Smoke check of the TPC-H-derived workload: load at scale factor $1 (default
# 0.01) into the database given by the libpq environment (PGHOST, PGPORT,
# PGDATABASE, PGUSER), run the 22 queries, then $2 (default 3) refresh
# cycles RF1+RF2+RF3 (one transaction per cycle) with a consistency check and
# the 22 queries after each. Invariant: exits 1 as soon as any statement fails.
# WARNING: drops and recreates schemas tpch and tpch_gen in that database.
set -uo pipefail

sf=${1:-0.01}
cycles=${2:-3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
psql_run=(psql -X -q -v ON_ERROR_STOP=1)

die() { echo "check.sh: $*" >&2; exit 1; }
now_ms() { date +%s%3N; }

run_queries() {
    local f rows t0 t1 line=""
    for f in "$here"/queries/q*.sql; do
        t0=$(now_ms)
        # Run the query itself (a count(*) wrapper lets the planner drop unused
        # outputs); with -At each result row is one line of output.
        rows=$("${psql_run[@]}" -At -f "$f" | wc -l) || die "query $(basename "$f") failed"
        t1=$(now_ms)
        line+=" $(basename "$f" .sql)=${rows}($((t1 - t0))ms)"
    done
    echo "  rows:$line"
}

t0=$(now_ms)
"${psql_run[@]}" -v sf="$sf" -f "$here/schema.sql" -f "$here/datagen.sql" >/dev/null \
    || die "load at sf=$sf failed"
echo "load sf=$sf: $(( $(now_ms) - t0 )) ms"
"${psql_run[@]}" -At -F ' ' -c "SELECT 'cardinalities:',
      (SELECT count(*) FROM tpch.region), (SELECT count(*) FROM tpch.nation),
      (SELECT count(*) FROM tpch.supplier), (SELECT count(*) FROM tpch.customer),
      (SELECT count(*) FROM tpch.part), (SELECT count(*) FROM tpch.partsupp),
      (SELECT count(*) FROM tpch.orders), (SELECT count(*) FROM tpch.lineitem)" \
    || die "counting rows failed"
"${psql_run[@]}" -f "$here/consistency.sql" || die "consistency after load failed"
run_queries

for ((cycle = 1; cycle <= cycles; cycle++)); do
    t0=$(now_ms)
    "${psql_run[@]}" -1 -v cycle="$cycle" \
        -f "$here/rf1.sql" -f "$here/rf2.sql" -f "$here/rf3.sql" \
        || die "refresh cycle $cycle failed"
    echo "cycle $cycle (rf1+rf2+rf3): $(( $(now_ms) - t0 )) ms"
    "${psql_run[@]}" -f "$here/consistency.sql" || die "consistency after cycle $cycle failed"
    run_queries
done
echo "check.sh: ok"
