// quant_test.cpp - Q8_0 block scale and error bounds, and convert_row across every pair of types.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/fill.h"
#include "common/ref_array.h"
#include "ggml-lite/dtype.h"

namespace gl {
namespace {

constexpr DType kAllTypes[] = {DType::F32, DType::F16, DType::BF16, DType::I32, DType::Q8_0};

// Blocks whose magnitudes span several decades, so scales vary block to block.
std::vector<float> varied_blocks(int64_t n, test::Rng& rng) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t b = 0; b < n / kQ8_0Block; ++b) {
    const double mag = std::pow(10.0, rng.uniform(-3.0, 3.0));
    for (int i = 0; i < kQ8_0Block; ++i) {
      const double m = rng.uniform(0.01, 1.0) * mag;
      x[static_cast<size_t>(b * kQ8_0Block + i)] = static_cast<float>(rng.coin(0.5) ? -m : m);
    }
  }
  return x;
}

TEST(Q8_0, ScaleIsMaxAbsOver127AndErrorWithinHalfAStep) {
  test::Rng rng(3);
  const int64_t n = 32 * 64;
  const std::vector<float> x = varied_blocks(n, rng);
  std::vector<BlockQ8_0> q(static_cast<size_t>(n / kQ8_0Block));
  quantize_row_q8_0(x.data(), q.data(), n);
  std::vector<float> y(static_cast<size_t>(n));
  dequantize_row_q8_0(q.data(), y.data(), n);
  for (size_t b = 0; b < q.size(); ++b) {
    const float* xb = x.data() + b * kQ8_0Block;
    float amax = 0.0f;
    for (int i = 0; i < kQ8_0Block; ++i) amax = std::max(amax, std::fabs(xb[i]));
    const double d_exact = static_cast<double>(amax) / 127.0;
    const double d_stored = test::half_to_double(q[b].d);
    ASSERT_EQ(d_stored, test::round_to_half(static_cast<double>(amax / 127.0f))) << "block " << b;
    bool has_127 = false;
    for (int i = 0; i < kQ8_0Block; ++i) {
      const double xi = static_cast<double>(xb[i]);
      const int qi = q[b].qs[i];
      has_127 |= std::abs(qi) == 127;
      // x * (1/d) is rounded in f32 before lround: allow 1e-5 of a step beyond d/2.
      ASSERT_LE(std::fabs(xi - d_exact * qi), d_exact * (0.5 + 1e-5)) << "block " << b << " elem " << i;
      const double deq = static_cast<double>(y[b * kQ8_0Block + static_cast<size_t>(i)]);
      ASSERT_EQ(deq, d_stored * qi) << "dequantize is d * q exactly";
      ASSERT_LE(std::fabs(xi - deq), d_exact * (0.5 + 1e-5) + std::fabs(d_stored - d_exact) * std::abs(qi));
    }
    EXPECT_TRUE(has_127) << "the largest element maps to +-127 in block " << b;
  }
}

TEST(Q8_0, ZeroBlockHasZeroScale) {
  std::vector<float> x(64, 0.0f), y(64, 1.0f);
  x[40] = 0.5f;  // second block non-zero
  std::vector<BlockQ8_0> q(2);
  quantize_row_q8_0(x.data(), q.data(), 64);
  EXPECT_EQ(q[0].d, 0);
  for (int8_t v : q[0].qs) EXPECT_EQ(v, 0);
  EXPECT_EQ(q[1].qs[8], 127);
  dequantize_row_q8_0(q.data(), y.data(), 64);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[static_cast<size_t>(i)], 0.0f);
}

// Expected value of v stored in t, where that is a plain rounding (Q8_0 is checked by its bound).
double stored(DType t, double v) {
  switch (t) {
    case DType::F32: return static_cast<double>(static_cast<float>(v));
    case DType::F16: return test::round_to_half(v);
    case DType::BF16: return test::round_to_bf16(v);
    case DType::I32: return std::trunc(v);  // values, not bits; toward zero like a C cast
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_NL:
    case DType::IQ4_XS:
    case DType::MXFP4: break;
  }
  return v;
}

TEST(ConvertRow, EveryTypePair) {
  const int64_t n = 544;  // 17 Q8_0 blocks; more than one 256-element chunk, not a multiple of it
  const std::array<int64_t, 4> ne{n, 1, 1, 1};
  for (DType st : kAllTypes) {
    for (DType dt : kAllTypes) {
      SCOPED_TRACE(std::string(dtype_name(st)) + " -> " + std::string(dtype_name(dt)));
      test::Rng rng(test::seed_from_name(dtype_name(st)) ^ test::seed_from_name(dtype_name(dt)));
      const std::vector<uint8_t> src = test::encode(st, ne, test::generate(test::Fill::integers(-60, 60), ne, rng));
      std::vector<uint8_t> dst(row_bytes(dt, n)), via_f32(row_bytes(dt, n));
      convert_row(st, src.data(), dt, dst.data(), n);
      // Defined as: decode to f32, then encode.
      std::vector<float> f(static_cast<size_t>(n));
      to_float(st, src.data(), f.data(), n);
      from_float(dt, f.data(), via_f32.data(), n);
      ASSERT_EQ(0, std::memcmp(dst.data(), via_f32.data(), dst.size()));

      Tensor ts, td;
      ts.type = st;
      td.type = dt;
      ts.ne = td.ne = ne;
      set_contiguous_strides(ts);
      set_contiguous_strides(td);
      const test::RefArray sv = test::decode(ts, src), dv = test::decode(td, dst);
      for (int64_t i = 0; i < n; ++i) {
        const double v = sv.v[static_cast<size_t>(i)], got = dv.v[static_cast<size_t>(i)];
        if (dt == DType::Q8_0) {
          ASSERT_LE(std::fabs(got - v), 60.0 / 127.0 * 0.51 + 60.0 * 1e-3) << "element " << i;  // d/2 + fp16(d)
        } else {
          ASSERT_EQ(got, stored(dt, v)) << "element " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace gl
