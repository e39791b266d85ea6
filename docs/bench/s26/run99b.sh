#!/usr/bin/env bash
# Session 26, call 1b: the Q4_K_M half of run99 (its quantize line lacked --type).
cd "$(dirname "$0")/.."
[ -x /tmp/g/gpu/bench ] || { mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu-run/gpu.tar.xz; }
B=/tmp/g/gpu
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
s=$SECONDS
$B/gguf-synth --preset qwen35-9b --type bf16 --seed 1 -o /dev/shm/m.gguf -q && $B/gguf-quantize /dev/shm/m.gguf /dev/shm/q4.gguf --type q4_k_m -q > $OUT/q.log 2>&1; rm -f /dev/shm/m.gguf; echo "file $((SECONDS - s)) s"
row() { grep -E "^\| (q4|synth|qwen)" | sed "s/^/$1 /"; }
b() { local tag=$1; shift; "$@" 2>&1 | row "$tag" | tee -a $OUT/ab.txt; }
M="-m /dev/shm/q4.gguf --backend cuda -r 3 --precision fast"
for i in 1 2; do
b main $B/bench-main $M -p 0 -n 128
b next $B/bench $M -p 0 -n 128
done
b main $B/bench-main $M -p 512 -n 128 --spec 3 --force-accept
b next $B/bench $M -p 512 -n 128 --spec 3 --force-accept
echo "done at $((SECONDS - s)) s"
