// quants/iq4_nl.h - the IQ4_NL block: 32 weights, 4-bit indices into a fixed non-linear table of
// 16 int8 levels, one fp16 scale (ggml's block_iq4_nl).
//
//   std::vector<gl::BlockIQ4_NL> q(n / gl::kIQ4_NLBlock);
//   gl::quantize_row_iq4_nl(x, q.data(), n);
//   gl::dequantize_row_iq4_nl(q.data(), y, n);  // y = d * kIQ4_NLValues[q]
//
// Fixed-width fields and <cstdint> only: CUDA device code includes it and GLSL mirrors it.
// Functions: ggml-lite/src/quants/nonlinear_quants.cpp.
#pragma once

#include <cstdint>

namespace gl {

inline constexpr int kIQ4_NLBlock = 32;
inline constexpr uint32_t kIQ4_NLGgmlType = 20;

// The 16 levels shared by IQ4_NL and IQ4_XS (ggml's kvalues_iq4nl), ascending.
inline constexpr int8_t kIQ4_NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

struct BlockIQ4_NL {
  uint16_t d;                    // scale (fp16)
  uint8_t qs[kIQ4_NLBlock / 2];  // element j: low nibble of qs[j]; element j + 16: high nibble
};
static_assert(sizeof(BlockIQ4_NL) == 18, "IQ4_NL block must match ggml");

// n must be a multiple of kIQ4_NLBlock.
void quantize_row_iq4_nl(const float* x, BlockIQ4_NL* y, int64_t n);
void dequantize_row_iq4_nl(const BlockIQ4_NL* x, float* y, int64_t n);

}  // namespace gl
