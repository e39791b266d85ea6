#!/usr/bin/env bash
# Session 26, call 5: the whole CUDA op harness on 22e5474, and compute-sanitizer (memcheck,
# racecheck) over the router cases, the staged GEMV and the CUDA model tests.
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
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1); echo "cs: $CS"
s=$SECONDS
summ() { grep -E '^\[  (PASSED|FAILED)  \]|ERROR SUMMARY|RACECHECK SUMMARY' "$1" | head -6; grep -E '^\[  FAILED  \].* ms\)$' "$1" | head; }
F='*MoeRouter*cuda*:*router*cuda*:*weighted_sum*cuda*:*top_k*cuda*'
timeout 90 $CS --tool racecheck $B/gl_test_ops --gtest_color=no --gtest_filter="$F" > $OUT/race-router.log 2>&1; echo race-router; summ $OUT/race-router.log
timeout 60 $CS --tool memcheck $B/gl_test_ops --gtest_color=no --gtest_filter="$F" > $OUT/mem-router.log 2>&1; echo mem-router; summ $OUT/mem-router.log
timeout 90 $CS --tool memcheck $B/gl_test_ops --gtest_color=no --gtest_filter='*MatmulRowsCuda*:*MatmulRows*cuda*q4_K*' > $OUT/mem-staged.log 2>&1; echo mem-staged; summ $OUT/mem-staged.log
echo "sanitizer done $((SECONDS - s)) s"
timeout 200 $B/gl_test_ops --gtest_color=no --gtest_filter='*cuda*' > $OUT/ops-cuda.log 2>&1; echo ops-cuda; summ $OUT/ops-cuda.log
timeout 100 $CS --tool memcheck $B/gl_test_models --gtest_color=no --gtest_filter='*CudaModelTest*moe_tiny*' > $OUT/mem-models.log 2>&1; echo mem-models; summ $OUT/mem-models.log
echo "done at $((SECONDS - s)) s"
