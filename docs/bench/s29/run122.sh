#!/usr/bin/env bash
# Session 29, call 3 (1a3bc0f): op and model tests; A/B old (fed919d) vs new bench (--synth, pooled)
# at depth 0 and 32k; llama.cpp's CUDA build and the 35B-A3B Q8_0 synth in the background, then both
# engines on that file at depth 0 and 32k. Carry .gpu-run/{common.sh,run122.sh,ab.tar.xz,lq}, .peer, .vk.
cd "$(dirname "$0")/.."; TAR=ab.tar.xz source .gpu-run/common.sh
( LC=/tmp/lc bash .peer/side-by-side-gpu.sh $B/bench > $OUT/llama-build.txt 2>&1; echo "cuda build done $((SECONDS - s)) s" >> $OUT/llama-build.txt ) &
cuda=$!
( [ -f /dev/shm/m35.gguf ] || { nice $B/gguf-synth --preset qwen35-35b-a3b --type q8_0 --seed 1 -o /dev/shm/m35.gguf -q; echo "synth rc $? at $((SECONDS - s)) s"; } ) > $OUT/synth.txt 2>&1 &
syn=$!
timeout 120 $B/gl_test_ops --gtest_color=no --gtest_filter='*flash_attn*cuda*:*AttnRows*cuda*' > $OUT/ops.log 2>&1; echo "ops at $((SECONDS - s)) s"; summ $OUT/ops.log
timeout 100 $CS --tool racecheck $B/gl_test_ops --gtest_color=no --gtest_filter='*flash_attn_f16_D256_H16_kv2*cuda*:*flash_attn_f16_D64_H4_kv2_T3_N2500_cache__cuda' > $OUT/race.log 2>&1; echo "race at $((SECONDS - s)) s"; summ $OUT/race.log
timeout 100 $CS --tool memcheck $B/gl_test_ops --gtest_color=no --gtest_filter='*flash_attn_f16*cuda*' > $OUT/memcheck.log 2>&1; echo "memcheck at $((SECONDS - s)) s"; summ $OUT/memcheck.log
timeout 200 $B/gl_test_models --gtest_color=no --gtest_filter='*CudaModel*:*LlamaQuants*' > $OUT/models.log 2>&1; echo "models at $((SECONDS - s)) s"; summ $OUT/models.log
for d in 32768 0; do
  b old-d$d $B/bench-old --synth qwen35-35b-a3b:q4_k_m --backend cuda -p 512 -n 64 -r 2 -d $d
  b new-d$d $B/bench --synth qwen35-35b-a3b:q4_k_m --backend cuda -p 512 -n 64 -r 2 -d $d
  echo "ab d$d at $((SECONDS - s)) s"
done
wait $syn; cat $OUT/synth.txt; wait $cuda; tail -2 $OUT/llama-build.txt
L=/tmp/lc/b/bin/llama-bench
if [ -x $L ] && [ -f /dev/shm/m35.gguf ]; then
  for d in 32768 0; do
    [ $((SECONDS - s)) -lt 520 ] || break
    b ours-q8-d$d $B/bench -m /dev/shm/m35.gguf --backend cuda -p 512 -n 128 -r 2 -d $d
    $L -m /dev/shm/m35.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 2 -d $d 2>&1 | grep -E "^\|" | sed "s/^/llama /" | tee -a $OUT/rows.txt
  done
fi
echo "done at $((SECONDS - s)) s"
