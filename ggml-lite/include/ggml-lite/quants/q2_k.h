// quants/q2_k.h - the Q2_K block: 256 weights in 16 sub-blocks of 16, 2-bit quants with a 4-bit
// scale and a 4-bit min per sub-block, both scaled by fp16 super-block factors (ggml's block_q2_K).
//
//   std::vector<gl::BlockQ2_K> q(n / gl::kQ2_KBlock);
//   gl::quantize_row_q2_k(x, q.data(), n);
//   gl::dequantize_row_q2_k(q.data(), y, n);  // y = d * sc[s] * q - dmin * m[s], s = i / 16
//
// Fixed-width fields and <cstdint> only: CUDA device code includes it and GLSL mirrors it.
// Functions: ggml-lite/src/quants/k_quants_low.cpp.
#pragma once

#include <cstdint>

namespace gl {

inline constexpr int kQ2_KBlock = 256;
inline constexpr uint32_t kQ2_KGgmlType = 10;

struct BlockQ2_K {
  uint8_t scales[kQ2_KBlock / 16];  // sub-block s: scale in the low nibble, min in the high one
  uint8_t qs[kQ2_KBlock / 4];       // element 128h + 32k + l: bits 2k..2k+1 of qs[32h + l]
  uint16_t d;                       // fp16 factor of the scales
  uint16_t dmin;                    // fp16 factor of the mins
};
static_assert(sizeof(BlockQ2_K) == 84, "Q2_K block must match ggml");

// n must be a multiple of kQ2_KBlock.
void quantize_row_q2_k(const float* x, BlockQ2_K* y, int64_t n);
void dequantize_row_q2_k(const BlockQ2_K* x, float* y, int64_t n);

}  // namespace gl
