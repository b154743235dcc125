#!/usr/bin/env bash
# UNION ALL against recomputing, side by side in one run: two 1M-row tables
# s1(id pk, amount, status) and s2(pid pk, cents, ok) unioned by the view
# pay (two filtered arms, a cast), read by a counted stream table of its
# rows and by one of its totals per arm (COUNT/SUM/MAX kept
# algebraically), each DIFFERENTIAL and FULL, against REFRESH MATERIALIZED
# VIEW of the same query. Each round updates, deletes and inserts `rows`
# rows of each table (scattered over the keys), then refreshes each once.
# Usage: bench.sh [rounds] [rows] (defaults 3, 50). Prints ms per refresh
# and the ratios; checks every stream table against its query at the end
# (a mismatch exits 1). Uses the libpq environment (PGHOST, PGPORT,
# PGDATABASE). WARNING: drops and recreates s1, s2, pay, their stream
# tables and views, and the extension in that database.
# Invariant: timing only; nothing here asserts on time.
set -uo pipefail
rounds=${1:-3}
rows=${2:-50}
P=(psql -X -q -At -v ON_ERROR_STOP=1)
die() { echo "bench.sh: $*" >&2; exit 1; }
# shellcheck source=../timed_refresh.sh
. "$(dirname "$0")/../timed_refresh.sh"
ms() { "${P[@]}" -c "\\timing on" -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1; }
ROWS="SELECT id, amount, src FROM pay"
TOTALS="SELECT src, count(*) AS n, sum(amount) AS total, max(amount) AS hi FROM pay GROUP BY src"
"${P[@]}" -c "SET client_min_messages = warning" -c "DROP EXTENSION IF EXISTS pg_trickle CASCADE" \
    -c "DROP TABLE IF EXISTS s1, s2 CASCADE" -c "CREATE EXTENSION pg_trickle" \
    -c "CREATE TABLE s1 (id int PRIMARY KEY, amount numeric NOT NULL, status text)" \
    -c "CREATE TABLE s2 (pid bigint PRIMARY KEY, cents int, ok boolean)" \
    -c "INSERT INTO s1 SELECT g, (g % 1000) / 10.0, CASE g % 3 WHEN 0 THEN 'paid' ELSE 'open' END FROM generate_series(1, 1000000) g" \
    -c "INSERT INTO s2 SELECT g, g % 100000, g % 4 <> 0 FROM generate_series(1, 1000000) g" \
    -c "VACUUM ANALYZE s1" -c "VACUUM ANALYZE s2" \
    -c "CREATE VIEW pay AS SELECT id::bigint AS id, amount, 'one' AS src FROM s1 WHERE status = 'paid' UNION ALL SELECT pid, cents / 100.0, 'two' FROM s2 WHERE ok" \
    -c "SELECT pgtrickle.create_stream_table('rows_diff', \$q\$$ROWS\$q\$, '24h', 'DIFFERENTIAL')" \
    -c "SELECT pgtrickle.create_stream_table('rows_full', \$q\$$ROWS\$q\$, '24h', 'FULL')" \
    -c "SELECT pgtrickle.create_stream_table('tot_diff', \$q\$$TOTALS\$q\$, '24h', 'DIFFERENTIAL')" \
    -c "SELECT pgtrickle.create_stream_table('tot_full', \$q\$$TOTALS\$q\$, '24h', 'FULL')" \
    -c "CREATE MATERIALIZED VIEW rows_mv AS $ROWS" -c "CREATE MATERIALIZED VIEW tot_mv AS $TOTALS" \
    >/dev/null || die "setup"
echo "| query | round | DIFFERENTIAL (ms) | FULL (ms) | REFRESH MATERIALIZED VIEW (ms) | matview / DIFFERENTIAL | FULL / matview |"
echo "|---|---|---|---|---|---|---|"
for r in $(seq 1 "$rounds"); do
    "${P[@]}" -c "UPDATE s1 SET amount = amount + 1 WHERE id IN (SELECT (random() * 999999)::int + 1 FROM generate_series(1, $rows))" \
        -c "UPDATE s2 SET ok = NOT ok WHERE pid IN (SELECT (random() * 999999)::int + 1 FROM generate_series(1, $rows))" \
        -c "DELETE FROM s1 WHERE id IN (SELECT (random() * 999999)::int + 1 FROM generate_series(1, $rows))" \
        -c "INSERT INTO s2 SELECT 2000000 + $r * $rows + g, g, true FROM generate_series(1, $rows) g" \
        -c "VACUUM" -c "CHECKPOINT" >/dev/null || die "changes"
    for q in rows tot; do
        x=$(ms "SELECT pgtrickle.refresh_stream_table('${q}_diff')")
        did "${q}_diff" DIFFERENTIAL
        f=$(ms "SELECT pgtrickle.refresh_stream_table('${q}_full')")
        did "${q}_full" FULL
        m=$(ms "REFRESH MATERIALIZED VIEW ${q}_mv")
        awk -v q="$q" -v r="$r" -v x="$x" -v f="$f" -v m="$m" \
            'BEGIN { printf "| %s | %d | %.1f | %.1f | %.1f | %.1f | %.2f |\n", q, r, x, f, m, m / x, f / m }'
    done
done
for st in rows_diff rows_full tot_diff tot_full; do
    case $st in rows_*) Q=$ROWS; c="id, amount, src" ;; *) Q=$TOTALS; c="src, n, total, hi" ;; esac
    n=$("${P[@]}" -c "SELECT count(*) FROM ((SELECT $c FROM $st EXCEPT ALL $Q) UNION ALL ($Q EXCEPT ALL SELECT $c FROM $st)) x")
    [[ $n == 0 ]] || die "$st differs from its query in $n rows"
done
echo "every stream table equals its query"
