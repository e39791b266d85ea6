#!/usr/bin/env bash
# Session 28: RawStage + halves16 MoE tiles, op harness and racecheck (carry .gpu-run/ops.tar.xz).
cd "$(dirname "$0")/.."; TAR=ops.tar.xz source .gpu-run/common.sh
F='*mul_mat_id*cuda*:*MoeRouter*'
timeout 200 $B/gl_test_ops --gtest_color=no --gtest_filter="$F" > $OUT/ops.log 2>&1; echo ops; summ $OUT/ops.log
GL_CUDA_RAW_STAGE=0 timeout 200 $B/gl_test_ops --gtest_color=no --gtest_filter='*mul_mat_id*cuda*' > $OUT/ops-noraw.log 2>&1; echo ops-noraw; summ $OUT/ops-noraw.log
timeout 150 $CS --tool racecheck $B/gl_test_ops --gtest_color=no --gtest_filter='*mul_mat_id_q4_K*T100*cuda*:*mul_mat_id_q6_K*T100*cuda*:*mul_mat_id_iq4_xs*T100*cuda*:*mul_mat_id_q4_0*T100*cuda*' > $OUT/race.log 2>&1; echo race; summ $OUT/race.log
timeout 100 $CS --tool memcheck $B/gl_test_ops --gtest_color=no --gtest_filter='*mul_mat_id_q4_K*T100*cuda*:*mul_mat_id_q6_K*T100*cuda*:*mul_mat_id_q5_1*T100*cuda*' > $OUT/memcheck.log 2>&1; echo memcheck; summ $OUT/memcheck.log
echo "done $((SECONDS - s)) s"
