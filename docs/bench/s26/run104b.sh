#!/usr/bin/env bash
# Session 26, call 6: branch s26-next (staged GEMV over MUL_MAT_ID's slots). Its tests, then an A/B
# against main (bench-main, fd244ad) on the 35B-A3B Q8_0 synth.
cd "$(dirname "$0")/.."
R=$PWD
[ -x /tmp/g/gpu/bench ] || mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu-run/gpu.tar.xz
B=/tmp/g/gpu
src=$(cat $B/source_dir); [ -e "$src" ] || { mkdir -p "$(dirname "$src")"; ln -s "$R" "$src"; }
mkdir -p "$(dirname "$src")/shared/fixtures" && ln -sfn "$R/.gpu-run/lq" "$(dirname "$src")/shared/fixtures/llama-quants"
mkdir -p "$(cat $B/binary_dir)"
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi -L
s=$SECONDS
summ() { grep -E '^\[  (PASSED|FAILED)  \]' "$1" | head -5; grep -E '^\[  FAILED  \].* ms\)$' "$1" | head; }
[ -f /dev/shm/m35.gguf ] || ( $B/gguf-synth --preset qwen35-35b-a3b --type q8_0 --seed 1 -o /dev/shm/m35.gguf -q; echo "synth $((SECONDS - s)) s" ) &
timeout 60 $B/gl_test_ops --gtest_color=no --gtest_filter='MatmulIdCuda*:*mul_mat_id*cuda*:*MatmulRowsCuda*:*MoeRouter*cuda*' > $OUT/ops.log 2>&1; echo ops; summ $OUT/ops.log
timeout 60 $B/gl_test_models --gtest_color=no --gtest_filter='*CudaModelTest*moe_tiny*:*LlamaQuants*moe*' > $OUT/models.log 2>&1; echo models; summ $OUT/models.log
echo "tests done $((SECONDS - s)) s"
wait
row() { grep -E "^\| (m35|q4|qwen)" | sed "s/^/$1 /"; }
b() { local tag=$1; shift; "$@" 2>&1 | row "$tag" | tee -a $OUT/ab.txt; }
M="-m /dev/shm/m35.gguf --backend cuda -r 3 --precision fast -p 0 -n 128"
b main $B/bench-main $M
b next $B/bench $M
b main $B/bench-main $M
b next $B/bench $M --spec 3 --force-accept
echo "done at $((SECONDS - s)) s"
