// quants/q3_k.h - the Q3_K block: 256 weights in 16 sub-blocks of 16, 3-bit quants (2 low bits
// plus a high-bit mask) with a signed 6-bit scale per sub-block and one fp16 factor (ggml's block_q3_K).
//
//   std::vector<gl::BlockQ3_K> q(n / gl::kQ3_KBlock);
//   gl::quantize_row_q3_k(x, q.data(), n);
//   gl::dequantize_row_q3_k(q.data(), y, n);  // y = d * (sc[s] - 32) * (q - 4), s = i / 16
//
// Fixed-width fields and <cstdint> only: CUDA device code includes it and GLSL mirrors it.
// Functions: ggml-lite/src/quants/k_quants_low.cpp.
#pragma once

#include <cstdint>

namespace gl {

inline constexpr int kQ3_KBlock = 256;
inline constexpr uint32_t kQ3_KGgmlType = 11;

struct BlockQ3_K {
  uint8_t hmask[kQ3_KBlock / 8];  // element i: bit i / 32 of hmask[i % 32] is bit 2 of its quant
  uint8_t qs[kQ3_KBlock / 4];     // low 2 bits, packed as in Q2_K
  uint8_t scales[12];             // 16 x 6 bits: low nibbles in bytes 0-7, high 2 bits in bytes 8-11
  uint16_t d;                     // fp16 factor of the scales
};
static_assert(sizeof(BlockQ3_K) == 110, "Q3_K block must match ggml");

// n must be a multiple of kQ3_KBlock.
void quantize_row_q3_k(const float* x, BlockQ3_K* y, int64_t n);
void dequantize_row_q3_k(const BlockQ3_K* x, float* y, int64_t n);

}  // namespace gl
