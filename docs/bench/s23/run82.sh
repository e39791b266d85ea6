#!/usr/bin/env bash
# Session 23: the gated delta rule's F32 loads (and 8 vs 16 warps, GL_GDR_WARPS): tests, ncu, A/B.
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
summ() { grep -E '^\[  (PASSED|FAILED) \]' "$1" | head -5; grep -E '^\[  FAILED  \].* ms\)$' "$1" | head; }
[ -s /tmp/q4.gguf ] || { $B/gguf-synth --preset qwen35-9b --type bf16 --seed 1 -o /tmp/m.gguf -q
$B/gguf-quantize /tmp/m.gguf /tmp/q4.gguf --type q4_k_m > $OUT/quantize.log 2>&1; rm -f /tmp/m.gguf; } &
for w in 8 16; do
  GL_GDR_WARPS=$w $B/gl_test_ops --gtest_color=no --gtest_filter='*gated_delta*cuda*:*GdnOutputPath*:*GdnInputPath*:*GdnGates*' > $OUT/ops-w$w.log 2>&1; echo "ops w$w"; summ $OUT/ops-w$w.log
  GL_GDR_WARPS=$w $B/gl_test_models --gtest_color=no --gtest_filter='*LlamaQuants*:*Cuda*' > $OUT/models-w$w.log 2>&1; echo "models w$w"; summ $OUT/models-w$w.log
done
wait
row() { grep -E "^\| (q4)" | sed "s/^/$1 /"; }
for i in 1 2; do
  $B/bench_base -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision fast 2>&1 | row "base" | tee -a $OUT/ab.txt
  GL_GDR_WARPS=8 $B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision fast 2>&1 | row "f32 w8" | tee -a $OUT/ab.txt
  GL_GDR_WARPS=16 $B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision fast 2>&1 | row "f32 w16" | tee -a $OUT/ab.txt
done
GL_GDR_WARPS=16 $B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --spec 3 --force-accept --precision fast 2>&1 | row "f32 w16 spec" | tee -a $OUT/ab.txt
GL_GDR_WARPS=8 $B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --spec 3 --force-accept --precision fast 2>&1 | row "f32 w8 spec" | tee -a $OUT/ab.txt
for w in 8 16; do
  GL_GDR_WARPS=$w /usr/local/cuda/bin/ncu --clock-control none --cache-control none --graph-profiling node -k regex:gdr_kernel --launch-skip 40 --launch-count 3 \
    --metrics gpu__time_duration.sum,smsp__inst_executed.sum,launch__registers_per_thread \
    $B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 8 -r 1 --warmup 1 --precision fast 2>&1 | grep -E "gdr_kernel|duration|inst_exec|registers" > $OUT/ncu-gdr-w$w.txt
done
cat $OUT/ncu-gdr-w*.txt
