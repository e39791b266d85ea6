// builder_death_test.cpp - builders abort on invalid shapes and dtypes with an op-tagged message.
#include <gtest/gtest.h>

#include "ggml-lite/context.h"
#include "ggml-lite/ops.h"

namespace gl {
namespace {

class BuilderDeath : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
  Tensor* f32(std::initializer_list<int64_t> ne) { return ctx.new_tensor(DType::F32, ne); }
  Tensor* of(DType t, std::initializer_list<int64_t> ne) { return ctx.new_tensor(t, ne); }
  Context ctx;
};

TEST_F(BuilderDeath, MulMat) {
  EXPECT_DEATH(mul_mat(ctx, f32({64, 8}), f32({63, 2})), "\\[mul_mat\\] inner dims differ");
  EXPECT_DEATH(mul_mat(ctx, f32({64, 8, 3}), f32({64, 2, 4})), "\\[mul_mat\\] w batch dims");
  EXPECT_DEATH(mul_mat(ctx, of(DType::I32, {64, 8}), f32({64, 2})), "\\[mul_mat\\] w must be");
  EXPECT_DEATH(mul_mat(ctx, f32({64, 8}), of(DType::Q8_0, {64, 2})), "\\[mul_mat\\] x must be f32/f16/bf16");
}

TEST_F(BuilderDeath, MulMatId) {
  EXPECT_DEATH(mul_mat_id(ctx, f32({64, 8, 4}), f32({64, 1, 5}), f32({2, 5})), "\\[mul_mat_id\\] ids must be i32");
  EXPECT_DEATH(mul_mat_id(ctx, f32({64, 8, 4}), f32({64, 1, 5}), of(DType::I32, {2, 4})),
               "\\[mul_mat_id\\] x has 5 tokens, ids 4");
  EXPECT_DEATH(mul_mat_id(ctx, f32({64, 8, 4}), f32({64, 3, 5}), of(DType::I32, {2, 5})),
               "\\[mul_mat_id\\] x rows per token");
}

TEST_F(BuilderDeath, Elementwise) {
  EXPECT_DEATH(add(ctx, f32({33, 4}), f32({2, 4})), "\\[add\\] b .* does not broadcast");
  EXPECT_DEATH(div(ctx, f32({33, 4}), f32({33, 3})), "\\[div\\] b .* does not broadcast");
  EXPECT_DEATH(mul(ctx, of(DType::I32, {4}), f32({4})), "\\[mul\\] a must be f32/f16/bf16");
  EXPECT_DEATH(scale(ctx, of(DType::Q8_0, {32}), 2.0f), "\\[scale\\] a must be");
  EXPECT_DEATH(silu(ctx, of(DType::I32, {4})), "\\[silu\\] a must be");
  EXPECT_DEATH(swiglu(ctx, f32({8, 2}), f32({8, 3})), "\\[swiglu\\] gate .* and up .* differ");
}

TEST_F(BuilderDeath, NormsAndReductions) {
  EXPECT_DEATH(rms_norm(ctx, f32({8}), -1.0f), "\\[rms_norm\\] eps .* is negative");
  EXPECT_DEATH(l2_norm(ctx, f32({8}), -1.0f), "\\[l2_norm\\] eps .* is negative");
  EXPECT_DEATH(argmax(ctx, of(DType::I32, {8})), "\\[argmax\\] a must be");
  EXPECT_DEATH(top_k(ctx, f32({8, 2}), 9), "\\[top_k\\] k 9 must be in \\[1, 8\\]");
  EXPECT_DEATH(top_k(ctx, f32({8, 2}), 0), "\\[top_k\\] k 0");
  EXPECT_DEATH(sum_rows(ctx, of(DType::I32, {8})), "\\[sum_rows\\] a must be");
}

TEST_F(BuilderDeath, Attention) {
  EXPECT_DEATH(softmax(ctx, f32({40, 7, 3}), f32({40, 6}), 1.0f, false), "\\[softmax\\] mask .* must be");
  EXPECT_DEATH(softmax(ctx, f32({40, 7}), of(DType::F16, {40, 7}), 1.0f, false), "\\[softmax\\] mask must be f32");
  EXPECT_DEATH(rope(ctx, f32({64, 2, 5}), of(DType::I32, {5}), 63, 1e4f, RopeMode::NEOX),
               "\\[rope\\] n_dims 63 must be even");
  EXPECT_DEATH(rope(ctx, f32({64, 2, 5}), of(DType::I32, {5}), 66, 1e4f, RopeMode::NEOX), "\\[rope\\] n_dims 66");
  EXPECT_DEATH(rope(ctx, f32({64, 2, 5}), of(DType::I32, {4}), 64, 1e4f, RopeMode::NORMAL),
               "\\[rope\\] x .* needs one position per token");
  EXPECT_DEATH(rope(ctx, f32({64, 2, 5}), f32({5}), 64, 1e4f, RopeMode::NORMAL), "\\[rope\\] pos must be i32");
}

TEST_F(BuilderDeath, Layout) {
  EXPECT_DEATH(get_rows(ctx, f32({8, 4}), f32({2})), "\\[get_rows\\] ids must be i32");
  EXPECT_DEATH(set_rows(ctx, f32({8, 4}), f32({7, 2}), of(DType::I32, {2})), "\\[set_rows\\] row length");
  EXPECT_DEATH(set_rows(ctx, f32({8, 4}), of(DType::Q8_0, {32, 2}), of(DType::I32, {2})), "\\[set_rows\\] src must be");
  EXPECT_DEATH(concat(ctx, f32({7, 5}), f32({7, 4}), 0), "\\[concat\\] a .* and b .* differ outside dim 0");
  EXPECT_DEATH(concat(ctx, f32({7, 5}), f32({7, 5}), 4), "\\[concat\\] dim 4 out of range");
  EXPECT_DEATH(concat(ctx, f32({7, 5}), of(DType::F16, {7, 5}), 1), "\\[concat\\] a and b must share");
  Tensor* x = f32({16, 10});
  EXPECT_DEATH(view_2d(ctx, x, 16, 11, x->nb[1], 0), "\\[view\\] view .* ends at byte");
  EXPECT_DEATH(view_1d(ctx, x, 16, 10 * x->nb[1]), "\\[view\\] view");
  EXPECT_DEATH(reshape(ctx, transpose(ctx, x), {160}), "\\[reshape\\] source .* is not contiguous");
  EXPECT_DEATH(reshape(ctx, x, {16, 11}), "\\[reshape\\] .* has 160 elements");
  EXPECT_DEATH(permute(ctx, x, 0, 0, 1, 2), "\\[permute\\] axes must be a permutation");
}

TEST_F(BuilderDeath, Copies) {
  EXPECT_DEATH(cast(ctx, of(DType::Q8_0, {64, 2}), DType::F16), "\\[cont\\] a quantized source");
  EXPECT_DEATH(cast(ctx, f32({33, 2}), DType::Q8_0), "\\[cont\\] rows of .* do not split");
  EXPECT_DEATH(cpy(ctx, f32({33, 2}), f32({33, 3})), "\\[cpy\\] src .* and dst .* differ in element count");
  EXPECT_DEATH(cpy(ctx, of(DType::Q8_0, {64}), f32({64})), "\\[cpy\\] src must not be quantized");
}

TEST_F(BuilderDeath, Ssm) {
  EXPECT_DEATH(ssm_conv(ctx, f32({65, 7}), f32({4, 64})), "\\[ssm_conv\\] w .* must be \\[Kc, C\\]");
  EXPECT_DEATH(ssm_conv(ctx, f32({65, 3}), f32({4, 65})), "\\[ssm_conv\\] xs .* must be");
  auto gdr = [&](int64_t hv, int64_t t_state_dk, int n_states) {
    gated_delta_rule(ctx, f32({32, 2, 5}), f32({32, 2, 5}), f32({16, hv, 5}), f32({hv, 5}), f32({hv, 5}),
                     f32({16, t_state_dk, hv}), n_states);
  };
  EXPECT_DEATH(gdr(4, 32, 6), "\\[gated_delta_rule\\] n_states 6 must be in \\[1, T = 5\\]");
  EXPECT_DEATH(gdr(4, 32, 0), "\\[gated_delta_rule\\] n_states 0");
  EXPECT_DEATH(gdr(3, 32, 1), "\\[gated_delta_rule\\] v .* must be \\[Dv, Hv, T\\]");
  EXPECT_DEATH(gdr(4, 31, 1), "\\[gated_delta_rule\\] state .* must be");
  EXPECT_DEATH(gated_delta_rule(ctx, f32({32, 2, 5}), f32({32, 2, 4}), f32({16, 4, 5}), f32({4, 5}), f32({4, 5}),
                                f32({16, 32, 4}), 1),
               "\\[gated_delta_rule\\] q .* and k .* must be equal");
}

}  // namespace
}  // namespace gl
