#!/usr/bin/env bash
# Session 27, call B (warm after A): finish the Q4_K_M if A's limit cut it; both engines on it;
# then the A/B of main against s26-next-pair, s26-picks, s26-q8ahead on the Q8_0 file, and
# s26-q8ahead's model tests.
cd "$(dirname "$0")/.."
R=$PWD
B=/tmp/g/gpu
[ -x $B/bench ] || { mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu-run/gpu.tar.xz; }
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
s=$SECONDS
grep -q "quantize time" /tmp/lq35.done 2>/dev/null || {
  /tmp/lc/b/bin/llama-quantize --allow-requantize /dev/shm/m35.gguf /dev/shm/q4l35.gguf Q4_K_M 16 > /tmp/lq35.done 2>&1
  echo "quantized at $((SECONDS - s)) s"; }
tail -3 /tmp/lq35.done
row() { grep -E "^\| (m35|q4|qwen)|floor" | sed "s/^/$1 /"; }
b() { local tag=$1 f=$2; shift 2; "$@" 2>&1 | row "$tag" | tee -a $OUT/$f; }
M="-m /dev/shm/q4l35.gguf --backend cuda -r 3 --precision fast"
L="/tmp/lc/b/bin/llama-bench -m /dev/shm/q4l35.gguf -ngl 99 -fa 1 -r 3"
b ours sbs35-q4.txt $B/bench $M -p 512 -n 128 --spec 3 --force-accept
b llama.cpp sbs35-q4.txt $L -p 512 -n 128
b ours sbs35-q4.txt $B/bench $M -p 0 -n 128
echo "q4 done at $((SECONDS - s)) s"
src=$(cat $B/source_dir); [ -e "$src" ] || { mkdir -p "$(dirname "$src")"; ln -s "$R" "$src"; }
mkdir -p "$(dirname "$src")/shared/fixtures" && ln -sfn "$R/.gpu-run/lq" "$(dirname "$src")/shared/fixtures/llama-quants"
mkdir -p "$(cat $B/binary_dir)"
timeout 120 $B/gl_test_models-q8ahead --gtest_color=no --gtest_filter='*CudaModelTest*:*LlamaQuants*' > $OUT/models-q8ahead.log 2>&1
grep -E '^\[  (PASSED|FAILED)' $OUT/models-q8ahead.log
M="-m /dev/shm/m35.gguf --backend cuda -r 3 --precision fast -p 0 -n 128"
for i in 1 2; do
  b main ab.txt $B/bench $M
  b pair ab.txt $B/bench-pair $M
  b picks ab.txt $B/bench-picks $M
  b q8ahead ab.txt $B/bench-q8ahead $M
done
echo "done at $((SECONDS - s)) s"
