// quants/q4_k.h - the Q4_K block: 256 weights in 8 sub-blocks of 32, 4-bit quants with a 6-bit
// scale and a 6-bit min per sub-block, both scaled by fp16 super-block factors (ggml's block_q4_K).
//
//   std::vector<gl::BlockQ4_K> q(n / gl::kQ4_KBlock);
//   gl::quantize_row_q4_k(x, q.data(), n);
//   gl::dequantize_row_q4_k(q.data(), y, n);  // y = d * sc[s] * q - dmin * m[s], s = i / 32
//
// Fixed-width fields and <cstdint> only: CUDA device code includes it and GLSL mirrors it.
// Functions: ggml-lite/src/quants/k_quants.cpp.
#pragma once

#include <cstdint>

namespace gl {

inline constexpr int kQ4_KBlock = 256;
inline constexpr uint32_t kQ4_KGgmlType = 12;
inline constexpr int kKScaleBytes = 12;  // 8 x (6-bit scale, 6-bit min), shared by Q4_K and Q5_K

struct BlockQ4_K {
  uint16_t d;                    // fp16 factor of the scales
  uint16_t dmin;                 // fp16 factor of the mins
  uint8_t scales[kKScaleBytes];  // s < 4: bytes s (scale) and s + 4 (min), low 6 bits; s >= 4:
                                 // byte s + 4 holds the low nibbles, bits 6-7 of bytes s - 4 / s the rest
  uint8_t qs[kQ4_KBlock / 2];    // element 64c + l: low nibble of qs[32c + l]; 64c + 32 + l: high
};
static_assert(sizeof(BlockQ4_K) == 144, "Q4_K block must match ggml");

// n must be a multiple of kQ4_KBlock.
void quantize_row_q4_k(const float* x, BlockQ4_K* y, int64_t n);
// One row x of n elements with importance weights qw (llama.cpp's imatrix: n values, one per column), as
// llama-quantize does when given one; qw == nullptr is quantize_row_q4_k.
void quantize_row_q4_k_imatrix(const float* x, BlockQ4_K* y, int64_t n, const float* qw);
void dequantize_row_q4_k(const BlockQ4_K* x, float* y, int64_t n);

}  // namespace gl
