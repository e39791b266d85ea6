#!/usr/bin/env bash
# Session 22: GDR tail by arrival count + Q6_K pipe GEMV: tests + A/B vs 047d58d.
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
[ -f /tmp/q4.gguf ] || ( $B/gguf-synth --preset qwen35-9b --type bf16 --seed 1 -o /tmp/m.gguf -q && $B/gguf-quantize /tmp/m.gguf /tmp/q4.gguf --type q4_k_m > $OUT/quantize.log 2>&1; rm -f /tmp/m.gguf ) &
t $B/gl_test_ops --gtest_color=no --gtest_filter='*GdnOutputPath*:*GdnInputPath*:*MatmulRows*:*MatmulFast*:*gated_delta*__cuda*:*rms_norm*__cuda*:*mul_mat*__cuda*' > $OUT/ops.log 2>&1; summ $OUT/ops.log
t $B/gl_test_models --gtest_color=no --gtest_filter='*LlamaQuants*:*Cuda*' > $OUT/models.log 2>&1; summ $OUT/models.log
t $B/gl_test_gpu --gtest_color=no > $OUT/gpu.log 2>&1; summ $OUT/gpu.log
wait
row() { grep -E "^\| (qwen|q4)" | sed "s/^/$1 /"; }
for b in bench_old bench bench_old bench; do
  $B/$b -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --spec 3 --force-accept --precision fast 2>&1 | row "$b fast" | tee -a $OUT/ab.txt
done
for b in bench_old bench; do
  $B/$b -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision exact 2>&1 | row "$b exact" | tee -a $OUT/ab.txt
  $B/$b --synth qwen35-9b:q8_0 --backend cuda -p 0 -n 64 -r 3 2>&1 | row "$b q8" | tee -a $OUT/ab.txt
done
GL_CUDA_PROFILE=1 $B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 16 -r 1 --precision fast > $OUT/profile.txt 2>&1
grep "launches" $OUT/profile.txt
 GL_CUDA_PROFILE=1 $B/bench_old -m /tmp/q4.gguf --backend cuda -p 0 -n 16 -r 1 --precision fast > $OUT/profile_old.txt 2>&1
