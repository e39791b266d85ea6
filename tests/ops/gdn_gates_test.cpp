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

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "common/backends.h"
#include "ggml-lite/context.h"
#include "ggml-lite/diag.h"
#include "ggml-lite/executor.h"
#include "ggml-lite/ops.h"
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
  Context ctx;
  Tensor* wa = ctx.new_tensor(t, {kK, kN}, "wa");
  Tensor* wb = ctx.new_tensor(t, {kK, kN}, "wb");
  Tensor* x_in = ctx.new_tensor(DType::F32, {kK, m}, "x");
  Tensor* dt = ctx.new_tensor(DType::F32, {kN}, "dt");
  Tensor* a = ctx.new_tensor(DType::F32, {kN}, "a");
  for (Tensor* t_in : {wa, wb, x_in, dt, a}) t_in->flags |= TENSOR_INPUT;
  Tensor* x = x_node ? scale(ctx, x_in, 1.0f) : x_in;
  Tensor* g = mul(ctx, softplus(ctx, add(ctx, mul_mat(ctx, wa, x), dt)), a);
  Tensor* beta = sigmoid(ctx, mul_mat(ctx, wb, x));
  Graph graph = Graph::build({g, beta});
  const std::string fusion_var(diag_env_name(Diag::CUDA_FUSION_OFF));
  if (!fusion) setenv(fusion_var.c_str(), "0", 1);
  std::unique_ptr<Backend> be = make_test_backend(backend);
  if (!fusion) unsetenv(fusion_var.c_str());
  Gates out;
  if (!be) {
    ADD_FAILURE() << "backend " << backend << " is not available";
    return out;
  }
  be->set_precision(p);
  Executor ex({be.get()});
  if (Status s = ex.allocate(graph); !s) {
    ADD_FAILURE() << "allocate: " << s.error();
    return out;
  }
  ex.set_input(*wa, in.wa.data());
  ex.set_input(*wb, in.wb.data());
  ex.set_input(*x_in, in.x.data());
  ex.set_input(*dt, in.dt.data());
  ex.set_input(*a, in.a.data());
  if (Status s = ex.compute(graph); !s) {
    ADD_FAILURE() << "compute: " << s.error();
    return out;
  }
  out.g.resize(static_cast<size_t>(kN * m));
  out.beta.resize(static_cast<size_t>(kN * m));
  ex.get_output(*g, out.g.data());
  ex.get_output(*beta, out.beta.data());
  return out;
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
