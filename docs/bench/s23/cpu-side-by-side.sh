#!/usr/bin/env bash
# Session 23, on the dev box (2 threads): 0.8B Q4_K_M, ours fast / llama-bench / ours exact, three rounds.
# File: gguf-synth --preset qwen35-0.8b --type bf16 --seed 1, then llama-quantize ... Q4_K_M.
# llama.cpp: ../shared/tools/llama.cpp-src.tgz configured as build-llama-cpu.sh does but with
# -DGGML_NATIVE=OFF -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_AVX512_VBMI=ON
# -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON and the AMX options off
# (the native build's AMX path segfaults in Q4_K prefill on this CPU: ggml_backend_amx_mul_mat).
B=${B:-build-ci/examples/bench/bench} L=${L:-$HOME/.cache/llama-cpu-noamx/build/bin} F=${F:-/tmp/s08-q4km.gguf}
for round in 1 2 3; do
  echo "== round $round"
  $B -m $F --backend cpu -t 2 -p 128 -n 32 -r 3 --precision fast 2>&1 | grep -E "^\| " | sed 's/^/ours-fast /'
  $L/llama-bench -m $F -t 2 -p 128 -n 32 -r 3 2>&1 | grep -E "pp128|tg32" | sed 's/^/llama /'
  $B -m $F --backend cpu -t 2 -p 128 -n 32 -r 3 --precision exact 2>&1 | grep -E "^\| " | sed 's/^/ours-exact /'
done
