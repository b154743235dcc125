#!/usr/bin/env bash
# Fails when a tracked C/C++ source differs from .clang-format's layout.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.c' '*.cpp' '*.hpp' '*.h' 2>/dev/null || true)
if [ ${#files[@]} -eq 0 ]; then
  mapfile -t files < <(find src test bench -name '*.cpp' -o -name '*.hpp' | sort)
fi
clang-format --dry-run --Werror "${files[@]}"
echo "clang-format: ${#files[@]} files checked"
