#!/usr/bin/env bash
# Session 28: RawStage + halves16 + KV auto, speed (carry .gpu-run/bench.tar.xz). Pooled synth models.
cd "$(dirname "$0")/.."; TAR=bench.tar.xz source .gpu-run/common.sh
M="--synth qwen35-35b-a3b:q4_k_m --backend cuda"
for i in 1 2; do
  b raw-f16 $B/bench $M -p 512 -n 0 -r 5
  b noraw-f16 env GL_CUDA_RAW_STAGE=0 $B/bench $M -p 512 -n 0 -r 5
  b raw-f32 $B/bench $M -p 512 -n 0 -r 5 --kv-type f32
done
b raw-f16 $B/bench $M -p 0 -n 128 -r 3 --spec 3 --force-accept
b q8-f16 $B/bench --synth qwen35-35b-a3b:q8_0 --backend cuda -p 512 -n 0 -r 5
b q8-f32 $B/bench --synth qwen35-35b-a3b:q8_0 --backend cuda -p 512 -n 0 -r 5 --kv-type f32
b 9b-q4 $B/bench --synth qwen35-9b:q4_k_m --backend cuda -p 512 -n 128 -r 3
echo "done $((SECONDS - s)) s"
