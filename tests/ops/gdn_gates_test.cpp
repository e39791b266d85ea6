// gdn_gates_test.cpp - the Gated DeltaNet's two gate products, as the model builds them:
// g = softplus(x wa + dt_bias) * A and beta = sigmoid(x wb), both graph outputs, so their nodes lie
// back to back and CUDA launches the two GEMVs and their chains as one (mul_mat_twin). On every
// compiled backend, at both precisions, with x an input (its int8 rows under FAST then live in a
// workspace of the first product alone) and with x a node's result (shared by both products):
//   * the results equal, bit for bit, those of the same backend with fusion off (GL_CUDA_FUSION=0,
//     which only CUDA reads): a fused launch must not change a bit;
//   * they match the CPU's EXACT results within the op harness's bounds: 1e-9 EXACT (f32 sums);
//     1e-4 FAST, the products' kNmseQ8Out for int8 activations (BF16's rounding for BF16 ones).
//     The bound carries over to the gates because, with weights of std 1 / sqrt(K) as the model's,
//     the products are of order one and softplus' and sigmoid's slopes are at most 1 and 1/4.
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

constexpr int64_t kK = 256, kN = 32;

struct Gates {
  std::vector<float> g, beta;
};

struct GateInputs {
  std::vector<char> wa, wb;
  std::vector<float> x, dt, a;
};

GateInputs gate_inputs(DType t, int64_t m) {
  GateInputs in{std::vector<char>(row_bytes(t, kK) * kN), std::vector<char>(row_bytes(t, kK) * kN),
                random_floats(kK * m, 11), random_floats(kN, 12), random_floats(kN, 13)};
  std::vector<float> wa = random_floats(kK * kN, 14), wb = random_floats(kK * kN, 15);
  for (size_t i = 0; i < wa.size(); ++i) wa[i] /= 16.0f, wb[i] /= 16.0f;  // std 1 / sqrt(K), as the model's
  from_float(t, wa.data(), in.wa.data(), kK * kN);
  from_float(t, wb.data(), in.wb.data(), kK * kN);
  return in;
}

// The two gates on a backend; x_node: x is scale(x_in, 1) rather than an input.
Gates run_gates(std::string_view backend, DType t, const GateInputs& in, int64_t m, Precision p, bool x_node,
                bool fusion) {
  auto build = [&](Context& ctx, std::vector<Tensor*>& inputs) {
    Tensor* wa = graph_input(ctx, inputs, t, {kK, kN}, "wa");
    Tensor* wb = graph_input(ctx, inputs, t, {kK, kN}, "wb");
    Tensor* x_in = graph_input(ctx, inputs, DType::F32, {kK, m}, "x");
    Tensor* dt = graph_input(ctx, inputs, DType::F32, {kN}, "dt");
    Tensor* a = graph_input(ctx, inputs, DType::F32, {kN}, "a");
    Tensor* x = x_node ? scale(ctx, x_in, 1.0f) : x_in;
    Tensor* g = mul(ctx, softplus(ctx, add(ctx, mul_mat(ctx, wa, x), dt)), a);
    Tensor* beta = sigmoid(ctx, mul_mat(ctx, wb, x));
    return std::vector<Tensor*>{g, beta};
  };
  const std::vector<std::vector<char>> values{in.wa, in.wb, as_bytes(in.x), as_bytes(in.dt), as_bytes(in.a)};
  Results r = run_graph(backend, fusion, p, values, build);
  if (r.size() != 2) return {};
  return {std::move(r[0]), std::move(r[1])};
}

using GatesParam = std::tuple<std::string, Precision, DType>;

class GdnGates : public ::testing::TestWithParam<GatesParam> {};

TEST_P(GdnGates, FusedLaunchGivesTheUnfusedBitsAndTheCpusValues) {
  const auto& [backend, precision, type] = GetParam();
  for (const int64_t m : {int64_t{1}, int64_t{2}, int64_t{4}}) {
    const GateInputs in = gate_inputs(type, m);
    const Gates want = run_gates("cpu", type, in, m, Precision::EXACT, false, true);
    for (const bool x_node : {false, true}) {
      SCOPED_TRACE(testing::Message() << m << " rows, x " << (x_node ? "a node" : "an input"));
      const Gates fused = run_gates(backend, type, in, m, precision, x_node, true);
      const Gates plain = run_gates(backend, type, in, m, precision, x_node, false);
      ASSERT_EQ(fused.g.size(), want.g.size());
      ASSERT_EQ(plain.g.size(), want.g.size());
      EXPECT_EQ(std::memcmp(fused.g.data(), plain.g.data(), fused.g.size() * sizeof(float)), 0) << "g";
      EXPECT_EQ(std::memcmp(fused.beta.data(), plain.beta.data(), fused.beta.size() * sizeof(float)), 0) << "beta";
      const double bound = precision == Precision::FAST ? 1e-4 : 1e-9;
      EXPECT_LT(nmse(fused.g, want.g), bound) << "g against the CPU";
      EXPECT_LT(nmse(fused.beta, want.beta), bound) << "beta against the CPU";
    }
  }
}

std::vector<GatesParam> gates_params() {
  std::vector<GatesParam> ps;
  for (const std::string& b : compiled_backend_names())
    for (Precision p : {Precision::EXACT, Precision::FAST})
      for (DType t : {DType::BF16, DType::Q4_K, DType::Q6_K}) ps.emplace_back(b, p, t);
  return ps;
}

std::string gates_name(const ::testing::TestParamInfo<GatesParam>& p) {
  const auto& [backend, precision, type] = p.param;
  return backend + (precision == Precision::FAST ? "_fast_" : "_exact_") + std::string(dtype_name(type));
}

INSTANTIATE_TEST_SUITE_P(All, GdnGates, ::testing::ValuesIn(gates_params()), gates_name);

}  // namespace
}  // namespace gl::test
