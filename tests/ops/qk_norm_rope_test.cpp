// qk_norm_rope_test.cpp - the attention's q and k head path as the model builds it, which the CUDA
// backend runs as one kernel (norm_mul_rope): rms_norm per head -> x weight -> NEOX rope of the
// leading n_dims elements, on a strided view (q sits beside its gate in one projection) and on a
// plain tensor (k).
// On every compiled backend, with 1 and 3 tokens, rotated widths 64 and 128 of heads of 256 and a
// rotated width 64 of heads of 128:
//   * the results equal, bit for bit, those of the same backend with fusion off (GL_CUDA_FUSION=0,
//     which only CUDA reads);
//   * they match the CPU within 1e-9 (NMSE): F32 norms and double-precision rotations whose only
//     differences are the order of a norm's sum and the last bits of sincos.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ggml-lite/ops.h"
#include "ops/fused_graph.h"
#include "ops/matmul_product.h"

namespace gl::test {
namespace {

constexpr int64_t kHeads = 4;
constexpr size_t kF = sizeof(float);

struct Shape {
  int64_t hd, n_dims, n_t;
};

// q: a view of every other head-sized slice of [q | gate] rows, as layers.cpp takes it; k: plain.
std::vector<Tensor*> qk_path(Context& ctx, std::vector<Tensor*>& in, const Shape& s) {
  const int64_t hd = s.hd, t = s.n_t;
  Tensor* qg = graph_input(ctx, in, DType::F32, {2 * hd * kHeads, t}, "qg");
  Tensor* k = graph_input(ctx, in, DType::F32, {hd, kHeads, t}, "k");
  Tensor* wq = graph_input(ctx, in, DType::F32, {hd}, "wq");
  Tensor* wk = graph_input(ctx, in, DType::F32, {hd}, "wk");
  Tensor* pos = graph_input(ctx, in, DType::I32, {t}, "pos");
  Tensor* q = view_3d(ctx, qg, hd, kHeads, t, 2 * hd * kF, 2 * hd * kHeads * kF, 0);
  const int n = static_cast<int>(s.n_dims);
  Tensor* qr = rope(ctx, mul(ctx, rms_norm(ctx, q, 1e-6f), wq), pos, n, 1e7f, RopeMode::NEOX);
  Tensor* kr = rope(ctx, mul(ctx, rms_norm(ctx, k, 1e-6f), wk), pos, n, 1e7f, RopeMode::NEOX);
  return {qr, kr};
}

std::vector<std::vector<char>> values(const Shape& s) {
  std::vector<char> pos(static_cast<size_t>(s.n_t) * sizeof(int32_t));
  for (int64_t i = 0; i < s.n_t; ++i) {
    const int32_t p = static_cast<int32_t>(5 + 997 * i);  // far apart: large angles too
    std::memcpy(pos.data() + i * sizeof(int32_t), &p, sizeof(p));
  }
  return {as_bytes(random_floats(2 * s.hd * kHeads * s.n_t, 51)), as_bytes(random_floats(s.hd * kHeads * s.n_t, 52)),
          as_bytes(random_floats(s.hd, 53)), as_bytes(random_floats(s.hd, 54)), pos};
}

using Param = std::tuple<std::string, int64_t, int64_t, int64_t>;  // backend, head dim, n_dims, T

class QkNormRope : public ::testing::TestWithParam<Param> {};

TEST_P(QkNormRope, FusedKernelGivesTheUnfusedBitsAndTheCpusValues) {
  const auto& [backend, hd, n_dims, t] = GetParam();
  const Shape s{hd, n_dims, t};
  const std::vector<std::vector<char>> v = values(s);
  auto build = [&](Context& ctx, std::vector<Tensor*>& in) { return qk_path(ctx, in, s); };
  const Results fused = run_graph(backend, true, Precision::EXACT, v, build);
  const Results plain = run_graph(backend, false, Precision::EXACT, v, build);
  const Results cpu = run_graph("cpu", true, Precision::EXACT, v, build);
  ASSERT_EQ(fused.size(), 2u);
  ASSERT_EQ(plain.size(), 2u);
  ASSERT_EQ(cpu.size(), 2u);
  for (size_t i = 0; i < cpu.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "output " << i);
    ASSERT_EQ(fused[i].size(), cpu[i].size());
    ASSERT_EQ(plain[i].size(), cpu[i].size());
    EXPECT_EQ(std::memcmp(fused[i].data(), plain[i].data(), fused[i].size() * kF), 0) << "fused != unfused";
    EXPECT_LT(nmse(fused[i], cpu[i]), 1e-9) << "against the CPU";
  }
}

std::vector<Param> params() {
  std::vector<Param> ps;
  for (const std::string& b : compiled_backend_names())
    for (const auto& [hd, n_dims] : {std::pair<int64_t, int64_t>{256, 64}, {256, 128}, {128, 64}})
      for (int64_t t : {1, 3}) ps.emplace_back(b, hd, n_dims, t);
  return ps;
}

std::string name(const ::testing::TestParamInfo<Param>& p) {
  const auto& [backend, hd, n_dims, t] = p.param;
  return backend + "_hd" + std::to_string(hd) + "_rot" + std::to_string(n_dims) + "_T" + std::to_string(t);
}

INSTANTIATE_TEST_SUITE_P(All, QkNormRope, ::testing::ValuesIn(params()), name);

}  // namespace
}  // namespace gl::test
