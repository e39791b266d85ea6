#!/usr/bin/env bash
# Session 29, call 6: the tensor-core attention's per-tile instructions cut (K/V copies from one
# pointer, 32-bit span compares, no rescale once the max settles, FAST packs hi only): tests, and
# A/B against 7e46c25 at a 32k context (35B-A3B Q4_K_M, pooled --synth).
cd "$(dirname "$0")/.."; TAR=ab.tar.xz source .gpu-run/common.sh
timeout 60 $B/gl_test_ops --gtest_color=no --gtest_filter='*flash_attn*cuda*:*AttnRows*cuda*' > $OUT/ops.log 2>&1; echo "ops at $((SECONDS - s)) s"; summ $OUT/ops.log
timeout 60 $B/gl_test_models --gtest_color=no --gtest_filter='*CudaModel*' > $OUT/models.log 2>&1; echo "models at $((SECONDS - s)) s"; summ $OUT/models.log
b new $B/bench --synth qwen35-35b-a3b:q4_k_m --backend cuda -p 512 -n 32 -r 2 -d 32768
b old $B/bench-old --synth qwen35-35b-a3b:q4_k_m --backend cuda -p 512 -n 32 -r 2 -d 32768
echo "done at $((SECONDS - s)) s"
