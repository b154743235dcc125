#!/usr/bin/env bash
# TPC-H-derived refresh benchmark: FULL vs DIFFERENTIAL vs AUTO per query.
# Loads scale factor $1 (default 0.1) into the database given by the libpq
# environment (the extension must be installable there), creates each of the
# 22 queries three times as stream tables (FULL, DIFFERENTIAL where this
# version supports it, AUTO), runs $2 (default 4) refresh cycles
# RF1+RF2+RF3 (one transaction each), reads every table and change buffer
# once (hint bits, dead index entries, cache: the first reader would pay),
# and after each cycle runs each query once and then refreshes its stream
# tables (the order of a query's modes rotates from cycle to cycle).
# Prints one markdown row per query with each mode's median refresh time
# over the cycles after the first (from pgt_refresh_history; the first is
# AUTO's learning cycle; with $2 = 1, that cycle) and FULL/DIFFERENTIAL.
# Then the floors (below) and which queries they put a 10x speed-up out
# of reach for; then the same after a trickle of about 100 changed rows
# (one sample).
# Writes the rows as TSV to $3 (and <$3 without .tsv>-trickle.tsv) if
# given. Invariant: timing only, no assertion on time; after the last cycle
# every stream table is compared with its query (a mismatch exits 1).
# Stream tables get a 24 h schedule: with the scheduler on
# (pg_trickle.enabled), as deployed, nothing refreshes them but this script,
# and the worker removes consumed change-buffer rows after its ticks instead
# of the refreshes (docs/scheduler.md); with it off, the refresh of each
# buffer's last consumer does (and its time includes that).
# WARNING: drops and recreates schemas tpch, tpch_gen and tpch_st (the
# stream tables), and drops the extension pg_trickle (CASCADE) in that
# database.
set -uo pipefail

sf=${1:-0.1}
cycles=${2:-4}
tsv=${3:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
psql_run=(psql -X -q -v ON_ERROR_STOP=1)
die() { echo "bench.sh: $*" >&2; exit 1; }

"${psql_run[@]}" -c "SET client_min_messages = warning" \
    -c "DROP EXTENSION IF EXISTS pg_trickle CASCADE" -c "DROP SCHEMA IF EXISTS tpch_st CASCADE" \
    -c "CREATE EXTENSION pg_trickle" -c "CREATE SCHEMA tpch_st" || die "extension"
"${psql_run[@]}" -v sf="$sf" -f "$here/schema.sql" -f "$here/datagen.sql" >/dev/null || die "load"

query_text() { sed -e '/^[[:space:]]*--/d' "$here/queries/$1.sql" | tr '\n' ' ' | sed 's/;[[:space:]]*$//'; }
create() {  # name query mode; prints nothing, returns 1 if refused
    "${psql_run[@]}" -c "SELECT pgtrickle.create_stream_table('tpch_st.$1', \$pgtq\$$2\$pgtq\$, schedule => '24h', refresh_mode => '$3')" \
        >/dev/null 2>&1
}

declare -A has_diff
for i in $(seq -w 1 22); do
    q="q$i"; text=$(query_text "$q")
    create "${q}_full" "$text" FULL || die "create ${q}_full"
    create "${q}_auto" "$text" AUTO || die "create ${q}_auto"
    if create "${q}_diff" "$text" DIFFERENTIAL; then has_diff[$q]=1; fi
done
# Floors: one DIFFERENTIAL stream table per source a cycle changes, over
# columns the queries already capture (the buffers keep their width),
# whose filter no row passes. Its refresh reads the window and writes
# nothing: the least a DIFFERENTIAL refresh reading that source pays.
floors=(lineitem orders customer)
declare -A floor_query=(
    [lineitem]="SELECT l_orderkey, l_quantity FROM tpch.lineitem WHERE l_quantity < 0"
    [orders]="SELECT o_orderkey, o_totalprice FROM tpch.orders WHERE o_totalprice < 0"
    [customer]="SELECT c_custkey, c_acctbal FROM tpch.customer WHERE c_acctbal < -1000000")
for f in "${floors[@]}"; do
    create "floor_$f" "${floor_query[$f]}" DIFFERENTIAL || die "create floor_$f"
done
"${psql_run[@]}" -c "ANALYZE" || die "analyze"

ms_of() {  # stream table $1, refreshes after refresh_id $2: "median-ms most-common-action"
    psql -X -At -F ' ' -c "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY ms), mode() WITHIN GROUP (ORDER BY action)
        FROM (SELECT round(1000 * date_part('epoch', h.end_time - h.start_time))::int AS ms, h.action
              FROM pgtrickle.pgt_refresh_history h JOIN pgtrickle.pgt_stream_tables s USING (pgt_id)
              WHERE s.pgt_name = '$1' AND h.refresh_id > $2) x"
}
last_refresh_id() {
    psql -X -At -c "SELECT coalesce(max(refresh_id), 0) FROM pgtrickle.pgt_refresh_history"
}

report() {  # title, tsv file (or ""), refreshes after this refresh_id
    echo
    echo "$1"
    echo
    echo "| query | FULL ms | DIFFERENTIAL ms | FULL / DIFFERENTIAL | AUTO ms (action) |"
    echo "|---|---|---|---|---|"
    [[ -n $2 ]] && : >"$2"
    for i in $(seq -w 1 22); do
        q="q$i"
        read -r full _ <<<"$(ms_of "${q}_full" "$3")"
        read -r auto auto_action <<<"$(ms_of "${q}_auto" "$3")"
        diff="—"; ratio="—"
        if [[ -n ${has_diff[$q]:-} ]]; then
            read -r diff _ <<<"$(ms_of "${q}_diff" "$3")"
            ratio=$(awk -v f="$full" -v d="$diff" 'BEGIN { printf "%.2f", f / (d > 0 ? d : 1) }')
        fi
        echo "| $q | $full | $diff | $ratio | $auto ($auto_action) |"
        [[ -n $2 ]] && printf '%s\t%s\t%s\t%s\t%s\n' "$q" "$full" "$diff" "$auto" "$auto_action" >>"$2"
    done
}

refresh_all() {  # $1: rotation of the mode order among a query's modes
    local modes
    for f in "${floors[@]}"; do
        "${psql_run[@]}" -c "SELECT pgtrickle.refresh_stream_table('tpch_st.floor_$f')" >/dev/null \
            || die "refresh floor_$f"
    done
    for i in $(seq -w 1 22); do
        # The query once first: the tables' pages this query reads are as
        # cached for whichever mode refreshes first as for the others (the
        # refreshes of the queries before it evicted them from a small
        # shared_buffers).
        "${psql_run[@]}" -c "SELECT count(*) FROM ($(query_text "q$i")) x" >/dev/null \
            || die "warm-up q$i"
        modes=(auto full)
        [[ -n ${has_diff[q$i]:-} ]] && modes=(diff auto full)
        for ((k = 0; k < ${#modes[@]}; k++)); do
            st="q${i}_${modes[$(((k + $1) % ${#modes[@]}))]}"
            "${psql_run[@]}" -c "SELECT pgtrickle.refresh_stream_table('tpch_st.$st')" >/dev/null \
                || die "refresh $st"
        done
    done
}

# After a change, whichever statement reads a page first sets its rows'
# hint bits, marks dead index entries and pulls the page into cache: every
# table and buffer is read once first, so no mode pays that for the
# others (each query also runs once just before its refreshes).
warm() {
    "${psql_run[@]}" -c "DO \$\$ DECLARE r record; n bigint; BEGIN
        FOR r IN SELECT c.oid::regclass AS t FROM pg_class c WHERE c.relkind = 'r'
                 AND c.relnamespace IN ('tpch'::regnamespace, 'pgtrickle_changes'::regnamespace)
        LOOP EXECUTE format('SELECT count(*) FROM %s', r.t) INTO n; END LOOP; END \$\$" \
        || die "warm-up"
}

since=0
for ((cycle = 1; cycle <= cycles; cycle++)); do
    # The first cycle is AUTO's learning cycle: measured only if it is the only one.
    [[ $cycle == 2 ]] && since=$(last_refresh_id)
    "${psql_run[@]}" -1 -v cycle="$cycle" -f "$here/rf1.sql" -f "$here/rf2.sql" -f "$here/rf3.sql" \
        || die "refresh cycle $cycle"
    warm
    refresh_all "$cycle"
done

measured=$((cycles > 1 ? cycles - 1 : 1))
report "Refresh after an RF1+RF2+RF3 cycle, median of $measured cycle(s) (SF $sf)" "$tsv" "$since"

# Which queries a 10x speed-up is out of reach for, given the floors: a
# query's DIFFERENTIAL refresh reads the window of every changed source it
# reads. The least it can take: the sum of their floors less the fixed cost
# of a refresh counted once per source beyond the first (that cost: q02's
# median DIFFERENTIAL refresh, which is NO_DATA: no table of q02 changes).
echo
echo "Floors after the cycle (median): DIFFERENTIAL refresh of a stream table over one source that no change passes the filter of"
echo
declare -A floor_ms
for f in "${floors[@]}"; do
    read -r floor_ms[$f] _ <<<"$(ms_of "floor_$f" "$since")"
    echo "- $f: ${floor_ms[$f]} ms"
done
read -r fixed _ <<<"$(ms_of q02_diff "$since")"
echo "- fixed cost of a refresh (q02, NO_DATA): ${fixed} ms"
echo
echo "| query | FULL ms | changed sources read | sum of floors ms | least DIFFERENTIAL ms | 10x needs DIFFERENTIAL <= ms |"
echo "|---|---|---|---|---|---|"
for i in $(seq -w 1 22); do
    q="q$i"
    read -r full _ <<<"$(ms_of "${q}_full" "$since")"
    read -r -a reads <<<"$(query_text "$q" | grep -o 'tpch\.[a-z]*' | sed 's/tpch\.//' | sort -u | tr '\n' ' ')"
    n=0; sum=0; names=""
    for r in "${reads[@]}"; do
        [[ -n ${floor_ms[$r]:-} ]] || continue
        names+="${names:+, }$r"; sum=$((sum + floor_ms[$r])); n=$((n + 1))
    done
    least=$((n > 1 ? sum - (n - 1) * fixed : sum))
    need=$(awk -v f="$full" 'BEGIN { printf "%.0f", f / 10 }')
    mark=""; ((least > need)) && mark=" (out of reach)"
    echo "| $q | $full | ${names:-none} | $sum | $least | $need$mark |"
done

# A trickle: 10 orders with their lineitems deleted, 10 orders' lineitems
# get a new discount, 5 customers change segment (about 100 rows).
trickle_sql="
DELETE FROM tpch.lineitem WHERE l_orderkey IN (SELECT o_orderkey FROM tpch.orders ORDER BY o_orderkey LIMIT 10);
DELETE FROM tpch.orders WHERE o_orderkey IN (SELECT o_orderkey FROM tpch.orders ORDER BY o_orderkey LIMIT 10);
UPDATE tpch.lineitem SET l_discount = (l_discount + 0.01) % 0.11
 WHERE l_orderkey IN (SELECT o_orderkey FROM tpch.orders ORDER BY o_orderkey DESC LIMIT 10);
UPDATE tpch.customer SET c_mktsegment = CASE c_mktsegment WHEN 'BUILDING' THEN 'MACHINERY' ELSE 'BUILDING' END
 WHERE c_custkey IN (SELECT c_custkey FROM tpch.customer ORDER BY c_custkey LIMIT 5);"
"${psql_run[@]}" -1 -c "$trickle_sql" || die "trickle"
since=$(last_refresh_id)
warm
refresh_all 0
report "Refresh after a trickle of about 100 changed rows, each refresh in a new session (SF $sf)" \
    "${tsv:+${tsv%.tsv}-trickle.tsv}" "$since"

# The same trickle twice more, every DIFFERENTIAL and AUTO stream table
# refreshed after each in one session, as the scheduler's worker refreshes
# them (its plans stay kept from one refresh to the next; a new session
# plans every statement first). The first round plans, the second is
# measured. FULL stream tables are refreshed last (not reported), so that
# all are checked against their queries below.
warm_session_sql() {
    local round i m modes=(diff auto)
    echo "\\o /dev/null"
    for round in 1 2; do
        echo "BEGIN; $trickle_sql COMMIT;"
        if [[ $round == 2 ]]; then
            echo "\\o"
            echo "SELECT coalesce(max(refresh_id), 0) FROM pgtrickle.pgt_refresh_history;"
            echo "\\o /dev/null"
            modes=(diff auto full)
        fi
        for i in $(seq -w 1 22); do
            for m in "${modes[@]}"; do
                [[ $m == diff && -z ${has_diff[q$i]:-} ]] && continue
                echo "SELECT pgtrickle.refresh_stream_table('tpch_st.q${i}_$m');"
            done
        done
    done
}
since=$(warm_session_sql | "${psql_run[@]}" -At) || die "trickle in one session"
echo
echo "Refresh after the same trickle, the refreshes of one session after a first round (SF $sf)"
echo
echo "| query | DIFFERENTIAL ms | AUTO ms (action) |"
echo "|---|---|---|"
[[ -n $tsv ]] && : >"${tsv%.tsv}-trickle-session.tsv"
for i in $(seq -w 1 22); do
    q="q$i"
    read -r auto auto_action <<<"$(ms_of "${q}_auto" "$since")"
    diff="—"
    [[ -n ${has_diff[$q]:-} ]] && read -r diff _ <<<"$(ms_of "${q}_diff" "$since")"
    echo "| $q | $diff | $auto ($auto_action) |"
    [[ -n $tsv ]] && printf '%s\t%s\t%s\t%s\n' "$q" "$diff" "$auto" "$auto_action" \
        >>"${tsv%.tsv}-trickle-session.tsv"
done

# Every stream table equals its query (multiset) after the last cycle.
"${psql_run[@]}" <<'SQL' || die "a stream table differs from its query"
DO $$
DECLARE s record; cols text; n bigint;
BEGIN
  FOR s IN SELECT pgt_relid, pgt_name, defining_query FROM pgtrickle.pgt_stream_tables LOOP
    SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO cols
      FROM pg_attribute WHERE attrelid = s.pgt_relid AND attnum > 0 AND NOT attisdropped
        AND attname NOT LIKE '\_\_pgt\_%';
    EXECUTE format('SELECT count(*) FROM ((SELECT %s FROM %s EXCEPT ALL (%s)) UNION ALL '
                   '((%s) EXCEPT ALL SELECT %s FROM %s)) x', cols, s.pgt_relid::regclass,
                   s.defining_query, s.defining_query, cols, s.pgt_relid::regclass) INTO n;
    IF n <> 0 THEN RAISE EXCEPTION '% differs from its query (% rows)', s.pgt_name, n; END IF;
  END LOOP;
END $$;
SQL
echo "all stream tables equal their queries"
