#!/usr/bin/env bash
# Session 29, call 2: the split decode attention's op cases (which shapes fail).
cd "$(dirname "$0")/.."; TAR=ops.tar.xz source .gpu-run/common.sh
timeout 200 $B/gl_test_ops --gtest_color=no --gtest_filter='*flash_attn*cuda*:*AttnRows*cuda*' > $OUT/ops.log 2>&1; echo "ops at $((SECONDS - s)) s"; summ $OUT/ops.log
grep -A8 "Failure" $OUT/ops.log | grep -E "nmse|at \(" | head -80
