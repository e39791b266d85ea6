#!/usr/bin/env bash
# The CPU's quantized FAST path side by side with llama.cpp: rounds of (ours --precision fast,
# llama-bench, ours --precision exact), 2 threads, pp128 + tg32, one after the other, each round
# printing t/s, the ratios and the load average (the dev machine is shared).
#   scripts/bench-cpu-fast.sh [model.gguf]     (env R=3 rounds, LLAMA_BENCH=path)
set -uo pipefail
cd "$(dirname "$0")/.."
M=${1:-/tmp/q/llama-Q4_K_M.gguf}
R=${R:-3}
B=build/examples/bench/bench
L=${LLAMA_BENCH:-$HOME/.cache/llama-cpu/build/bin/llama-bench}
ours() { "$B" -m "$M" --backend cpu -t 2 -p 128 -n 32 -r 3 --precision "$1" 2>&1 | grep -E '\| (pp 128|tg 32) \|' | awk -F'|' '{print $7}' | tr '\n' ' '; }
for i in $(seq 1 "$R"); do
  f=$(ours fast)
  l=$("$L" -m "$M" -t 2 -p 128 -n 32 -r 3 2>&1 | grep -E 'pp128|tg32' | awk -F'|' '{print $(NF-1)}' | awk '{print $1}' | tr '\n' ' ')
  e=$(ours exact)
  echo "round $i: fast pp/tg = $f | llama.cpp pp/tg = $l | exact pp/tg = $e | load $(cut -d' ' -f1 /proc/loadavg)"
  echo "$f $l $e" | awk '{printf "  ratios: fast/llama pp %.2fx tg %.2fx; exact/llama pp %.2fx tg %.2fx\n", $1/$3, $2/$4, $5/$3, $6/$4}'
done
