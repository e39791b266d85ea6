// attn_rows_test.cpp - FLASH_ATTN's verify rows give, bit for bit, the decode rows they stand for,
// on every compiled backend at both precisions, over F32 and F16 caches (what greedy MTP parity
// needs at any context length). As in the model: the verify block's K/V views and mask span a
// larger bucket than each decode step's, the rows see the causal span up to their own position, and
// the spans cross several key splits (CUDA cuts decode spans into splits of 128 or 256 keys and
// merges them). A few keys inside the span are masked.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "common/backends.h"
#include "ops/attn_graph.h"
#include "ops/matmul_product.h"

namespace gl::test {
namespace {

struct Shape {
  int64_t d, heads, kv_heads;
  int64_t pos;  // the first verify row's position: it sees keys 0 .. pos
};

constexpr int64_t kRows = 4;  // a verify of K = 3 drafts

// The cache's first `keys` rows as K or V [d, kv_heads, keys].
std::vector<float> prefix(const std::vector<float>& cache, const Shape& s, int64_t keys) {
  return {cache.begin(), cache.begin() + s.d * s.kv_heads * keys};
}

// Row t (of rows t0 .. t0 + n - 1) sees keys 0 .. pos + t, less every 97th.
std::vector<float> stair_mask(const Shape& s, int64_t keys, int64_t t0, int64_t n) {
  std::vector<float> m(static_cast<size_t>(keys * n), -INFINITY);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j <= s.pos + t0 + r; ++j)
      if (j % 97 != 3) m[static_cast<size_t>(r * keys + j)] = 0.0f;
  return m;
}

struct Run {
  std::string backend;
  Precision precision;
  DType kv_type;
};

// flash_attn of q [d, heads, n] over `keys` keys on the run's backend.
std::vector<float> attend(const Run& run, const Shape& s, int64_t keys, int64_t n, const std::vector<float>& q,
                          const std::vector<float>& k, const std::vector<float>& v, const std::vector<float>& mask) {
  std::unique_ptr<Backend> be = make_test_backend(run.backend);
  if (!be) {
    ADD_FAILURE() << "backend " << run.backend << " is not available";
    return {};
  }
  be->set_precision(run.precision);
  return test::attend(*be, {s.d, s.heads, s.kv_heads, n, keys}, run.kv_type, q, k, v, mask);
}

using Param = std::tuple<Run, Shape>;

class AttnRows : public ::testing::TestWithParam<Param> {};

TEST_P(AttnRows, VerifyRowsGiveTheBitsOfTheirDecodeRows) {
  const auto& [run, s] = GetParam();
  const int64_t decode_keys = (s.pos + kRows + 255) / 256 * 256;  // each decode step's bucket
  const int64_t verify_keys = decode_keys + 256;                  // the verify block's, one larger
  const int64_t row = s.d * s.heads;
  const std::vector<float> q = random_floats(row * kRows, 1);
  const std::vector<float> k = random_floats(s.d * s.kv_heads * verify_keys, 2);
  const std::vector<float> v = random_floats(s.d * s.kv_heads * verify_keys, 3);
  const std::vector<float> all = attend(run, s, verify_keys, kRows, q, k, v, stair_mask(s, verify_keys, 0, kRows));
  ASSERT_EQ(all.size(), static_cast<size_t>(row * kRows));
  const std::vector<float> kd = prefix(k, s, decode_keys), vd = prefix(v, s, decode_keys);
  for (int64_t t = 0; t < kRows; ++t) {
    const std::vector<float> qt(q.begin() + t * row, q.begin() + (t + 1) * row);
    const std::vector<float> one = attend(run, s, decode_keys, 1, qt, kd, vd, stair_mask(s, decode_keys, t, 1));
    ASSERT_EQ(one.size(), static_cast<size_t>(row));
    EXPECT_EQ(std::memcmp(one.data(), all.data() + t * row, row * sizeof(float)), 0) << "row " << t;
  }
  double sum = 0.0;
  for (float x : all) sum += std::fabs(x);
  EXPECT_GT(sum, 0.0);
}

std::vector<Param> params() {
  std::vector<Param> ps;
  // The 35B-A3B's attention (GQA group 8, Dk = Dv = 256) and a group of 3 with 128-wide heads.
  const Shape shapes[] = {{256, 16, 2, 1000}, {128, 6, 2, 300}};
  for (const std::string& b : compiled_backend_names())
    for (Precision p : {Precision::EXACT, Precision::FAST})
      for (DType kv : {DType::F32, DType::F16})
        for (const Shape& s : shapes) ps.emplace_back(Run{b, p, kv}, s);
  return ps;
}

std::string name(const ::testing::TestParamInfo<Param>& p) {
  const auto& [run, s] = p.param;
  return run.backend + (run.precision == Precision::FAST ? "_fast_" : "_exact_") +
         std::string(dtype_name(run.kv_type)) + "_d" + std::to_string(s.d) + "_h" + std::to_string(s.heads) + "_kv" +
         std::to_string(s.kv_heads) + "_pos" + std::to_string(s.pos);
}

INSTANTIATE_TEST_SUITE_P(All, AttnRows, ::testing::ValuesIn(params()), name);

}  // namespace
}  // namespace gl::test
