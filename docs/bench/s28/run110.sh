#!/usr/bin/env bash
# Session 28, call A: the 35B-A3B Q4_K_M through bench's pooled-row synth (seconds to make):
# pp512/tg128 with s27's values16 MoE tiles, and per-node CUDA profiles of pp512 (Q4_K_M, Q8_0).
cd "$(dirname "$0")/.."
mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu-run/gpu.tar.xz
B=/tmp/g/gpu
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv > $OUT/gpu.txt
s=$SECONDS
row() { grep -E "^\| (qwen|synth)|floor|ready" | sed "s/^/$1 /"; }
b() { local tag=$1; shift; "$@" 2>&1 | row "$tag" | tee -a $OUT/rows.txt; }
S="--backend cuda -r 3 --precision fast"
b q4km $B/bench --synth qwen35-35b-a3b:q4_k_m $S -p 512 -n 128
echo "q4km rows at $((SECONDS - s)) s"
GL_CUDA_PROFILE=1 $B/bench --synth qwen35-35b-a3b:q4_k_m $S -p 512 -n 0 -r 1 --warmup 0 > $OUT/prof-q4km.txt 2>&1
echo "q4km profile at $((SECONDS - s)) s"
GL_CUDA_PROFILE=1 $B/bench --synth qwen35-35b-a3b:q8_0 $S -p 512 -n 0 -r 1 --warmup 0 > $OUT/prof-q8.txt 2>&1
echo "done at $((SECONDS - s)) s"
