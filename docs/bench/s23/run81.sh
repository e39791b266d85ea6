#!/usr/bin/env bash
# Session 23: ncu details (stall reasons) of the slow small kernels of a 9B Q4_K_M fast decode step.
cd "$(dirname "$0")/.."
mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu-run/gpu.tar.xz
B=/tmp/g/gpu
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
NCU=/usr/local/cuda/bin/ncu
[ -s /tmp/q4.gguf ] || { $B/gguf-synth --preset qwen35-9b --type bf16 --seed 1 -o /tmp/m.gguf -q
$B/gguf-quantize /tmp/m.gguf /tmp/q4.gguf --type q4_k_m > $OUT/quantize.log 2>&1; rm -f /tmp/m.gguf; }
s=$SECONDS
for k in gdr_kernel short_norm_kernel attn_kernel conv_norm_kernel wide_norm_kernel 'gemv_pipe_kernel<11, 1, 2, mm::PairRows' 'gemv_kernel<13, 1, 2,' ; do
  $NCU --clock-control none --cache-control none --graph-profiling node --kernel-name-base demangled -k "regex:$k" --launch-skip 40 --launch-count 2 \
    --set full --import-source no --page details \
    $B/bench -m /tmp/q4.gguf --backend cuda -p 0 -n 8 -r 1 --warmup 1 --precision fast > "$OUT/ncu-$(echo $k | tr -c 'a-z_\n' _).txt" 2>&1
  echo "$k rc $? at $((SECONDS - s)) s"
done
