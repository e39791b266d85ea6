#!/usr/bin/env bash
# Installs what is missing, builds the default preset and runs every test.
#   scripts/test.sh            # Release build in build/
#   scripts/test.sh asan       # ASan + UBSan build in build-asan/
#   scripts/test.sh ci         # Release with -Werror in build-ci/
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"

scripts/setup.sh
cmake --preset "$preset"
cmake --build --preset "$preset" -j "$(nproc)"
ctest --preset "$preset" -j "$(nproc)"
