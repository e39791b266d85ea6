// quants/q8_k.h - the Q8_K block: 256 int8 activations with an f32 scale and per-16 sums (ggml's
// block_q8_K). CPU K-quant dot products quantize the activation row to it; it never appears in files.
//
//   std::vector<gl::BlockQ8_K> a(n / gl::kQ8_KBlock);
//   gl::quantize_row_q8_k(x, a.data(), n);    // d = max / -127, q = round(x / d) clamped to 127
//   gl::dequantize_row_q8_k(a.data(), y, n);  // y = d * q
//
// Fixed-width fields and <cstdint> only: CUDA device code includes it and GLSL mirrors it.
// Functions: ggml-lite/src/quants/k_quants.cpp.
#pragma once

#include <cstdint>

namespace gl {

inline constexpr int kQ8_KBlock = 256;
inline constexpr uint32_t kQ8_KGgmlType = 15;

struct BlockQ8_K {
  float d;                         // scale (f32, not fp16)
  int8_t qs[kQ8_KBlock];           // quants
  int16_t bsums[kQ8_KBlock / 16];  // sum of each 16 quants, for the min terms of Q2_K..Q5_K dots
};
static_assert(sizeof(BlockQ8_K) == 292, "Q8_K block must match ggml");

// n must be a multiple of kQ8_KBlock.
void quantize_row_q8_k(const float* x, BlockQ8_K* y, int64_t n);
void dequantize_row_q8_k(const BlockQ8_K* x, float* y, int64_t n);

}  // namespace gl
