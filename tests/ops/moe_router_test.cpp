// moe_router_test.cpp - a MoE block's router and weighted sum as the model builds them (ffn.cpp):
// softmax over the experts -> top-k -> the picked probabilities renormalised -> the experts' rows
// times their weights, summed. The CUDA backend runs it as two kernels (softmax_top_k, whose picks
// one warp makes from registers, and weighted_experts) where it was three.
// On every compiled backend, with 1, 4 and 9 tokens (9: past the 8 tokens a block of the unfused
// weights kernel takes), 256 experts top-8 and 64 of them top-4:
//   * the results (ids, weights, the experts' products and their sums) equal, bit for bit, those
//     of the same backend with fusion off (GL_CUDA_FUSION=0, which only CUDA reads);
//   * the ids equal the CPU's, and the rest match it within 1e-12 (NMSE): double sums rounded
//     once, their only difference the order of a softmax's sum.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "ggml-lite/ops.h"
#include "ops/fused_graph.h"
#include "ops/matmul_product.h"

namespace gl::test {
namespace {

constexpr int64_t kH = 96;  // the experts' output width
constexpr size_t kF = sizeof(float);

struct Shape {
  int64_t experts, k, n_t;
};

// Outputs: ids, weights, products, sums.
std::vector<Tensor*> router(Context& ctx, std::vector<Tensor*>& in, const Shape& s) {
  const int64_t E = s.experts, k = s.k, T = s.n_t;
  Tensor* logits = graph_input(ctx, in, DType::F32, {E, T}, "logits");
  Tensor* rows = graph_input(ctx, in, DType::F32, {kH, k, T}, "experts");
  Tensor* probs = softmax(ctx, logits, nullptr, 1.0f, false);
  Tensor* ids = top_k(ctx, probs, static_cast<int>(k));
  Tensor* w = reshape(ctx, get_rows(ctx, reshape(ctx, probs, {1, E, T}), ids), {k, T});
  w = div(ctx, w, sum_rows(ctx, w));
  Tensor* prod = mul(ctx, rows, reshape(ctx, w, {1, k, T}));
  Tensor* y = reshape(ctx, sum_rows(ctx, permute(ctx, prod, 1, 0, 2, 3)), {kH, T});
  return {ids, w, prod, y};
}

std::vector<std::vector<char>> values(const Shape& s) {
  std::vector<float> logits = random_floats(s.experts * s.n_t, 61);
  for (float& v : logits) v *= 4.0f;  // a peaked softmax, as trained routers give
  return {as_bytes(logits), as_bytes(random_floats(kH * s.k * s.n_t, 62))};
}

using Param = std::tuple<std::string, int64_t, int64_t, int64_t>;  // backend, experts, k, T

class MoeRouter : public ::testing::TestWithParam<Param> {};

TEST_P(MoeRouter, FusedKernelsGiveTheUnfusedBitsAndTheCpusValues) {
  const auto& [backend, experts, k, t] = GetParam();
  const Shape s{experts, k, t};
  const std::vector<std::vector<char>> v = values(s);
  auto build = [&](Context& ctx, std::vector<Tensor*>& in) { return router(ctx, in, s); };
  const Results fused = run_graph(backend, true, Precision::EXACT, v, build);
  const Results plain = run_graph(backend, false, Precision::EXACT, v, build);
  const Results cpu = run_graph("cpu", true, Precision::EXACT, v, build);
  ASSERT_EQ(fused.size(), 4u);
  ASSERT_EQ(plain.size(), 4u);
  ASSERT_EQ(cpu.size(), 4u);
  for (size_t i = 0; i < cpu.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "output " << i);
    ASSERT_EQ(fused[i].size(), cpu[i].size());
    ASSERT_EQ(plain[i].size(), cpu[i].size());
    EXPECT_EQ(std::memcmp(fused[i].data(), plain[i].data(), fused[i].size() * kF), 0) << "fused != unfused";
    if (i == 0) {
      EXPECT_EQ(std::memcmp(fused[i].data(), cpu[i].data(), fused[i].size() * kF), 0) << "ids against the CPU";
    } else {
      EXPECT_LT(nmse(fused[i], cpu[i]), 1e-12) << "against the CPU";
    }
  }
}

std::vector<Param> params() {
  std::vector<Param> ps;
  for (const std::string& b : compiled_backend_names())
    for (const auto& [e, k] : {std::pair<int64_t, int64_t>{256, 8}, {64, 4}})
      for (int64_t t : {1, 4, 9}) ps.emplace_back(b, e, k, t);
  return ps;
}

std::string name(const ::testing::TestParamInfo<Param>& p) {
  const auto& [backend, e, k, t] = p.param;
  return backend + "_e" + std::to_string(e) + "_k" + std::to_string(k) + "_T" + std::to_string(t);
}

INSTANTIATE_TEST_SUITE_P(All, MoeRouter, ::testing::ValuesIn(params()), name);

}  // namespace
}  // namespace gl::test
