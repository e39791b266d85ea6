#!/usr/bin/env bash
# Session 26, call 3 (warm after run100): where a 35B-A3B Q8_0 decode step goes now (eager profile).
cd "$(dirname "$0")/.."
ls -la /dev/shm/ /tmp/g/gpu 2>&1 | head; [ -f /dev/shm/m35.gguf ] || { echo "no m35"; exit 0; }
B=/tmp/g/gpu
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
rm -f /dev/shm/q4l35.gguf
GL_CUDA_PROFILE=1 GL_CUDA_PDL=0 timeout 100 $B/bench -m /dev/shm/m35.gguf --backend cuda --precision fast -p 0 -n 16 -r 1 > $OUT/profile-35b-q8.txt 2>&1
GL_CUDA_PROFILE=1 GL_CUDA_PDL=0 timeout 100 $B/bench -m /dev/shm/m35.gguf --backend cuda --precision fast -p 0 -n 16 -r 1 --spec 3 --force-accept > $OUT/profile-35b-q8-spec.txt 2>&1
tail -3 $OUT/profile-35b-q8.txt
