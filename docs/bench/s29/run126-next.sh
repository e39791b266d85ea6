#!/usr/bin/env bash
# (Copy to .gpu-run/ and run from there, as the other scripts here.) Prepared in session 29 for the next session (not run): the commits made after the device time
# ran out (26f2d11 bench warm-up past the capture, 9066019 span_ends()), tested and measured.
# Carry .gpu-run/{common.sh,run126-next.sh,ab.tar.xz (bench, bench-old = 168ca4a^^ i.e. e13dab9,
# gl_test_ops, gl_test_gpu, gguf-synth)}, .peer, .vk.
cd "$(dirname "$0")/.."; TAR=ab.tar.xz source .gpu-run/common.sh
( LC=/tmp/lc bash .peer/side-by-side-gpu.sh $B/bench > $OUT/llama-build.txt 2>&1 ) &
cuda=$!
( [ -f /dev/shm/m35.gguf ] || nice $B/gguf-synth --preset qwen35-35b-a3b --type q8_0 --seed 1 -o /dev/shm/m35.gguf -q ) > $OUT/synth.txt 2>&1 &
syn=$!
timeout 60 $B/gl_test_gpu --gtest_color=no --gtest_filter='CudaGraphs.*' > $OUT/gpu.log 2>&1; summ $OUT/gpu.log
timeout 90 $B/gl_test_ops --gtest_color=no --gtest_filter='*flash_attn*cuda*:*AttnRows*cuda*' > $OUT/ops.log 2>&1; summ $OUT/ops.log
# The pp spread before and after (same code otherwise): -r 5 shows the samples' spread in ±.
b old $B/bench-old --synth qwen35-35b-a3b:q8_0 --backend cuda -p 512 -n 0 -r 5 -d 0,32768
b new $B/bench --synth qwen35-35b-a3b:q8_0 --backend cuda -p 512 -n 0 -r 5 -d 0,32768
b eager env GL_CUDA_GRAPHS=0 $B/bench --synth qwen35-35b-a3b:q8_0 --backend cuda -p 512 -n 0 -r 3 -d 0,32768
wait $syn; wait $cuda
L=/tmp/lc/b/bin/llama-bench
b ours-q8 $B/bench -m /dev/shm/m35.gguf --backend cuda -p 512 -n 128 -r 3 -d 0,32768
$L -m /dev/shm/m35.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 3 -d 0,32768 2>&1 | grep -E "^\|" | sed "s/^/llama /" | tee -a $OUT/rows.txt
echo "done at $((SECONDS - s)) s"
