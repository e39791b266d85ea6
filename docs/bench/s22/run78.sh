#!/usr/bin/env bash
# Session 22: final A/B, this session's code vs 047d58d (bench_old), 9B Q4_K_M and Q8_0 (gguf-quantize).
cd "$(dirname "$0")/.."
mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu-run/gpu.tar.xz
B=/tmp/g/gpu
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi -L
$B/gguf-synth --preset qwen35-9b --type bf16 --seed 1 -o /tmp/m.gguf -q
$B/gguf-quantize /tmp/m.gguf /tmp/q4.gguf --type q4_k_m > $OUT/quantize.log 2>&1 &
$B/gguf-quantize /tmp/m.gguf /tmp/q8.gguf --type q8_0 >> $OUT/quantize.log 2>&1 &
wait; rm -f /tmp/m.gguf
row() { grep -E "^\| (q4|q8)" | sed "s/^/$1 /"; }
for b in bench_old bench bench_old bench; do
  $B/$b -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --spec 3 --force-accept --precision fast 2>&1 | row "$b q4 fast" | tee -a $OUT/ab.txt
  $B/$b -m /tmp/q8.gguf --backend cuda -p 0 -n 64 -r 3 --spec 3 --force-accept --precision fast 2>&1 | row "$b q8 fast" | tee -a $OUT/ab.txt
done
for b in bench_old bench; do
  $B/$b -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision exact 2>&1 | row "$b q4 exact" | tee -a $OUT/ab.txt
  $B/$b -m /tmp/q8.gguf --backend cuda -p 0 -n 64 -r 3 --precision exact 2>&1 | row "$b q8 exact" | tee -a $OUT/ab.txt
done
