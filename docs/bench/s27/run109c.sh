#!/usr/bin/env bash
# Session 28, call C (warm after B: /dev/shm holds m35.gguf and q4l35.gguf): the A/B switch
# GL_CUDA_SMALL_INT8=0 (branch s27-float-act: small decode GEMVs on float activations, no quantize
# launch before them). Its tests under the switch, then benches alternated.
cd "$(dirname "$0")/.."
R=$PWD
B=/tmp/g/gpu
[ -x $B/bench ] || { mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu-run/gpu.tar.xz; }
src=$(cat $B/source_dir); [ -e "$src" ] || { mkdir -p "$(dirname "$src")"; ln -s "$R" "$src"; }
mkdir -p "$(dirname "$src")/shared/fixtures" && ln -sfn "$R/.gpu-run/lq" "$(dirname "$src")/shared/fixtures/llama-quants"
mkdir -p "$(cat $B/binary_dir)"
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
s=$SECONDS
summ() { grep -E '^\[  (PASSED|FAILED)  \]' "$1" | head -5; grep -E '^\[  FAILED  \].* ms\)$' "$1" | head; }
export GL_CUDA_SMALL_INT8=0
timeout 120 $B/gl_test_ops --gtest_color=no --gtest_filter='*mul_mat*cuda*:*MoeRouter*cuda*:*Matmul*Cuda*' > $OUT/ops-f32act.log 2>&1; echo ops; summ $OUT/ops-f32act.log
timeout 120 $B/gl_test_models --gtest_color=no --gtest_filter='*CudaModelTest*:*LlamaQuants*' > $OUT/models-f32act.log 2>&1; echo models; summ $OUT/models-f32act.log
unset GL_CUDA_SMALL_INT8
echo "tests done $((SECONDS - s)) s"
row() { grep -E "^\| (m35|q4|qwen|synth)" | sed "s/^/$1 /"; }
b() { local tag=$1; shift; "$@" 2>&1 | row "$tag" | tee -a $OUT/ab-f32act.txt; }
for f in /dev/shm/m35.gguf /dev/shm/q4l35.gguf; do
  M="-m $f --backend cuda -r 3 --precision fast -p 0 -n 128"
  for i in 1 2; do
    b int8 $B/bench $M
    b f32act env GL_CUDA_SMALL_INT8=0 $B/bench $M
  done
  b int8-spec3 $B/bench $M --spec 3 --force-accept
  b f32act-spec3 env GL_CUDA_SMALL_INT8=0 $B/bench $M --spec 3 --force-accept
done
S="--synth qwen35-9b:q8_0 --backend cuda -r 3 --precision fast -p 0 -n 128"
b int8 $B/bench $S
b f32act env GL_CUDA_SMALL_INT8=0 $B/bench $S
echo "done at $((SECONDS - s)) s"
