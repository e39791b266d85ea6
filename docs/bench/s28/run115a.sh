#!/usr/bin/env bash
# Session 28, last: the router tile staged 64 k at a time with register prefetch, Q8_0 MoE tiles
# decoded in half arithmetic under FAST (both the same bits): the CUDA mul_mat / mul_mat_id cases.
cd "$(dirname "$0")/.."; TAR=ops.tar.xz source .gpu-run/common.sh
timeout 250 $B/gl_test_ops --gtest_color=no --gtest_filter='*mul_mat*cuda*:*MoeRouter*' > $OUT/ops.log 2>&1; echo ops; summ $OUT/ops.log
timeout 60 $CS --tool racecheck $B/gl_test_ops --gtest_color=no --gtest_filter='*K300_N130_M70*cuda*:*mul_mat_id_q8_0*T100*cuda*' > $OUT/race.log 2>&1; echo race; summ $OUT/race.log
echo "done $((SECONDS - s)) s"
