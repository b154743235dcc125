#!/usr/bin/env bash
# The scheduler's own cost, side by side in one run (docs/benchmarks.md,
# "Scheduler cost"). 1M-row t(id pk, grp, val); the scheduler on.
#  1. A write stream: pgbench -c1 UPDATEs of random rows of t for $secs s
#     while a DIFFERENTIAL aggregate over t has the shortest schedule
#     ('1s'): the worker's CPU time (utime + stime from /proc) per second
#     of wall time, and the refreshes it ran.
#  2. Idle: 20 DIFFERENTIAL stream tables over t with the default schedule
#     and one with '1h' that has not consumed a 100,000-row backlog: the
#     worker's CPU per second while nothing is written.
#  3. pgbench -c4 single-row INSERTs into t2 for $secs s, alternating:
#     no stream table, a DIFFERENTIAL stream table over t2 with the
#     scheduler on, the same with pg_trickle.enabled = off. TPS and the
#     ratios to none.
#  4. Commit -> visible: pgbench -c1 -R 20 single-row INSERTs of
#     (clock_timestamp()) into ev for $secs s while a DIFFERENTIAL stream
#     table over ev has schedule '0s', then '1s'; a row trigger on its
#     storage notes when each row arrives. p50/p95/max of the difference.
# Run as root or as the cluster's OS user (reads /proc/<worker pid>/stat).
# Uses the libpq environment (PGHOST, PGPORT, PGDATABASE) and must connect
# as a superuser (ALTER SYSTEM). WARNING: drops and recreates t, t2, the
# stream tables and the extension in that database.
# Invariant: timing only; nothing here asserts on time.
set -uo pipefail
secs=${1:-20}
P=(psql -X -q -At -v ON_ERROR_STOP=1)
die() { echo "bench.sh: $*" >&2; exit 1; }
tck=$(getconf CLK_TCK)
work=$(mktemp -d)
trap 'rm -rf "$work"; "${P[@]}" -c "ALTER SYSTEM RESET pg_trickle.enabled" -c "SELECT pg_reload_conf()" >/dev/null 2>&1' EXIT

scheduler() {  # on | off
    "${P[@]}" -c "ALTER SYSTEM SET pg_trickle.enabled = $1" -c "SELECT pg_reload_conf()" >/dev/null
}
worker_pid() {
    local pid=""
    for _ in $(seq 1 100); do
        pid=$("${P[@]}" -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'pg_trickle scheduler' AND datname = current_database()")
        [[ -n $pid ]] && { echo "$pid"; return; }
        sleep 0.1
    done
    die "no scheduler worker in this database"
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
refreshes() { "${P[@]}" -c "SELECT count(*) FROM pgtrickle.pgt_refresh_history"; }
# worker CPU % over the given command (run in the foreground)
measure() {
    local pid c0 c1 t0 t1
    pid=$(worker_pid)
    c0=$(cpu_ticks "$pid"); t0=$(date +%s.%N)
    "$@"
    c1=$(cpu_ticks "$pid"); t1=$(date +%s.%N)
    awk -v c="$((c1 - c0))" -v k="$tck" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.2f", 100 * c / k / (t1 - t0) }'
}

"${P[@]}" -c "SET client_min_messages = warning" -c "DROP EXTENSION IF EXISTS pg_trickle CASCADE" \
    -c "DROP TABLE IF EXISTS t, t2 CASCADE" -c "CREATE EXTENSION pg_trickle" \
    -c "CREATE TABLE t (id int PRIMARY KEY, grp int NOT NULL, val int NOT NULL)" \
    -c "INSERT INTO t SELECT g, g % 1000, g FROM generate_series(1, 1000000) g" \
    -c "CREATE TABLE t2 (id bigserial PRIMARY KEY, grp int NOT NULL, val int NOT NULL)" \
    -c "VACUUM ANALYZE t" || die "setup"
scheduler on

echo "## 1. Write stream (pgbench -c1 UPDATE, ${secs} s, one stream table with schedule '1s')"
"${P[@]}" -c "SELECT pgtrickle.create_stream_table('agg', 'SELECT grp, sum(val) AS s, count(*) AS n FROM t GROUP BY grp', schedule => '1s', refresh_mode => 'DIFFERENTIAL')" >/dev/null || die "create agg"
cat > "$work/update.sql" <<'SQL'
\set id random(1, 1000000)
UPDATE t SET val = val + 1 WHERE id = :id;
SQL
r0=$(refreshes)
stream() { pgbench -n -c1 -T "$secs" -f "$work/update.sql" >/dev/null 2>&1; }
cpu=$(measure stream)
r1=$(refreshes)
sleep 2
n=$("${P[@]}" -c "SELECT count(*) FROM ((SELECT grp, s, n FROM agg EXCEPT ALL SELECT grp, sum(val), count(*) FROM t GROUP BY grp) UNION ALL (SELECT grp, sum(val), count(*) FROM t GROUP BY grp EXCEPT ALL SELECT grp, s, n FROM agg)) x")
echo "| worker CPU (% of a core) | refreshes | refreshes per s | rows differing from the query 2 s after |"
echo "|---|---|---|---|"
awk -v c="$cpu" -v r="$((r1 - r0))" -v s="$secs" -v n="$n" 'BEGIN { printf "| %s | %d | %.2f | %s |\n", c, r, r / s, n }'
"${P[@]}" -c "SELECT pgtrickle.drop_stream_table('agg')" >/dev/null

echo
echo "## 2. Idle (20 stream tables with the default schedule, one '1h' behind a 100,000-row backlog; ${secs} s)"
for i in $(seq 1 20); do
    "${P[@]}" -c "SELECT pgtrickle.create_stream_table('idle_$i', 'SELECT id, val FROM t WHERE grp = $i', refresh_mode => 'DIFFERENTIAL')" >/dev/null || die "create idle_$i"
done
"${P[@]}" -c "SELECT pgtrickle.create_stream_table('behind', 'SELECT grp, count(*) AS n FROM t GROUP BY grp', schedule => '1h', refresh_mode => 'DIFFERENTIAL')" >/dev/null || die "create behind"
"${P[@]}" -c "UPDATE t SET val = val + 1 WHERE id <= 100000" || die "backlog"
for i in $(seq 1 20); do
    "${P[@]}" -c "SELECT pgtrickle.refresh_stream_table('idle_$i')" >/dev/null || die "refresh idle_$i"
done
sleep 3
pages=$("${P[@]}" -c "SELECT sum(pg_relation_size(c.oid) / 8192) FROM pgtrickle.pgt_sources s JOIN pg_class c ON c.oid = s.buffer_name::regclass")
cpu=$(measure sleep "$secs")
echo "| worker CPU (% of a core) | backlog (buffer pages) |"
echo "|---|---|"
echo "| $cpu | $pages |"
"${P[@]}" -c "SELECT pgtrickle.drop_stream_table(pgt_schema || '.' || pgt_name) FROM pgtrickle.pgt_stream_tables" >/dev/null

echo
echo "## 3. pgbench -c4 single-row INSERT into t2 (${secs} s each, two rounds alternating)"
cat > "$work/insert.sql" <<'SQL'
\set g random(0, 999)
INSERT INTO t2 (grp, val) VALUES (:g, :g);
SQL
tps() { pgbench -n -c4 -j2 -T "$secs" -f "$work/insert.sql" 2>/dev/null | sed -n 's/^tps = \([0-9.]*\) .*/\1/p'; }
echo "| round | none (TPS) | stream table, scheduler on | scheduler off | on / none | off / none |"
echo "|---|---|---|---|---|---|"
for r in 1 2; do
    scheduler on
    none=$(tps)
    "${P[@]}" -c "SELECT pgtrickle.create_stream_table('ins', 'SELECT grp, count(*) AS n FROM t2 GROUP BY grp', refresh_mode => 'DIFFERENTIAL')" >/dev/null || die "create ins"
    on=$(tps)
    scheduler off
    off=$(tps)
    scheduler on
    "${P[@]}" -c "SELECT pgtrickle.drop_stream_table('ins')" >/dev/null
    awk -v r="$r" -v a="$none" -v b="$on" -v c="$off" 'BEGIN { printf "| %d | %.0f | %.0f | %.0f | %.2f | %.2f |\n", r, a, b, c, b / a, c / a }'
done

echo
echo "## 4. Commit -> visible (pgbench -c1 -R 20 INSERTs for ${secs} s)"
"${P[@]}" -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS ev, seen CASCADE" \
    -c "CREATE TABLE ev (id bigserial PRIMARY KEY, at timestamptz NOT NULL)" \
    -c "CREATE TABLE seen (id bigint, seen_at timestamptz)" \
    -c "DROP FUNCTION IF EXISTS note_seen()" -c "CREATE FUNCTION note_seen() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN INSERT INTO public.seen VALUES (NEW.id, clock_timestamp()); RETURN NULL; END \$\$" >/dev/null || die "setup 4"
cat > "$work/event.sql" <<'SQL'
INSERT INTO ev (at) VALUES (clock_timestamp());
SQL
echo "| schedule | rows seen / written | p50 (ms) | p95 (ms) | max (ms) |"
echo "|---|---|---|---|---|"
for sched in 0s 1s; do
    "${P[@]}" -c "TRUNCATE ev, seen" \
        -c "SELECT pgtrickle.create_stream_table('fresh', 'SELECT id, at FROM ev', schedule => '$sched', refresh_mode => 'DIFFERENTIAL')" \
        -c "CREATE TRIGGER note_seen AFTER INSERT ON fresh FOR EACH ROW EXECUTE FUNCTION note_seen()" >/dev/null || die "create fresh"
    sleep 1
    pgbench -n -c1 -R 20 -T "$secs" -f "$work/event.sql" >/dev/null 2>&1
    sleep 2
    "${P[@]}" -F ' ' -c "SELECT count(*) || '/' || (SELECT count(*) FROM ev), percentile_cont(0.5) WITHIN GROUP (ORDER BY ms), percentile_cont(0.95) WITHIN GROUP (ORDER BY ms), max(ms) FROM (SELECT 1000 * extract(epoch FROM s.seen_at - e.at) AS ms FROM ev e JOIN seen s USING (id)) x" |
        awk -v s="$sched" '{ printf "| %s | %s | %.1f | %.1f | %.1f |\n", s, $1, $2, $3, $4 }'
    "${P[@]}" -c "SELECT pgtrickle.drop_stream_table('fresh')" >/dev/null
done
