#!/usr/bin/env bash
# Session 25, first call: llama.cpp (CUDA) built on the GPU machine, the 9B Q4_K_M made by
# llama-quantize from a gguf-synth BF16 model, both engines side by side on it (code of 15d4b76),
# and llama.cpp's binaries sent back (split) so that later calls need not rebuild it.
cd "$(dirname "$0")/.."
R=$PWD
mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu-run/gpu.tar.xz
B=/tmp/g/gpu
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi -L; df -h /tmp | tail -1
s=$SECONDS
( $B/gguf-synth --preset qwen35-9b --type bf16 --seed 1 -o /tmp/m.gguf -q; echo "synth $((SECONDS - s)) s" ) &
LC=/tmp/lc bash .peer/side-by-side-gpu.sh $B/bench > $OUT/llama-build.txt 2>&1
wait
cat $OUT/llama-build.txt
/tmp/lc/b/bin/llama-quantize /tmp/m.gguf /tmp/q4l.gguf Q4_K_M > $OUT/llama-quantize.log 2>&1; rm -f /tmp/m.gguf
echo "file ready at $((SECONDS - s)) s"; ls -la /tmp/q4l.gguf
( cd /tmp/lc/b/bin && ls -la && tar cf - llama-bench llama-quantize llama-completion *.so* | xz -T16 -6 | split -b 15M - $OUT/lcbin.txz. ) &
for i in 1 2; do
  $B/bench -m /tmp/q4l.gguf --backend cuda -p 512 -n 128 -r 3 --spec 3 --force-accept --precision fast 2>&1 | grep -E '^\||floor|peak' | tee -a $OUT/ours.txt
  /tmp/lc/b/bin/llama-bench -m /tmp/q4l.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 3 2>&1 | grep -E '^\|' | tee -a $OUT/llama.txt
done
wait; ls -la $OUT
echo "done at $((SECONDS - s)) s"
