#!/usr/bin/env bash
# Session 28, call B: ncu of one 35B-A3B Q4_K_M (pooled synth) pp512 pass: every kernel's time,
# then a detailed look at the MoE tensor-core tile kernel.
cd "$(dirname "$0")/.."
mkdir -p /tmp/g && [ -x /tmp/g/gpu/bench ] || tar -C /tmp/g -xJf .gpu-run/gpu.tar.xz
B=/tmp/g/gpu
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpu.txt
s=$SECONDS
M="--synth qwen35-35b-a3b:q4_k_m --backend cuda --precision fast -p 512 -n 0 -r 1 --warmup 0"
timeout 200 $NCU --clock-control none --graph-profiling node --launch-count 1500 \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active \
  --csv --page raw $B/bench $M > $OUT/ncu-pp.csv 2> $OUT/ncu-pp.err
echo "ncu table at $((SECONDS - s)) s"
timeout 150 $NCU --clock-control none --graph-profiling node -k regex:moe_mma_kernel --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
  $B/bench $M > $OUT/ncu-moe.txt 2>&1
echo "done at $((SECONDS - s)) s"
