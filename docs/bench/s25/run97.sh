#!/usr/bin/env bash
# Session 25: the staged GEMV for BF16/F16 weights (float activations). Tests, then A/B in one
# binary on a 9B BF16 (gguf-synth seed 1): GL_CUDA_STAGED_GEMV=0 is the previous choice (same bits).
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
s=$SECONDS
summ() { grep -E '^\[  (PASSED|FAILED)  \]' "$1" | head -5; grep -E '^\[  FAILED  \].* ms\)$' "$1" | head; }
( $B/gguf-synth --preset qwen35-9b --type bf16 --seed 1 -o /tmp/bf.gguf -q; echo "synth $((SECONDS - s)) s" ) &
timeout 120 $B/gl_test_ops --gtest_color=no --gtest_filter='*MatmulRows*cuda*:*mul_mat*cuda*' > $OUT/ops.log 2>&1; echo ops; summ $OUT/ops.log
timeout 90 $B/gl_test_models --gtest_color=no --gtest_filter='*Cuda*' > $OUT/models.log 2>&1; echo models; summ $OUT/models.log
echo "tests done $((SECONDS - s)) s"
wait
row() { grep -E "^\| (bf|qwen)" | sed "s/^/$1 /"; }
b() { local tag=$1; shift; "$@" 2>&1 | row "$tag" | tee -a $OUT/ab.txt; }
M="-m /tmp/bf.gguf --backend cuda -p 0 -n 64 -r 3"
for i in 1 2; do
  b off env GL_CUDA_STAGED_GEMV=0 $B/bench $M
  b staged $B/bench $M
done
b "off spec3" env GL_CUDA_STAGED_GEMV=0 $B/bench $M --spec 3 --force-accept
b "staged spec3" $B/bench $M --spec 3 --force-accept
echo "done $((SECONDS - s)) s"
