// dtype_table_test.cpp - every row of the dtype table carries working reference functions: the
// quantized rows round-trip within their bound, Q8_0 produces its known bits, and the table's
// untyped functions agree with the typed ones in quants/<type>.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/fill.h"
#include "ggml-lite/dtype.h"
#include "ggml-lite/quants/q8_0.h"

namespace gl {
namespace {

// NMSE a quantized type must reach on uniform [-1, 1] data. Every quantized dtype needs a row:
// the test fails for a type without one.
double round_trip_bound(DType t) {
  switch (t) {
    case DType::Q8_0: return 1e-4;  // 8 bits per element: ~1.7e-5 measured
    case DType::Q4_0: return 1e-2;
    case DType::Q4_1: return 1e-2;
    case DType::Q5_0: return 3e-3;
    case DType::Q5_1: return 3e-3;
    case DType::Q2_K: return 1e-1;
    case DType::Q3_K: return 3e-2;
    case DType::Q4_K: return 1e-2;
    case DType::Q5_K: return 3e-3;
    case DType::Q6_K: return 1e-3;
    case DType::IQ4_NL: return 1e-2;
    case DType::IQ4_XS: return 1e-2;
    case DType::MXFP4: return 3e-2;
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::I32: break;
  }
  return -1.0;
}

TEST(DTypeTable, EveryRowHasReferenceFunctions) {
  for (int i = 0; i < kDTypeCount; ++i) {
    const auto t = static_cast<DType>(i);
    const DTypeTraits& tr = dtype_traits(t);
    SCOPED_TRACE(std::string(tr.name));
    EXPECT_EQ(dtype_from_name(tr.name), t);
    EXPECT_NE(tr.to_float, nullptr);
    EXPECT_NE(tr.from_float, nullptr);
    // Activations for a dot product are a float type or a quantized type with reference functions.
    EXPECT_TRUE(dtype_traits(tr.vec_dot_type).is_float || dtype_traits(tr.vec_dot_type).is_quant);
    EXPECT_GT(tr.block_size, 0);
    EXPECT_EQ(256 % tr.block_size, 0) << "convert_row works in chunks of 256 elements";
  }
}

TEST(DTypeTable, QuantizedRowsRoundTripWithinTheirBound) {
  constexpr int64_t n = 4096;  // a multiple of every block size (K-quant super-blocks are 256)
  test::Rng rng(11);
  std::vector<float> x(n), y(n);
  for (float& v : x) v = static_cast<float>(rng.uniform(-1.0, 1.0));
  for (int i = 0; i < kDTypeCount; ++i) {
    const auto t = static_cast<DType>(i);
    const DTypeTraits& tr = dtype_traits(t);
    if (!tr.is_quant) continue;
    SCOPED_TRACE(std::string(tr.name));
    ASSERT_GT(round_trip_bound(t), 0.0) << "no round-trip bound for this quantized type";
    std::vector<char> q(row_bytes(t, n));
    tr.from_float(x.data(), q.data(), n);
    tr.to_float(q.data(), y.data(), n);
    double err = 0.0, ref = 0.0;
    for (int64_t k = 0; k < n; ++k) {
      err += (static_cast<double>(y[k]) - x[k]) * (static_cast<double>(y[k]) - x[k]);
      ref += static_cast<double>(x[k]) * x[k];
    }
    EXPECT_LE(err / ref, round_trip_bound(t));
  }
}

TEST(DTypeTable, Q8_0KnownBitsThroughTheTable) {
  // amax = 127 gives d = 1 exactly, so each quant is round-half-away(x).
  float x[kQ8_0Block];
  x[0] = -127.0f;
  for (int i = 1; i < kQ8_0Block; ++i) x[i] = static_cast<float>(i - 16) * 3.25f;
  BlockQ8_0 b{};
  dtype_traits(DType::Q8_0).from_float(x, &b, kQ8_0Block);
  EXPECT_EQ(b.d, 0x3c00);  // 1.0 in binary16
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[1], -49);  // -48.75
  EXPECT_EQ(b.qs[15], -3);  // -3.25
  EXPECT_EQ(b.qs[16], 0);
  EXPECT_EQ(b.qs[18], 7);   // 6.5 rounds away from zero
  EXPECT_EQ(b.qs[31], 49);  // 48.75
  BlockQ8_0 typed{};
  quantize_row_q8_0(x, &typed, kQ8_0Block);
  EXPECT_EQ(std::memcmp(&b, &typed, sizeof(b)), 0);
  float y[kQ8_0Block];
  dtype_traits(DType::Q8_0).to_float(&b, y, kQ8_0Block);
  for (int i = 0; i < kQ8_0Block; ++i) EXPECT_EQ(y[i], static_cast<float>(b.qs[i])) << i;
}

}  // namespace
}  // namespace gl
