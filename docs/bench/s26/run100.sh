#!/usr/bin/env bash
# Session 26, call 2: 35B-A3B side by side with llama.cpp. The Q8_0 synth (issue 14's row) on
# /dev/shm; llama-quantize --allow-requantize makes the Q4_K_M (issue 13's row) while the Q8_0
# rows run (12 of 16 cores); then the Q4_K_M rows.
cd "$(dirname "$0")/.."
[ -x /tmp/g/gpu/bench ] || { mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu-run/gpu.tar.xz; }
B=/tmp/g/gpu
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi -L; df -h /tmp /dev/shm | tail -2
s=$SECONDS
( $B/gguf-synth --preset qwen35-35b-a3b --type q8_0 --seed 1 -o /dev/shm/m35.gguf -q; echo "synth $((SECONDS - s)) s" ) &
( LC=/tmp/lc bash .peer/side-by-side-gpu.sh $B/bench > $OUT/llama-build.txt 2>&1 ) &
wait
cat $OUT/llama-build.txt; echo "build+synth $((SECONDS - s)) s"
( /tmp/lc/b/bin/llama-quantize --allow-requantize /dev/shm/m35.gguf /dev/shm/q4l35.gguf Q4_K_M 12 > $OUT/lq35.log 2>&1; echo "quantized at $((SECONDS - s)) s" ) &
row() { grep -E "^\| (m35|q4|qwen)|floor" | sed "s/^/$1 /"; }
b() { local tag=$1; shift; "$@" 2>&1 | row "$tag" | tee -a $OUT/sbs35.txt; }
L8="/tmp/lc/b/bin/llama-bench -m /dev/shm/m35.gguf -ngl 99 -fa 1 -r 3"
b ours-q8 $B/bench -m /dev/shm/m35.gguf --backend cuda -r 3 --precision fast -p 512 -n 128
b llama.cpp-q8 $L8 -p 512 -n 128
wait
rm -f /dev/shm/m35.gguf; ls -la /dev/shm/q4l35.gguf; tail -2 $OUT/lq35.log
M="-m /dev/shm/q4l35.gguf --backend cuda -r 3 --precision fast"
L="/tmp/lc/b/bin/llama-bench -m /dev/shm/q4l35.gguf -ngl 99 -fa 1 -r 3"
b ours $B/bench $M -p 512 -n 128 --spec 3 --force-accept
b llama.cpp $L -p 512 -n 128
b ours $B/bench $M -p 0 -n 128
b llama.cpp $L -p 0 -n 128
echo "sbs done at $((SECONDS - s)) s"
[ $((SECONDS - s)) -lt 540 ] && GL_CUDA_PROFILE=1 GL_CUDA_PDL=0 timeout 45 $B/bench $M -p 0 -n 16 -r 1 > $OUT/profile-35b-q4.txt 2>&1
echo "done at $((SECONDS - s)) s"
