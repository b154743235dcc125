#!/usr/bin/env bash
# What a refresh that finds nothing to do costs (docs/benchmarks.md,
# "Zero-change refreshes"). 1M-row t(id pk, grp, val) with two DIFFERENTIAL
# stream tables, st1 (a projection) and st2 (an aggregate), schedule '1h'
# (the scheduler does not refresh them). The server time of each refresh
# (end_time - start_time of its history row), median of N calls of st1,
# each call its own statement and transaction, in four states:
#  1. warm: nothing pending, the buffer vacuumed, a warm session;
#  2. after a consumed change: a 100,000-row UPDATE consumed by both
#     stream tables (the buffer holds its dead rows), a new session;
#  3. pending for another consumer: a 100,000-row UPDATE consumed by st1
#     only, a new session;
#  4. a new backend: the first statement of each of 20 new sessions.
# "first" is the first call of the session (a new backend's costs).
# Uses the libpq environment (PGHOST, PGPORT, PGDATABASE); WARNING: drops
# and recreates t, the stream tables and the extension in that database.
# Invariant: timing only; the action column shows every call recorded NO_DATA.
set -euo pipefail
calls=${1:-50}
P=(psql -X -q -At -v ON_ERROR_STOP=1)

PGOPTIONS="-c client_min_messages=warning" "${P[@]}" <<'SQL' >/dev/null
DROP EXTENSION IF EXISTS pg_trickle CASCADE;
DROP TABLE IF EXISTS st1, st2, t CASCADE;
CREATE EXTENSION pg_trickle;
CREATE TABLE t (id int PRIMARY KEY, grp int NOT NULL, val int);
INSERT INTO t SELECT i, i % 1000, i FROM generate_series(1, 1000000) i;
VACUUM ANALYZE t;
SELECT pgtrickle.create_stream_table('st1', 'SELECT id, val FROM t WHERE grp < 500',
                                     schedule => '1h', refresh_mode => 'DIFFERENTIAL');
SELECT pgtrickle.create_stream_table('st2', 'SELECT grp, sum(val) AS s FROM t GROUP BY grp',
                                     schedule => '1h', refresh_mode => 'DIFFERENTIAL');
SQL
buffer=$("${P[@]}" -c "SELECT buffer_name FROM pgtrickle.pgt_sources")

# $1 label, $2 calls: st1's refreshes in one new session, one statement each.
measure() {
  local label=$1 n=$2
  {
    echo "SELECT coalesce(max(refresh_id), 0) AS m FROM pgtrickle.pgt_refresh_history \\gset"
    echo "\\o /dev/null"
    for _ in $(seq 1 "$n"); do echo "SELECT pgtrickle.refresh_stream_table('st1');"; done
    echo "\\o"
    cat <<SQL
SELECT '$label', count(*), string_agg(DISTINCT action, ','),
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms))::numeric, 3),
       round((array_agg(ms ORDER BY refresh_id))[1]::numeric, 3)
  FROM (SELECT h.refresh_id, h.action,
               1000 * extract(epoch FROM h.end_time - h.start_time) AS ms
          FROM pgtrickle.pgt_refresh_history h JOIN pgtrickle.pgt_stream_tables s USING (pgt_id)
         WHERE s.pgt_name = 'st1' AND h.refresh_id > :m) x;
SQL
  } | "${P[@]}" -F ' | '
}

echo "| state | calls | action | median server ms | first call ms |"
echo "|---|---|---|---|---|"
"${P[@]}" -c "VACUUM $buffer"
measure warm $((calls * 4)) | sed 's/^/| /; s/$/ |/'
# The same seen from the client: the whole call (API entry checks, the
# history row, the commit) and a round trip, pgbench's average latency.
script=$(mktemp)
echo "SELECT pgtrickle.refresh_stream_table('st1');" > "$script"
lat=$(pgbench -n -t $((calls * 20)) -f "$script" 2>/dev/null | sed -n 's/^latency average = \([0-9.]*\) ms$/\1/p')
rm -f "$script"
echo "| warm, client latency (pgbench) | $((calls * 20)) | - | $lat | - |"
"${P[@]}" -c "UPDATE t SET val = val + 1 WHERE id <= 100000" \
  -c "SELECT pgtrickle.refresh_stream_table('st1')" \
  -c "SELECT pgtrickle.refresh_stream_table('st2')" >/dev/null
measure "after a consumed change" "$calls" | sed 's/^/| /; s/$/ |/'
"${P[@]}" -c "UPDATE t SET val = val + 1 WHERE id <= 100000" \
  -c "SELECT pgtrickle.refresh_stream_table('st1')" >/dev/null
measure "pending for another consumer" "$calls" | sed 's/^/| /; s/$/ |/'
"${P[@]}" -c "SELECT pgtrickle.refresh_stream_table('st2')" >/dev/null
for _ in $(seq 1 20); do measure x 1 >/dev/null; done
"${P[@]}" -F ' | ' <<'SQL' | sed 's/^/| /; s/$/ |/'
SELECT 'new backend', count(*), string_agg(DISTINCT action, ','),
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms))::numeric, 3), '-'
  FROM (SELECT h.action, 1000 * extract(epoch FROM h.end_time - h.start_time) AS ms
          FROM pgtrickle.pgt_refresh_history h JOIN pgtrickle.pgt_stream_tables s USING (pgt_id)
         WHERE s.pgt_name = 'st1' ORDER BY h.refresh_id DESC LIMIT 20) x;
SQL
