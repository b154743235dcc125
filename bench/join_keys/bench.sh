#!/usr/bin/env bash
# Keys through joins, side by side in one run: a DIFFERENTIAL join whose
# key is proven (t JOIN d ON d.grp = t.grp: each t row meets one d row, so
# t.id is the stream table's key and rows are rewritten by key) against the
# same rows with no key proven (ON d.grp + 0 = t.grp: rows counted, as every
# join was before), and REFRESH MATERIALIZED VIEW of the query. 1M-row
# t(id pk, grp, val), 1,000-row d(grp pk, name); each round changes 1% of t
# (10,000 UPDATEs of val, 5,000 INSERTs, 5,000 DELETEs) and refreshes each.
# Then one 100,000-row UPDATE through an IMMEDIATE stream table of each
# form against the plain UPDATE. Prints ms per refresh and per statement;
# checks both stream tables against their query (a mismatch exits 1).
# Uses the libpq environment (PGHOST, PGPORT, PGDATABASE). WARNING: drops
# and recreates t, d, the stream tables and the extension in that database.
# Invariant: timing only; nothing here asserts on time.
set -uo pipefail
rounds=${1:-3}
P=(psql -X -q -At -v ON_ERROR_STOP=1)
die() { echo "bench.sh: $*" >&2; exit 1; }
# shellcheck source=../timed_refresh.sh
. "$(dirname "$0")/../timed_refresh.sh"
ms() { "${P[@]}" -c "\\timing on" -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1; }
"${P[@]}" -c "SET client_min_messages = warning" -c "DROP EXTENSION IF EXISTS pg_trickle CASCADE" \
    -c "DROP TABLE IF EXISTS t, d, j_keyed, j_counted CASCADE" -c "DROP MATERIALIZED VIEW IF EXISTS mv_join" \
    -c "DROP SEQUENCE IF EXISTS join_seq" -c "CREATE EXTENSION pg_trickle" \
    -c "CREATE TABLE t (id int PRIMARY KEY, grp int NOT NULL, val int NOT NULL)" \
    -c "INSERT INTO t SELECT g, g % 1000, g FROM generate_series(1, 1000000) g" \
    -c "CREATE TABLE d (grp int PRIMARY KEY, name text NOT NULL)" \
    -c "INSERT INTO d SELECT g, 'g' || g FROM generate_series(0, 999) g" \
    -c "CREATE INDEX ON t (grp)" -c "CREATE SEQUENCE join_seq START 2000001" \
    -c "VACUUM ANALYZE t" -c "VACUUM ANALYZE d" || die "setup"
"${P[@]}" -c "SELECT pgtrickle.create_stream_table('j_keyed', 'SELECT t.id, d.name, t.val FROM t JOIN d ON d.grp = t.grp', '24h', 'DIFFERENTIAL')" \
    -c "SELECT pgtrickle.create_stream_table('j_counted', 'SELECT t.id, d.name, t.val FROM t JOIN d ON d.grp + 0 = t.grp', '24h', 'DIFFERENTIAL')" \
    -c "CREATE MATERIALIZED VIEW mv_join AS SELECT t.id, d.name, t.val FROM t JOIN d ON d.grp = t.grp" >/dev/null || die "create"
"${P[@]}" -c "SELECT pgt_name || ': ' || row_identity_domain || ', ' || delta_strategy FROM pgtrickle.pgt_stream_tables ORDER BY 1"
echo "| round | keyed (ms) | counted (ms) | REFRESH MATERIALIZED VIEW (ms) | counted / keyed | matview / keyed |"
echo "|---|---|---|---|---|---|"
for r in $(seq 1 "$rounds"); do
    lo=$(( r * 20000 ))
    "${P[@]}" -c "UPDATE t SET val = val + 1 WHERE id BETWEEN $lo AND $lo + 9999" \
        -c "INSERT INTO t SELECT nextval('join_seq'), g % 1000, g FROM generate_series(1, 5000) g" \
        -c "DELETE FROM t WHERE id BETWEEN $lo + 500000 AND $lo + 504999" || die "changes"
    k=$(ms "SELECT pgtrickle.refresh_stream_table('j_keyed')")
    did j_keyed DIFFERENTIAL
    c=$(ms "SELECT pgtrickle.refresh_stream_table('j_counted')")
    did j_counted DIFFERENTIAL
    m=$(ms "REFRESH MATERIALIZED VIEW mv_join")
    awk -v r="$r" -v k="$k" -v c="$c" -v m="$m" 'BEGIN { printf "| %d | %.1f | %.1f | %.1f | %.2f | %.2f |\n", r, k, c, m, c / k, m / k }'
done
for st in j_keyed j_counted; do
    n=$("${P[@]}" -c "SELECT count(*) FROM ((SELECT id, name, val FROM $st EXCEPT ALL SELECT t.id, d.name, t.val FROM t JOIN d ON d.grp = t.grp) UNION ALL (SELECT t.id, d.name, t.val FROM t JOIN d ON d.grp = t.grp EXCEPT ALL SELECT id, name, val FROM $st)) x")
    [[ $n == 0 ]] || die "$st differs from its query in $n rows"
done
"${P[@]}" -c "SELECT pgtrickle.drop_stream_table('j_keyed')" -c "SELECT pgtrickle.drop_stream_table('j_counted')" -c "DROP MATERIALIZED VIEW mv_join" >/dev/null
echo
echo "| 100k-row UPDATE | ms | / plain |"
echo "|---|---|---|"
bulk() { ms "UPDATE t SET val = val + 1 WHERE id <= 100000"; }
plain=$(bulk)
echo "| plain | $plain | 1.00 |"
for form in keyed counted; do
    on="d.grp = t.grp"; [[ $form == counted ]] && on="d.grp + 0 = t.grp"
    "${P[@]}" -c "SELECT pgtrickle.create_stream_table('j_imm', 'SELECT t.id, d.name, t.val FROM t JOIN d ON $on', refresh_mode => 'IMMEDIATE')" >/dev/null || die "immediate"
    x=$(bulk)
    "${P[@]}" -c "SELECT pgtrickle.drop_stream_table('j_imm')" >/dev/null
    awk -v f="$form" -v x="$x" -v p="$plain" 'BEGIN { printf "| IMMEDIATE %s | %.1f | %.2f |\n", f, x, x / p }'
done
