#!/usr/bin/env bash
# Quick FULL vs DIFFERENTIAL probe for a few TPC-H-derived queries on data
# already loaded (schema tpch, e.g. by bench.sh or schema.sql + datagen.sql):
#   probe.sh <cycle> q04 q18 ...
# Creates each query as one stream table per mode in $PROBE_MODES (default
# "FULL DIFFERENTIAL"; AUTO may be added) in schema tpch_st, with a 24 h
# schedule (a running scheduler does not refresh them), runs
# $PROBE_CYCLES (default 1) refresh cycles from <cycle> on (RF1, RF2, RF3,
# one transaction each), after each refreshes them and prints each one's
# refresh time and action; then a
# trickle (the lineitems of the 25 newest orders +1 quantity, 20 oldest
# orders to 1-URGENT) and the same again; last, compares each DIFFERENTIAL
# stream table with its FULL twin (rows that differ, 0 expected).
# Timing only, no assertion on time. WARNING: drops the extension pg_trickle
# (CASCADE) and schema tpch_st in the database given by the libpq environment.
set -uo pipefail
cycle=${1:?cycle number}; shift
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
P=(psql -X -q -v ON_ERROR_STOP=1)
"${P[@]}" -c "SET client_min_messages = warning" -c "DROP EXTENSION IF EXISTS pg_trickle CASCADE" \
    -c "DROP SCHEMA IF EXISTS tpch_st CASCADE" -c "CREATE EXTENSION pg_trickle" -c "CREATE SCHEMA tpch_st" || exit 1
qt() { sed -e '/^[[:space:]]*--/d' "$here/queries/$1.sql" | tr '\n' ' ' | sed 's/;[[:space:]]*$//'; }
modes=${PROBE_MODES:-FULL DIFFERENTIAL}
for q in "$@"; do for m in $modes; do
    "${P[@]}" -c "SELECT pgtrickle.create_stream_table('tpch_st.${q}_$m', \$x\$$(qt "$q")\$x\$, schedule => '24h', refresh_mode => '$m')" >/dev/null ||
        echo "create $q $m failed"
done; done
"${P[@]}" -c "ANALYZE" >/dev/null
refresh_all() {
    for q in "$@"; do for m in $modes; do
        "${P[@]}" -c "SELECT pgtrickle.refresh_stream_table('tpch_st.${q}_$m')" >/dev/null
    done; done
    psql -X -At -F ' ' -c "SELECT s.pgt_name, round(1000 * date_part('epoch', h.end_time - h.start_time))::int || ' ms', h.action
        FROM pgtrickle.pgt_refresh_history h JOIN pgtrickle.pgt_stream_tables s USING (pgt_id)
        WHERE h.refresh_id IN (SELECT max(refresh_id) FROM pgtrickle.pgt_refresh_history GROUP BY pgt_id) ORDER BY 1"
}
for ((c = cycle; c < cycle + ${PROBE_CYCLES:-1}; c++)); do
    for rf in rf1 rf2 rf3; do "${P[@]}" -v cycle="$c" -f "$here/$rf.sql" || exit 1; done
    echo "after refresh cycle $c:"; refresh_all "$@"
done
"${P[@]}" -c "UPDATE tpch.lineitem SET l_quantity = l_quantity + 1 WHERE l_orderkey IN
    (SELECT o_orderkey FROM tpch.orders ORDER BY o_orderkey DESC LIMIT 25)" \
    -c "UPDATE tpch.orders SET o_orderpriority = '1-URGENT' WHERE o_orderkey IN
    (SELECT o_orderkey FROM tpch.orders ORDER BY o_orderkey LIMIT 20)" || exit 1
echo "after a trickle:"; refresh_all "$@"
for q in "$@"; do
    cols=$(psql -X -At -c "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
        WHERE attrelid = 'tpch_st.${q}_full'::regclass AND attnum > 0 AND NOT attisdropped AND attname NOT LIKE '\_\_pgt\_%'")
    echo "$q rows differing: $(psql -X -At -c "SELECT count(*) FROM ((SELECT $cols FROM tpch_st.${q}_differential EXCEPT ALL
        SELECT $cols FROM tpch_st.${q}_full) UNION ALL (SELECT $cols FROM tpch_st.${q}_full EXCEPT ALL
        SELECT $cols FROM tpch_st.${q}_differential)) d")"
done
