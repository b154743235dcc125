#!/usr/bin/env bash
# `make deb`: the Debian package postgresql-15-pg-trickle from BUILD (the
# extension alone, scripts/build-ext.sh), then a smoke test. As root the
# package is installed with dpkg and a private cluster creates a stream
# table with it, changes its source and checks a DIFFERENTIAL refresh;
# otherwise only its contents are listed.
set -euo pipefail
BUILD="$1"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
VERSION="$(sed -n 's/^project(pg_trickle VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)"
ARCH="$(dpkg --print-architecture)"
PKG=postgresql-15-pg-trickle
STAGE="$BUILD/deb"
rm -rf "$STAGE"
MAINTAINER="$(sed -n 's/^ -- \(.*>\)  .*/\1/p' packaging/changelog | head -1)"
DESTDIR="$ROOT/$STAGE" cmake --install "$BUILD" > "$BUILD.deb.log"
install -D -m 644 LICENSE "$STAGE/usr/share/doc/$PKG/copyright"
gzip -9n < packaging/changelog > "$STAGE/usr/share/doc/$PKG/changelog.gz"
chmod 644 "$STAGE/usr/share/doc/$PKG/changelog.gz"
# Debug symbols go to a -dbgsym package, found by the library's build id
# (as debhelper's dh_strip does); the library itself is stripped.
SO="$(find "$STAGE" -name pg_trickle.so)"
BUILD_ID="$(readelf -n "$SO" | sed -n 's/^ *Build ID: *\([0-9a-f]*\)$/\1/p')"
DBG="$BUILD/deb-dbgsym"
rm -rf "$DBG"
DEBUG_FILE="$DBG/usr/lib/debug/.build-id/${BUILD_ID:0:2}/${BUILD_ID:2}.debug"
mkdir -p "$(dirname "$DEBUG_FILE")" "$DBG/DEBIAN" "$DBG/usr/share/doc"
objcopy --only-keep-debug --compress-debug-sections "$SO" "$DEBUG_FILE"
chmod 644 "$DEBUG_FILE"
strip --remove-section=.comment --remove-section=.note --strip-unneeded "$SO"
ln -s "$PKG" "$DBG/usr/share/doc/$PKG-dbgsym"
mkdir -p "$STAGE/DEBIAN"
cat > "$STAGE/DEBIAN/control" <<CONTROL
Package: $PKG
Version: $VERSION
Architecture: $ARCH
Maintainer: $MAINTAINER
Depends: postgresql-15, libxxhash0, libstdc++6, libgcc-s1, libc6
Section: database
Priority: optional
Description: stream tables for PostgreSQL 15 (incremental view maintenance)
 pg_trickle keeps tables defined by a SQL query equal to it, by computing
 and applying only the changes of their sources.
CONTROL
cat > "$DBG/DEBIAN/control" <<CONTROL
Package: $PKG-dbgsym
Version: $VERSION
Architecture: $ARCH
Maintainer: $MAINTAINER
Depends: $PKG (= $VERSION)
Section: debug
Priority: optional
Description: debug symbols for $PKG
Build-Ids: $BUILD_ID
Auto-Built-Package: debug-symbols
CONTROL
for d in "$STAGE" "$DBG"; do
  (cd "$d" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum > DEBIAN/md5sums)
done
OUT="${PKG}_${VERSION}_${ARCH}.deb"
DBG_OUT="${PKG}-dbgsym_${VERSION}_${ARCH}.deb"
dpkg-deb --root-owner-group --build "$STAGE" "$OUT" >> "$BUILD.deb.log"
dpkg-deb --root-owner-group --build "$DBG" "$DBG_OUT" >> "$BUILD.deb.log"
echo "pg_trickle: built $OUT ($(dpkg-deb -c "$OUT" | grep -c '^-') files) and $DBG_OUT"
# lintian (when installed: make check installs it) must find nothing to
# report at error or warning level.
if command -v lintian >/dev/null 2>&1; then
  if lintian --fail-on error,warning "$OUT" "$DBG_OUT" > "$BUILD.lintian.log" 2>&1; then
    echo "pg_trickle: lintian found no error or warning"
  else
    cat "$BUILD.lintian.log"
    echo "pg_trickle: lintian reports errors or warnings"
    exit 1
  fi
fi

if [ "$(id -u)" -ne 0 ]; then
  dpkg-deb -c "$OUT"
  echo "pg_trickle: not root, so $OUT was not installed and smoke-tested"
  exit 0
fi
dpkg -i "$OUT" >> "$BUILD.deb.log" 2>&1
dpkg -s "$PKG" | grep -q '^Status: install ok installed'
. "$ROOT/scripts/lib/cluster.sh"
SMOKE="$(mktemp -d /tmp/pgt_deb_XXXXXX)"
prepare_dir "$SMOKE"
cd "$SMOKE"  # the server's user may not enter the checkout (a 0700 parent)
port=$(free_port)
cluster_init "$SMOKE/data" "$port" "$SMOKE"
cluster_start "$SMOKE/data" "$SMOKE/server.log"
trap 'cluster_stop "$SMOKE/data"; rm -rf "$SMOKE"' EXIT
result="$("$PG_BINDIR/psql" -X -q -t -A -v ON_ERROR_STOP=1 -h "$SMOKE" -p "$port" -U postgres -d postgres <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION pg_trickle;
CREATE TABLE t (id int PRIMARY KEY, v int);
INSERT INTO t SELECT g, g FROM generate_series(1, 100) g;
SELECT pgtrickle.create_stream_table('s', 'SELECT v % 3 AS k, count(*) AS n FROM t GROUP BY 1',
                                     refresh_mode => 'DIFFERENTIAL');
UPDATE t SET v = v + 1 WHERE id <= 10;
SELECT pgtrickle.refresh_stream_table('s');
SELECT (SELECT action FROM pgtrickle.pgt_refresh_history ORDER BY refresh_id DESC LIMIT 1)
       || ' ' || (NOT EXISTS ((SELECT k, n FROM s EXCEPT ALL SELECT v % 3, count(*) FROM t GROUP BY 1)
                              UNION ALL (SELECT v % 3, count(*) FROM t GROUP BY 1 EXCEPT ALL SELECT k, n FROM s)))::text
       || ' ' || pgtrickle.version();
SQL
)"
result="$(echo "$result" | tail -1)"
if [ "$result" != "DIFFERENTIAL true $VERSION" ]; then
  echo "pg_trickle: smoke test of $OUT failed: $result"
  exit 1
fi
check_log_for_crash "$SMOKE/server.log"
echo "pg_trickle: $OUT installed and passed its smoke test (DIFFERENTIAL refresh equals its query)"
