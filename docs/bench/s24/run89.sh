#!/usr/bin/env bash
# Session 24: ncu sections (stall reasons, memory) of the decode step's GDR, wide norm and GEMVs.
cd "$(dirname "$0")/.."
R=$PWD
mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu-run/gpu.tar.xz
B=/tmp/g/gpu
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi -L
[ -s /tmp/q4.gguf ] || { $B/gguf-synth --preset qwen35-9b --type bf16 --seed 1 -o /tmp/m.gguf -q
$B/gguf-quantize /tmp/m.gguf /tmp/q4.gguf --type q4_k_m > $OUT/quantize.log 2>&1; rm -f /tmp/m.gguf; }
/usr/local/cuda/bin/ncu --clock-control none --graph-profiling node -k 'regex:gdr_kernel|wide_norm_kernel|gemv_kernel|gemv_pipe_kernel|attn_kernel|short_norm' \
  --launch-skip 400 --launch-count 160 \
  --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats --section MemoryWorkloadAnalysis \
  --page details \
  $B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 8 -r 1 --warmup 1 --precision fast > $OUT/ncu-details.txt 2>&1
grep -c "gemv\|gdr" $OUT/ncu-details.txt
xz -T4 $OUT/ncu-details.txt
