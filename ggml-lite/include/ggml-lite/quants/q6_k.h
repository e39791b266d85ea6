// quants/q6_k.h - the Q6_K block: 256 weights in 16 sub-blocks of 16, 6-bit quants around 32 with
// an int8 scale per sub-block and one fp16 factor (ggml's block_q6_K).
//
//   std::vector<gl::BlockQ6_K> q(n / gl::kQ6_KBlock);
//   gl::quantize_row_q6_k(x, q.data(), n);
//   gl::dequantize_row_q6_k(q.data(), y, n);  // y = d * sc[s] * (q - 32), s = i / 16
//
// Fixed-width fields and <cstdint> only: CUDA device code includes it and GLSL mirrors it.
// Functions: ggml-lite/src/quants/k_quants.cpp.
#pragma once

#include <cstdint>

namespace gl {

inline constexpr int kQ6_KBlock = 256;
inline constexpr uint32_t kQ6_KGgmlType = 14;

struct BlockQ6_K {
  uint8_t ql[kQ6_KBlock / 2];      // element 128h + 32k + l: low 4 bits in ql[64h + 32(k & 1) + l],
                                   // low nibble for k < 2, high nibble for k >= 2
  uint8_t qh[kQ6_KBlock / 4];      // its high 2 bits: bits 2k..2k+1 of qh[32h + l]
  int8_t scales[kQ6_KBlock / 16];  // per sub-block of 16
  uint16_t d;                      // fp16 factor of the scales
};
static_assert(sizeof(BlockQ6_K) == 210, "Q6_K block must match ggml");

// n must be a multiple of kQ6_KBlock.
void quantize_row_q6_k(const float* x, BlockQ6_K* y, int64_t n);
// One row x of n elements with importance weights qw (llama.cpp's imatrix: n values, one per column), as
// llama-quantize does when given one; qw == nullptr is quantize_row_q6_k.
void quantize_row_q6_k_imatrix(const float* x, BlockQ6_K* y, int64_t n, const float* qw);
void dequantize_row_q6_k(const BlockQ6_K* x, float* y, int64_t n);

}  // namespace gl
