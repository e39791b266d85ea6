// dtype_test.cpp - fp16/bf16 conversions against float64 references, Q8_0 error bounds, convert_row.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/fill.h"
#include "common/ref_array.h"
#include "ggml-lite/dtype.h"

namespace gl {
namespace {

float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
bool half_is_nan(fp16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool bf16_is_nan(bf16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0; }

TEST(Fp16, DecodesEveryBitPatternExactly) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const double want = test::half_to_double(static_cast<fp16_t>(h));
    const float got = fp16_to_fp32(static_cast<fp16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << h;
    } else {
      ASSERT_EQ(static_cast<double>(got), want) << std::hex << h;
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << std::hex << h;
    }
  }
}

TEST(Fp16, RoundTripsEveryBitPattern) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const auto hh = static_cast<fp16_t>(h);
    const fp16_t back = fp32_to_fp16(fp16_to_fp32(hh));
    if (half_is_nan(hh)) {
      EXPECT_TRUE(half_is_nan(back)) << std::hex << h << " -> " << back;  // NaN stays NaN
    } else {
      ASSERT_EQ(back, hh) << std::hex << h;
    }
  }
}

// The midpoint between two adjacent halves rounds to the one with an even
// mantissa; one float ulp either side rounds to the nearer.
TEST(Fp16, HalfwayCasesRoundToNearestEven) {
  for (uint32_t h = 0; h < 0x7bff; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const auto lo = static_cast<fp16_t>(h | sign), hi = static_cast<fp16_t>((h + 1) | sign);
      const double mid = (test::half_to_double(lo) + test::half_to_double(hi)) / 2;
      const auto f = static_cast<float>(mid);
      ASSERT_EQ(static_cast<double>(f), mid) << "midpoint must be exact in f32";
      const fp16_t even = (h & 1u) ? hi : lo;
      ASSERT_EQ(fp32_to_fp16(f), even) << std::hex << h << " sign " << sign;
      const float toward_zero = std::nextafter(f, 0.0f), away = std::nextafter(f, 2 * f);
      ASSERT_EQ(fp32_to_fp16(toward_zero), lo) << std::hex << h;
      ASSERT_EQ(fp32_to_fp16(away), hi) << std::hex << h;
    }
  }
}

TEST(Fp16, OverflowUnderflowAndSpecials) {
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(fp32_to_fp16(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);  // the halfway point to 2^16 ties up to inf
  EXPECT_EQ(fp32_to_fp16(-1e30f), 0xfc00);
  EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(0x1p-25f), 0x0000);  // half the smallest subnormal: ties to even (0)
  EXPECT_EQ(fp32_to_fp16(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_TRUE(half_is_nan(fp32_to_fp16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(half_is_nan(fp32_to_fp16(bits_to_float(0x7f800001u))));  // a NaN with only low mantissa bits
}

// Random floats over the whole exponent range against a float64 rounding reference.
TEST(Fp16, MatchesFloat64RoundingOnRandomFloats) {
  test::Rng rng(1);
  for (int i = 0; i < 200000; ++i) {
    const auto bits = static_cast<uint32_t>(rng.below(int64_t{1} << 32));
    const float f = bits_to_float(bits);
    if (!std::isfinite(f)) continue;
    const double want = test::round_to_half(static_cast<double>(f));
    const double got = test::half_to_double(fp32_to_fp16(f));
    ASSERT_EQ(got, want) << std::hexfloat << f;
  }
}

TEST(Bf16, RoundTripsEveryBitPattern) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const auto hh = static_cast<bf16_t>(h);
    const float f = bf16_to_fp32(hh);
    const double want = test::bf16_to_double(hh);
    if (bf16_is_nan(hh)) {
      EXPECT_TRUE(std::isnan(f));
      EXPECT_TRUE(bf16_is_nan(fp32_to_bf16(f))) << std::hex << h;
    } else {
      ASSERT_EQ(static_cast<double>(f), want);
      ASSERT_EQ(fp32_to_bf16(f), hh) << std::hex << h;
    }
  }
}

TEST(Bf16, HalfwayCasesRoundToNearestEven) {
  for (uint32_t h = 0; h < 0x7f7f; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const uint32_t hs = h | sign;
      const float mid = bits_to_float((hs << 16) | 0x8000u);  // exactly between hs and hs + 1
      const auto even = static_cast<bf16_t>((h & 1u) ? hs + 1 : hs);
      ASSERT_EQ(fp32_to_bf16(mid), even) << std::hex << h << " sign " << sign;
      ASSERT_EQ(fp32_to_bf16(bits_to_float((hs << 16) | 0x7fffu)), hs) << std::hex << h;
      ASSERT_EQ(fp32_to_bf16(bits_to_float((hs << 16) | 0x8001u)), hs + 1) << std::hex << h;
    }
  }
}

TEST(Bf16, MatchesFloat64RoundingOnRandomFloats) {
  test::Rng rng(2);
  for (int i = 0; i < 200000; ++i) {
    const float f = bits_to_float(static_cast<uint32_t>(rng.below(int64_t{1} << 32)));
    if (!std::isfinite(f)) continue;
    ASSERT_EQ(test::bf16_to_double(fp32_to_bf16(f)), test::round_to_bf16(static_cast<double>(f))) << std::hexfloat << f;
  }
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds past the largest bf16
  EXPECT_TRUE(bf16_is_nan(fp32_to_bf16(bits_to_float(0x7f800001u))));  // NaN payload below bit 16 stays NaN
}

}  // namespace
}  // namespace gl
