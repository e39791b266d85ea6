// quants/q5_k.h - the Q5_K block: Q4_K plus a fifth bit per quant (ggml's block_q5_K).
//
//   std::vector<gl::BlockQ5_K> q(n / gl::kQ5_KBlock);
//   gl::quantize_row_q5_k(x, q.data(), n);
//   gl::dequantize_row_q5_k(q.data(), y, n);  // y = d * sc[s] * q - dmin * m[s], s = i / 32
//
// Fixed-width fields and <cstdint> only: CUDA device code includes it and GLSL mirrors it.
// Functions: ggml-lite/src/quants/k_quants.cpp.
#pragma once

#include <cstdint>

#include "ggml-lite/quants/q4_k.h"

namespace gl {

inline constexpr int kQ5_KBlock = 256;
inline constexpr uint32_t kQ5_KGgmlType = 13;

struct BlockQ5_K {
  uint16_t d;                    // fp16 factor of the scales
  uint16_t dmin;                 // fp16 factor of the mins
  uint8_t scales[kKScaleBytes];  // packed exactly as in Q4_K
  uint8_t qh[kQ5_KBlock / 8];    // element 64c + l: bit 2c of qh[l]; 64c + 32 + l: bit 2c + 1
  uint8_t qs[kQ5_KBlock / 2];    // low 4 bits, packed as in Q4_K
};
static_assert(sizeof(BlockQ5_K) == 176, "Q5_K block must match ggml");

// n must be a multiple of kQ5_KBlock.
void quantize_row_q5_k(const float* x, BlockQ5_K* y, int64_t n);
// One row x of n elements with importance weights qw (llama.cpp's imatrix: n values, one per column), as
// llama-quantize does when given one; qw == nullptr is quantize_row_q5_k.
void quantize_row_q5_k_imatrix(const float* x, BlockQ5_K* y, int64_t n, const float* qw);
void dequantize_row_q5_k(const BlockQ5_K* x, float* y, int64_t n);

}  // namespace gl
