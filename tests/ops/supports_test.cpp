// supports_test.cpp - a backend's supports() answers from its dtype kernel table: a matrix product
// whose weight dtype has no kernel is refused (so the scheduler never hands it over), and every
// weight dtype with kernels is accepted.
#include <gtest/gtest.h>

#include <iterator>
#include <vector>

#include "common/backends.h"
#include "ggml-lite/context.h"
#include "ggml-lite/ops.h"
#include "ops/cases.h"

namespace gl {
namespace {

// MUL_MAT with I32 weights, assembled by hand: the builder refuses them, and the node stands for a
// dtype row that no backend has a dot-product kernel for.
Tensor* mul_mat_without_kernel(Context& ctx) {
  Tensor* w = ctx.new_tensor(DType::I32, {64, 8}, "w_i32");
  Tensor* x = ctx.new_tensor(DType::F32, {64, 2}, "x");
  Tensor* mm = ctx.new_tensor(DType::F32, {8, 2}, "mm_i32");
  mm->op = Op::MUL_MAT;
  mm->src[0] = w;
  mm->src[1] = x;
  return mm;
}

TEST(BackendSupports, RefusesAWeightDtypeWithoutKernel) {
  for (test::NamedBackend& nb : test::compiled_backends()) {
    SCOPED_TRACE(nb.name);
    Context ctx;
    EXPECT_FALSE(nb.backend->supports(*mul_mat_without_kernel(ctx)));
  }
}

// Every backend accepts the plain types, Q8_0 and the quant family; Vulkan declines MXFP4 (its
// 17-byte blocks do not fall on the 16-bit words its shaders read), which then runs on the CPU.
TEST(BackendSupports, AcceptsEveryWeightDtypeWithKernels) {
  for (test::NamedBackend& nb : test::compiled_backends()) {
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0}) {
      SCOPED_TRACE(nb.name + " " + std::string(dtype_name(t)));
      Context ctx;
      EXPECT_TRUE(
          nb.backend->supports(*mul_mat(ctx, ctx.new_tensor(t, {256, 8}), ctx.new_tensor(DType::F32, {256, 2}))));
    }
    for (DType t : test::kQuantFamily) {
      SCOPED_TRACE(nb.name + " " + std::string(dtype_name(t)));
      Context ctx;
      Tensor* mm = mul_mat(ctx, ctx.new_tensor(t, {256, 8}), ctx.new_tensor(DType::F32, {256, 2}));
      EXPECT_EQ(nb.backend->supports(*mm), nb.name != "vulkan" || t != DType::MXFP4);
    }
  }
}

}  // namespace
}  // namespace gl
