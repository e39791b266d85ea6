#!/usr/bin/env bash
# Session 23: the gated delta rule kernel in MTP verify (4 tokens, 4 states) vs decode: ncu per launch.
cd "$(dirname "$0")/.."
mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu-run/gpu.tar.xz
B=/tmp/g/gpu
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi -L
s=$SECONDS
/usr/local/cuda/bin/ncu --clock-control none --cache-control none --graph-profiling node -k regex:gdr_kernel --launch-count 1100 \
  --metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_write.sum,dram__bytes_read.sum,lts__t_bytes.sum,smsp__cycles_active.avg \
  --csv --page raw $B/bench --synth qwen35-9b:q8_0 -p 0 -n 32 -r 1 --warmup 0 --spec 3 --force-accept --precision fast > $OUT/ncu-gdr.csv 2> $OUT/ncu.err
echo "rc $? in $((SECONDS - s)) s"; tail -n 3 $OUT/ncu.err
/usr/local/cuda/bin/ncu --clock-control none --cache-control none --graph-profiling node -k regex:gdr_kernel --launch-skip 900 --launch-count 1 --set full --page details \
  $B/bench --synth qwen35-9b:q8_0 -p 0 -n 32 -r 1 --warmup 0 --spec 3 --force-accept --precision fast > $OUT/ncu-gdr-full.txt 2>&1
echo "rc $? in $((SECONDS - s)) s"
