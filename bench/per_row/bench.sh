#!/usr/bin/env bash
# Cost per changed row, side by side in one run: DIFFERENTIAL refresh of a
# keyed projection, a grouped aggregate and a keyed join against REFRESH
# MATERIALIZED VIEW of the same query, and the FULL refresh of a FULL
# stream table of it (it writes only the rows that differ). 1M-row t(id pk, grp, val), 1,000-row
# d(grp pk, name). Each round changes a share of t (that share of its rows
# UPDATEd, half as many INSERTed, half as many DELETEd), then refreshes each
# stream table and each view once, after a VACUUM and a CHECKPOINT (so
# that rounds start alike). Shares: 1% and 10% by default.
# Usage: bench.sh [rounds] [views] [shares], views a comma list of
# proj,agg,minmax,join (default all; minmax is a GROUP BY with MIN and
# MAX, whose groups are recomputed when a row leaves them), shares a comma
# list of percents (1,10).
# Prints ms per refresh and the ratio; checks every stream table against
# its query at the end (a mismatch exits 1). Uses the libpq environment
# (PGHOST, PGPORT, PGDATABASE). WARNING: drops and recreates t, d, the
# stream tables, the views and the extension in that database.
# Stream tables get a '24h' schedule, so the scheduler (if it runs) never
# refreshes them before the timed refresh; each timed refresh must be
# recorded as the refresh it claims (MANUAL, DIFFERENTIAL or FULL, not
# NO_DATA), or the run exits 1.
# Invariant: timing only; nothing here asserts on time.
set -uo pipefail
rounds=${1:-3}
views=${2:-proj,agg,minmax,join}
shares=${3:-1,10}
P=(psql -X -q -At -v ON_ERROR_STOP=1)
die() { echo "bench.sh: $*" >&2; exit 1; }
ms() { "${P[@]}" -c "\\timing on" -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1; }
# shellcheck source=../timed_refresh.sh
. "$(dirname "$0")/../timed_refresh.sh"
declare -A Q=(
    [proj]="SELECT id, val FROM t WHERE grp < 500"
    [agg]="SELECT grp, sum(val) AS s, count(*) AS c FROM t GROUP BY grp"
    [minmax]="SELECT grp, min(val) AS lo, max(val) AS hi FROM t GROUP BY grp"
    [join]="SELECT t.id, d.name, t.val FROM t JOIN d ON d.grp = t.grp"
)
declare -A C=([proj]="id, val" [agg]="grp, s, c" [minmax]="grp, lo, hi" [join]="id, name, val")
IFS=, read -ra V <<<"$views"
IFS=, read -ra S <<<"$shares"
setup=(-c "SET client_min_messages = warning" -c "DROP EXTENSION IF EXISTS pg_trickle CASCADE"
    -c "DROP TABLE IF EXISTS t, d CASCADE" -c "DROP SEQUENCE IF EXISTS per_row_seq"
    -c "CREATE EXTENSION pg_trickle"
    -c "CREATE TABLE t (id int PRIMARY KEY, grp int NOT NULL, val int NOT NULL)"
    -c "INSERT INTO t SELECT g, g % 1000, g FROM generate_series(1, 1000000) g"
    -c "CREATE TABLE d (grp int PRIMARY KEY, name text NOT NULL)"
    -c "INSERT INTO d SELECT g, 'g' || g FROM generate_series(0, 999) g"
    -c "CREATE INDEX ON t (grp)" -c "CREATE SEQUENCE per_row_seq START 2000001"
    -c "VACUUM ANALYZE t" -c "VACUUM ANALYZE d")
for v in "${V[@]}"; do
    [[ -n ${Q[$v]:-} ]] || die "unknown view $v"
    setup+=(-c "DROP MATERIALIZED VIEW IF EXISTS mv_$v"
        -c "SELECT pgtrickle.create_stream_table('st_$v', \$q\$${Q[$v]}\$q\$, '24h', 'DIFFERENTIAL')"
        -c "SELECT pgtrickle.create_stream_table('full_$v', \$q\$${Q[$v]}\$q\$, '24h', 'FULL')"
        -c "CREATE MATERIALIZED VIEW mv_$v AS ${Q[$v]}" -c "VACUUM ANALYZE st_$v"
        -c "VACUUM ANALYZE full_$v")
done
"${P[@]}" "${setup[@]}" >/dev/null || die "setup"
"${P[@]}" -c "SELECT pgt_name || ': ' || row_identity_domain || ', ' || delta_strategy FROM pgtrickle.pgt_stream_tables ORDER BY 1"
echo "| view | changed | round | DIFFERENTIAL (ms) | REFRESH MATERIALIZED VIEW (ms) | FULL (ms) | matview / DIFFERENTIAL | FULL / matview |"
echo "|---|---|---|---|---|---|---|---|"
lo=0
for s in "${S[@]}"; do
    n=$(( 10000 * s ))
    for r in $(seq 1 "$rounds"); do
        # Rows by id ranges that move each round; DELETEs from the top half.
        lo=$(( (lo + n) % 400000 ))
        "${P[@]}" -c "UPDATE t SET val = val + 1 WHERE id > $lo AND id <= $lo + $n" \
            -c "INSERT INTO t SELECT nextval('per_row_seq'), g % 1000, g FROM generate_series(1, $n / 2) g" \
            -c "DELETE FROM t WHERE id IN (SELECT id FROM t WHERE id > 500000 ORDER BY id LIMIT $n / 2)" \
            -c "VACUUM" -c "CHECKPOINT" || die "changes"
        for v in "${V[@]}"; do
            x=$(ms "SELECT pgtrickle.refresh_stream_table('st_$v')")
            did "st_$v" DIFFERENTIAL
            m=$(ms "REFRESH MATERIALIZED VIEW mv_$v")
            f=$(ms "SELECT pgtrickle.refresh_stream_table('full_$v')")
            did "full_$v" FULL
            awk -v v="$v" -v s="$s" -v r="$r" -v x="$x" -v m="$m" -v f="$f" \
                'BEGIN { printf "| %s | %d%% | %d | %.1f | %.1f | %.1f | %.2f | %.2f |\n", v, s, r, x, m, f, m / x, f / m }'
        done
    done
done
for v in "${V[@]}"; do
    n=$("${P[@]}" -c "SELECT count(*) FROM ((SELECT ${C[$v]} FROM full_$v EXCEPT ALL ${Q[$v]}) UNION ALL (${Q[$v]} EXCEPT ALL SELECT ${C[$v]} FROM full_$v)) x")
    [[ $n == 0 ]] || die "full_$v differs from its query in $n rows"
    mode=$("${P[@]}" -c "SELECT string_agg(DISTINCT h.action, ', ') FROM pgtrickle.pgt_refresh_history h JOIN pgtrickle.pgt_stream_tables s USING (pgt_id) WHERE s.pgt_name = 'st_$v' AND h.initiated_by = 'MANUAL'")
    n=$("${P[@]}" -c "SELECT count(*) FROM ((SELECT ${C[$v]} FROM st_$v EXCEPT ALL ${Q[$v]}) UNION ALL (${Q[$v]} EXCEPT ALL SELECT ${C[$v]} FROM st_$v)) x")
    [[ $n == 0 ]] || die "st_$v differs from its query in $n rows"
    echo "st_$v: equal to its query; refreshes run: ${mode:-none}"
done
