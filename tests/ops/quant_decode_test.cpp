// quant_decode_test.cpp - the CPU decodes weights of the llama.cpp quant family bit for bit as the
// reference dequantizers (dtype_traits(t).to_float) do, on both matmul paths: weight rows read in
// place (one activation row) and rows converted into scratch first (many). A product with one-hot
// activation rows picks single weights out exactly (w * 1 plus zeros), so out[j][i] == w[i][j].
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/fill.h"
#include "ggml-lite/context.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/executor.h"
#include "ggml-lite/graph.h"
#include "ggml-lite/ops.h"
#include "ops/cases.h"

namespace gl {
namespace {

struct Weights {
  int64_t k, n;
  std::vector<char> bytes;  // n rows of k elements in type t
  std::vector<float> ref;   // the reference dequantizer's values
};

Weights random_weights(DType t, int64_t k, int64_t n) {
  Weights w{k, n, std::vector<char>(row_bytes(t, k) * static_cast<size_t>(n)), std::vector<float>(k * n)};
  test::Rng rng(static_cast<uint64_t>(t) + 7);
  std::vector<float> x(static_cast<size_t>(k * n));
  // Rows of different magnitudes, some negative-heavy, so scales and mins of every sign occur.
  for (int64_t r = 0; r < n; ++r) {
    const auto rd = static_cast<double>(r);
    for (int64_t i = 0; i < k; ++i)
      x[r * k + i] = static_cast<float>((0.1 + rd) * rng.uniform(-1.0, 1.0) - (r % 3 == 1 ? 0.5 * rd : 0.0));
  }
  dtype_traits(t).from_float(x.data(), w.bytes.data(), k * n);
  dtype_traits(t).to_float(w.bytes.data(), w.ref.data(), k * n);
  return w;
}

// out[j][i] = w[i] . x[j] on the CPU backend, x rows given (m of them).
std::vector<float> product(DType t, const Weights& w, const std::vector<float>& x, int64_t m) {
  Context ctx;
  Tensor* wt = ctx.new_tensor(t, {w.k, w.n}, "w");
  Tensor* xt = ctx.new_tensor(DType::F32, {w.k, m}, "x");
  wt->flags |= TENSOR_INPUT;
  xt->flags |= TENSOR_INPUT;
  Tensor* y = mul_mat(ctx, wt, xt);
  Graph g = Graph::build({y});
  auto cpu = cpu::make_backend({.n_threads = 2});
  Executor ex({cpu.get()});
  std::vector<float> out(static_cast<size_t>(w.n * m));
  EXPECT_TRUE(ex.allocate(g).ok());
  ex.set_input(*wt, w.bytes.data());
  ex.set_input(*xt, x.data());
  EXPECT_TRUE(ex.compute(g).ok());
  ex.get_output(*y, out.data());
  return out;
}

class QuantDecodeTest : public ::testing::TestWithParam<DType> {};

// All k one-hot rows at once: blocks of many rows convert the weight rows into scratch.
TEST_P(QuantDecodeTest, ConvertedRowsEqualTheReference) {
  const DType t = GetParam();
  const int64_t k = dtype_traits(t).block_size == 256 ? 512 : 96;
  const Weights w = random_weights(t, k, 9);
  std::vector<float> eye(static_cast<size_t>(k * k), 0.0f);
  for (int64_t j = 0; j < k; ++j) eye[j * k + j] = 1.0f;
  const std::vector<float> out = product(t, w, eye, k);
  for (int64_t j = 0; j < k; ++j)
    for (int64_t i = 0; i < w.n; ++i) ASSERT_EQ(out[j * w.n + i], w.ref[i * k + j]) << "row " << i << " element " << j;
}

// One one-hot row at a time: decode steps read the weight rows in place (decoded per chunk).
TEST_P(QuantDecodeTest, InPlaceRowsEqualTheReference) {
  const DType t = GetParam();
  const int64_t k = dtype_traits(t).block_size == 256 ? 512 : 96;
  const Weights w = random_weights(t, k, 9);
  for (int64_t j = 0; j < k; j += 5) {
    std::vector<float> e(static_cast<size_t>(k), 0.0f);
    e[j] = 1.0f;
    const std::vector<float> out = product(t, w, e, 1);
    for (int64_t i = 0; i < w.n; ++i) ASSERT_EQ(out[i], w.ref[i * k + j]) << "row " << i << " element " << j;
  }
}

INSTANTIATE_TEST_SUITE_P(QuantFamily, QuantDecodeTest, ::testing::ValuesIn(test::kQuantFamily),
                         [](const ::testing::TestParamInfo<DType>& p) {
                           std::string n(dtype_name(p.param));
                           return n;
                         });

}  // namespace
}  // namespace gl
