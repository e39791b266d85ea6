#!/usr/bin/env bash
# Ablation: tg with products skipped (1) or everything else skipped (2). Timing only.
cd "$(dirname "$0")/../.."
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
P=.gpu-run/probe; nvidia-smi -L
( $P/gguf-synth --preset qwen35-9b --type bf16 --seed 1 -o /tmp/m.gguf -q && $P/gguf-quantize /tmp/m.gguf /tmp/q4.gguf --type q4_k_m > /dev/null 2>&1; rm -f /tmp/m.gguf; echo made q4 ) &
row() { grep -E "^\| (qwen|q4)" | sed "s/^/$1 /"; }
for s in 0 1 2; do for pr in exact fast; do
  GL_PROBE_SKIP=$s $P/bench --synth qwen35-9b:q8_0 --backend cuda -p 0 -n 64 -r 3 --precision $pr 2>&1 | row "skip$s"
done; done
GL_PROBE_SKIP=0 $P/bench --synth qwen35-9b:bf16 --backend cuda -p 0 -n 64 -r 3 2>&1 | row "skip0"
GL_PROBE_SKIP=1 $P/bench --synth qwen35-9b:bf16 --backend cuda -p 0 -n 64 -r 3 2>&1 | row "skip1"
wait
for s in 0 1 2 0; do for pr in fast exact; do
  GL_PROBE_SKIP=$s $P/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision $pr 2>&1 | row "skip$s"
done; done
