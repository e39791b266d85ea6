#!/usr/bin/env bash
# quant_side_by_side.sh - on the GPU machine: make llama.cpp-quantized files from gguf-synth models
# and run the project's bench and llama-bench on them (../shared/tools/side-by-side-gpu.sh).
#
#   tests/gpu/quant_side_by_side.sh BUNDLE PEER [model:mix ...]
#     BUNDLE  folder with bench and gguf-synth (run_gpu_tests.sh --pack, plus gguf-synth)
#     PEER    a copy of ../shared/tools (llama.cpp source and side-by-side-gpu.sh)
#     model:mix  gguf-synth preset and llama-quantize type, default qwen35-9b:Q4_K_M
#
# The synth source is BF16 where it fits the disk (9B: 18 GB) and Q8_0 otherwise (35B-A3B: 37 GB,
# requantized with --allow-requantize); it is deleted once quantized. Files go to $WORK (default
# /tmp/sbs). Env as side-by-side-gpu.sh: P, N, R, SPEC, LC.
set -uo pipefail
bundle=$(cd "${1:?bundle folder}" && pwd)
peer=$(cd "${2:?peer tools folder}" && pwd)
shift 2
[[ $# -gt 0 ]] || set -- qwen35-9b:Q4_K_M
WORK=${WORK:-/tmp/sbs} LC=${LC:-/tmp/lc}
export LC
mkdir -p "$WORK"

# Builds llama.cpp once (side-by-side-gpu.sh with no model does only that).
bash "$peer/side-by-side-gpu.sh" "$bundle/bench" || exit 1

files=()
for spec in "$@"; do
  preset=${spec%%:*} mix=${spec#*:}
  out=$WORK/$preset-$mix.gguf
  if [[ ! -f $out ]]; then
    src_type=bf16
    [[ $preset == *35b* ]] && src_type=q8_0
    src=$WORK/$preset-$src_type.gguf
    t0=$SECONDS
    "$bundle/gguf-synth" --preset "$preset" --type "$src_type" -q -o "$src" || exit 1
    "$LC/b/bin/llama-quantize" --allow-requantize "$src" "$out" "$mix" >"$WORK/quantize-$preset-$mix.log" 2>&1 ||
      { tail -5 "$WORK/quantize-$preset-$mix.log"; exit 1; }
    rm -f "$src"
    echo "made $out ($(du -h "$out" | cut -f1)) in $((SECONDS - t0)) s"
  fi
  files+=("$out")
done
bash "$peer/side-by-side-gpu.sh" "$bundle/bench" "${files[@]}"
