// round_even_test.cpp - quant::round_even (quants/quant_search.h), the rounding every reference
// quantizer takes its levels by: the same integer as std::nearbyint (ties to even) everywhere,
// through its fast path below 2^22 and its fallback above.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "quants/quant_search.h"

namespace gl::test {
namespace {

int reference(float v) { return static_cast<int>(std::nearbyint(v)); }

TEST(RoundEven, TiesGoToEven) {
  for (int n = -1000; n <= 1000; ++n) {
    const float tie = static_cast<float>(n) + 0.5f;
    EXPECT_EQ(quant::round_even(tie), reference(tie)) << tie;
    EXPECT_EQ(quant::round_even(tie) % 2, 0) << tie;
  }
  EXPECT_EQ(quant::round_even(-0.5f), 0);
  EXPECT_EQ(quant::round_even(0.5f), 0);
  EXPECT_EQ(quant::round_even(2.5f), 2);
  EXPECT_EQ(quant::round_even(-3.5f), -4);
}

TEST(RoundEven, AgreesWithNearbyintAcrossTheRange) {
  std::vector<float> vs = {0.0f,        -0.0f,      0.49999997f, -0.49999997f, 4194303.5f, -4194303.5f, 4194304.0f,
                           -4194304.0f, 4194305.0f, 8388607.0f,  -8388609.0f,  1e9f,       -1e9f};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> small(-40.0f, 40.0f), wide(-5e6f, 5e6f);
  for (int i = 0; i < 200000; ++i) vs.push_back(i % 2 ? small(rng) : wide(rng));
  for (int k = -4096; k <= 4096; ++k) vs.push_back(static_cast<float>(k) * 0.25f);
  for (float v : vs) ASSERT_EQ(quant::round_even(v), reference(v)) << v;
}

}  // namespace
}  // namespace gl::test
