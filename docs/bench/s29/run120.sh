#!/usr/bin/env bash
# Session 29, call 1: decode attention in key splits on the tensor cores (F16 cache).
# Tests (flash_attn op cases, AttnRows) on CUDA; A/B old (HEAD fed919d) vs new bench at depth 32k
# (--synth, pooled rows); llama.cpp's CUDA build and the 35B-A3B Q8_0 synth in the background,
# then both engines at depth 32k on that file. Carry .gpu-run/{common.sh,run120.sh,ab.tar.xz}, .peer, .vk.
cd "$(dirname "$0")/.."; TAR=ab.tar.xz source .gpu-run/common.sh
( LC=/tmp/lc bash .peer/side-by-side-gpu.sh $B/bench > $OUT/llama-build.txt 2>&1; echo "cuda build done $((SECONDS - s)) s" >> $OUT/llama-build.txt ) &
cuda=$!
( [ -f /dev/shm/m35.gguf ] || { nice $B/gguf-synth --preset qwen35-35b-a3b --type q8_0 --seed 1 -o /dev/shm/m35.gguf -q; echo "synth rc $? at $((SECONDS - s)) s"; } ) > $OUT/synth.txt 2>&1 &
syn=$!
timeout 240 $B/gl_test_ops --gtest_color=no --gtest_filter='*flash_attn*cuda*:*AttnRows*cuda*' > $OUT/ops.log 2>&1; echo "ops at $((SECONDS - s)) s"; summ $OUT/ops.log
timeout 150 $CS --tool racecheck $B/gl_test_ops --gtest_color=no --gtest_filter='*flash_attn_f16*cuda*:*AttnRows*cuda_fast_f16_d256*' > $OUT/race.log 2>&1; echo "race at $((SECONDS - s)) s"; summ $OUT/race.log
for d in 32768 0; do
  b old-d$d $B/bench-old --synth qwen35-35b-a3b:q4_k_m --backend cuda -p 512 -n 64 -r 2 -d $d
  b new-d$d $B/bench --synth qwen35-35b-a3b:q4_k_m --backend cuda -p 512 -n 64 -r 2 -d $d
  echo "ab d$d at $((SECONDS - s)) s"
done
b new-9b-d32768 $B/bench --synth qwen35-9b:q4_k_m --backend cuda -p 512 -n 64 -r 2 -d 32768
b old-9b-d32768 $B/bench-old --synth qwen35-9b:q4_k_m --backend cuda -p 512 -n 64 -r 2 -d 32768
echo "ab 9b at $((SECONDS - s)) s"
wait $syn; cat $OUT/synth.txt; wait $cuda; tail -3 $OUT/llama-build.txt
L=/tmp/lc/b/bin/llama-bench
if [ -x $L ] && [ -f /dev/shm/m35.gguf ] && [ $((SECONDS - s)) -lt 470 ]; then
  b ours-q8 $B/bench -m /dev/shm/m35.gguf --backend cuda -p 512 -n 128 -r 2 -d 32768
  $L -m /dev/shm/m35.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 2 -d 32768 2>&1 | grep -E "^\|" | sed "s/^/llama /" | tee -a $OUT/rows.txt
fi
echo "done at $((SECONDS - s)) s"
