#!/usr/bin/env bash
# IMMEDIATE under concurrent multi-row writers: 8 pgbench clients, each
# transaction updating 50 random rows of a(id pk, grp, v) and 30 random
# rows of b(id pk, a_id, w) in two statements, half of the transactions a
# first and half b first. Stream tables, maintained IMMEDIATE:
#   agg   SELECT grp, sum(v), count(*) FROM a GROUP BY grp   (10 groups)
#   join  SELECT b.id, b.w, a.v FROM b JOIN a ON a.id = b.a_id
#   aggb  SELECT a_id % 10 AS k, sum(w), count(*) FROM b GROUP BY a_id % 10
# Views in turn: none, agg, join, agg + join, agg + aggb; then the same
# with every transaction writing a first ("one order"). Prints one markdown row per
# run: transactions, deadlocks (40P01) and their rate, TPS. After each run
# the stream tables are compared with their queries (a mismatch exits 1).
# Arguments: seconds per run (default 10), rows of a and of b (default
# 100000 each). Uses the libpq environment (PGHOST, PGPORT, PGDATABASE,
# PGUSER). WARNING: drops and recreates tables a, b and the stream tables.
# Invariant: timing and counting only; nothing here asserts on time.
set -uo pipefail

secs=${1:-10}
rows=${2:-100000}
clients=8
psql_run=(psql -X -q -v ON_ERROR_STOP=1 -At)
die() { echo "bench.sh: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

setup() {
    "${psql_run[@]}" -c "SET client_min_messages = warning" \
        -c "CREATE EXTENSION IF NOT EXISTS pg_trickle" \
        -c "SELECT pgtrickle.drop_stream_table(pgt_schema || '.' || pgt_name) FROM pgtrickle.pgt_stream_tables" \
        -c "DROP TABLE IF EXISTS a, b CASCADE" \
        -c "CREATE TABLE a (id int PRIMARY KEY, grp int NOT NULL, v bigint NOT NULL)" \
        -c "INSERT INTO a SELECT g, g % 10, g FROM generate_series(1, $rows) g" \
        -c "CREATE TABLE b (id int PRIMARY KEY, a_id int NOT NULL, w bigint NOT NULL)" \
        -c "INSERT INTO b SELECT g, 1 + (g * 7919) % $rows, g FROM generate_series(1, $rows) g" \
        -c "VACUUM ANALYZE a" -c "VACUUM ANALYZE b" || die "setup"
}

create_views() {
    local v
    for v in "$@"; do
        case "$v" in
        agg) "${psql_run[@]}" -c "SELECT pgtrickle.create_stream_table('agg', 'SELECT grp, sum(v) AS s, count(*) AS c FROM a GROUP BY grp', refresh_mode => 'IMMEDIATE')" >/dev/null || die "agg" ;;
        aggb) "${psql_run[@]}" -c "SELECT pgtrickle.create_stream_table('aggb', 'SELECT a_id % 10 AS k, sum(w) AS s, count(*) AS c FROM b GROUP BY a_id % 10', refresh_mode => 'IMMEDIATE')" >/dev/null || die "aggb" ;;
        join) "${psql_run[@]}" -c "SELECT pgtrickle.create_stream_table('j', 'SELECT b.id, b.w, a.v FROM b JOIN a ON a.id = b.a_id', refresh_mode => 'IMMEDIATE')" >/dev/null || die "join" ;;
        esac
    done
}

# Exits unless the stream table's columns equal its query (as multisets).
check() {
    local st="$1" cols="$2" q="$3" n
    n=$("${psql_run[@]}" -c "SELECT count(*) FROM ((SELECT $cols FROM $st EXCEPT ALL $q) UNION ALL ($q EXCEPT ALL SELECT $cols FROM $st)) x") || die "check $st"
    [ "$n" = 0 ] || die "$st differs from its query in $n rows"
}

upd_a="UPDATE a SET v = v + 1 WHERE id IN (SELECT 1 + (random() * ($rows - 1))::int FROM generate_series(1, 50));"
upd_b="UPDATE b SET w = w + 1 WHERE id IN (SELECT 1 + (random() * ($rows - 1))::int FROM generate_series(1, 30));"
printf 'BEGIN;\n%s\n%s\nCOMMIT;\n' "$upd_a" "$upd_b" >"$tmp/ab.sql"
printf 'BEGIN;\n%s\n%s\nCOMMIT;\n' "$upd_b" "$upd_a" >"$tmp/ba.sql"

echo "| workload | stream tables | transactions | deadlocks | rate | TPS |"
echo "|---|---|---:|---:|---:|---:|"
for order in both one; do
    for views in "" "agg" "join" "agg join" "agg aggb"; do
        setup
        # shellcheck disable=SC2086
        create_views $views
        scripts=(-f "$tmp/ab.sql")
        [ "$order" = both ] && scripts+=(-f "$tmp/ba.sql")
        out=$(pgbench -n -c "$clients" -j "$clients" -T "$secs" --max-tries=1 \
            --failures-detailed "${scripts[@]}" 2>&1)
        tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
        dl=$(sed -n 's/^number of deadlock failures: \([0-9]*\).*/\1/p' <<<"$out")
        tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -1)
        [ -n "$tx" ] || { echo "$out" >&2; die "pgbench failed"; }
        dl=${dl:-0}
        rate=$(awk -v d="$dl" -v t="$tx" 'BEGIN { printf "%.1f%%", (t + d) ? 100 * d / (t + d) : 0 }')
        for v in $views; do
            case "$v" in
            agg) check agg "grp, s, c" "SELECT grp, sum(v) AS s, count(*) AS c FROM a GROUP BY grp" ;;
            aggb) check aggb "k, s, c" "SELECT a_id % 10 AS k, sum(w) AS s, count(*) AS c FROM b GROUP BY a_id % 10" ;;
            join) check j "id, w, v" "SELECT b.id, b.w, a.v FROM b JOIN a ON a.id = b.a_id" ;;
            esac
        done
        label=$([ "$order" = both ] && echo "a,b and b,a" || echo "a,b only")
        echo "| $label | ${views:-none} | $tx | $dl | $rate | ${tps%.*} |"
    done
done
