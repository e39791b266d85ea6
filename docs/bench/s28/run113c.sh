#!/usr/bin/env bash
# Session 28: model tests (carry .gpu-run/models.tar.xz and .gpu-run/lq: the MoE and dense Q4_K_M fixtures).
cd "$(dirname "$0")/.."; TAR=models.tar.xz source .gpu-run/common.sh
timeout 240 $B/gl_test_models --gtest_color=no --gtest_filter='*CudaModelTest*:*LlamaQuants*' > $OUT/models.log 2>&1; echo models; summ $OUT/models.log
grep -c "SKIPPED" $OUT/models.log
echo "done $((SECONDS - s)) s"
