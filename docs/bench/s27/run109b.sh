#!/usr/bin/env bash
# Session 28, call B: finish the Q4_K_M; side by side (ours = main with s27's values16 MoE tiles,
# old = bf4ba9a, llama.cpp); then an ncu table of 35B Q4_K_M decode (summarise with
# docs/bench/s26/ncu_summary.py after stripping the lines before the "ID" header).
cd "$(dirname "$0")/.."
B=/tmp/g/gpu
[ -x $B/bench ] || { mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu-run/gpu.tar.xz; }
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
s=$SECONDS
grep -q "quantize time" /tmp/lq35.done 2>/dev/null || {
  /tmp/lc/b/bin/llama-quantize --allow-requantize /dev/shm/m35.gguf /dev/shm/q4l35.gguf Q4_K_M 16 > /tmp/lq35.done 2>&1
  echo "quantized at $((SECONDS - s)) s"; }
tail -2 /tmp/lq35.done; cp /tmp/lq35.done $OUT/lq35.log
row() { grep -E "^\| (q4|qwen)|floor" | sed "s/^/$1 /"; }
b() { local tag=$1; shift; "$@" 2>&1 | row "$tag" | tee -a $OUT/sbs35-q4.txt; }
M="-m /dev/shm/q4l35.gguf --backend cuda -r 3 --precision fast"
L="/tmp/lc/b/bin/llama-bench -m /dev/shm/q4l35.gguf -ngl 99 -fa 1 -r 3"
b ours $B/bench $M -p 512 -n 128 --spec 3 --force-accept
b llama.cpp $L -p 512 -n 128
b old $B/bench-old $M -p 512 -n 0
b ours $B/bench $M -p 512 -n 128
echo "sbs done at $((SECONDS - s)) s"
[ $((SECONDS - s)) -lt 400 ] && timeout 150 $NCU --clock-control none --graph-profiling node --launch-skip 4000 --launch-count 1700 \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__block_size \
  --csv --page raw $B/bench -m /dev/shm/q4l35.gguf --backend cuda -p 0 -n 16 -r 1 --precision fast > $OUT/ncu-q4.csv 2> $OUT/ncu.err
echo "done at $((SECONDS - s)) s"
