#!/usr/bin/env bash
# Session 29, call 4: experiment (not committed) GL_TMP_FLOAT_ACT=1: FAST GEMVs of weight matrices
# <= 4 MiB read float activations (no quantize launch); A/B in one binary, alternating.
cd "$(dirname "$0")/.."; TAR=bench.tar.xz source .gpu-run/common.sh
for i in 1 2; do
  b int8-q4 $B/bench --synth qwen35-35b-a3b:q4_k_m --backend cuda -p 0 -n 64 -r 3 --spec 3 --force-accept
  b float-q4 env GL_TMP_FLOAT_ACT=1 $B/bench --synth qwen35-35b-a3b:q4_k_m --backend cuda -p 0 -n 64 -r 3 --spec 3 --force-accept
  echo "pair $i at $((SECONDS - s)) s"
done
b int8-q8 $B/bench --synth qwen35-35b-a3b:q8_0 --backend cuda -p 0 -n 64 -r 3
b float-q8 env GL_TMP_FLOAT_ACT=1 $B/bench --synth qwen35-35b-a3b:q8_0 --backend cuda -p 0 -n 64 -r 3
echo "done at $((SECONDS - s)) s"
