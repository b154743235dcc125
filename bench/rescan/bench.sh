#!/usr/bin/env bash
# Group rescans against recomputing, side by side in one run: a DIFFERENTIAL
# `GROUP BY grp` with MIN and MAX over a 1M-row r(id pk, grp, val) with an
# index on grp, whose random UPDATEs of val delete group extremes (so the
# touched groups are read again from r), against a FULL stream table of the
# same query, REFRESH MATERIALIZED VIEW, and the query alone (SELECT count(*)
# over it: the set-based recomputation of every group, written nowhere).
# Each round UPDATEs a share of r's rows chosen at random, VACUUMs and
# CHECKPOINTs, then refreshes each once. grp has `groups` values (rows
# spread over every page: grp = id % groups).
# Usage: bench.sh [rounds] [groups] [shares] (defaults 3, 10000, 1,10).
# Prints ms per refresh, the groups the DIFFERENTIAL refresh read again
# and the ratios; checks both stream tables against the query at the end
# (a mismatch exits 1). Uses the libpq environment (PGHOST, PGPORT,
# PGDATABASE). WARNING: drops and recreates r, its stream tables, its view
# and the extension in that database.
# Invariant: timing only; nothing here asserts on time.
set -uo pipefail
rounds=${1:-3}
groups=${2:-10000}
shares=${3:-1,10}
P=(psql -X -q -At -v ON_ERROR_STOP=1)
die() { echo "bench.sh: $*" >&2; exit 1; }
# shellcheck source=../timed_refresh.sh
. "$(dirname "$0")/../timed_refresh.sh"
ms() { "${P[@]}" -c "\\timing on" -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1; }
Q="SELECT grp, min(val) AS lo, max(val) AS hi FROM r GROUP BY grp"
"${P[@]}" -c "SET client_min_messages = warning" -c "DROP EXTENSION IF EXISTS pg_trickle CASCADE" \
    -c "DROP TABLE IF EXISTS r CASCADE" -c "CREATE EXTENSION pg_trickle" \
    -c "CREATE TABLE r (id int PRIMARY KEY, grp int NOT NULL, val int NOT NULL)" \
    -c "INSERT INTO r SELECT g, g % $groups, (random() * 1e6)::int FROM generate_series(1, 1000000) g" \
    -c "CREATE INDEX ON r (grp)" -c "VACUUM ANALYZE r" \
    -c "SELECT pgtrickle.create_stream_table('r_diff', \$q\$$Q\$q\$, '24h', 'DIFFERENTIAL')" \
    -c "SELECT pgtrickle.create_stream_table('r_full', \$q\$$Q\$q\$, '24h', 'FULL')" \
    -c "CREATE MATERIALIZED VIEW r_mv AS $Q" >/dev/null || die "setup"
echo "| changed | round | DIFFERENTIAL (ms) | groups read again | FULL (ms) | REFRESH MATERIALIZED VIEW (ms) | query alone (ms) | DIFFERENTIAL / query | FULL / matview |"
echo "|---|---|---|---|---|---|---|---|---|"
for s in ${shares//,/ }; do
    for r in $(seq 1 "$rounds"); do
        # Groups whose extreme the UPDATE moves (an UPDATE that leaves the
        # extremes where they are touches a group without reading it).
        "${P[@]}" -c "CREATE TEMP TABLE ids AS SELECT DISTINCT (random() * 999999)::int + 1 AS id FROM generate_series(1, 10000 * $s)" \
            -c "CREATE TABLE IF NOT EXISTS rescanned (n int); TRUNCATE rescanned" \
            -c "INSERT INTO rescanned SELECT count(*) FROM (SELECT DISTINCT x.grp FROM r x JOIN ids USING (id) JOIN r_diff d ON d.grp = x.grp WHERE x.val IN (d.lo, d.hi)) g" \
            -c "UPDATE r SET val = (random() * 1e6)::int WHERE id IN (SELECT id FROM ids)" \
            -c "VACUUM" -c "CHECKPOINT" >/dev/null || die "changes"
        n=$("${P[@]}" -c "SELECT n FROM rescanned")
        x=$(ms "SELECT pgtrickle.refresh_stream_table('r_diff')")
        did r_diff DIFFERENTIAL
        f=$(ms "SELECT pgtrickle.refresh_stream_table('r_full')")
        did r_full FULL
        m=$(ms "REFRESH MATERIALIZED VIEW r_mv")
        q=$(ms "SELECT count(*) FROM ($Q) x")
        awk -v s="$s" -v r="$r" -v x="$x" -v n="$n" -v f="$f" -v m="$m" -v q="$q" \
            'BEGIN { printf "| %d%% | %d | %.1f | %d | %.1f | %.1f | %.1f | %.2f | %.2f |\n", s, r, x, n, f, m, q, x / q, f / m }'
    done
done
for st in r_diff r_full; do
    n=$("${P[@]}" -c "SELECT count(*) FROM ((SELECT grp, lo, hi FROM $st EXCEPT ALL $Q) UNION ALL ($Q EXCEPT ALL SELECT grp, lo, hi FROM $st)) x")
    [[ $n == 0 ]] || die "$st differs from its query in $n rows"
done
mode=$("${P[@]}" -c "SELECT string_agg(DISTINCT h.action, ', ') FROM pgtrickle.pgt_refresh_history h JOIN pgtrickle.pgt_stream_tables s USING (pgt_id) WHERE s.pgt_name = 'r_diff' AND h.initiated_by = 'MANUAL'")
echo "r_diff and r_full: equal to their query; r_diff's refreshes: ${mode:-none}"
