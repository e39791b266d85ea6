#!/usr/bin/env bash
# Session 26, call 4: the MoE router tail (warp picks; expert weights + weighted sum as one kernel).
# Tests, then an A/B against main (bench-main, 7af54ba) on the 35B-A3B Q8_0 synth, an eager profile
# (launch counts) and an ncu table of two decode steps.
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
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
s=$SECONDS
summ() { grep -E '^\[  (PASSED|FAILED)  \]' "$1" | head -5; grep -E '^\[  FAILED  \].* ms\)$' "$1" | head; }
[ -f /dev/shm/m35.gguf ] || ( $B/gguf-synth --preset qwen35-35b-a3b --type q8_0 --seed 1 -o /dev/shm/m35.gguf -q; echo "synth $((SECONDS - s)) s" ) &
timeout 120 $B/gl_test_ops --gtest_color=no --gtest_filter='*MoeRouter*:*router*:*weighted_sum*:*top_k*:*softmax*:*sum_rows*:*get_rows*' > $OUT/ops.log 2>&1; echo ops; summ $OUT/ops.log
timeout 150 $B/gl_test_models --gtest_color=no --gtest_filter='*LlamaQuants*:*Cuda*' > $OUT/models.log 2>&1; echo models; summ $OUT/models.log
timeout 60 $B/gl_test_gpu --gtest_color=no > $OUT/gpu.log 2>&1; echo gpu; summ $OUT/gpu.log
echo "tests done $((SECONDS - s)) s"
wait
row() { grep -E "^\| (m35|q4|qwen)" | sed "s/^/$1 /"; }
b() { local tag=$1; shift; "$@" 2>&1 | row "$tag" | tee -a $OUT/ab.txt; }
M="-m /dev/shm/m35.gguf --backend cuda -r 3 --precision fast"
for i in 1 2; do
b main $B/bench-main $M -p 0 -n 128
b new $B/bench $M -p 0 -n 128
done
b main $B/bench-main $M -p 512 -n 64 --spec 3 --force-accept
b new $B/bench $M -p 512 -n 64 --spec 3 --force-accept
echo "ab done $((SECONDS - s)) s"
GL_CUDA_PROFILE=1 GL_CUDA_PDL=0 timeout 60 $B/bench $M -p 0 -n 16 -r 1 2>&1 | grep -v loading > $OUT/profile-35b-q8-new.txt
[ $((SECONDS - s)) -lt 420 ] && timeout 150 $NCU --clock-control none --graph-profiling node --launch-skip 4000 --launch-count 1700 \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__block_size \
  --csv --page raw $B/bench -m /dev/shm/m35.gguf --backend cuda -p 0 -n 16 -r 1 --precision fast > $OUT/ncu.csv 2> $OUT/ncu.err
echo "done at $((SECONDS - s)) s"; tail -2 $OUT/ncu.err
