#!/usr/bin/env bash
# Sets up, builds and runs the main job: the qwen35 example on the embedded default model
# (a tiny Qwen3.5 with an MTP head, trained on Shakespeare), streaming text with MTP
# speculative decoding on and printing speed and acceptance. Extra arguments go to qwen35,
# e.g. scripts/run.sh -n 64 --mtp 2. MTP speed per K: examples/bench (bench --spec 1,2,3,4).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh >/dev/null
cmake --preset default >/dev/null
cmake --build --preset default -j "$(nproc)" --target qwen35 >/dev/null
exec build/examples/qwen35/qwen35 "$@"
