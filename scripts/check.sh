#!/usr/bin/env bash
# Runs every test layer through ctest (unit, compile guard, format,
# regress, e2e). Exit status is ctest's.
set -euo pipefail
BUILD="${1:-build}"
cd "$(dirname "$0")/.."
ctest --test-dir "$BUILD" --output-on-failure
