#!/usr/bin/env bash
# Session 28, side by side, call A: llama.cpp's CUDA build (side-by-side-gpu.sh) beside a CPU-only
# llama-quantize build and the 35B-A3B Q8_0 synth (/dev/shm); llama-quantize Q4_K_M runs detached
# (marker /dev/shm/q4l35.done) so that call B can pick it up. Carry .gpu-run/{common.sh,run114a.sh,
# run114b.sh,sbs.tar.xz}, .peer, .vk.
cd "$(dirname "$0")/.."; TAR=sbs.tar.xz source .gpu-run/common.sh
( LC=/tmp/lc bash .peer/side-by-side-gpu.sh $B/bench > $OUT/llama-build.txt 2>&1; echo "cuda build done $((SECONDS - s)) s" >> $OUT/llama-build.txt ) &
cuda=$!
( mkdir -p /tmp/lq && tar xzf .peer/llama.cpp-src.tgz -C /tmp/lq &&
  cmake -S /tmp/lq/llama.cpp -B /tmp/lq/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF > /tmp/lq/cfg.log 2>&1 &&
  cmake --build /tmp/lq/b -j 6 --target llama-quantize > /tmp/lq/build.log 2>&1; echo "cpu llama-quantize built rc $? at $((SECONDS - s)) s" ) &
cpu=$!
[ -f /dev/shm/m35.gguf ] || { $B/gguf-synth --preset qwen35-35b-a3b --type q8_0 --seed 1 -o /dev/shm/m35.gguf -q; echo "synth rc $? at $((SECONDS - s)) s"; }
wait $cpu
ls -la /dev/shm/
setsid nohup bash -c "/tmp/lq/b/bin/llama-quantize --allow-requantize /dev/shm/m35.gguf /dev/shm/q4l35.gguf Q4_K_M 16 > /dev/shm/q4l35.log 2>&1; echo rc \$? > /dev/shm/q4l35.done" > /dev/null 2>&1 &
wait $cuda; cat $OUT/llama-build.txt | tail -3
while [ ! -f /dev/shm/q4l35.done ] && [ $((SECONDS - s)) -lt 560 ]; do sleep 5; done
echo "call A ends at $((SECONDS - s)) s"; ls /dev/shm; tail -2 /dev/shm/q4l35.log
