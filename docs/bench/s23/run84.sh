#!/usr/bin/env bash
# Session 23: tests of the GDR F32 loads + warp_sum_squares + two-chunk pipe GEMV; A/B; verify profile.
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
$B/gl_test_ops --gtest_color=no --gtest_filter='*gated_delta*cuda*:*GdnOutputPath*:*GdnInputPath*:*GdnGates*:*QkNormRope*:*MatmulRows*cuda*:*MatmulFast*:*mul_mat_*__cuda*:*norm*__cuda*:*ssm_conv*__cuda*' > $OUT/ops.log 2>&1; echo ops; summ $OUT/ops.log
GL_PIPE2_R=2 $B/gl_test_ops --gtest_color=no --gtest_filter='*MatmulRows*cuda*:*MatmulFast*:*mul_mat_*__cuda*' > $OUT/ops-r2.log 2>&1; echo ops-r2; summ $OUT/ops-r2.log
$B/gl_test_models --gtest_color=no --gtest_filter='*LlamaQuants*:*Cuda*' > $OUT/models.log 2>&1; echo models; summ $OUT/models.log
$B/gl_test_gpu --gtest_color=no > $OUT/gpu.log 2>&1; echo gpu; summ $OUT/gpu.log
wait
row() { grep -E "^\| (q4)" | sed "s/^/$1 /"; }
for i in 1 2; do
  $B/bench_base -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision fast 2>&1 | row "base" | tee -a $OUT/ab.txt
  GL_PIPE2=0 $B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision fast 2>&1 | row "gdr" | tee -a $OUT/ab.txt
  GL_PIPE2_R=1 $B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision fast 2>&1 | row "gdr+pipe2 r1" | tee -a $OUT/ab.txt
  GL_PIPE2_R=2 $B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision fast 2>&1 | row "gdr+pipe2 r2" | tee -a $OUT/ab.txt
done
$B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision exact 2>&1 | row "now exact" | tee -a $OUT/ab.txt
$B/bench_base -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision exact 2>&1 | row "base exact" | tee -a $OUT/ab.txt
GL_CUDA_PROFILE=1 $B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 16 -r 1 --spec 3 --force-accept --precision fast > $OUT/profile-spec.txt 2>&1
GL_CUDA_PROFILE=1 $B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 16 -r 1 --precision fast > $OUT/profile-tg.txt 2>&1
/usr/local/cuda/bin/ncu --clock-control none --cache-control none --graph-profiling node --kernel-name-base demangled -k 'regex:gemv_(pipe_)?kernel<11, 1, [12], 2,' --launch-count 4 \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__registers_per_thread,launch__grid_size,sm__warps_active.avg.pct_of_peak_sustained_active \
  $B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 8 -r 1 --warmup 1 --precision fast 2>&1 | grep -E "kernel<|duration|dram|registers|grid_size|warps_active" > $OUT/ncu-pipe2.txt
cat $OUT/ncu-pipe2.txt | head -30
