#!/usr/bin/env python3
"""A listener written against a real client library (psycopg2) that follows
docs/notifications.md's listener protocol for two stream tables, while a
second session writes their sources and refreshes them: a keyed aggregate
(hidden algebraic state columns) and a keyless projection with duplicate
rows. After every step the listener's mirror must equal the stream table
as a multiset. The stream tables are then given a new query and dropped:
both must announce a RESYNC with a reason.

Usage: mirror.py CONNINFO. Prints 'N passed, N failed' and exits non-zero
on any failure.
"""
import json
import select
import sys

import psycopg2

CHANNEL = "st_changes"
TABLES = {
    "public.totals": "grp, total, n",
    "public.vals": "v",
}
# Each stream table's defining query, for the oracle.
QUERIES = {
    "public.totals": "SELECT grp, sum(v) AS total, count(*) AS n FROM src GROUP BY grp",
    "public.vals": "SELECT v FROM src",
}


class Mirror:
    """What the listener holds: per table, per key, the rows read by key."""

    def __init__(self, conn):
        self.conn = conn
        self.rows = {}  # table -> {key json -> [row tuples]}
        self.resyncs = []  # (table, reason)
        self.hidden_listed = []  # payloads that named a __pgt_ column

    def key_of(self, table):
        # The stream table's key columns, as its notify trigger sends them.
        return "__pgt_row_id" if table == "public.vals" else "grp"

    def resync(self, table):
        cur = self.conn.cursor()
        cur.execute("SELECT to_regclass(%s) IS NOT NULL", (table,))
        if not cur.fetchone()[0]:
            self.rows[table] = {}  # gone
            return
        key = self.key_of(table)
        cur.execute(f"SELECT to_json({key})::text, {TABLES[table]} FROM {table}")
        held = {}
        for r in cur.fetchall():
            held.setdefault(r[0], []).append(tuple(r[1:]))
        self.rows[table] = held

    def fetch(self, table, key_json):
        # Every message re-reads its key: the rows there now are what is
        # held for it (a DELETE of one copy of a keyless row leaves the
        # others).
        key = self.key_of(table)
        cur = self.conn.cursor()
        cur.execute(f"SELECT {TABLES[table]} FROM {table} WHERE to_json({key})::text = %s",
                    (key_json,))
        found = [tuple(r) for r in cur.fetchall()]
        held = self.rows.setdefault(table, {})
        if found:
            held[key_json] = found
        else:
            held.pop(key_json, None)

    def apply(self, payload):
        p = json.loads(payload)
        table = p["table"]
        if any(c.startswith("__pgt_") for c in p.get("columns", [])):
            self.hidden_listed.append(payload)
        if p["op"] == "RESYNC":
            self.resyncs.append((table, p.get("reason", "")))
            self.resync(table)
            return
        if "key" not in p:  # truncated: read it all again
            self.resync(table)
            return
        key = self.key_of(table)
        if "old_key" in p:
            self.fetch(table, json.dumps(p["old_key"][key]))
        self.fetch(table, json.dumps(p["key"][key]))

    def drain(self, wait=0.3):
        """Reads messages until none arrives for `wait` seconds."""
        while True:
            if select.select([self.conn], [], [], wait) == ([], [], []):
                return
            self.conn.poll()
            while self.conn.notifies:
                self.apply(self.conn.notifies.pop(0).payload)

    def equals_table(self, table):
        cur = self.conn.cursor()
        cur.execute("SELECT to_regclass(%s) IS NOT NULL", (table,))
        if not cur.fetchone()[0]:
            return self.rows.get(table, {}) == {}
        cur.execute(f"SELECT {TABLES[table]} FROM {table}")
        actual = sorted(tuple(r) for r in cur.fetchall())
        held = sorted(r for rows in self.rows.get(table, {}).values() for r in rows)
        return actual == held


def main():
    conninfo = sys.argv[1]
    writer = psycopg2.connect(conninfo)
    writer.autocommit = True
    listener = psycopg2.connect(conninfo)
    listener.autocommit = True
    w = writer.cursor()
    w.execute(
        "CREATE TABLE src (id int PRIMARY KEY, grp int, v int);"
        "INSERT INTO src SELECT g, g % 4, g % 6 FROM generate_series(1, 40) g;"
        f"SELECT pgtrickle.create_stream_table('totals', 'SELECT grp, sum(v) AS total, "
        f"count(*) AS n FROM src GROUP BY grp', refresh_mode => 'DIFFERENTIAL', "
        f"notify => '{CHANNEL}');"
        f"SELECT pgtrickle.create_stream_table('vals', 'SELECT v FROM src', "
        f"refresh_mode => 'DIFFERENTIAL', notify => '{CHANNEL}')"
    )
    mirror = Mirror(listener)
    listener.cursor().execute(f"LISTEN {CHANNEL}")  # 1. LISTEN first,
    for t in TABLES:  # then resync
        mirror.resync(t)

    passed, failed = 0, 0

    def step(name, sql, action="DIFFERENTIAL"):
        nonlocal passed, failed
        w.execute(sql)
        for t in TABLES:
            w.execute("SELECT pgtrickle.refresh_stream_table(%s)", (t,))
            # The oracle: the stream table equals its query, as a multiset,
            # and the refresh that ran is the one expected.
            w.execute(
                f"SELECT NOT EXISTS ((SELECT {TABLES[t]} FROM {t} EXCEPT ALL {QUERIES[t]}) "
                f"UNION ALL ({QUERIES[t]} EXCEPT ALL SELECT {TABLES[t]} FROM {t})), "
                "(SELECT action FROM pgtrickle.get_refresh_history(%s, 1))",
                (t,),
            )
            equal, ran = w.fetchone()
            if not equal or ran != action:
                failed += 1
                print(f"FAIL {name}: {t} equals its query: {equal}, refresh {ran} ({action} expected)")
        mirror.drain()
        for t in TABLES:
            if mirror.equals_table(t):
                passed += 1
            else:
                failed += 1
                print(f"FAIL {name}: the mirror of {t} differs from it")

    step("insert", "INSERT INTO src SELECT g, g % 5, g % 6 FROM generate_series(41, 60) g")
    step("update", "UPDATE src SET v = v + 1 WHERE id % 3 = 0")
    step("update of a group", "UPDATE src SET grp = 7 WHERE id IN (1, 2, 3)")
    step("delete", "DELETE FROM src WHERE id % 7 = 0")
    step("duplicates", "INSERT INTO src VALUES (100, 1, 99), (101, 1, 99), (102, 2, 99)")
    step("one copy of a duplicate deleted", "DELETE FROM src WHERE id = 101")
    step("truncate", "TRUNCATE src", action="FULL")
    step("refill", "INSERT INTO src SELECT g, g % 3, g % 2 FROM generate_series(1, 30) g")

    # A new query: a RESYNC, and the mirror follows.
    before = len(mirror.resyncs)
    w.execute(
        "SELECT pgtrickle.alter_stream_table('totals', query => 'SELECT grp, sum(v) AS "
        "total, count(*) AS n FROM src WHERE v > 0 GROUP BY grp')"
    )
    mirror.drain()
    reasons = [r for t, r in mirror.resyncs[before:] if t == "public.totals"]
    if reasons and mirror.equals_table("public.totals"):
        passed += 1
    else:
        failed += 1
        print(f"FAIL alter: RESYNC reasons {reasons}")

    # Drops: a RESYNC each, with the reason.
    w.execute("SELECT pgtrickle.drop_stream_table('totals'); SELECT pgtrickle.drop_stream_table('vals')")
    mirror.drain()
    dropped = sorted(t for t, r in mirror.resyncs if r == "dropped")
    if dropped == ["public.totals", "public.vals"] and all(mirror.equals_table(t) for t in TABLES):
        passed += 1
    else:
        failed += 1
        print(f"FAIL drop: RESYNCs {mirror.resyncs}")

    if mirror.hidden_listed:
        failed += 1
        print(f"FAIL hidden columns listed: {mirror.hidden_listed[:3]}")
    else:
        passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
