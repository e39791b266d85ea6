#!/usr/bin/env bash
# Session 24: HEAD's CUDA tests (F32 GDR case, model tests after 10d4f59) + knockout timings of
# the decode step's small kernels (dev-only GL_KO patch in the bench binary: results are wrong,
# times say what each kernel family costs inside the replayed graph).
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
$B/gl_test_ops --gtest_color=no --gtest_filter='*gated_delta*cuda*:*GdnOutputPath*:*GdnInputPath*:*GdnGates*:*QkNormRope*' > $OUT/ops.log 2>&1; echo ops; summ $OUT/ops.log
$B/gl_test_models --gtest_color=no --gtest_filter='*LlamaQuants*:*Cuda*' > $OUT/models.log 2>&1; echo models; summ $OUT/models.log
$B/gl_test_gpu --gtest_color=no > $OUT/gpu.log 2>&1; echo gpu; summ $OUT/gpu.log
wait
row() { grep -E "^\| (q4)" | sed "s/^/$1 /"; }
ALL=wnorm,q8,snorm,qknorm,conv,gdr,attn,setrows,chain
for i in 1 2; do
  for k in none wnorm q8 snorm qknorm conv gdr attn setrows chain $ALL; do
    GL_KO=$k $B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision fast 2>&1 | row "ko=$k" | tee -a $OUT/ko.txt
  done
done
