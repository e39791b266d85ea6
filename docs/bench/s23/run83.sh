#!/usr/bin/env bash
# Session 23: where a 9B Q4_K_M fast MTP verify (spec 3, forced) goes, kernel by kernel (ncu).
cd "$(dirname "$0")/.."
mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu-run/gpu.tar.xz
B=/tmp/g/gpu
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi -L
[ -s /tmp/q4.gguf ] || { $B/gguf-synth --preset qwen35-9b --type bf16 --seed 1 -o /tmp/m.gguf -q
$B/gguf-quantize /tmp/m.gguf /tmp/q4.gguf --type q4_k_m > $OUT/quantize.log 2>&1; rm -f /tmp/m.gguf; }
$B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --spec 3 --force-accept --precision fast 2>&1 | grep -E "^\|" | tee $OUT/bench.txt
/usr/local/cuda/bin/ncu --clock-control none --cache-control none --graph-profiling node \
  --launch-skip 21000 --launch-count 3000 \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,launch__block_size,launch__registers_per_thread \
  --csv --page raw $B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 24 -r 1 --warmup 1 --spec 3 --force-accept --precision fast > $OUT/ncu-spec.csv 2> $OUT/ncu.err
echo "ncu rc $?"; tail -n 2 $OUT/ncu.err
