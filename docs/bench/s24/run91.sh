#!/usr/bin/env bash
# Session 24: Q8Wide ready() (decode once per chunk) + PDL small kernels (GL_CUDA_PDL_SMALL=0 turns them off, dev A/B only); A/B vs HEAD.
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
[ -s /tmp/q4.gguf ] || { $B/gguf-synth --preset qwen35-9b --type bf16 --seed 1 -o /tmp/m.gguf -q
$B/gguf-quantize /tmp/m.gguf /tmp/q4.gguf --type q4_k_m > $OUT/quantize.log 2>&1; rm -f /tmp/m.gguf; } &
$B/gl_test_ops --gtest_color=no --gtest_filter='*mul_mat*cuda*:*MatmulRows*cuda*:*MatmulFast*:*Gdn*' > $OUT/ops.log 2>&1; echo ops; summ $OUT/ops.log
$B/gl_test_models --gtest_color=no --gtest_filter='*LlamaQuants*:*Cuda*' > $OUT/models.log 2>&1; echo models; summ $OUT/models.log
$B/gl_test_gpu --gtest_color=no > $OUT/gpu.log 2>&1; echo gpu; summ $OUT/gpu.log
wait
row() { grep -E "^\| (q4)" | sed "s/^/$1 /"; }
b() { local tag=$1; shift; "$@" 2>&1 | row "$tag" | tee -a $OUT/ab.txt; }
M="-m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3"
for i in 1 2; do
  b base $B/bench_base $M --precision fast
  b new $B/bench $M --precision fast
  b new-nopdl env GL_CUDA_PDL_SMALL=0 $B/bench $M --precision fast
done
b "base exact" $B/bench_base $M --precision exact
b "new exact" $B/bench $M --precision exact
b "new-nopdl exact" env GL_CUDA_PDL_SMALL=0 $B/bench $M --precision exact
b "base spec3" $B/bench_base $M --spec 3 --force-accept --precision fast
b "new spec3" $B/bench $M --spec 3 --force-accept --precision fast
b "new-nopdl spec3" env GL_CUDA_PDL_SMALL=0 $B/bench $M --spec 3 --force-accept --precision fast
