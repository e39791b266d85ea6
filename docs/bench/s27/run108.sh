#!/usr/bin/env bash
# Session 27, the last call: s27-moe-quant-stage (values16 MoE tiles + s26-picks) on the H200:
# op harness (mul_mat_id, router), racecheck of the MoE tiles, model tests; then a 35B-A3B Q4_K_M
# made by our gguf-quantize from the Q8_0 synth, pp512 old (main bf4ba9a) vs new, and tg128.
cd "$(dirname "$0")/.."
R=$PWD
mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu-run/gpu.tar.xz
B=/tmp/g/gpu
src=$(cat $B/source_dir); [ -e "$src" ] || { mkdir -p "$(dirname "$src")"; ln -s "$R" "$src"; }
mkdir -p "$(dirname "$src")/shared/fixtures" && ln -sfn "$R/.gpu-run/lq" "$(dirname "$src")/shared/fixtures/llama-quants"
mkdir -p "$(cat $B/binary_dir)"
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
s=$SECONDS
( $B/gguf-synth --preset qwen35-35b-a3b --type q8_0 --seed 1 -o /dev/shm/m35.gguf -q; echo "synth $((SECONDS - s)) s";
  timeout $((470 - (SECONDS - s))) $B/gguf-quantize /dev/shm/m35.gguf /dev/shm/q4g35.gguf --type q4_k_m -q; echo "quantize rc $? at $((SECONDS - s)) s" ) > $OUT/make-q4.log 2>&1 &
summ() { grep -E '^\[  (PASSED|FAILED)  \]|ERROR SUMMARY|RACECHECK SUMMARY' "$1" | head -6; grep -E '^\[  FAILED  \].* ms\)$' "$1" | head; }
timeout 150 $B/gl_test_ops --gtest_color=no --gtest_filter='*mul_mat_id*cuda*:*MoeRouter*:*router*cuda*:*top_k*cuda*:*weighted*cuda*' > $OUT/ops.log 2>&1; echo ops; summ $OUT/ops.log
timeout 60 $CS --tool racecheck $B/gl_test_ops --gtest_color=no --gtest_filter='*mul_mat_id_q4_K*T100*cuda*:*mul_mat_id_q6_K*T100*cuda*:*mul_mat_id_mxfp4*T100*cuda*' > $OUT/race.log 2>&1; echo race; summ $OUT/race.log
timeout 120 $B/gl_test_models --gtest_color=no --gtest_filter='*CudaModelTest*:*LlamaQuants*' > $OUT/models.log 2>&1; echo models; summ $OUT/models.log
echo "tests done $((SECONDS - s)) s"
wait; cat $OUT/make-q4.log
if [ -f /dev/shm/q4g35.gguf ]; then
  row() { grep -E "^\| (q4|m35)|floor" | sed "s/^/$1 /"; }
  b() { local tag=$1; shift; "$@" 2>&1 | row "$tag" | tee -a $OUT/q4g35.txt; }
  M="-m /dev/shm/q4g35.gguf --backend cuda -r 3 --precision fast"
  b new $B/bench $M -p 512 -n 0
  b old $B/bench-main $M -p 512 -n 0
  b new $B/bench $M -p 0 -n 128
fi
echo "done at $((SECONDS - s)) s"
