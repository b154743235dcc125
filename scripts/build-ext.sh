#!/usr/bin/env bash
# Builds the extension alone (no tests, no test tools) into BUILD; the full
# log goes to BUILD.log and one line says what was built. Extra arguments
# go to cmake (e.g. -DPG_CONFIG=/usr/lib/postgresql/15/bin/pg_config).
set -euo pipefail
BUILD="$1" JOBS="$2"
shift 2
cd "$(dirname "$0")/.."
LOG="$BUILD.log"
start=$(date +%s)
if ! { cmake -S . -B "$BUILD" -DPGT_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" &&
       cmake --build "$BUILD" --target pg_trickle -j"$JOBS"; } > "$LOG" 2>&1; then
  tail -40 "$LOG"
  echo "pg_trickle: build failed (full log: $LOG)"
  exit 1
fi
pg="$(sed -n 's/^-- PostgreSQL: \(PostgreSQL [0-9.]*\).*/\1/p' "$LOG" | head -1)"
echo "pg_trickle $(sed -n 's/^project(pg_trickle VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt) built for ${pg:-PostgreSQL} in $(( $(date +%s) - start )) s (log: $LOG)"
