#!/usr/bin/env bash
# Session 29, call 5: levels4 (K-quant traits share their level reads) under the MoE tile and GEMV
# op cases; ncu of the tensor-core attention at a 32k span, prefill and decode rows.
cd "$(dirname "$0")/.."; TAR=ab.tar.xz source .gpu-run/common.sh
timeout 150 $B/gl_test_ops --gtest_color=no --gtest_filter='*mul_mat_id*cuda*:*mul_mat_q4_K*cuda*:*mul_mat_q5_K*cuda*:*mul_mat_q6_K*cuda*' > $OUT/ops.log 2>&1; echo "ops at $((SECONDS - s)) s"; summ $OUT/ops.log
GL_CUDA_RAW_STAGE=0 timeout 100 $B/gl_test_ops --gtest_color=no --gtest_filter='*mul_mat_id*cuda*' > $OUT/ops-noraw.log 2>&1; echo "noraw at $((SECONDS - s)) s"; summ $OUT/ops-noraw.log
sec="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
timeout 150 $NCU --clock-control none $sec --kernel-name regex:attn_mma_kernel --launch-skip 632 --launch-count 2 \
  $B/bench --synth qwen35-35b-a3b:q4_k_m --backend cuda -p 512 -n 0 -r 1 --warmup 0 -d 32768 > $OUT/ncu-prefill-d32k.txt 2>&1
echo "ncu prefill at $((SECONDS - s)) s"; grep -E "Duration|Memory Throughput|DRAM Throughput|L2 Hit|Achieved Occupancy|Registers Per|Compute \(SM\)" $OUT/ncu-prefill-d32k.txt | head -24
timeout 150 $NCU --clock-control none $sec --kernel-name regex:attn_mma_kernel --launch-skip 650 --launch-count 2 \
  $B/bench --synth qwen35-35b-a3b:q4_k_m --backend cuda -p 0 -n 8 -r 1 --warmup 0 -d 32768 > $OUT/ncu-decode-d32k.txt 2>&1
echo "ncu decode at $((SECONDS - s)) s"; grep -E "Duration|Memory Throughput|DRAM Throughput|L2 Hit|Achieved Occupancy|Grid Size|Compute \(SM\)" $OUT/ncu-decode-d32k.txt | head -24
echo "done at $((SECONDS - s)) s"
