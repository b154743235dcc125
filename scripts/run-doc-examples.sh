#!/usr/bin/env bash
# Runs every ```sql block of README.md and docs/*.md against a private
# cluster that preloads pg_trickle: each file in a fresh database, its blocks
# in order, in one psql session with ON_ERROR_STOP. Fails naming the file,
# the block's line and the error. Invariant: a doc example that no longer
# runs fails here, so the docs show only what the extension does.
#
# Usage: scripts/run-doc-examples.sh <outdir> <pg_bindir> [file.md ...]
#   (no files: README.md and docs/*.md; each file's psql output is kept in
#   <outdir>/<file>.out, the script psql ran in <outdir>/<file>.sql)
#
# Markers, each on the last non-blank line before a ```sql fence:
#   <!-- doc-test: skip -->           the block is not run (a synopsis, a
#                                     fragment, something needing another
#                                     cluster or a restart)
#   <!-- doc-test: error SQLSTATE --> the block must fail, and the last error
#                                     it raises must have that SQLSTATE
# Invisible setup, run in order with the blocks (lines up to `-->`):
#   <!-- doc-test: setup
#   CREATE TABLE ...;
#   -->
# The scheduler is off in this cluster (pg_trickle.enabled = off): examples
# that need fresh contents call refresh_stream_table themselves, so no
# example depends on timing. Each file starts in an empty database; a file
# whose examples need the extension creates it in a block of its own.
set -euo pipefail
OUT="$1" PG_BINDIR="$2"
shift 2
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
. "$ROOT/scripts/lib/cluster.sh"

if [ $# -gt 0 ]; then
  files=("$@")
else
  files=("$ROOT/README.md")
  for f in "$ROOT"/docs/*.md; do
    # benchmarks.md: its blocks are fragments of benchmark runs (they need
    # the bench/ data and take minutes), not examples to run here.
    [ "$(basename "$f")" = benchmarks.md ] && continue
    files+=("$f")
  done
fi

rm -rf "$OUT"
prepare_dir "$OUT"
OUT="$(cd "$OUT" && pwd)"
# A Unix socket path is limited to 107 bytes.
SOCK="$OUT"
if [ ${#SOCK} -gt 80 ]; then
  SOCK="$(mktemp -d /tmp/pgt_doc_XXXXXX)"
  [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$SOCK"
fi
port=$(free_port)
cluster_init "$OUT/data" "$port" "$SOCK"
cluster_start "$OUT/data" "$OUT/server.log"
trap 'cluster_stop "$OUT/data"; [ "$SOCK" = "$OUT" ] || rm -rf "$SOCK"' EXIT
PSQL=(stdbuf -oL "$PG_BINDIR/psql" -X -h "$SOCK" -p "$port" -U postgres)

# Writes the psql script for one markdown file ($2) and a map from each of
# its lines to the markdown line and the line of the block it came from ($3).
generate() {
  awk -v gen="$2" -v map="$3" -v file="$4" '
    function emit(s, mdline, block) { print s > gen; n++; print n, mdline, block > map }
    function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
    BEGIN {
      q = sprintf("%c", 39)
      emit("\\set ON_ERROR_STOP 1", 0, 0)
      emit("\\set VERBOSITY verbose", 0, 0)
    }
    insetup {
      if ($0 ~ /^[ \t]*-->[ \t]*$/) { insetup = 0; prev = "-->"; next }
      emit($0, NR, setup_line); next
    }
    infence {
      if ($0 ~ /^[ \t]*```[ \t]*$/) {
        infence = 0; prev = "```"
        if (mode == "run" && last !~ /(;|^\\.*)$/) {
          print "FAILED: " file ": block at line " block " does not end its last statement with a semicolon" > "/dev/stderr"; bad = 1
        }
        if (expect != "") {
          emit("\\set ON_ERROR_STOP 1", NR, block)
          emit("SELECT :" q "LAST_ERROR_SQLSTATE" q " = " q expect q " AS doc_test_ok \\gset", NR, block)
          emit("\\if :doc_test_ok", NR, block)
          emit("\\else", NR, block)
          emit("\\echo " q "doc-test-failure: " file ": block at line " block ": expected SQLSTATE " expect ", got" q " :LAST_ERROR_SQLSTATE", NR, block)
          emit("\\quit", NR, block)
          emit("\\endif", NR, block)
        }
        next
      }
      if (mode == "run") {
        line = $0
        if (substr(line, 1, indent) ~ /^[ \t]*$/) line = substr(line, indent + 1)
        emit(line, NR, block)
        # the last line that is not blank or a comment (a rough strip of "--")
        t = line; sub(/[ \t]*--.*$/, "", t); t = trim(t)
        if (t != "") last = t
      }
      next
    }
    /^[ \t]*```/ {
      infence = 1; block = NR; expect = ""; last = ";"
      match($0, /^[ \t]*/); indent = RLENGTH
      lang = trim(substr($0, indent + 4))
      mode = "other"
      if (lang == "sql") {
        mode = "run"
        if (prev == "<!-- doc-test: skip -->") { mode = "skip"; skipped++; next }
        if (prev ~ /^<!-- doc-test: error [0-9A-Z][0-9A-Z][0-9A-Z][0-9A-Z][0-9A-Z] -->$/) {
          split(prev, w, " "); expect = w[4]
        }
        blocks++
        emit("\\echo " q "--- " file ":" NR (expect != "" ? " (expects " expect ")" : "") q, NR, block)
        if (expect != "") {
          emit("\\set ON_ERROR_STOP 0", NR, block)
          emit("\\set LAST_ERROR_SQLSTATE 00000", NR, block)
        }
      }
      next
    }
    /^[ \t]*<!-- doc-test: setup[ \t]*$/ { insetup = 1; setup_line = NR; next }
    /^[ \t]*<!-- doc-test:/ {
      t = trim($0)
      if (t != "<!-- doc-test: skip -->" && t !~ /^<!-- doc-test: error [0-9A-Z][0-9A-Z][0-9A-Z][0-9A-Z][0-9A-Z] -->$/) {
        print "FAILED: " file ":" NR ": unknown doc-test marker: " t > "/dev/stderr"; bad = 1
      }
    }
    { t = trim($0); if (t != "") prev = t }
    END {
      if (infence || insetup) { print "FAILED: " file ": unterminated block or setup comment" > "/dev/stderr"; bad = 1 }
      print blocks + 0, skipped + 0 > (map ".count")
      exit bad
    }
  ' "$1"
}

# Prints the error that stopped psql, located in the markdown file.
report_failure() {
  local file="$1" out="$2" map="$3" genline mdline block
  if grep -q '^doc-test-failure: ' "$out"; then
    grep '^doc-test-failure: ' "$out" | sed 's/^doc-test-failure: /FAILED: /'
    return
  fi
  genline=$(grep -E '^psql:[^:]*:[0-9]+: (ERROR|FATAL|PANIC|error):' "$out" | tail -n 1 |
            sed -E 's/^psql:[^:]*:([0-9]+):.*/\1/' || true)
  if [ -z "$genline" ]; then
    echo "FAILED: $file: psql failed:"
    tail -n 20 "$out" | sed 's/^/  /'
    return
  fi
  read -r mdline block < <(awk -v g="$genline" '$1 == g { print $2, $3 }' "$map") || true
  echo "FAILED: $file: block at line $block (statement ending at line $mdline):"
  awk -v g="$genline" '
    index($0, "psql:") == 1 { on = ($0 ~ ("^psql:[^:]*:" g ": (ERROR|FATAL|PANIC|error):")) }
    on { sub(/^psql:[^:]*:[0-9]+: /, ""); print "  " $0 }
  ' "$out" | tail -n 12
}

start=$SECONDS
rc=0
for md in "${files[@]}"; do
  rel="${md#"$ROOT"/}"
  grep -qE '^[[:space:]]*```sql[[:space:]]*$' "$md" || continue
  name="$(echo "$rel" | tr '/.' '__')"
  db="doc_$(echo "$name" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9_\n' '_')"
  gen="$OUT/$name.sql" map="$OUT/$name.map" out="$OUT/$name.out"
  if ! generate "$md" "$gen" "$map" "$rel"; then
    rc=1
    continue
  fi
  read -r nblocks nskipped < "$map.count"
  "${PSQL[@]}" -q -d postgres -c "CREATE DATABASE \"$db\"" >/dev/null
  t0=$SECONDS
  if "${PSQL[@]}" -d "$db" -v ON_ERROR_STOP=1 -f "$gen" > "$out" 2>&1 &&
     ! grep -q '^doc-test-failure: ' "$out"; then
    echo "docs-examples: $rel ok ($nblocks blocks run, $nskipped skipped, $((SECONDS - t0)) s)"
  else
    report_failure "$rel" "$out" "$map"
    echo "  (whole output: $out)"
    rc=1
  fi
done
check_log_for_crash "$OUT/server.log" || rc=1
echo "docs-examples: $([ $rc -eq 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"
exit $rc
