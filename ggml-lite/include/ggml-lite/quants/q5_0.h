// quants/q5_0.h - the Q5_0 block: 32 weights, 5-bit quants around 16, one fp16 scale (ggml's block_q5_0).
//
//   std::vector<gl::BlockQ5_0> q(n / gl::kQ5_0Block);
//   gl::quantize_row_q5_0(x, q.data(), n);    // d = max / -16
//   gl::dequantize_row_q5_0(q.data(), y, n);  // y = d * (q - 16)
//
// Fixed-width fields and <cstdint> only: CUDA device code includes it and GLSL mirrors it.
// Functions: ggml-lite/src/quants/legacy_quants.cpp.
#pragma once

#include <cstdint>

namespace gl {

inline constexpr int kQ5_0Block = 32;
inline constexpr uint32_t kQ5_0GgmlType = 6;

struct BlockQ5_0 {
  uint16_t d;                  // scale (fp16)
  uint8_t qh[4];               // bit j (little-endian u32) is bit 4 of element j
  uint8_t qs[kQ5_0Block / 2];  // low 4 bits: element j low nibble of qs[j], element j + 16 high nibble
};
static_assert(sizeof(BlockQ5_0) == 22, "Q5_0 block must match ggml");

// n must be a multiple of kQ5_0Block.
void quantize_row_q5_0(const float* x, BlockQ5_0* y, int64_t n);
void dequantize_row_q5_0(const BlockQ5_0* x, float* y, int64_t n);

}  // namespace gl
