#!/usr/bin/env bash
# Bulk write path of change capture, side by side in one run: one
# 100,000-row INSERT ... SELECT, UPDATE and DELETE on a 1M-row table with
# no stream table (cw0) and on an identical one read by a DIFFERENTIAL
# stream table (cw1: SELECT id, grp, qty * price AS amount, note FROM cw1
# WHERE grp % 10 <> 0), alternating between the two tables, $1 rounds
# (default 5). Server time per statement (psql \timing of statements sent
# one by one); prints the median per table and statement, the ratio, and
# the time added per captured row in microseconds. Between rounds (untimed)
# the stream table is refreshed and both tables and the buffer vacuumed, so
# each round starts from the same state. Then single-row statements without
# the client: a procedure committing 5,000 statements of one kind (INSERT of
# a new id, UPDATE of qty at an id spread over the table, DELETE of the ids
# inserted), median of 3 per table and kind, in microseconds per statement.
# Checks the stream table against its query at the end (a mismatch exits 1).
# Uses the libpq environment (PGHOST, PGPORT, PGDATABASE, PGUSER).
# WARNING: drops and recreates tables cw0 and cw1 and their stream table.
# Invariant: timing only; nothing here asserts on time.
set -uo pipefail

rounds=${1:-5}
psql_run=(psql -X -q -v ON_ERROR_STOP=1 -At)
die() { echo "bench.sh: $*" >&2; exit 1; }

"${psql_run[@]}" -c "SET client_min_messages = warning" \
    -c "CREATE EXTENSION IF NOT EXISTS pg_trickle" \
    -c "SELECT pgtrickle.drop_stream_table('cw1_st') FROM pgtrickle.pgt_stream_tables
        WHERE pgt_name = 'cw1_st'" \
    -c "DROP TABLE IF EXISTS cw0, cw1 CASCADE" || die "cleanup"
for t in cw0 cw1; do
    "${psql_run[@]}" \
        -c "CREATE TABLE $t (id int8 PRIMARY KEY, grp int4, qty int4, price numeric(10,2), note text)" \
        -c "INSERT INTO $t SELECT g, g % 100, g % 50, (g % 1000) / 10.0, 'note ' || g
            FROM generate_series(1, 1000000) g" \
        -c "VACUUM ANALYZE $t" || die "setup $t"
done
"${psql_run[@]}" -c "SELECT pgtrickle.create_stream_table('cw1_st',
    'SELECT id, grp, qty * price AS amount, note FROM cw1 WHERE grp % 10 <> 0',
    refresh_mode => 'DIFFERENTIAL', schedule => '1h')" >/dev/null || die "create"
buffer=$("${psql_run[@]}" -c "SELECT s.buffer_name FROM pgtrickle.pgt_sources s
    WHERE s.source_relid = 'cw1'::regclass") || die "buffer"

declare -A ms
round() {  # table: one round of the three statements, times appended to ms[table/op]
    local out
    out=$("${psql_run[@]}" -c "\\timing on" \
        -c "INSERT INTO $1 SELECT g, g % 100, g % 50, 1.5, 'n' FROM generate_series(2000001, 2100000) g" \
        -c "UPDATE $1 SET qty = qty + 1 WHERE id > 2000000" \
        -c "DELETE FROM $1 WHERE id > 2000000" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p') ||
        die "round $1"
    read -r -d '' i u d <<<"$out"
    ms[$1/insert]+="$i "; ms[$1/update]+="$u "; ms[$1/delete]+="$d "
    "${psql_run[@]}" -c "SELECT pgtrickle.refresh_stream_table('cw1_st')" -c "VACUUM cw0" \
        -c "VACUUM cw1" -c "VACUUM $buffer" >/dev/null || die "refresh"
}
for r in $(seq 1 "$rounds"); do
    if (( r % 2 )); then round cw0; round cw1; else round cw1; round cw0; fi
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "| statement (100,000 rows) | no stream table (ms) | 1 stream table (ms) | ratio | added µs per row |"
echo "|---|---|---|---|---|"
for op in insert update delete; do
    a=$(median <<<"${ms[cw0/$op]}"); b=$(median <<<"${ms[cw1/$op]}")
    awk -v o="$op" -v a="$a" -v b="$b" \
        'BEGIN { printf "| %s | %.1f | %.1f | %.2f | %.2f |\n", o, a, b, b / a, (b - a) * 1000 / 100000 }'
done
for t in cw0 cw1; do
    "${psql_run[@]}" -c "CREATE OR REPLACE PROCEDURE ${t}_loop(kind text, n int)
LANGUAGE plpgsql AS \$\$
BEGIN
  FOR i IN 1..n LOOP
    IF kind = 'insert' THEN INSERT INTO $t VALUES (3000000 + i, i % 100, 1, 1.5, 'x');
    ELSIF kind = 'update' THEN UPDATE $t SET qty = qty + 1 WHERE id = (i * 7919) % 1000000 + 1;
    ELSE DELETE FROM $t WHERE id = 3000000 + i;
    END IF;
    COMMIT;
  END LOOP;
END \$\$" || die "procedure"
done
declare -A us
for k in 1 2 3; do  # each run: the three kinds on each table (the DELETEs remove the INSERTs)
    for t in cw0 cw1; do
        for op in insert update delete; do
            us[$t/$op]+="$("${psql_run[@]}" -c "\\timing on" -c "CALL ${t}_loop('$op', 5000)" |
                sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | awk '{ printf "%.1f", $1 * 1000 / 5000 }') "
        done
    done
done
echo
echo "| single-row statement | no stream table (µs) | 1 stream table (µs) | added µs |"
echo "|---|---|---|---|"
for op in insert update delete; do
    a=$(median <<<"${us[cw0/$op]}"); b=$(median <<<"${us[cw1/$op]}")
    awk -v o="$op" -v a="$a" -v b="$b" 'BEGIN { printf "| %s | %.1f | %.1f | %.1f |\n", o, a, b, b - a }'
done
"${psql_run[@]}" -c "SELECT pgtrickle.refresh_stream_table('cw1_st')" >/dev/null || die "refresh"
diff=$("${psql_run[@]}" -c "SELECT count(*) FROM ((SELECT id, grp, amount, note FROM cw1_st
    EXCEPT ALL SELECT id, grp, qty * price, note FROM cw1 WHERE grp % 10 <> 0) UNION ALL
    (SELECT id, grp, qty * price, note FROM cw1 WHERE grp % 10 <> 0
    EXCEPT ALL SELECT id, grp, amount, note FROM cw1_st)) x") || die "check"
[[ $diff == 0 ]] || die "cw1_st differs from its query in $diff rows"
