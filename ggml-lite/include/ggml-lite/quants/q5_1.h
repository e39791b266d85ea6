// quants/q5_1.h - the Q5_1 block: 32 weights, 5-bit quants with an fp16 scale and min (ggml's block_q5_1).
//
//   std::vector<gl::BlockQ5_1> q(n / gl::kQ5_1Block);
//   gl::quantize_row_q5_1(x, q.data(), n);    // d = (max - min) / 31, m = min
//   gl::dequantize_row_q5_1(q.data(), y, n);  // y = d * q + m
//
// Fixed-width fields and <cstdint> only: CUDA device code includes it and GLSL mirrors it.
// Functions: ggml-lite/src/quants/legacy_quants.cpp.
#pragma once

#include <cstdint>

namespace gl {

inline constexpr int kQ5_1Block = 32;
inline constexpr uint32_t kQ5_1GgmlType = 7;

struct BlockQ5_1 {
  uint16_t d;                  // scale (fp16)
  uint16_t m;                  // min (fp16)
  uint8_t qh[4];               // bit j (little-endian u32) is bit 4 of element j
  uint8_t qs[kQ5_1Block / 2];  // low 4 bits, as in Q5_0
};
static_assert(sizeof(BlockQ5_1) == 24, "Q5_1 block must match ggml");

// n must be a multiple of kQ5_1Block.
void quantize_row_q5_1(const float* x, BlockQ5_1* y, int64_t n);
void dequantize_row_q5_1(const BlockQ5_1* x, float* y, int64_t n);

}  // namespace gl
