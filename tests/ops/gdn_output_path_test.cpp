// gdn_output_path_test.cpp - the Gated DeltaNet's output path as the model builds it, which the
// CUDA backend runs as one kernel (gated_delta_rule_fused): the recurrent gated delta rule, the
// CPY of its last state back into the state it read, then the gated RMSNorm of its output
// (rms_norm per value head -> x weight -> x silu(z)) and the output projection (a Q4_K GEMV, whose
// int8 activation rows the kernel writes under FAST).
// On every compiled backend, at EXACT and FAST, with 1 token (decode) and 3 (a verify, a snapshot
// per token), value heads of 64 and 128 channels (2 and 4 column blocks counting their arrivals),
// and more value heads than key heads:
//   * every result equals, bit for bit, that of the same backend with fusion off (GL_CUDA_FUSION=0,
//     which only CUDA reads): the product too, so the kernel's int8 rows are quantize_rows_q8's;
//   * the gated output and the carried state match the CPU within 1e-9 (NMSE): F32 recurrences and
//     norms whose only differences are expf's last bits and the order of sums. The product is
//     checked against the CPU at EXACT only (FAST's int8 blocks differ by backend: MatmulFast).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "ggml-lite/ops.h"
#include "ops/fused_graph.h"
#include "ops/matmul_product.h"

namespace gl::test {
namespace {

constexpr int64_t kDk = 128, kHk = 2, kHv = 4, kOut = 96;
constexpr size_t kF = sizeof(float);

struct Shape {
  int64_t dv, n_t;
  int64_t width() const { return dv * kHv; }  // the gated row, the product's K
};

Tensor* input(Context& ctx, std::vector<Tensor*>& in, std::initializer_list<int64_t> ne, const char* name) {
  return graph_input(ctx, in, DType::F32, ne, name);
}

// layers.cpp's gated_delta_net from the gated delta rule on: returns the product, the gated
// output and the carried state.
std::vector<Tensor*> output_path(Context& ctx, std::vector<Tensor*>& in, const Shape& s) {
  const int64_t dv = s.dv, t = s.n_t;
  Tensor* q = input(ctx, in, {kDk, kHk, t}, "q");
  Tensor* k = input(ctx, in, {kDk, kHk, t}, "k");
  Tensor* v = input(ctx, in, {dv, kHv, t}, "v");
  Tensor* g = input(ctx, in, {kHv, t}, "g");
  Tensor* beta = input(ctx, in, {kHv, t}, "beta");
  Tensor* state = input(ctx, in, {dv, kDk, kHv}, "state");
  Tensor* z = input(ctx, in, {s.width(), t}, "z");
  Tensor* w_norm = input(ctx, in, {dv}, "w_norm");
  Tensor* w_out = graph_input(ctx, in, DType::Q4_K, {s.width(), kOut}, "w_out");
  GdrResult r = gated_delta_rule(ctx, q, k, v, g, beta, state, static_cast<int>(t));
  const size_t state_bytes = static_cast<size_t>(dv * kDk * kHv) * kF;
  Tensor* last = view_3d(ctx, r.states, dv, kDk, kHv, dv * kF, dv * kDk * kF, static_cast<size_t>(t - 1) * state_bytes);
  Tensor* o = mul(ctx, rms_norm(ctx, r.out, 1e-6f), w_norm);
  Tensor* gated = mul(ctx, silu(ctx, z), reshape(ctx, o, {s.width(), t}));
  Tensor* out = mul_mat(ctx, w_out, gated);
  return {out, gated, cpy(ctx, last, state)};
}

std::vector<float> scaled(std::vector<float> v, float by) {
  for (float& x : v) x *= by;
  return v;
}

std::vector<std::vector<char>> values(const Shape& s) {
  const int64_t t = s.n_t, dv = s.dv;
  std::vector<float> g = random_floats(kHv * t, 34), beta = random_floats(kHv * t, 35);
  for (float& x : g) x = -0.1f * std::fabs(x);             // log decay, <= 0
  for (float& x : beta) x = 1.0f / (1.0f + std::exp(-x));  // in (0, 1)
  std::vector<char> w(row_bytes(DType::Q4_K, s.width()) * kOut);
  const std::vector<float> wf = random_floats(s.width() * kOut, 39);
  from_float(DType::Q4_K, wf.data(), w.data(), s.width() * kOut);
  return {as_bytes(scaled(random_floats(kDk * kHk * t, 31), 0.1f)),
          as_bytes(scaled(random_floats(kDk * kHk * t, 32), 0.1f)),
          as_bytes(random_floats(dv * kHv * t, 33)),
          as_bytes(g),
          as_bytes(beta),
          as_bytes(scaled(random_floats(dv * kDk * kHv, 36), 0.1f)),
          as_bytes(random_floats(s.width() * t, 37)),
          as_bytes(random_floats(dv, 38)),
          w};
}

using Param = std::tuple<std::string, Precision, int64_t, int64_t>;  // backend, precision, dv, T

class GdnOutputPath : public ::testing::TestWithParam<Param> {};

TEST_P(GdnOutputPath, FusedKernelGivesTheUnfusedBitsAndTheCpusValues) {
  const auto& [backend, precision, dv, t] = GetParam();
  const Shape s{dv, t};
  const std::vector<std::vector<char>> v = values(s);
  auto build = [&](Context& ctx, std::vector<Tensor*>& in) { return output_path(ctx, in, s); };
  const Results fused = run_graph(backend, true, precision, v, build);
  const Results plain = run_graph(backend, false, precision, v, build);
  const Results cpu = run_graph("cpu", true, Precision::EXACT, v, build);
  ASSERT_EQ(fused.size(), 3u);
  ASSERT_EQ(plain.size(), 3u);
  ASSERT_EQ(cpu.size(), 3u);
  for (size_t i = 0; i < cpu.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "output " << i);
    ASSERT_EQ(fused[i].size(), cpu[i].size());
    ASSERT_EQ(plain[i].size(), cpu[i].size());
    EXPECT_EQ(std::memcmp(fused[i].data(), plain[i].data(), fused[i].size() * kF), 0) << "fused != unfused";
    if (i > 0 || precision == Precision::EXACT) {
      EXPECT_LT(nmse(fused[i], cpu[i]), 1e-9) << "against the CPU";
    }
  }
}

std::vector<Param> params() {
  std::vector<Param> ps;
  for (const std::string& b : compiled_backend_names())
    for (Precision p : {Precision::EXACT, Precision::FAST})
      for (int64_t dv : {64, 128})
        for (int64_t t : {1, 3}) ps.emplace_back(b, p, dv, t);
  return ps;
}

std::string name(const ::testing::TestParamInfo<Param>& p) {
  const auto& [backend, precision, dv, t] = p.param;
  return backend + (precision == Precision::FAST ? "_fast" : "_exact") + "_dv" + std::to_string(dv) + "_T" +
         std::to_string(t);
}

INSTANTIATE_TEST_SUITE_P(All, GdnOutputPath, ::testing::ValuesIn(params()), name);

}  // namespace
}  // namespace gl::test
