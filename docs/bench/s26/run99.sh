#!/usr/bin/env bash
# Session 26, call 1: branch s25-next (gemv_pipe_kernel dropped, staged smem limit fixed) tests,
# and an A/B against main (bench-main, b586ff9) on a gguf-quantize'd 9B Q4_K_M and a 9B Q8_0 synth.
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
( $B/gguf-synth --preset qwen35-9b --type bf16 --seed 1 -o /dev/shm/m.gguf -q && $B/gguf-quantize /dev/shm/m.gguf /dev/shm/q4.gguf q4_k_m > /tmp/q.log 2>&1; rm -f /dev/shm/m.gguf; echo "file $((SECONDS - s)) s" ) &
timeout 200 $B/gl_test_ops --gtest_color=no --gtest_filter='*MatmulRows*cuda*:*mul_mat*cuda*:*MatmulRowsCuda*' > $OUT/ops.log 2>&1; echo ops; summ $OUT/ops.log
timeout 150 $B/gl_test_models --gtest_color=no --gtest_filter='*LlamaQuants*:*Cuda*' > $OUT/models.log 2>&1; echo models; summ $OUT/models.log
timeout 60 $B/gl_test_gpu --gtest_color=no > $OUT/gpu.log 2>&1; echo gpu; summ $OUT/gpu.log
echo "tests done $((SECONDS - s)) s"
wait
row() { grep -E "^\| (q4|synth|qwen)" | sed "s/^/$1 /"; }
b() { local tag=$1; shift; "$@" 2>&1 | row "$tag" | tee -a $OUT/ab.txt; }
M="-m /dev/shm/q4.gguf --backend cuda -r 3 --precision fast"
for i in 1 2; do
b main $B/bench-main $M -p 0 -n 128
b next $B/bench $M -p 0 -n 128
done
b main $B/bench-main $M -p 512 -n 128 --spec 3 --force-accept
b next $B/bench $M -p 512 -n 128 --spec 3 --force-accept
S="--synth qwen35-9b:q8_0 --backend cuda -r 3 --precision fast -p 0 -n 128"
b main $B/bench-main $S
b next $B/bench $S
echo "done at $((SECONDS - s)) s"
