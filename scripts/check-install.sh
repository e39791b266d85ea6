#!/usr/bin/env bash
# Installs the library into a temporary prefix and builds examples/simple
# against it with find_package(ggml-lite), then runs it. Used by CI.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix" "$prefix-app"' EXIT

cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S examples/simple -B "$prefix-app" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix-app" >/dev/null
"$prefix-app/simple"
# The pkg-config file must describe the same library.
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs ggml-lite >/dev/null
echo "check-install: ok"
