// gdn_input_path_test.cpp - the Gated DeltaNet's input path as the model builds it, which the CUDA
// backend runs as one kernel (conv_window_norm): concat(carried, new) -> ssm_conv -> silu -> L2
// norm of the q and k head rows -> scale of the q rows, and the CPY that carries the window's last
// columns back into the state (with one new column, in the same kernel).
// On every compiled backend, with the new columns an input or a node's result (the planner may then
// put results on them), with 1 and 4 new columns, heads of 32, 64 and 128 channels and value
// channels that are not whole warps; the results checked are q, the normalised q|k rows, the
// activation, the carried state and the window (verify's rollback reads it):
//   * the results equal, bit for bit, those of the same backend with fusion off (GL_CUDA_FUSION=0,
//     which only CUDA reads);
//   * they match the CPU within 1e-9 (NMSE): these are F32 elementwise ops and norms, whose only
//     differences are expf's last bits and the order of a norm's sum.
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

constexpr int64_t kKc = 4, kHeads = 2, kValueChannels = 80;  // value channels: not whole warps
constexpr size_t kF = sizeof(float);

struct Shape {
  int64_t dk, n_t;
  bool new_is_node;
  int64_t channels() const { return 2 * kHeads * dk + kValueChannels; }
};

Tensor* input(Context& ctx, std::vector<Tensor*>& inputs, std::initializer_list<int64_t> ne, const char* name) {
  return graph_input(ctx, inputs, DType::F32, ne, name);
}

// concat -> conv -> silu -> l2_norm(q|k) -> scale(q), and the carried CPY, as layers.cpp has them.
std::vector<Tensor*> input_path(Context& ctx, std::vector<Tensor*>& in, const Shape& s) {
  const int64_t c = s.channels(), hk = kHeads, dk = s.dk, t = s.n_t;
  Tensor* carried = input(ctx, in, {c, kKc - 1}, "carried");
  Tensor* fresh = input(ctx, in, {c, t}, "fresh");
  Tensor* w = input(ctx, in, {kKc, c}, "w");
  Tensor* b = s.new_is_node ? scale(ctx, fresh, 1.0f) : fresh;
  Tensor* window = concat(ctx, carried, b, 1);
  Tensor* act = silu(ctx, ssm_conv(ctx, window, w));
  const size_t row = static_cast<size_t>(c) * kF;
  Tensor* qk = l2_norm(ctx, view_3d(ctx, act, dk, 2 * hk, t, dk * kF, row, 0), 1e-6f);
  const size_t qk_row = static_cast<size_t>(2 * hk * dk) * kF;
  Tensor* q = scale(ctx, view_3d(ctx, qk, dk, hk, t, dk * kF, qk_row, 0), 1.0f / std::sqrt(static_cast<float>(dk)));
  Tensor* copy = cpy(ctx, view_2d(ctx, window, c, kKc - 1, row, static_cast<size_t>(t) * row), carried);
  return {q, qk, act, copy, window};
}

void expect_same_bits_and_close(const Results& fused, const Results& plain, const Results& cpu) {
  ASSERT_EQ(fused.size(), cpu.size());
  ASSERT_EQ(plain.size(), cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "output " << i);
    ASSERT_EQ(fused[i].size(), cpu[i].size());
    EXPECT_EQ(std::memcmp(fused[i].data(), plain[i].data(), fused[i].size() * kF), 0) << "fused != unfused";
    EXPECT_LT(nmse(fused[i], cpu[i]), 1e-9) << "against the CPU";
  }
}

using FusionParam = std::tuple<std::string, int64_t, int64_t, bool>;  // backend, dk, T, new is a node

class GdnInputPath : public ::testing::TestWithParam<FusionParam> {
 protected:
  Shape shape() const { return {std::get<1>(GetParam()), std::get<2>(GetParam()), std::get<3>(GetParam())}; }
};

TEST_P(GdnInputPath, FusedKernelGivesTheUnfusedBitsAndTheCpusValues) {
  const Shape s = shape();
  const int64_t c = s.channels();
  const std::vector<std::vector<char>> v{as_bytes(random_floats(c * (kKc - 1), 21)),
                                         as_bytes(random_floats(c * s.n_t, 22)), as_bytes(random_floats(kKc * c, 23))};
  auto build = [&](Context& ctx, std::vector<Tensor*>& in) { return input_path(ctx, in, s); };
  auto run = [&](std::string_view backend, bool fusion) {
    return run_graph(backend, fusion, Precision::EXACT, v, build);
  };
  const Results cpu = run("cpu", true);
  expect_same_bits_and_close(run(std::get<0>(GetParam()), true), run(std::get<0>(GetParam()), false), cpu);
}

std::vector<FusionParam> fusion_params() {
  std::vector<FusionParam> ps;
  for (const std::string& b : compiled_backend_names())
    for (int64_t dk : {32, 64, 128})
      for (int64_t t : {1, 4})
        for (bool node : {false, true}) ps.emplace_back(b, dk, t, node);
  return ps;
}

std::string fusion_name(const ::testing::TestParamInfo<FusionParam>& p) {
  const auto& [backend, dk, t, node] = p.param;
  return backend + "_dk" + std::to_string(dk) + "_T" + std::to_string(t) + (node ? "_node" : "_input");
}

INSTANTIATE_TEST_SUITE_P(All, GdnInputPath, ::testing::ValuesIn(fusion_params()), fusion_name);

}  // namespace
}  // namespace gl::test
