// quants/q4_1.h - the Q4_1 block: 32 weights, 4-bit quants with an fp16 scale and min (ggml's block_q4_1).
//
//   std::vector<gl::BlockQ4_1> q(n / gl::kQ4_1Block);
//   gl::quantize_row_q4_1(x, q.data(), n);    // d = (max - min) / 15, m = min
//   gl::dequantize_row_q4_1(q.data(), y, n);  // y = d * q + m
//
// Fixed-width fields and <cstdint> only: CUDA device code includes it and GLSL mirrors it.
// Functions: ggml-lite/src/quants/legacy_quants.cpp.
#pragma once

#include <cstdint>

namespace gl {

inline constexpr int kQ4_1Block = 32;
inline constexpr uint32_t kQ4_1GgmlType = 3;

struct BlockQ4_1 {
  uint16_t d;                  // scale (fp16)
  uint16_t m;                  // min (fp16), added after scaling
  uint8_t qs[kQ4_1Block / 2];  // element j low nibble of qs[j], element j + 16 high nibble
};
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 block must match ggml");

// n must be a multiple of kQ4_1Block.
void quantize_row_q4_1(const float* x, BlockQ4_1* y, int64_t n);
void dequantize_row_q4_1(const BlockQ4_1* x, float* y, int64_t n);

}  // namespace gl
