// quants/iq4_xs.h - the IQ4_XS block: 256 weights in 8 sub-blocks of 32, IQ4_NL's table indices
// with a signed 6-bit scale per sub-block and one fp16 factor (ggml's block_iq4_xs).
//
//   std::vector<gl::BlockIQ4_XS> q(n / gl::kIQ4_XSBlock);
//   gl::quantize_row_iq4_xs(x, q.data(), n);
//   gl::dequantize_row_iq4_xs(q.data(), y, n);  // y = d * (ls[s] - 32) * kIQ4_NLValues[q]
//
// Fixed-width fields and <cstdint> only: CUDA device code includes it and GLSL mirrors it.
// Functions: ggml-lite/src/quants/nonlinear_quants.cpp.
#pragma once

#include <cstdint>

#include "ggml-lite/quants/iq4_nl.h"

namespace gl {

inline constexpr int kIQ4_XSBlock = 256;
inline constexpr uint32_t kIQ4_XSGgmlType = 23;

struct BlockIQ4_XS {
  uint16_t d;                           // fp16 factor of the scales
  uint16_t scales_h;                    // bits 2s..2s+1: high 2 bits of sub-block s's scale
  uint8_t scales_l[kIQ4_XSBlock / 64];  // nibble s % 2 of byte s / 2: low 4 bits of scale s
  uint8_t qs[kIQ4_XSBlock / 2];         // sub-block s: 16 bytes, element j low nibble, j + 16 high
};
static_assert(sizeof(BlockIQ4_XS) == 136, "IQ4_XS block must match ggml");

// n must be a multiple of kIQ4_XSBlock.
void quantize_row_iq4_xs(const float* x, BlockIQ4_XS* y, int64_t n);
void dequantize_row_iq4_xs(const BlockIQ4_XS* x, float* y, int64_t n);

}  // namespace gl
