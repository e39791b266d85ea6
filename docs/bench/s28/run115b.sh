#!/usr/bin/env bash
# Session 28, last: speed of the same (compare run113b on the same kind of card).
cd "$(dirname "$0")/.."; TAR=bench.tar.xz source .gpu-run/common.sh
for i in 1 2; do
  b q4km $B/bench --synth qwen35-35b-a3b:q4_k_m --backend cuda -p 512 -n 0 -r 5
done
b q8 $B/bench --synth qwen35-35b-a3b:q8_0 --backend cuda -p 512 -n 0 -r 5
echo "done $((SECONDS - s)) s"
