#!/usr/bin/env bash
# Session 22: GDR tail (prefetched w, z) + Q8_0 int8 GEMV under FAST: tests + A/B vs 047d58d.
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
t() { local s=$SECONDS; "$@"; echo "rc $? in $((SECONDS - s)) s: $*"; }
summ() { grep -E '^\[  (PASSED|FAILED) \]' "$1" | head -5; grep -E '^\[  FAILED  \].* ms\)$' "$1" | head; }
( $B/gguf-synth --preset qwen35-9b --type bf16 --seed 1 -o /tmp/m.gguf -q && $B/gguf-quantize /tmp/m.gguf /tmp/q4.gguf --type q4_k_m > $OUT/quantize.log 2>&1 && $B/gguf-quantize /tmp/m.gguf /tmp/q8.gguf --type q8_0 >> $OUT/quantize.log 2>&1; rm -f /tmp/m.gguf ) &
t $B/gl_test_ops --gtest_color=no --gtest_filter='*GdnOutputPath*:*GdnInputPath*:*MatmulRows*:*MatmulFast*:*GdnGates*:*gated_delta*__cuda*:*mul_mat*__cuda*:*Q8_0*' > $OUT/ops.log 2>&1; summ $OUT/ops.log
t $B/gl_test_models --gtest_color=no --gtest_filter='*LlamaQuants*:*Cuda*' > $OUT/models.log 2>&1; summ $OUT/models.log
t $B/gl_test_gpu --gtest_color=no > $OUT/gpu.log 2>&1; summ $OUT/gpu.log
wait
row() { grep -E "^\| (qwen|q4|q8)" | sed "s/^/$1 /"; }
for b in bench_old bench bench_old bench; do
  $B/$b -m /tmp/q8.gguf --backend cuda -p 0 -n 64 -r 3 --spec 3 --force-accept --precision fast 2>&1 | row "$b q8 fast" | tee -a $OUT/ab.txt
done
for b in bench_old bench; do
  $B/$b -m /tmp/q8.gguf --backend cuda -p 512 -n 64 -r 3 --precision exact 2>&1 | row "$b q8 exact" | tee -a $OUT/ab.txt
  $B/$b -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision fast 2>&1 | row "$b q4 fast" | tee -a $OUT/ab.txt
  $B/$b -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision exact 2>&1 | row "$b q4 exact" | tee -a $OUT/ab.txt
done
