// tensor_test.cpp - tensor helpers (nbytes of views, contiguity, shape text), view builder metadata, op table.
#include <gtest/gtest.h>

#include <algorithm>

#include "ggml-lite/context.h"
#include "ggml-lite/ops.h"

namespace gl {
namespace {

TEST(Tensor, NbytesOfContiguousTensors) {
  Context ctx;
  EXPECT_EQ(nbytes(*ctx.new_tensor(DType::F16, {4096, 32})), 4096u * 32 * 2);
  EXPECT_EQ(nbytes(*ctx.new_tensor(DType::Q8_0, {64, 3})), 3u * 2 * sizeof(BlockQ8_0));
  EXPECT_EQ(nbytes(*ctx.new_tensor(DType::I32, {5})), 20u);
  EXPECT_EQ(nbytes(*ctx.new_tensor(DType::F32, {7, 0, 3})), 0u);
  EXPECT_EQ(row_bytes(DType::Q8_0, 64), 68u);
  EXPECT_EQ(row_bytes(DType::BF16, 33), 66u);
}

TEST(Tensor, NbytesOfViewsIsTheSpannedMemory) {
  Context ctx;
  Tensor* x = ctx.new_tensor(DType::F32, {16, 10});
  EXPECT_EQ(nbytes(*transpose(ctx, x)), 640u);
  EXPECT_EQ(nbytes(*permute(ctx, x, 1, 0, 2, 3)), 640u);
  // Every other row: 15 floats in the last row + 4 row strides of 128 bytes.
  EXPECT_EQ(nbytes(*view_2d(ctx, x, 16, 5, 2 * x->nb[1], 0)), 15u * 4 + 4 * 128 + 4);
  EXPECT_EQ(nbytes(*view_1d(ctx, x, 37, 44)), 37u * 4);
  EXPECT_EQ(nbytes(*view_2d(ctx, x, 3, 4, x->nb[1], 0)), 2u * 4 + 3 * 64 + 4);  // 3 of 16 columns, 4 rows
}

TEST(Tensor, ContiguityOfPermutesAndViews) {
  Context ctx;
  Tensor* x = ctx.new_tensor(DType::F32, {4, 3, 5});
  EXPECT_TRUE(is_contiguous(*x));
  EXPECT_TRUE(is_contiguous(*permute(ctx, x, 0, 1, 2, 3)));
  EXPECT_FALSE(is_contiguous(*permute(ctx, x, 0, 2, 1, 3)));
  EXPECT_FALSE(is_contiguous(*permute(ctx, x, 1, 0, 2, 3)));
  EXPECT_FALSE(is_contiguous(*transpose(ctx, x)));
  EXPECT_TRUE(is_transposed(*transpose(ctx, x)));
  EXPECT_TRUE(is_contiguous(*reshape(ctx, x, {12, 5})));
  // Swapping a dimension of size 1 keeps the memory order.
  Tensor* y = ctx.new_tensor(DType::F32, {4, 1, 3});
  EXPECT_TRUE(is_contiguous(*permute(ctx, y, 0, 2, 1, 3)));
  Tensor* z = ctx.new_tensor(DType::F32, {16, 10});
  EXPECT_FALSE(is_contiguous(*view_2d(ctx, z, 16, 5, 2 * z->nb[1], 0)));
  EXPECT_FALSE(is_contiguous(*view_2d(ctx, z, 8, 10, z->nb[1], 0)));
  EXPECT_TRUE(is_contiguous(*view_1d(ctx, z, 37, 44)));
  EXPECT_TRUE(is_contiguous(*ctx.new_tensor(DType::Q8_0, {64, 3})));
}

TEST(Tensor, ShapeStrAndCounts) {
  Context ctx;
  Tensor* a = ctx.new_tensor(DType::F16, {4096, 32});
  EXPECT_EQ(shape_str(*a), "[4096, 32]");
  EXPECT_EQ(shape_str(*ctx.new_tensor(DType::F32, {5})), "[5]");
  EXPECT_EQ(shape_str(*ctx.new_tensor(DType::F32, {4, 1, 3})), "[4, 1, 3]");
  EXPECT_EQ(shape_str(*ctx.new_tensor(DType::F32, {4, 1, 1, 1})), "[4]");
  Tensor* b = ctx.new_tensor(DType::F32, {7, 5, 3, 2});
  EXPECT_EQ(nelements(*b), 210);
  EXPECT_EQ(nrows(*b), 30);
  EXPECT_EQ(n_dims(*b), 4);
  EXPECT_EQ(n_dims(*a), 2);
}

TEST(Views, PermuteMovesSourceDimIToAxesI) {
  Context ctx;
  Tensor* x = ctx.new_tensor(DType::F32, {7, 5, 3, 2});
  Tensor* p = permute(ctx, x, 2, 0, 3, 1);  // dim 0 -> 2, 1 -> 0, 2 -> 3, 3 -> 1
  EXPECT_EQ(p->ne, (std::array<int64_t, 4>{5, 2, 7, 3}));
  EXPECT_EQ(p->nb, (std::array<size_t, 4>{x->nb[1], x->nb[3], x->nb[0], x->nb[2]}));
  EXPECT_EQ(p->view_src, x);
  Tensor* t = transpose(ctx, p);
  EXPECT_EQ(t->ne[0], 2);
  EXPECT_EQ(t->nb[0], x->nb[3]);
  EXPECT_EQ(t->view_src, x);  // views of views point at the root
}

TEST(Views, OffsetsAccumulateToTheRoot) {
  Context ctx;
  Tensor* x = ctx.new_tensor(DType::F32, {16, 10});
  Tensor* v = view_2d(ctx, x, 16, 4, x->nb[1], 2 * x->nb[1]);
  Tensor* w = view_1d(ctx, v, 8, 16);
  EXPECT_EQ(w->view_src, x);
  EXPECT_EQ(w->view_offs, 2 * x->nb[1] + 16);
  EXPECT_EQ(v->p<ViewParams>().offset, 2 * x->nb[1]);
}

TEST(OpTable, NamesArityAndViewOps) {
  EXPECT_EQ(op_name(Op::MUL_MAT), "mul_mat");
  EXPECT_EQ(op_name(Op::GATED_DELTA_RULE), "gated_delta_rule");
  EXPECT_EQ(op_info(Op::SOFTMAX).min_srcs, 1);
  EXPECT_EQ(op_info(Op::SOFTMAX).max_srcs, 2);
  EXPECT_TRUE(op_info(Op::ADD).inplace_safe);
  EXPECT_FALSE(op_info(Op::MUL_MAT).inplace_safe);
  int n_views = 0;
  for (int i = 0; i < kOpCount; ++i) {
    const auto op = static_cast<Op>(i);
    n_views += is_view_op(op);
    const std::string_view n = op_name(op);
    EXPECT_FALSE(n.empty());
    EXPECT_TRUE(std::none_of(n.begin(), n.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) << n;
  }
  EXPECT_EQ(n_views, 4);  // VIEW, RESHAPE, PERMUTE, TRANSPOSE
  EXPECT_FALSE(is_view_op(Op::CPY));
}

TEST(DTypes, TraitsAndNames) {
  EXPECT_EQ(dtype_from_name("Q8_0"), DType::Q8_0);
  EXPECT_EQ(dtype_from_name("bf16"), DType::BF16);
  EXPECT_EQ(dtype_from_name("q4_k"), DType::Q4_K);
  EXPECT_EQ(dtype_name(DType::Q4_K), "q4_K");  // ggml's spelling
  EXPECT_EQ(dtype_from_ggml(12), DType::Q4_K);
  EXPECT_EQ(dtype_traits(DType::Q4_K).block_bytes, 144u);
  EXPECT_FALSE(dtype_from_name("iq2_xxs").has_value());
  EXPECT_FALSE(dtype_from_ggml(16).has_value());  // iq2_xxs: no reference functions here
  EXPECT_EQ(dtype_from_ggml(30), DType::BF16);
  EXPECT_EQ(dtype_from_ggml(8), DType::Q8_0);
  EXPECT_EQ(dtype_traits(DType::Q8_0).block_size, 32);
  EXPECT_EQ(dtype_traits(DType::Q8_0).block_bytes, 34u);
  EXPECT_TRUE(dtype_traits(DType::BF16).is_float);
  EXPECT_FALSE(dtype_traits(DType::I32).is_float);
}

}  // namespace
}  // namespace gl
