#!/usr/bin/env bash
# Session 24: tests of Q8Wide's deferred header decode + PDL for the small kernels + the GDR tail
# over Dv/32 warps; A/B against HEAD (bench_base).
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
$B/gl_test_ops --gtest_color=no --gtest_filter='*cuda*:*Cuda*:*Gdn*:*QkNormRope*:*MatmulRows*:*MatmulFast*' > $OUT/ops.log 2>&1; echo ops; summ $OUT/ops.log
$B/gl_test_models --gtest_color=no --gtest_filter='*LlamaQuants*:*Cuda*' > $OUT/models.log 2>&1; echo models; summ $OUT/models.log
$B/gl_test_gpu --gtest_color=no > $OUT/gpu.log 2>&1; echo gpu; summ $OUT/gpu.log
wait
row() { grep -E "^\| (q4)" | sed "s/^/$1 /"; }
for i in 1 2; do
  $B/bench_base -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision fast 2>&1 | row "base" | tee -a $OUT/ab.txt
  $B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision fast 2>&1 | row "new" | tee -a $OUT/ab.txt
done
$B/bench_base -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision exact 2>&1 | row "base exact" | tee -a $OUT/ab.txt
$B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision exact 2>&1 | row "new exact" | tee -a $OUT/ab.txt
$B/bench_base -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --spec 3 --force-accept --precision fast 2>&1 | row "base spec3" | tee -a $OUT/ab.txt
$B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --spec 3 --force-accept --precision fast 2>&1 | row "new spec3" | tee -a $OUT/ab.txt
$B/bench_base --synth qwen35-9b:q8_0 --backend cuda -p 0 -n 64 -r 3 --precision fast 2>&1 | grep -E "^\| " | tail -1 | sed "s/^/base q8 /" | tee -a $OUT/ab.txt
$B/bench --synth qwen35-9b:q8_0 --backend cuda -p 0 -n 64 -r 3 --precision fast 2>&1 | grep -E "^\| " | tail -1 | sed "s/^/new q8 /" | tee -a $OUT/ab.txt
