#!/usr/bin/env bash
# Session 25, last call: tests of the staged GEMV (2 stages), and side by side with llama.cpp on a
# llama-quantize'd 9B Q4_K_M (gguf-synth BF16 seed 1). GL_DEV_STAGE_R2 (dev-only, not committed):
# 2 weight rows a staged group instead of 4.
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
( $B/gguf-synth --preset qwen35-9b --type bf16 --seed 1 -o /tmp/m.gguf -q; echo "synth $((SECONDS - s)) s" ) &
( LC=/tmp/lc bash .peer/side-by-side-gpu.sh $B/bench > $OUT/llama-build.txt 2>&1 ) &
timeout 200 $B/gl_test_ops --gtest_color=no --gtest_filter='*MatmulRows*cuda*:*mul_mat*cuda*' > $OUT/ops.log 2>&1; echo ops; summ $OUT/ops.log
timeout 150 $B/gl_test_models --gtest_color=no --gtest_filter='*LlamaQuants*:*Cuda*' > $OUT/models.log 2>&1; echo models; summ $OUT/models.log
timeout 60 $B/gl_test_gpu --gtest_color=no > $OUT/gpu.log 2>&1; echo gpu; summ $OUT/gpu.log
echo "tests done $((SECONDS - s)) s"
wait
cat $OUT/llama-build.txt
/tmp/lc/b/bin/llama-quantize /tmp/m.gguf /tmp/q4l.gguf Q4_K_M > /tmp/lq.log 2>&1; rm -f /tmp/m.gguf
echo "file ready at $((SECONDS - s)) s"; ls -la /tmp/q4l.gguf
row() { grep -E "^\| (q4|qwen)" | sed "s/^/$1 /"; }
b() { local tag=$1; shift; "$@" 2>&1 | row "$tag" | tee -a $OUT/sbs.txt; }
M="-m /tmp/q4l.gguf --backend cuda -r 3 --precision fast"
L="/tmp/lc/b/bin/llama-bench -m /tmp/q4l.gguf -ngl 99 -fa 1 -r 3"
b ours $B/bench $M -p 512 -n 128 --spec 3 --force-accept
b llama.cpp $L -p 512 -n 128
b ours-r2 env GL_DEV_STAGE_R2=1 $B/bench $M -p 0 -n 128
b ours-off env GL_CUDA_STAGED_GEMV=0 $B/bench $M -p 0 -n 128
b ours $B/bench $M -p 0 -n 128
b llama.cpp $L -p 0 -n 128
b ours-r2 env GL_DEV_STAGE_R2=1 $B/bench $M -p 0 -n 128 --spec 3 --force-accept
echo "done at $((SECONDS - s)) s"
