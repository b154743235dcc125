#!/usr/bin/env bash
# FULL refresh against REFRESH MATERIALIZED VIEW, side by side, on the
# TPC-H-derived queries over data already loaded (schema tpch):
#   full_vs_matview.sh <cycle> [rounds] [q01 q05 ...]   (default: all 22)
# Creates each query as a FULL stream table ('24h': a running scheduler
# never refreshes it) and as a materialized view, then per round runs one
# refresh cycle (RF1, RF2, RF3 from <cycle> on) and refreshes both, the
# order alternating by round. Each timed FULL refresh must be recorded as
# the one MANUAL FULL refresh it claims (it recomputes even when the cycle
# wrote none of its tables), or the run exits 1. Prints ms (client wall
# time) and FULL / matview per query and round; checks each stream table
# against its query at the end.
# Timing only, no assertion on time. WARNING: drops the extension
# pg_trickle (CASCADE) and schema tpch_mv in the libpq environment's
# database.
set -uo pipefail
cycle=${1:?cycle number}; shift
rounds=${1:-2}; shift || true
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
P=(psql -X -q -At -v ON_ERROR_STOP=1)
die() { echo "full_vs_matview.sh: $*" >&2; exit 1; }
ms() { "${P[@]}" -c "\\timing on" -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1; }
qt() { sed -e '/^[[:space:]]*--/d' "$here/queries/$1.sql" | tr '\n' ' ' | sed 's/;[[:space:]]*$//'; }
qs=("$@")
[[ ${#qs[@]} -gt 0 ]] || for i in $(seq -w 1 22); do qs+=("q$i"); done
"${P[@]}" -c "SET client_min_messages = warning" -c "DROP EXTENSION IF EXISTS pg_trickle CASCADE" \
    -c "DROP SCHEMA IF EXISTS tpch_mv CASCADE" -c "CREATE EXTENSION pg_trickle" \
    -c "CREATE SCHEMA tpch_mv" >/dev/null || die "setup"
for q in "${qs[@]}"; do
    "${P[@]}" -c "SELECT pgtrickle.create_stream_table('tpch_mv.${q}_st', \$x\$$(qt "$q")\$x\$, '24h', 'FULL')" \
        -c "CREATE MATERIALIZED VIEW tpch_mv.${q}_mv AS $(qt "$q")" >/dev/null || die "create $q"
done
"${P[@]}" -c "ANALYZE" >/dev/null
echo "| query | round | FULL ms | REFRESH MATERIALIZED VIEW ms | FULL / matview |"
echo "|---|---|---|---|---|"
for ((r = 0; r < rounds; r++)); do
    for rf in rf1 rf2 rf3; do
        "${P[@]}" -v cycle="$((cycle + r))" -f "$here/$rf.sql" >/dev/null || die "$rf"
    done
    "${P[@]}" -c "VACUUM ANALYZE" -c "CHECKPOINT" >/dev/null
    for q in "${qs[@]}"; do
        before=$("${P[@]}" -c "SELECT coalesce(max(refresh_id), 0) FROM pgtrickle.pgt_refresh_history")
        if ((r % 2 == 0)); then
            f=$(ms "SELECT pgtrickle.refresh_stream_table('tpch_mv.${q}_st')")
            m=$(ms "REFRESH MATERIALIZED VIEW tpch_mv.${q}_mv")
        else
            m=$(ms "REFRESH MATERIALIZED VIEW tpch_mv.${q}_mv")
            f=$(ms "SELECT pgtrickle.refresh_stream_table('tpch_mv.${q}_st')")
        fi
        got=$("${P[@]}" -c "SELECT string_agg(h.initiated_by || ' ' || h.action, ', ') FROM pgtrickle.pgt_refresh_history h WHERE h.refresh_id > $before")
        [[ $got == "MANUAL FULL" ]] || die "the timed refresh of ${q}_st is recorded as '$got'"
        awk -v q="$q" -v r="$((r + 1))" -v f="$f" -v m="$m" \
            'BEGIN { printf "| %s | %d | %.0f | %.0f | %.2f |\n", q, r, f, m, f / m }'
    done
done
for q in "${qs[@]}"; do
    cols=$("${P[@]}" -c "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
        WHERE attrelid = 'tpch_mv.${q}_st'::regclass AND attnum > 0 AND NOT attisdropped AND attname NOT LIKE '\_\_pgt\_%'")
    n=$("${P[@]}" -c "SELECT count(*) FROM ((SELECT $cols FROM tpch_mv.${q}_st EXCEPT ALL ($(qt "$q")))
        UNION ALL (($(qt "$q")) EXCEPT ALL SELECT $cols FROM tpch_mv.${q}_st)) d")
    [[ $n == 0 ]] || die "${q}_st differs from its query in $n rows"
done
echo "every stream table equals its query"
