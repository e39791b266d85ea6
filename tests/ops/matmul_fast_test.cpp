// matmul_fast_test.cpp - matrix products of a few activation rows on every compiled backend at
// both precisions: a product of 2..8 rows (9 on the CPU; CUDA sends more than 8 to cuBLAS, which
// no verify reaches) gives, bit for bit, the results of one row at a time (what greedy MTP parity
// needs: a verify of K + 1 rows must reproduce K + 1 decode steps). And the CPU's
// Precision::FAST (int8 activations for Q4_0, Q8_0, Q4_K, Q5_K, Q6_K weights, BF16 ones for BF16
// weights) really differs from
// EXACT for those types, while EXACT is untouched by the switch. The error bounds are in the op
// harness (cases_matmul.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/backends.h"
#include "ops/matmul_product.h"

namespace gl::test {
namespace {

constexpr DType kFastTypes[] = {DType::Q4_0, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::BF16};
constexpr DType kAllWeightTypes[] = {DType::F32,  DType::F16,    DType::BF16,   DType::Q8_0, DType::Q4_0, DType::Q4_1,
                                     DType::Q5_0, DType::Q5_1,   DType::Q2_K,   DType::Q3_K, DType::Q4_K, DType::Q5_K,
                                     DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4};

// Shapes of both tests: K = 512 (2 super-blocks, 16 legacy blocks); N = 97 (a short last tile).
// The rows test also takes N = 1031: enough weight rows for blocks of several (Vulkan's GEMV),
// and K = 2048, whose rows are whole 16-byte words for every type (Q6_K's 210-byte blocks too:
// CUDA's staged GEMV, gemv_stream.cuh, copies such rows into shared memory).
constexpr int64_t kK = 512, kN = 97, kWideN = 1031, kLongK = 2048;

struct Operands {
  std::vector<char> w;
  std::vector<float> x;
};

Operands operands(DType t, int64_t m, int64_t n = kN, int64_t k = kK) {
  const std::vector<float> wf = random_floats(k * n, 1);
  Operands o{std::vector<char>(row_bytes(t, k) * n), random_floats(k * m, 2)};
  from_float(t, wf.data(), o.w.data(), k * n);
  return o;
}

using RowsParam = std::tuple<std::string, Precision, DType>;

class MatmulRows : public ::testing::TestWithParam<RowsParam> {};

TEST_P(MatmulRows, RowsGiveTheBitsOfOneRowAtATime) {
  const auto& [backend, precision, type] = GetParam();
  const int64_t max_rows = backend == "cpu" ? 9 : 8;  // register groups of 4, 4 and 1 on the CPU
  for (const auto& [k, n] : {std::pair{kK, kN}, std::pair{kK, kWideN}, std::pair{kLongK, kN}}) {
    const Operands o = operands(type, max_rows, n, k);
    std::vector<std::vector<float>> one;
    for (int64_t r = 0; r < max_rows; ++r) {
      const std::vector<float> row(o.x.begin() + r * k, o.x.begin() + (r + 1) * k);
      one.push_back(product(backend, type, o.w, row, k, n, 1, precision));
      ASSERT_EQ(one.back().size(), static_cast<size_t>(n));
    }
    for (int64_t m : {int64_t{2}, int64_t{3}, int64_t{4}, max_rows}) {
      const std::vector<float> x(o.x.begin(), o.x.begin() + m * k);
      const std::vector<float> all = product(backend, type, o.w, x, k, n, m, precision);
      ASSERT_EQ(all.size(), static_cast<size_t>(n * m));
      for (int64_t r = 0; r < m; ++r)
        EXPECT_EQ(std::memcmp(one[static_cast<size_t>(r)].data(), all.data() + r * n, n * sizeof(float)), 0)
            << "K = " << k << ", N = " << n << ", " << m << " rows, row " << r;
    }
  }
}

std::vector<RowsParam> rows_params() {
  std::vector<RowsParam> ps;
  for (const std::string& b : compiled_backend_names())
    for (Precision p : {Precision::EXACT, Precision::FAST})
      for (DType t : kAllWeightTypes) ps.emplace_back(b, p, t);
  return ps;
}

std::string rows_name(const ::testing::TestParamInfo<RowsParam>& p) {
  const auto& [backend, precision, type] = p.param;
  return backend + (precision == Precision::FAST ? "_fast_" : "_exact_") + std::string(dtype_name(type));
}

INSTANTIATE_TEST_SUITE_P(All, MatmulRows, ::testing::ValuesIn(rows_params()), rows_name);

class MatmulFast : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulFast, FastQuantizesActivationsAndExactDoesNot) {
  constexpr int64_t kM = 9;
  const Operands o = operands(GetParam(), kM);
  const std::vector<float> fast = product("cpu", GetParam(), o.w, o.x, kK, kN, kM, Precision::FAST);
  const std::vector<float> exact = product("cpu", GetParam(), o.w, o.x, kK, kN, kM, Precision::EXACT);
  const std::vector<float> exact_again = product("cpu", GetParam(), o.w, o.x, kK, kN, kM, Precision::EXACT);
  ASSERT_EQ(fast.size(), exact.size());
  EXPECT_EQ(std::memcmp(exact.data(), exact_again.data(), exact.size() * sizeof(float)), 0);
  EXPECT_GT(nmse(fast, exact), 0.0) << "FAST took the exact path";
  EXPECT_LT(nmse(fast, exact), 1e-4) << "the op harness's FAST bound (kNmseQ8Out)";
}

std::string type_name(const ::testing::TestParamInfo<DType>& p) { return std::string(dtype_name(p.param)); }

INSTANTIATE_TEST_SUITE_P(Types, MatmulFast, ::testing::ValuesIn(kFastTypes), type_name);

// CUDA's staged GEMV (gemv_stream.cuh) gives block b the row groups b, b + G, ... and refills its two
// shared-memory stages as it goes; the products above fit the grid in one pass. Here N = 60000
// weight rows of K = 2048 (the bytes of 1031 distinct rows, repeated): several row groups a
// resident block on an H100 or H200. The staged products of 1, 2 and 4 activation rows equal, bit
// for bit, gemv_kernel's product of 8, and each staged output equals the one 1031 rows earlier
// (the same weights: a stage read before its copy landed, or refilled while read, would differ).
TEST(MatmulRowsCuda, StagedRowGroupsPastTheGrid) {
  const std::vector<std::string> names = compiled_backend_names();
  if (std::find(names.begin(), names.end(), "cuda") == names.end()) GTEST_SKIP() << "no CUDA device";
  constexpr int64_t k = 2048, distinct = 1031, n = 60000, max_rows = 8;
  for (const DType t : {DType::Q4_K, DType::Q6_K, DType::Q8_0}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Operands o = operands(t, max_rows, distinct, k);
    const size_t rb = row_bytes(t, k);
    std::vector<char> w(rb * n);
    for (int64_t r = 0; r < n; ++r) std::memcpy(w.data() + r * rb, o.w.data() + (r % distinct) * rb, rb);
    const std::vector<float> all = product("cuda", t, w, o.x, k, n, max_rows, Precision::FAST);
    ASSERT_EQ(all.size(), static_cast<size_t>(n * max_rows));
    for (const int64_t m : {int64_t{1}, int64_t{2}, int64_t{4}}) {
      const std::vector<float> x(o.x.begin(), o.x.begin() + m * k);
      const std::vector<float> got = product("cuda", t, w, x, k, n, m, Precision::FAST);
      ASSERT_EQ(got.size(), static_cast<size_t>(n * m));
      EXPECT_EQ(std::memcmp(got.data(), all.data(), got.size() * sizeof(float)), 0) << m << " rows";
      int64_t off_period = 0;
      for (int64_t i = 0; i < n * m; ++i)
        if (i % n >= distinct && std::memcmp(&got[i], &got[i - distinct], sizeof(float)) != 0) ++off_period;
      EXPECT_EQ(off_period, 0) << m << " rows: outputs that differ from the row 1031 before";
    }
  }
}

// CUDA's Q8_0 prefill on tensor cores (matmul_q8_mma.cu) runs only where its 128 x 128 output
// tiles fill the device, which the op cases' small shapes never do. Here a 9B-like product: 500
// rows (a partial last tile) by 4095 weight rows (128 tiles on an H100's or H200's 132 SMs; odd,
// so a lone last column), K = 256, against the CPU. EXACT: within f32 rounding (the activations'
// F16 halves carry ~22 bits, the quants are exact); FAST keeps cuBLAS on F16-rounded weights
// (OpCase::kDeviceFastNmse). CUDA only: the CPU reference alone takes ~1 s, lavapipe far longer.
TEST(Q8_0Prefill, FullTilesMatchTheCpu) {
  const std::vector<std::string> names = compiled_backend_names();
  if (std::find(names.begin(), names.end(), "cuda") == names.end()) GTEST_SKIP() << "no CUDA device";
  constexpr int64_t k = 256, n = 4095, m = 500;
  const std::vector<float> wf = random_floats(k * n, 3), x = random_floats(k * m, 4);
  std::vector<char> w(row_bytes(DType::Q8_0, k) * n);
  from_float(DType::Q8_0, wf.data(), w.data(), k * n);
  const std::vector<float> want = product("cpu", DType::Q8_0, w, x, k, n, m, Precision::EXACT);
  for (const auto& [p, bound] : {std::pair{Precision::EXACT, 1e-9}, std::pair{Precision::FAST, 1e-5}}) {
    SCOPED_TRACE(p == Precision::FAST ? "fast" : "exact");
    const std::vector<float> got = product("cuda", DType::Q8_0, w, x, k, n, m, p);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_LT(nmse(got, want), bound);
  }
}

}  // namespace
}  // namespace gl::test
