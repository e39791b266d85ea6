#!/usr/bin/env bash
# Fails when a tracked C++/CUDA source differs from .clang-format (clang-format from Debian).
#   scripts/check-format.sh          # check, list the files that differ
#   scripts/check-format.sh --fix    # rewrite them in place
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || scripts/setup.sh
mapfile -t files < <(git ls-files -- '*.cpp' '*.h' '*.cu' '*.cuh' ':!:tests/fixtures/**')
if [[ ${1:-} == --fix ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [[ ${#bad[@]} -gt 0 ]]; then
  echo "format: ${#bad[@]} file(s) differ from .clang-format (fix: scripts/check-format.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "format: ${#files[@]} files match .clang-format ($(clang-format --version | head -1))"
