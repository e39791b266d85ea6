#!/usr/bin/env bash
# Session 28, call A (as s27's run107a): llama.cpp built while the 35B-A3B Q8_0 synth is written to
# /dev/shm, then llama-quantize to Q4_K_M, cut at ~570 s; call B (run109b, right after, while the
# machine is warm: /dev/shm and /tmp persist) finishes it. Carry .gpu-run/gpu.tar.xz (bench = main,
# bench-old = bf4ba9a, gguf-synth), .vk, .peer and both scripts.
cd "$(dirname "$0")/.."
mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu-run/gpu.tar.xz
B=/tmp/g/gpu
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
s=$SECONDS
[ -f /dev/shm/m35.gguf ] || ( $B/gguf-synth --preset qwen35-35b-a3b --type q8_0 --seed 1 -o /dev/shm/m35.gguf -q; echo "synth $((SECONDS - s)) s" ) &
( LC=/tmp/lc bash .peer/side-by-side-gpu.sh $B/bench > $OUT/llama-build.txt 2>&1 ) &
wait; cat $OUT/llama-build.txt; echo "built at $((SECONDS - s)) s"
timeout $((570 - (SECONDS - s))) /tmp/lc/b/bin/llama-quantize --allow-requantize /dev/shm/m35.gguf /dev/shm/q4l35.gguf Q4_K_M 16 > /tmp/lq35.done 2>&1
echo "quantize rc $? at $((SECONDS - s)) s"; tail -2 /tmp/lq35.done
