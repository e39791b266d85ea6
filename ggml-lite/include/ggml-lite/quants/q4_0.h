// quants/q4_0.h - the Q4_0 block: 32 weights, 4-bit quants around 8, one fp16 scale (ggml's block_q4_0).
//
//   std::vector<gl::BlockQ4_0> q(n / gl::kQ4_0Block);
//   gl::quantize_row_q4_0(x, q.data(), n);    // d = max / -8 (max: the signed value of largest |x|)
//   gl::dequantize_row_q4_0(q.data(), y, n);  // y = d * (q - 8)
//
// Why so bare: CUDA device code includes the per-type headers and GLSL mirrors the structs field
// for field, so they hold fixed-width fields only and need nothing beyond <cstdint>. fp16 fields
// are IEEE binary16 bits. Functions: ggml-lite/src/quants/legacy_quants.cpp.
#pragma once

#include <cstdint>

namespace gl {

inline constexpr int kQ4_0Block = 32;
inline constexpr uint32_t kQ4_0GgmlType = 2;

struct BlockQ4_0 {
  uint16_t d;                  // scale (fp16)
  uint8_t qs[kQ4_0Block / 2];  // element j in the low nibble of qs[j], element j + 16 in the high one
};
static_assert(sizeof(BlockQ4_0) == 18, "Q4_0 block must match ggml");

// n must be a multiple of kQ4_0Block.
void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n);
void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t n);

}  // namespace gl
