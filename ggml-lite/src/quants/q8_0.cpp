// q8_0.cpp - reference quantizer and dequantizer of Q8_0 (bit-exact with ggml's reference).
#include "ggml-lite/quants/q8_0.h"

#include <algorithm>
#include <cmath>

#include "ggml-lite/dtype.h"
#include "ggml-lite/status.h"

namespace gl {

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  GL_ASSERT(n % kQ8_0Block == 0, "q8_0 row length must be a multiple of 32");
  for (int64_t b = 0; b < n / kQ8_0Block; ++b) {
    const float* xb = x + b * kQ8_0Block;
    float amax = 0.0f;
    for (int i = 0; i < kQ8_0Block; ++i) amax = std::max(amax, std::fabs(xb[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = fp32_to_fp16(d);
    for (int i = 0; i < kQ8_0Block; ++i) y[b].qs[i] = static_cast<int8_t>(std::lround(xb[i] * id));
  }
}

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n) {
  GL_ASSERT(n % kQ8_0Block == 0, "q8_0 row length must be a multiple of 32");
  for (int64_t b = 0; b < n / kQ8_0Block; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    for (int i = 0; i < kQ8_0Block; ++i) y[b * kQ8_0Block + i] = d * static_cast<float>(x[b].qs[i]);
  }
}

}  // namespace gl
