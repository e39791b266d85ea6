#!/usr/bin/env bash
# Session 22: side by side with llama.cpp on a llama-quantize'd 9B Q8_0 (gguf-synth bf16 seed 1),
# ours exact and fast; QkNormRope + CUDA model tests while llama.cpp builds.
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
summ() { grep -E '^\[  (PASSED|FAILED) \]' "$1" | head -5; grep -E '^\[  FAILED  \].* ms\)$' "$1" | head; }
( $B/gguf-synth --preset qwen35-9b --type bf16 --seed 1 -o /tmp/m.gguf -q; echo "synth $((SECONDS - s)) s" ) &
( LC=/tmp/lc bash .peer/side-by-side-gpu.sh $B/bench > $OUT/llama-build.txt 2>&1 ) &
$B/gl_test_ops --gtest_color=no --gtest_filter='*QkNormRope*:*rope*__cuda*:*rms_norm*__cuda*' > $OUT/ops.log 2>&1; summ $OUT/ops.log
$B/gl_test_models --gtest_color=no --gtest_filter='*LlamaQuants*:*Cuda*' > $OUT/models.log 2>&1; summ $OUT/models.log
echo "tests done at $((SECONDS - s)) s"
wait
cat $OUT/llama-build.txt
/tmp/lc/b/bin/llama-quantize /tmp/m.gguf /tmp/q8l.gguf Q8_0 > $OUT/llama-quantize.log 2>&1; rm -f /tmp/m.gguf
echo "file ready at $((SECONDS - s)) s"; ls -la /tmp/q8l.gguf
$B/bench -m /tmp/q8l.gguf --backend cuda -p 512 -n 128 -r 2 --spec 3 --precision fast 2>&1 | grep -E '^\||floor|peak' | tee $OUT/ours-fast.txt
P=512 N=128 R=2 SPEC=3 LC=/tmp/lc bash .peer/side-by-side-gpu.sh $B/bench /tmp/q8l.gguf 2>&1 | tee $OUT/side-by-side.txt
echo "done at $((SECONDS - s)) s"
