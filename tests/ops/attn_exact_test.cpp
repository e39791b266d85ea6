// attn_exact_test.cpp - the CPU's EXACT FLASH_ATTN over dense F32 or F16 rows (the model's KV
// cache, either type), which takes eight keys or eight value columns per vector instruction, gives
// the bits of the scalar loop it replaced. The scalar loop still runs for BF16 K/V; with K/V values
// that BF16 and F16 both hold exactly, the three layouts compute the same float operations on the
// same numbers, so the outputs must match bit for bit. Shapes: one decode row and a verify block, a key count that is
// not a multiple of 8 (the scalar tail), GQA, a mask with -inf entries, Dk = Dv = 64 and Dk = 40 (vector and tail).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ggml-lite/context.h"
#include "ggml-lite/cpu.h"
#include "ops/attn_graph.h"

namespace gl::test {
namespace {

struct Shape {
  int64_t dk, heads, kv_heads, tokens, keys;
};

// Normal values rounded to BF16's 8 significant bits, and away from F16's subnormals: exact in both.
std::vector<float> f16_exact(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) {
    x = bf16_to_fp32(fp32_to_bf16(nd(rng)));
    if (std::fabs(x) < 1e-3f) x = 0.0f;
  }
  return v;
}

// FLASH_ATTN at EXACT on a 2-thread CPU backend with K and V stored as kv_type.
std::vector<float> attend(const Shape& s, DType kv_type, const std::vector<float>& q, const std::vector<float>& k,
                          const std::vector<float>& v, const std::vector<float>& mask) {
  auto be = cpu::make_backend({.n_threads = 2});
  return test::attend(*be, {s.dk, s.heads, s.kv_heads, s.tokens, s.keys}, kv_type, q, k, v, mask);
}

class AttnExact : public ::testing::TestWithParam<Shape> {};

TEST_P(AttnExact, DenseF32AndF16RowsGiveTheBitsOfTheScalarLoop) {
  const Shape s = GetParam();
  const std::vector<float> q = f16_exact(s.dk * s.heads * s.tokens, 1);
  const std::vector<float> k = f16_exact(s.dk * s.kv_heads * s.keys, 2);
  const std::vector<float> v = f16_exact(s.dk * s.kv_heads * s.keys, 3);
  // Causal over the last `tokens` positions, plus a few masked keys inside the span.
  std::vector<float> mask(static_cast<size_t>(s.keys * s.tokens), 0.0f);
  for (int64_t t = 0; t < s.tokens; ++t)
    for (int64_t j = 0; j < s.keys; ++j)
      if (j > s.keys - s.tokens + t || j % 11 == 5) mask[static_cast<size_t>(t * s.keys + j)] = -INFINITY;
  const std::vector<float> ref = attend(s, DType::BF16, q, k, v, mask);
  const std::vector<float> vec = attend(s, DType::F32, q, k, v, mask);
  const std::vector<float> vec16 = attend(s, DType::F16, q, k, v, mask);
  ASSERT_EQ(vec.size(), ref.size());
  ASSERT_EQ(vec16.size(), ref.size());
  ASSERT_FALSE(vec.empty());
  EXPECT_EQ(std::memcmp(vec.data(), ref.data(), vec.size() * sizeof(float)), 0) << "F32 rows";
  EXPECT_EQ(std::memcmp(vec16.data(), ref.data(), vec16.size() * sizeof(float)), 0) << "F16 rows";
  double sum = 0;
  for (float x : vec) sum += std::fabs(x);
  EXPECT_GT(sum, 0.0);  // not all zeros
}

std::string shape_name(const ::testing::TestParamInfo<Shape>& p) {
  const Shape& s = p.param;
  return "dk" + std::to_string(s.dk) + "_h" + std::to_string(s.heads) + "_kv" + std::to_string(s.kv_heads) + "_t" +
         std::to_string(s.tokens) + "_n" + std::to_string(s.keys);
}

INSTANTIATE_TEST_SUITE_P(, AttnExact,
                         ::testing::Values(Shape{64, 4, 2, 1, 301}, Shape{64, 4, 2, 3, 1027}, Shape{40, 2, 1, 4, 77},
                                           Shape{64, 4, 4, 2, 8}, Shape{64, 6, 2, 1, 19}),
                         shape_name);

}  // namespace
}  // namespace gl::test
