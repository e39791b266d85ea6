#!/usr/bin/env bash
# Session 28, side by side, call B: wait for the Q4_K_M (restart it if call A's was lost), then bench
# and llama-bench on the same files, one after the other: 35B-A3B Q4_K_M and Q8_0, then depth 32k.
cd "$(dirname "$0")/.."; source .gpu-run/common.sh
if [ ! -f /dev/shm/q4l35.done ] && ! pgrep -f llama-quantize > /dev/null; then
  echo "restarting the quantization"; /tmp/lq/b/bin/llama-quantize --allow-requantize /dev/shm/m35.gguf /dev/shm/q4l35.gguf Q4_K_M 16 > /dev/shm/q4l35.log 2>&1; echo rc $? > /dev/shm/q4l35.done
fi
while [ ! -f /dev/shm/q4l35.done ]; do sleep 3; done
echo "quantized ($(cat /dev/shm/q4l35.done)) at $((SECONDS - s)) s"; tail -3 /dev/shm/q4l35.log; cp /dev/shm/q4l35.log $OUT/
L=/tmp/lc/b/bin/llama-bench
sbs() { local f=$1; shift
  b ours $B/bench -m $f --backend cuda -p 512 -n 128 -r 3 --spec 3 --force-accept "$@"
  $L -m $f -ngl 99 -fa 1 -p 512 -n 128 -r 3 2>&1 | grep -E "^\|" | sed "s/^/llama /" | tee -a $OUT/rows.txt; }
sbs /dev/shm/q4l35.gguf
echo "q4 at $((SECONDS - s)) s"
sbs /dev/shm/m35.gguf
echo "q8 at $((SECONDS - s)) s"
if [ $((SECONDS - s)) -lt 330 ]; then
  b ours $B/bench -m /dev/shm/q4l35.gguf --backend cuda -p 512 -n 128 -r 2 -d 32768
  $L -m /dev/shm/q4l35.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 2 -d 32768 2>&1 | grep -E "^\|" | sed "s/^/llama /" | tee -a $OUT/rows.txt
fi
echo "done at $((SECONDS - s)) s"
