#!/usr/bin/env bash
cd "$(dirname "$0")/../.."
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
P=.gpu-run/probe; nvidia-smi -L
row() { grep -E "^\| (qwen|q4)" | sed "s/^/$1 /"; }
for op in none gated_delta_rule flash_attn l2_norm scale rms_norm mul add cpy concat ssm_conv silu rope set_rows argmax get_rows sigmoid none; do
  GL_PROBE_SKIP_OP=$op $P/bench --synth qwen35-9b:q8_0 --backend cuda -p 0 -n 64 -r 2 2>&1 | row "$op"
done
GL_CUDA_PROFILE=1 $P/bench --synth qwen35-9b:q8_0 --backend cuda -p 0 -n 16 -r 1 > $OUT/prof.txt 2>&1
