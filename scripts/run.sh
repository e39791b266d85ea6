#!/usr/bin/env bash
# Sets up, builds and runs the main job.
# Until the Qwen3.5 model lands, the main job is graph-dump on its built-in
# example graph (a small attention + FFN block): the text dump, memory plan and
# a DOT file rendered to SVG.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
cmake --preset default >/dev/null
cmake --build --preset default -j "$(nproc)" --target graph-dump
mkdir -p out
build/examples/graph-dump/graph-dump --plan "$@"
build/examples/graph-dump/graph-dump --format dot -o out/example-graph.dot
if command -v dot >/dev/null; then
  dot -Tsvg out/example-graph.dot -o out/example-graph.svg
  echo "wrote out/example-graph.dot and out/example-graph.svg"
fi
