#!/usr/bin/env bash
# Session 23: where a 9B Q4_K_M fast decode step goes, kernel by kernel (ncu, graph nodes), and the
# graph-replayed step time beside it.
cd "$(dirname "$0")/.."
mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu-run/gpu.tar.xz
B=/tmp/g/gpu
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi -L
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1); echo "ncu: $NCU"
s=$SECONDS
[ -s /tmp/q4.gguf ] || { $B/gguf-synth --preset qwen35-9b --type bf16 --seed 1 -o /tmp/m.gguf -q
$B/gguf-quantize /tmp/m.gguf /tmp/q4.gguf --type q4_k_m > $OUT/quantize.log 2>&1; rm -f /tmp/m.gguf; }
echo "file in $((SECONDS - s)) s"
$B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision fast 2>&1 | tail -4 | tee $OUT/bench.txt
# Kernel launches of one run: warm-up prompt + 4 tokens, then the timed prompt + 4 tokens.
$NCU --clock-control none --cache-control none --graph-profiling node \
  --launch-skip 1500 --launch-count 1200 \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active \
  --csv --page raw $B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 8 -r 1 --warmup 1 --precision fast > $OUT/ncu.csv 2> $OUT/ncu.err
echo "ncu rc $? in $((SECONDS - s)) s"; tail -3 $OUT/ncu.err; wc -l $OUT/ncu.csv
