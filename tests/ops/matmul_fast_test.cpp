// matmul_fast_test.cpp - the CPU's Precision::FAST matrix products (int8 activations for Q4_0,
// Q8_0, Q4_K, Q5_K, Q6_K weights): a product of several activation rows gives, bit for bit, the
// results of one row at a time (what greedy MTP parity needs: a verify of K + 1 rows must
// reproduce K + 1 decode steps), FAST really differs from EXACT for those types, and EXACT is
// untouched by the switch. The error bounds are in the op harness (cases_matmul.cpp).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "ggml-lite/context.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/executor.h"
#include "ggml-lite/ops.h"

namespace gl::test {
namespace {

constexpr DType kFastTypes[] = {DType::Q4_0, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};

std::vector<float> random_floats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = nd(rng);
  return v;
}

// w [k, n] (quantized to t) times x [k, m] on a 2-thread CPU backend at precision p.
std::vector<float> product(DType t, const std::vector<char>& w, const std::vector<float>& x, int64_t k, int64_t n,
                           int64_t m, Precision p) {
  Context ctx;
  Tensor* wt = ctx.new_tensor(t, {k, n}, "w");
  Tensor* xt = ctx.new_tensor(DType::F32, {k, m}, "x");
  wt->flags |= TENSOR_INPUT;
  xt->flags |= TENSOR_INPUT;
  Tensor* y = mul_mat(ctx, wt, xt);
  Graph g = Graph::build({y});
  auto be = cpu::make_backend({.n_threads = 2});
  be->set_precision(p);
  Executor ex({be.get()});
  std::vector<float> out;
  if (Status s = ex.allocate(g); !s) {
    ADD_FAILURE() << "allocate: " << s.error();
    return out;
  }
  ex.set_input(*wt, w.data());
  ex.set_input(*xt, x.data());
  if (Status s = ex.compute(g); !s) {
    ADD_FAILURE() << "compute: " << s.error();
    return out;
  }
  out.resize(static_cast<size_t>(n * m));
  ex.get_output(*y, out.data());
  return out;
}

class MatmulFast : public ::testing::TestWithParam<DType> {
 protected:
  // K = 512 (2 super-blocks, 16 legacy blocks); N = 97 (a short last tile); M = 9 rows (register
  // groups of 4, 4 and 1), enough work for two threads where one row runs on one.
  static constexpr int64_t kK = 512, kN = 97, kM = 9;
  void SetUp() override {
    const std::vector<float> wf = random_floats(kK * kN, 1);
    w_.resize(row_bytes(GetParam(), kK) * kN);
    from_float(GetParam(), wf.data(), w_.data(), kK * kN);
    x_ = random_floats(kK * kM, 2);
  }
  std::vector<char> w_;
  std::vector<float> x_;
};

TEST_P(MatmulFast, RowsGiveTheBitsOfOneRowAtATime) {
  const std::vector<float> all = product(GetParam(), w_, x_, kK, kN, kM, Precision::FAST);
  ASSERT_EQ(all.size(), static_cast<size_t>(kN * kM));
  for (int64_t r = 0; r < kM; ++r) {
    const std::vector<float> row(x_.begin() + r * kK, x_.begin() + (r + 1) * kK);
    const std::vector<float> one = product(GetParam(), w_, row, kK, kN, 1, Precision::FAST);
    ASSERT_EQ(one.size(), static_cast<size_t>(kN));
    EXPECT_EQ(std::memcmp(one.data(), all.data() + r * kN, kN * sizeof(float)), 0) << "row " << r;
  }
}

TEST_P(MatmulFast, FastQuantizesActivationsAndExactDoesNot) {
  const std::vector<float> fast = product(GetParam(), w_, x_, kK, kN, kM, Precision::FAST);
  const std::vector<float> exact = product(GetParam(), w_, x_, kK, kN, kM, Precision::EXACT);
  const std::vector<float> exact_again = product(GetParam(), w_, x_, kK, kN, kM, Precision::EXACT);
  ASSERT_EQ(fast.size(), exact.size());
  EXPECT_EQ(std::memcmp(exact.data(), exact_again.data(), exact.size() * sizeof(float)), 0);
  double err = 0.0, ref = 0.0;
  for (size_t i = 0; i < fast.size(); ++i) {
    err += (static_cast<double>(fast[i]) - exact[i]) * (static_cast<double>(fast[i]) - exact[i]);
    ref += static_cast<double>(exact[i]) * exact[i];
  }
  EXPECT_GT(err, 0.0) << "FAST took the exact path";
  EXPECT_LT(err / ref, 1e-4) << "the op harness's FAST bound (kNmseQ8Out)";
}

std::string type_name(const ::testing::TestParamInfo<DType>& p) { return std::string(dtype_name(p.param)); }

INSTANTIATE_TEST_SUITE_P(Types, MatmulFast, ::testing::ValuesIn(kFastTypes), type_name);

}  // namespace
}  // namespace gl::test
