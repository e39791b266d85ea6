#!/usr/bin/env bash
# Session 25: staged GEMV tuning (dev-only knobs GL_DEV_STAGES, GL_DEV_PIPE1; not committed), one binary.
cd "$(dirname "$0")/.."
mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu-run/gpu.tar.xz
B=/tmp/g/gpu
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi -L
s=$SECONDS
{ $B/gguf-synth --preset qwen35-9b --type bf16 --seed 1 -o /tmp/m.gguf -q
  $B/gguf-quantize /tmp/m.gguf /tmp/q4.gguf --type q4_k_m > $OUT/quantize.log 2>&1; rm -f /tmp/m.gguf; echo "q4 ready $((SECONDS - s)) s"; } &
row() { grep -E "^\| (q4|qwen)" | sed "s/^/$1 /"; }
b() { local tag=$1; shift; "$@" 2>&1 | row "$tag" | tee -a $OUT/ab.txt; }
Q="--synth qwen35-9b:q8_0 --backend cuda -p 0 -n 64 -r 3 --precision fast"
b "q8 off" env GL_CUDA_STAGED_GEMV=0 $B/bench $Q
b "q8 st-default" $B/bench $Q
b "q8 st2" env GL_DEV_STAGES=2 $B/bench $Q
b "q8 st3" env GL_DEV_STAGES=3 $B/bench $Q
wait
M="-m /tmp/q4.gguf --backend cuda -p 0 -n 64 -r 3 --precision fast"
for i in 1 2; do
  b off env GL_CUDA_STAGED_GEMV=0 $B/bench $M
  b st-default $B/bench $M
  b st2 env GL_DEV_STAGES=2 $B/bench $M
  b pipe1-default env GL_DEV_PIPE1=1 $B/bench $M
  b pipe1-st2 env GL_DEV_PIPE1=1 GL_DEV_STAGES=2 $B/bench $M
  b pipe1-st3 env GL_DEV_PIPE1=1 GL_DEV_STAGES=3 $B/bench $M
done
S="$M --spec 3 --force-accept"
b "off spec3" env GL_CUDA_STAGED_GEMV=0 $B/bench $S
b "pipe1-st2 spec3" env GL_DEV_PIPE1=1 GL_DEV_STAGES=2 $B/bench $S
b "st2 spec3" env GL_DEV_STAGES=2 $B/bench $S
echo "done $((SECONDS - s)) s"
