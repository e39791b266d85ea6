#!/usr/bin/env bash
# Session 24, final code: the CUDA op harness, model tests and gl_test_gpu.
cd "$(dirname "$0")/.."
R=$PWD
mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu-run/gpu.tar.xz
B=/tmp/g/gpu
src=$(cat $B/source_dir); [ -e "$src" ] || { mkdir -p "$(dirname "$src")"; ln -s "$R" "$src"; }
mkdir -p "$(dirname "$src")/shared/fixtures" && ln -sfn "$R/.gpu-run/lq" "$(dirname "$src")/shared/fixtures/llama-quants"
mkdir -p "$(cat $B/binary_dir)"
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi -L
summ() { grep -E '^\[  (PASSED|FAILED)  \]' "$1" | head -5; grep -E '^\[  FAILED  \].* ms\)$' "$1" | head; }
$B/gl_test_models --gtest_color=no --gtest_filter='*LlamaQuants*:*Cuda*' > $OUT/models.log 2>&1; echo models; summ $OUT/models.log
$B/gl_test_gpu --gtest_color=no > $OUT/gpu.log 2>&1; echo gpu; summ $OUT/gpu.log
$B/gl_test_ops --gtest_color=no --gtest_filter='*cuda*:*Cuda*:*Gdn*:*QkNormRope*:*MatmulRows*:*MatmulFast*' > $OUT/ops.log 2>&1; echo ops; summ $OUT/ops.log
