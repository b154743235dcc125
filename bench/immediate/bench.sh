#!/usr/bin/env bash
# IMMEDIATE write-path benchmark: pgbench single-row INSERT, UPDATE and
# DELETE on a 1M-row table t(id pk, grp, val) (1,000 groups; d(grp pk,
# name) of 1,000 rows) with, in turn, no view, and each of three views
# maintained by pg_trickle IMMEDIATE and, when the pg_ivm extension is
# installed in the cluster, by pg_ivm:
#   agg   SELECT grp, sum(val), count(*) FROM t GROUP BY grp
#   proj  SELECT id, val FROM t WHERE grp < 500
#   join  SELECT t.id, d.grp, t.val, d.name FROM t JOIN d ON t.grp = d.grp
# at -c1, -c2 and -c4 (-j as many), $1 seconds each (default 6), runs
# side by side in one invocation. Prints one markdown row per (view,
# engine, statement): average latency per client count, the latency added
# over no view at -c1, and TPS at -c2 and -c4 over -c1. A view an engine
# refuses prints "refused". After each view's runs it is compared with
# its query (a mismatch exits 1). Then the server's time per single-row
# statement of each kind without the client (a procedure committing each
# statement), and a 100,000-row UPDATE through each view against the same
# UPDATE of a copy of t without one (three alternating pairs).
# Uses the libpq environment (PGHOST, PGPORT, PGDATABASE, PGUSER) for psql
# and pgbench. WARNING: drops and recreates tables t, d and the views, and
# the extensions pg_trickle and pg_ivm (CASCADE), in that database.
# Invariant: timing only; nothing here asserts on time.
set -uo pipefail

secs=${1:-6}
psql_run=(psql -X -q -v ON_ERROR_STOP=1 -At)
die() { echo "bench.sh: $*" >&2; exit 1; }

"${psql_run[@]}" -c "SET client_min_messages = warning" \
    -c "DROP EXTENSION IF EXISTS pg_ivm CASCADE" -c "DROP EXTENSION IF EXISTS pg_trickle CASCADE" \
    -c "DROP TABLE IF EXISTS t, d CASCADE" -c "DROP SEQUENCE IF EXISTS bench_seq" \
    -c "CREATE EXTENSION pg_trickle" \
    -c "CREATE TABLE t (id int PRIMARY KEY, grp int NOT NULL, val int NOT NULL)" \
    -c "INSERT INTO t SELECT g, g % 1000, g FROM generate_series(1, 1000000) g" \
    -c "CREATE TABLE d (grp int PRIMARY KEY, name text NOT NULL)" \
    -c "INSERT INTO d SELECT g, 'g' || g FROM generate_series(0, 999) g" \
    -c "CREATE INDEX ON t (grp)" -c "CREATE SEQUENCE bench_seq START 2000001" \
    -c "VACUUM ANALYZE t" -c "VACUUM ANALYZE d" || die "setup"
ivm=no
if "${psql_run[@]}" -c "CREATE EXTENSION pg_ivm" >/dev/null 2>&1; then ivm=yes; fi

declare -A query=(
    [agg]="SELECT grp, sum(val) AS s, count(*) AS c FROM t GROUP BY grp"
    [proj]="SELECT id, val FROM t WHERE grp < 500"
    [join]="SELECT t.id, d.grp, t.val, d.name FROM t JOIN d ON t.grp = d.grp"
)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/insert.sql" <<'SQL'
\set g random(0, 999)
INSERT INTO t VALUES (nextval('bench_seq'), :g, 1);
SQL
cat >"$tmp/update.sql" <<'SQL'
\set id random(1, 1000000)
\set g random(0, 999)
UPDATE t SET val = val + 1, grp = :g WHERE id = :id;
SQL
cat >"$tmp/delete.sql" <<'SQL'
\set id random(1, 1000000)
DELETE FROM t WHERE id = :id;
SQL

# pgbench latency (ms) and tps for script $1 at $2 clients; "fails" and
# the first error when a client aborts (pg_ivm under concurrent writers)
run() {
    local out
    if ! out=$(pgbench -n -c "$2" -j "$2" -T "$secs" -f "$tmp/$1.sql" 2>&1); then
        echo "fails $(grep -m1 -o 'ERROR: .*' <<<"$out" | tr ' ' '_')"
        return
    fi
    local lat tps
    lat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out")
    tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out")
    echo "$lat $tps"
}

create_view() {  # engine view
    case $1 in
        pg_trickle) "${psql_run[@]}" -c "SELECT pgtrickle.create_stream_table('v_$2', \$q\$${query[$2]}\$q\$, refresh_mode => 'IMMEDIATE')" >/dev/null 2>&1 ;;
        pg_ivm) "${psql_run[@]}" -c "SELECT pgivm.create_immv('v_$2', \$q\$${query[$2]}\$q\$)" >/dev/null 2>&1 \
                || "${psql_run[@]}" -c "SELECT create_immv('v_$2', \$q\$${query[$2]}\$q\$)" >/dev/null 2>&1 ;;
    esac
}
drop_view() {
    case $1 in
        pg_trickle) "${psql_run[@]}" -c "SELECT pgtrickle.drop_stream_table('v_$2')" >/dev/null ;;
        pg_ivm) "${psql_run[@]}" -c "DROP TABLE v_$2" >/dev/null ;;
    esac
}
check_view() {  # view: the view equals its query as a multiset (user columns)
    local cols
    cols=$("${psql_run[@]}" -c "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'v_$1'::regclass AND attnum > 0 AND NOT attisdropped AND attname NOT LIKE '\\_\\_%'")
    local n
    n=$("${psql_run[@]}" -c "SELECT count(*) FROM ((SELECT $cols FROM v_$1 EXCEPT ALL (${query[$1]})) UNION ALL ((${query[$1]}) EXCEPT ALL SELECT $cols FROM v_$1)) x")
    [[ $n == 0 ]] || die "v_$1 differs from its query in $n rows"
}

declare -A base
echo "| view | engine | statement | latency -c1 (ms) | -c2 | -c4 | added at -c1 (ms) | TPS -c2 / -c1 | TPS -c4 / -c1 |"
echo "|---|---|---|---|---|---|---|---|---|"
row() {  # view engine stmt
    local r1 r2 r4
    r1=($(run "$3" 1)); r2=($(run "$3" 2)); r4=($(run "$3" 4))
    if [[ $1 == none ]]; then base[$3]=${r1[0]}; fi
    awk -v v="$1" -v e="$2" -v s="$3" -v l1="${r1[0]}" -v l2="${r2[0]}" -v l4="${r4[0]}" \
        -v t1="${r1[1]}" -v t2="${r2[1]}" -v t4="${r4[1]}" -v b="${base[$3]}" '
        function lat(l, t) { return l == "fails" ? "fails (" t ")" : sprintf("%.3f", l) }
        function ratio(x, y) { return (x == "fails" || y == "fails") ? "-" : sprintf("%.2f", x / y) }
        BEGIN {
            gsub("_", " ", t1); gsub("_", " ", t2); gsub("_", " ", t4)
            printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", v, e, s, lat(l1, t1),
                   lat(l2, t2), lat(l4, t4), l1 == "fails" ? "-" : sprintf("%.3f", l1 - b),
                   ratio(l2 == "fails" ? "fails" : t2, l1 == "fails" ? "fails" : t1),
                   ratio(l4 == "fails" ? "fails" : t4, l1 == "fails" ? "fails" : t1) }'
}
for s in insert update delete; do row none - "$s"; done
engines=(pg_trickle)
[[ $ivm == yes ]] && engines+=(pg_ivm)
for v in agg proj join; do
    for e in "${engines[@]}"; do
        if ! create_view "$e" "$v"; then
            echo "| $v | $e | all | refused | | | | | |"
            continue
        fi
        for s in insert update delete; do row "$v" "$e" "$s"; done
        check_view "$v"
        drop_view "$e" "$v"
    done
done

# Server time per single-row statement, without the client: a procedure
# runs 5,000 statements of one kind, each committed (INSERT of a new id,
# UPDATE of val and grp at an id spread over the table, DELETE of the ids
# the INSERTs made, oldest first); the median of 3 runs per kind, in
# microseconds per statement, and the time added over no view.
"${psql_run[@]}" -c "CREATE OR REPLACE PROCEDURE bench_loop(kind text, n int) LANGUAGE plpgsql AS \$\$
DECLARE first bigint;
BEGIN
  SELECT min(id) INTO first FROM t WHERE id > 2000000;
  FOR i IN 1..n LOOP
    IF kind = 'insert' THEN INSERT INTO t VALUES (nextval('bench_seq'), (i * 7) % 1000, 1);
    ELSIF kind = 'update' THEN UPDATE t SET val = val + 1, grp = (i * 13) % 1000 WHERE id = (i * 7919) % 1000000 + 1;
    ELSE DELETE FROM t WHERE id = first + i - 1;
    END IF;
    COMMIT;
  END LOOP;
END \$\$" || die "bench_loop"
loop_us() {  # kind: median of 3 runs, microseconds per statement
    local k ms=()
    for k in 1 2 3; do
        ms+=("$("${psql_run[@]}" -c "SET synchronous_commit = off" -c "\\timing on" \
            -c "CALL bench_loop('$1', 5000)" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')")
    done
    printf '%s\n' "${ms[@]}" | sort -n | sed -n 2p | awk '{ printf "%.1f", $1 * 1000 / 5000 }'
}
declare -A server_base
echo
echo "| view | engine | server µs per INSERT | UPDATE | DELETE | added µs: INSERT | UPDATE | DELETE |"
echo "|---|---|---|---|---|---|---|---|"
server_row() {  # view engine (t vacuumed first: no view pays for the dead rows of the last)
    local ins upd del
    "${psql_run[@]}" -c "VACUUM t" || die "vacuum"
    ins=$(loop_us insert); upd=$(loop_us update); del=$(loop_us delete)
    if [[ $1 == none ]]; then server_base=([insert]=$ins [update]=$upd [delete]=$del); fi
    awk -v v="$1" -v e="$2" -v i="$ins" -v u="$upd" -v d="$del" -v bi="${server_base[insert]}" \
        -v bu="${server_base[update]}" -v bd="${server_base[delete]}" \
        'BEGIN { printf "| %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", v, e, i, u, d, i - bi, u - bu, d - bd }'
}
server_row none -
for v in agg proj join; do
    for e in "${engines[@]}"; do
        create_view "$e" "$v" || continue
        server_row "$v" "$e"
        check_view "$v"
        drop_view "$e" "$v"
    done
done

# A 100,000-row UPDATE through each view against the same UPDATE of
# t_plain, a copy of t (same rows, same indexes) without a view: three
# pairs, plain first, each UPDATE in a transaction rolled back once timed
# and after a VACUUM of its table and a CHECKPOINT, so each starts from the
# same state. Medians in ms, and the median of the three ratios.
"${psql_run[@]}" -c "DROP TABLE IF EXISTS t_plain" -c "CREATE TABLE t_plain (LIKE t INCLUDING INDEXES)" \
    -c "INSERT INTO t_plain SELECT * FROM t" -c "VACUUM ANALYZE t_plain" || die "t_plain"
bulk() {  # table: ms of the UPDATE, rolled back
    "${psql_run[@]}" -c "VACUUM $1" -c "CHECKPOINT" || die "vacuum"
    "${psql_run[@]}" -c "\\timing on" -c "BEGIN" -c "UPDATE $1 SET val = val + 1 WHERE id <= 100000" \
        -c "ROLLBACK" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | sed -n 2p
}
median() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
echo
echo "| view | engine | 100k-row UPDATE (ms) | plain UPDATE (ms) | / plain (median of 3) |"
echo "|---|---|---|---|---|"
for v in agg proj join; do
    for e in "${engines[@]}"; do
        create_view "$e" "$v" || continue
        "${psql_run[@]}" -c "VACUUM ANALYZE v_$v" || die "analyze"
        views=() plains=() ratios=()
        for k in 1 2 3; do
            p=$(bulk t_plain)
            m=$(bulk t)
            plains+=("$p") views+=("$m")
            ratios+=("$(awk -v m="$m" -v p="$p" 'BEGIN { printf "%.2f", m / p }')")
        done
        check_view "$v"
        drop_view "$e" "$v"
        echo "| $v | $e | $(median "${views[@]}") | $(median "${plains[@]}") | $(median "${ratios[@]}") |"
    done
done
"${psql_run[@]}" -c "DROP TABLE t_plain" || die "drop t_plain"
